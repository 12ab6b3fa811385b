"""mqreconcile's command line: bad paths and values are one line and exit 1, checked before
Spark starts or a store is opened (a mistyped --store creates nothing), and ``apply`` on the
store of a running broker says to stop it first."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.kits.brokerkit import broker_conf, start_broker
from tests.kits.clikit import assert_refused, run_cli


@pytest.fixture
def paths(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "store").mkdir()
    (tmp_path / "bundle").mkdir()
    (tmp_path / "empty-backup").mkdir()
    (tmp_path / "a-file").write_text("x")
    (tmp_path / "bad_conf").write_text("flushDiskType=SOMETIMES\n")
    return {name: str(tmp_path / name) for name in
            ("store", "bundle", "empty-backup", "a-file", "bad_conf", "typo")}  # fmt: skip


BAD = [
    (["apply", "--store", "{typo}", "{bundle}"], "--store {typo} does not exist (a typo?"),
    (["apply", "--store", "{a-file}", "{bundle}"], "--store {a-file} is not a directory"),
    (["apply", "--store", "{store}", "{typo}"], "the bundle {typo} does not exist"),
    (["apply", "--store", "{store}", "{bundle}"], "no readable manifest.msgpack"),
    (["apply", "--store", "{store}", "{bundle}", "--broker-conf", "{typo}"], "is not a file"),
    (["apply", "--store", "{store}", "{bundle}", "--broker-conf", "{bad_conf}"], "SOMETIMES"),
    (["apply"], "the following arguments are required: --store, bundle"),
    (["run", "--backup", "{typo}", "--slave-store", "{store}", "--out", "{typo}"],
     "--backup {typo} does not exist"),
    (["run", "--backup", "{empty-backup}", "--slave-store", "{typo}", "--out", "{typo}"],
     "--slave-store {typo} does not exist"),
    (["run", "--backup", "{empty-backup}", "--slave-store", "{store}", "--out", "{typo}"],
     "no CommitLog segment in"),
    (["run", "--backup", "{store}", "--slave-store", "{store}", "--out", "{typo}",
      "--split-mb", "0"], "0 is outside 1..1048576 MiB"),
    (["fix"], "invalid choice: 'fix'"),
]  # fmt: skip


@pytest.mark.parametrize(("argv", "expected"), BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_input_is_one_line_and_exit_1(paths, argv: list[str], expected: str) -> None:
    done = run_cli("ops.spark", *(arg.format(**paths) for arg in argv))
    assert_refused(done, expected.format(**paths))
    assert not Path(paths["typo"]).exists()  # nothing was created for a mistyped path


def test_apply_on_a_running_brokers_store_says_to_stop_it(processes, tmp_path) -> None:
    conf = broker_conf(tmp_path, "broker-r", brokerId=1, brokerRole="SLAVE")
    broker = start_broker(processes, conf)
    store = tmp_path / "store-broker-r-1"
    (tmp_path / "bundle").mkdir()
    done = run_cli("ops.spark", "apply", "--store", str(store), str(tmp_path / "bundle"))
    line = assert_refused(done, f"the store {store} is in use by a running broker")
    assert f"pid={broker.pid}" in line
    assert "stop that broker (the slave) first" in line
    assert "give each broker its own storePathRootDir" not in line  # the old, wrong advice
