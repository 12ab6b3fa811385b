"""Every line of the reconciliation report against the brute-force reference
(tests/kits/reconcilekit.py), on stores of the shapes test_reconcile.py does not build: a
corrupt backup, a backup older than the slave, a backup newer than the slave (its oldest
segments gone), one too new to bridge, and a slave in sync. Task splits vary (whole segments
down to 4 KiB), which the report must not depend on. A Hypothesis run over generated shapes is
marked slow."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ops.spark.reconcile import reconcile
from ops.spark.segments import BackupError
from remoting.record import HEADER_V4
from tests.kits.reconcilekit import check_invariants, comparable, expected_report
from tests.kits.storekit import (
    SEGMENT,
    build_master,
    copy_store,
    cut_slave,
    diverge_slave,
    record_offsets,
)

pytestmark = pytest.mark.spark
COUNT = 600


@pytest.fixture(scope="module")
def master(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("master")
    build_master(root, COUNT)
    return root


def corrupt_record(commitlog: Path, phys_offset: int) -> None:
    """Flip the record's first body byte: its magic and offset still read, its CRC fails."""
    segment = commitlog / f"{phys_offset - phys_offset % SEGMENT:020d}"
    with open(segment, "r+b") as handle:
        handle.seek(phys_offset % SEGMENT + HEADER_V4.size)
        byte = handle.read(1)
        handle.seek(-1, 1)
        handle.write(bytes([byte[0] ^ 0xFF]))


def build_shape(shape: str, master: Path, k: int, tmp: Path) -> tuple[list[Path], Path]:
    """(backup folders, slave store) for ``shape``, cut around the k-th record."""
    offsets = record_offsets(master)
    backup, slave = tmp / "backup", tmp / "slave"
    if shape == "backup-older":  # taken before the slave's last records arrived
        copy_store(master, tmp / "old")
        cut_slave(tmp / "old", offsets[k])
        backup = tmp / "old" / "commitlog"
        copy_store(master, slave)
        return [backup], slave
    shutil.copytree(master / "commitlog", backup)
    copy_store(master, slave)
    if shape == "in-sync":
        pass
    elif shape == "behind":
        cut_slave(slave, offsets[k])
    elif shape == "diverged":
        diverge_slave(slave, offsets[k], extra=3)
    elif shape == "corrupt-slave":
        cut_slave(slave, offsets[k + 5])
        corrupt_record(slave / "commitlog", offsets[k])
    elif shape == "corrupt-backup":
        cut_slave(slave, offsets[k // 2])
        corrupt_record(backup, offsets[k])
    elif shape == "backup-newer":  # the master's retention removed its oldest segments
        for old in sorted(backup.iterdir())[:2]:
            old.unlink()
        cut_slave(slave, offsets[k])
    elif shape == "empty":
        shutil.rmtree(slave)
        slave.mkdir()
    else:
        raise AssertionError(shape)
    return [backup], slave


def check_shape(spark, shape: str, master: Path, k: int, split: int, tmp: Path) -> dict:
    backups, slave = build_shape(shape, master, k, tmp)
    try:
        expected = expected_report(backups, slave)
    except BackupError:
        with pytest.raises(BackupError, match="an older backup is needed"):
            reconcile(spark, backups, slave, tmp / "out", split_bytes=split, say=lambda _: None)
        return {}
    report = reconcile(spark, backups, slave, tmp / "out", split_bytes=split, say=lambda _: None)
    assert comparable(report) == expected
    check_invariants(report)
    bundle = tmp / "out" / "bundle"
    if report["repair"] is None:
        assert not bundle.exists()
    else:
        start, end = report["repair"]
        log = b"".join(p.read_bytes() for p in sorted(backups[0].iterdir()))
        first = int(sorted(backups[0].iterdir())[0].name)
        held = b"".join(p.read_bytes() for p in sorted(bundle.iterdir()) if p.name.isdigit())
        assert held == log[start - first : end - first]
    return report


CASES = [
    ("corrupt-backup", 420, 16 * 1024),
    ("backup-older", 450, 16 * 1024),
    ("backup-newer", 400, 64 * 1024),
    ("backup-newer", 40, 64 * 1024),  # the slave ends before the backup starts: refused
    ("in-sync", 0, 32 * 1024),
]


@pytest.mark.parametrize(("shape", "k", "split"), CASES, ids=[f"{s}-{k}" for s, k, _ in CASES])
def test_report_matches_the_reference(spark, master, tmp_path, shape, k, split) -> None:
    report = check_shape(spark, shape, master, k, split, tmp_path)
    findings = " ".join(report.get("findings", []))
    if shape == "backup-older":
        assert "newer backup is needed" in findings and report["repair"] is None
    if shape == "corrupt-backup":
        assert "the backup has a corrupt record" in findings
    if shape == "backup-newer" and report:
        assert report["haCatchUpSuffices"] and "HA catch-up suffices" in findings
    if shape == "in-sync":
        assert "nothing to repair" in findings and report["missing"] == 0


SHAPES = ["behind", "diverged", "corrupt-slave", "corrupt-backup", "backup-older",
          "backup-newer", "empty", "in-sync"]  # fmt: skip


@pytest.mark.slow
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    shape=st.sampled_from(SHAPES),
    k=st.integers(10, COUNT - 10),
    split=st.sampled_from([4 * 1024, 10_000, 16 * 1024, 64 * 1024]),
)
def test_generated_shapes_match_the_reference(spark, master, shape, k, split) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        check_shape(spark, shape, master, k, split, Path(tmp))
