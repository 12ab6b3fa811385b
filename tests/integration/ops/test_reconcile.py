"""The reconciliation job on real stores: the report is exactly right for each kind of slave,
and the bundle makes the slave's log byte-identical to the master's with matching queues."""

from __future__ import annotations

import json
import shutil

import pytest

from broker.store.config import BrokerRole
from broker.store.message_store import DefaultMessageStore
from ops.spark.apply import BundleError, apply_bundle
from ops.spark.reconcile import reconcile
from ops.spark.segments import BackupError
from tests.kits.reconcilekit import check_invariants, comparable, expected_report
from tests.kits.storekit import (
    build_master,
    config,
    copy_store,
    cut_slave,
    diverge_slave,
    record_offsets,
)

pytestmark = pytest.mark.spark
COUNT = 1500


@pytest.fixture(scope="module")
def master(tmp_path_factory):
    root = tmp_path_factory.mktemp("master")
    build_master(root, COUNT)
    return root


@pytest.fixture(scope="module")
def offsets(master):
    return record_offsets(master)


def log_bytes(root, end):
    data = b"".join(p.read_bytes() for p in sorted((root / "commitlog").iterdir()))
    return data[:end]


def queue_tops(root):
    """Each queue's max offset once the store has started (recovered and dispatched: apply
    leaves the ConsumeQueues to the broker's next start)."""
    store = DefaultMessageStore(
        config(root, broker_role=BrokerRole.SLAVE), store_host=("127.0.0.1", 0)
    )
    store.load()
    store.reput.do_reput(1 << 62)
    try:
        return {
            (t, q): store.get_max_offset_in_queue(t, q)
            for t in ("Topic0", "Topic1", "Topic2")
            for q in range(4)
        }
    finally:
        store.shutdown()


def run(spark, master, slave, out, **kw):
    """The job, its report checked line by line against the brute-force reference."""
    report = reconcile(
        spark, [master / "commitlog"], slave, out, split_bytes=64 * 1024, say=lambda _: None, **kw
    )
    assert comparable(report) == expected_report([master / "commitlog"], slave)
    check_invariants(report)
    return report


def expected_missing(cut_index: int) -> int:
    return COUNT - cut_index


# A slave 7 records behind spent 13 s of the default suite's budget repairing: with make test-all.
@pytest.mark.parametrize("cut_index", [pytest.param(COUNT - 7, marks=pytest.mark.slow), 200])
def test_slave_behind_is_reported_and_repaired(spark, master, offsets, tmp_path, cut_index) -> None:
    slave = tmp_path / "slave"
    copy_store(master, slave)
    cut_slave(slave, offsets[cut_index])
    report = run(spark, master, slave, tmp_path / "out")
    assert report["firstDivergence"] is None
    assert report["agreeOffset"] == offsets[cut_index]
    assert report["missing"] == expected_missing(cut_index)
    per_queue = {(q["topic"], q["queueId"]): q["missing"] for q in report["queues"]}
    assert per_queue == {
        (f"Topic{t}", q): sum(1 for i in range(cut_index, COUNT) if i % 3 == t and i % 4 == q)
        for t in range(3)
        for q in range(4)
    }
    assert (
        json.loads((tmp_path / "out" / "report.json").read_text())["missing"] == report["missing"]
    )
    index = spark.read.parquet(str(tmp_path / "out" / "index.parquet"))
    assert index.filter("kind = 'MESSAGE'").count() == COUNT

    applied = apply_bundle(slave, tmp_path / "out" / "bundle")
    assert applied["changed"]
    end = report["master"]["endOffset"]
    assert log_bytes(slave, end) == log_bytes(master, end)
    assert queue_tops(slave) == queue_tops(master)
    assert apply_bundle(slave, tmp_path / "out" / "bundle")["changed"] is False  # idempotent


def test_diverged_slave_is_cut_at_the_first_foreign_record(
    spark, master, offsets, tmp_path
) -> None:
    slave = tmp_path / "slave"
    copy_store(master, slave)
    diverge_slave(slave, offsets[1000], extra=5)
    report = run(spark, master, slave, tmp_path / "out")
    assert report["firstDivergence"] == offsets[1000] == report["agreeOffset"]
    assert report["missing"] == COUNT - 1000
    apply_bundle(slave, tmp_path / "out" / "bundle")
    end = report["master"]["endOffset"]
    assert log_bytes(slave, end) == log_bytes(master, end)
    assert queue_tops(slave) == queue_tops(master)


