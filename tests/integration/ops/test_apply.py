"""``mqreconcile apply`` without Spark: bundles cut straight from a master's CommitLog, applied
to stopped slaves through the store's file helpers. A dry run leaves every byte as it was; a
diverged slave, once started, has the master's log, queues and keys and none of its own."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from broker.store.checkpoint import StoreLock
from broker.store.config import BrokerRole
from broker.store.mapped_file import StoreError
from broker.store.message_store import DefaultMessageStore
from ops.spark.apply import BundleError, apply_bundle
from ops.spark.bundle import write_bundle
from ops.spark.segments import list_segments
from tests.kits.storekit import (
    build_master,
    config,
    copy_store,
    cut_slave,
    diverge_slave,
    record_offsets,
)

COUNT = 600


@pytest.fixture(scope="module")
def master(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("master")
    build_master(root, COUNT)
    return root


@pytest.fixture(scope="module")
def offsets(master: Path) -> list[int]:
    return record_offsets(master)


def bundle_from(master: Path, start: int, folder: Path) -> int:
    """The master's bytes from ``start`` to its end, as the job writes them; the end."""
    store = DefaultMessageStore(config(master), store_host=("10.0.0.1", 10911))
    store.load()
    end = store.max_phys_offset
    store.shutdown()
    report = {"masterStoreHosts": [], "backups": []}
    write_bundle(list_segments(master / "commitlog"), start, end, folder, report)
    return end


def started(root: Path) -> DefaultMessageStore:
    """The store as the broker's next start leaves it: recovered and dispatched."""
    store = DefaultMessageStore(
        config(root, broker_role=BrokerRole.SLAVE), store_host=("127.0.0.1", 0)
    )
    store.load()
    store.reput.do_reput(1 << 62)
    return store


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_a_dry_run_changes_no_byte(master, offsets, tmp_path) -> None:
    slave = tmp_path / "slave"
    copy_store(master, slave)
    diverge_slave(slave, offsets[400], extra=5)
    bundle_from(master, offsets[400], tmp_path / "bundle")
    before = snapshot(slave)
    result = apply_bundle(slave, tmp_path / "bundle", dry_run=True)
    assert result["wouldCut"] > 0 and result["changed"] is False
    assert snapshot(slave) == before


def test_a_diverged_slave_once_started_has_the_masters_queues_and_keys(
    master, offsets, tmp_path
) -> None:
    slave = tmp_path / "slave"
    copy_store(master, slave)
    diverge_slave(slave, offsets[400], extra=5)
    end = bundle_from(master, offsets[400], tmp_path / "bundle")
    assert apply_bundle(slave, tmp_path / "bundle")["after"] == end
    repaired, reference = started(slave), started(master)
    try:
        assert repaired.max_phys_offset == end
        for topic in ("Topic0", "Topic1", "Topic2"):
            for queue_id in range(4):
                assert repaired.get_max_offset_in_queue(topic, queue_id) == (
                    reference.get_max_offset_in_queue(topic, queue_id)
                )
        index = repaired.index_service
        assert index.query("Topic0", "x0", 32, 0, 2**62)[0] == []  # the slave's own: gone
        found = index.query("Topic1", "k451", 32, 0, 2**62)[0]
        assert found == [offsets[451]]
    finally:
        repaired.shutdown()
        reference.shutdown()
    assert apply_bundle(slave, tmp_path / "bundle")["changed"] is False  # applied already


def test_a_crashed_slave_is_read_as_its_next_start_reads_it(master, offsets, tmp_path) -> None:
    """With the abort file there, the log's end is found from the checkpoint's safe point, as
    the slave's abnormal recovery will find it."""
    slave = tmp_path / "slave"
    copy_store(master, slave)
    diverge_slave(slave, offsets[500], extra=3)
    (slave / "abort").touch()
    end = bundle_from(master, offsets[500], tmp_path / "bundle")
    before = snapshot(slave)
    assert apply_bundle(slave, tmp_path / "bundle", dry_run=True)["wouldCut"] > 0
    assert snapshot(slave) == before
    assert apply_bundle(slave, tmp_path / "bundle")["after"] == end
    repaired = started(slave)
    try:
        assert repaired.max_phys_offset == end
        assert repaired.index_service.query("Topic0", "x0", 32, 0, 2**62)[0] == []
    finally:
        repaired.shutdown()


def test_index_files_below_the_cut_are_kept_whatever_their_size(master, offsets, tmp_path) -> None:
    """Without --broker-conf the index's slot and entry counts are unknown (these files are
    smaller than the default's): a file that holds nothing at or past the cut stays as it is."""
    slave = tmp_path / "slave"
    copy_store(master, slave)
    cut_slave(slave, offsets[590])
    bundle_from(master, offsets[590], tmp_path / "bundle")
    index_before = snapshot(slave / "index")
    assert index_before
    apply_bundle(slave, tmp_path / "bundle")
    assert snapshot(slave / "index") == index_before


def test_a_running_broker_keeps_its_store(master, offsets, tmp_path) -> None:
    slave = tmp_path / "slave"
    copy_store(master, slave)
    bundle_from(master, offsets[-1], tmp_path / "bundle")
    lock = StoreLock(slave / "lock")
    lock.acquire()
    try:
        with pytest.raises(StoreError, match="in use"):
            apply_bundle(slave, tmp_path / "bundle")
    finally:
        lock.release()


def test_a_log_starts_only_at_a_segment_boundary(master, offsets, tmp_path) -> None:
    slave = tmp_path / "empty"
    slave.mkdir()
    bundle_from(master, offsets[3], tmp_path / "bundle")
    with pytest.raises(BundleError, match="segment boundary"):
        apply_bundle(slave, tmp_path / "bundle")
    assert not (slave / "commitlog").exists()


def test_apply_opens_no_running_store() -> None:
    """mqreconcile reads the store's config and files through the store's own modules, never
    the broker's config or a DefaultMessageStore."""
    code = (
        "import sys, ops.spark.__main__, ops.spark.apply;"
        "print(sorted(m for m in sys.modules if m in"
        " ('broker.config', 'broker.controller', 'broker.store.message_store')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
