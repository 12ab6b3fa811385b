"""mqreconcile's command line: bad paths and values are one line and exit 1, checked before
Spark starts or a store is opened (a mistyped --store creates nothing), and ``apply`` on the
store of a running broker says to stop it first."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.kits.brokerkit import broker_conf, start_broker
from tests.kits.clikit import REPO, assert_refused, run_cli
from tests.kits.reconcilekit import need_spark
from tests.kits.storekit import build_master, copy_store, cut_slave, record_offsets


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
    (["run", "--backup", "hdfs://nn/backup", "--slave-store", "{store}", "--out", "{typo}"],
     "hdfs:// is not read by this job's tasks; mount the storage"),
    (["run", "--backup", "file://{typo}", "--slave-store", "{store}", "--out", "{typo}"],
     "--backup {typo} does not exist"),
    (["run", "--backup", "file://host{store}", "--slave-store", "{store}", "--out", "{typo}"],
     "a file:// URI names no host"),
    (["run", "--backup", "{empty-backup}", "--slave-store", "{store}", "--out", "{typo}/x/y"],
     "--out {typo}/x/y: its parent directory does not exist"),
    (["run", "--backup", "{empty-backup}", "--slave-store", "{store}", "--out", "{a-file}"],
     "--out {a-file} is not a directory"),
    (["run", "--backup", "{empty-backup}", "--slave-store", "{store}", "--out", "{typo}",
      "--master", "spark//127.0.0.1:7077"], "--master 'spark//127.0.0.1:7077': expected"),
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


PHASE = re.compile(r"\[(\d+)\] +(\d+\.\d) s  \S")
PROGRESS = re.compile(r" {4} *(\d+\.\d) s  parsing the (backup|slave): \d+/\d+ ranges, ~")
JVM_NOTE = "WARNING: Using incubator modules: jdk.incubator.vector"  # the JVM's, before logging


# 19 s (a Spark of its own, run as an operator runs it): with make test-all.
@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.timeout(900)
def test_run_prints_numbered_timed_phases_on_stderr_and_no_spark_noise(tmp_path) -> None:
    need_spark()
    build_master(tmp_path / "master", 300)
    copy_store(tmp_path / "master", tmp_path / "slave")
    cut_slave(tmp_path / "slave", record_offsets(tmp_path / "master")[250])
    # A JVM's start alone takes a minute on a loaded 2-core machine: no 120 s run_cli limit.
    done = subprocess.run(
        [sys.executable, "-m", "ops.spark", "run",
         "--backup", f"file://{tmp_path / 'master' / 'commitlog'}",
         "--slave-store", str(tmp_path / "slave"), "--out", str(tmp_path / "out"),
         "--master", "local[2]", "--split-mb", "1"],
        capture_output=True, text=True, timeout=600, cwd=REPO, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if line != JVM_NOTE]
    phases = [PHASE.match(line) for line in lines]
    for line, match in zip(lines, phases, strict=True):
        assert match or PROGRESS.match(line), f"not one of our lines: {line!r}"
    numbers = [int(m[1]) for m in phases if m]
    assert numbers == list(range(1, len(numbers) + 1)) and len(numbers) >= 5
    seconds = [float(m[2]) for m in phases if m]
    assert seconds == sorted(seconds)
    assert "starting Spark (local[2])" in lines[0]
    assert "agree up to" in done.stdout and "HA catch-up suffices" in done.stdout
    assert "Stage" not in done.stderr  # no console progress bars