def test_corrupt_tail_is_found_and_replaced(spark, master, offsets, tmp_path) -> None:
    slave = tmp_path / "slave"
    copy_store(master, slave)
    cut_slave(slave, offsets[1401])
    victim = offsets[1400]
    segment = sorted((slave / "commitlog").iterdir())[victim // (64 * 1024)]
    with open(segment, "r+b") as handle:
        handle.seek(victim % (64 * 1024) + 120)
        handle.write(b"\x00\xff\x00\xff")
    report = run(spark, master, slave, tmp_path / "out")
    assert report["slave"]["corrupt"][0]["offset"] == victim
    assert report["agreeOffset"] == victim
    apply_bundle(slave, tmp_path / "out" / "bundle")
    end = report["master"]["endOffset"]
    assert log_bytes(slave, end) == log_bytes(master, end)


def test_empty_slave_gets_the_whole_backup(spark, master, tmp_path) -> None:
    slave = tmp_path / "slave"
    slave.mkdir()
    report = run(spark, master, slave, tmp_path / "out")
    assert any("empty" in f for f in report["findings"])
    assert report["missing"] == COUNT
    apply_bundle(slave, tmp_path / "out" / "bundle")
    end = report["master"]["endOffset"]
    assert log_bytes(slave, end) == log_bytes(master, end)


def test_dry_run_writes_no_bundle(spark, master, offsets, tmp_path) -> None:
    slave = tmp_path / "slave"
    copy_store(master, slave)
    cut_slave(slave, offsets[-3])
    report = run(spark, master, slave, tmp_path / "out", dry_run=True)
    assert report["missing"] == 3 and not (tmp_path / "out" / "bundle").exists()


def test_bad_backups_are_refused(spark, master, tmp_path) -> None:
    truncated = tmp_path / "truncated"
    shutil.copytree(master / "commitlog", truncated)
    middle = sorted(truncated.iterdir())[1]
    middle.write_bytes(middle.read_bytes()[:1000])
    with pytest.raises(BackupError, match=r"overlapping|hole|different sizes|missing"):
        reconcile(spark, [truncated], tmp_path / "none", tmp_path / "o1", say=lambda _: None)

    other = tmp_path / "other-master"
    other_store = DefaultMessageStore(config(other), store_host=("10.9.9.9", 10911))
    other_store.load()
    from tests.kits.storekit import message

    for i in range(400):
        other_store.put_message(message("Topic0", 0, b"z" * 300, f"o{i}"))
    other_store.shutdown()
    mixed = tmp_path / "mixed"
    shutil.copytree(master / "commitlog", mixed)
    first = sorted(mixed.iterdir())[0]
    shutil.copy(sorted((other / "commitlog").iterdir())[0], first)
    with pytest.raises(BackupError, match=r"masters|disagree"):
        reconcile(spark, [mixed], tmp_path / "none", tmp_path / "o2", say=lambda _: None)


def test_damaged_bundle_changes_nothing(spark, master, offsets, tmp_path) -> None:
    slave = tmp_path / "slave"
    copy_store(master, slave)
    cut_slave(slave, offsets[1200])
    run(spark, master, slave, tmp_path / "out")
    bundle = tmp_path / "out" / "bundle"
    victim = sorted(p for p in bundle.iterdir() if p.name != "manifest.msgpack")[0]
    victim.write_bytes(b"x" + victim.read_bytes()[1:])
    before = log_bytes(slave, 10**9)
    with pytest.raises(BundleError, match="checksum"):
        apply_bundle(slave, bundle)
    assert log_bytes(slave, 10**9) == before


def test_repaired_slave_catches_up_over_ha_without_gaps_or_duplicates(
    spark, master, offsets, tmp_path, processes
) -> None:
    """The full story: a master that kept running, a slave far behind, the job, the bundle, and
    a real slave broker that then replicates only what came after the backup."""
    import trio

    from remoting.client import RemotingClient
    from tests.kits.brokerkit import broker_conf, start_broker
    from tests.kits.hakit import (
        commit_log_bytes,
        produce_batches,
        wait_converged,
    )

    live_master = tmp_path / "store-broker-a-0"
    shutil.copytree(master, live_master)
    slave = tmp_path / "store-broker-a-1"
    copy_store(master, slave)
    cut_slave(slave, offsets[300])
    report = run(spark, live_master, slave, tmp_path / "out")
    apply_bundle(slave, tmp_path / "out" / "bundle")

    sizes = {
        "mappedFileSizeCommitLog": 64 * 1024,
        "maxMessageSize": 16 * 1024,  # a message must fit a 64 KiB CommitLog file
        "mappedFileSizeConsumeQueue": 20 * 1000,
        "maxHashSlotNum": 5_000,
        "maxIndexNum": 20_000,
    }
    m = start_broker(processes, broker_conf(tmp_path, **sizes), "master")
    conf = broker_conf(tmp_path, brokerId=1, brokerRole="SLAVE", **sizes)
    text = conf.read_text()
    conf.write_text(text + f"haMasterAddress=127.0.0.1:{int(m.addr.rsplit(':', 1)[1]) + 1}\n")
    s = start_broker(processes, conf, "slave")

    async def scenario() -> None:
        async with RemotingClient.open() as client:
            await produce_batches(client, m.addr, "After", 200, batch=20, prefix="late")
            end = await wait_converged(client, m.addr, s.addr)
            assert end > report["master"]["endOffset"]
            assert commit_log_bytes(slave, 0, end) == commit_log_bytes(live_master, 0, end)

    trio.run(scenario)
    log_text = s.log_tail(400)
    assert f"at offset {report['master']['endOffset']}" in log_text  # resumed, not from zero
