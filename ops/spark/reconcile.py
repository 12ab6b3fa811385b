"""The lag-reconciliation job: compare a master's CommitLog backup(s) with a stopped slave's
store, report what the slave lacks or has wrong, and write a repair bundle.

Spark schedules Python tasks; the JVM carries no record. Each log is parsed once, one task per
range, into Parquet parts (``parts``): the master's are ``index.parquet`` (kept for ad-hoc
queries; scratch with ``--dry-run``), the slave's scratch under ``--out``, removed at the end.
Each parse task returns its range's figures, folded on the driver into the side's (messages,
end, first corrupt record). The later questions (where the slave first differs, per-queue
figures) are tasks over the parts (``compare``), reading only the columns they need. The
driver receives a few fields per range and one row per topic/queue, never a record. What the
figures mean is decided in ``verdict`` (pure); the bundle is written by ``bundle``.
"""

from __future__ import annotations

import functools
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ops.spark.bundle import remove_stale_bundle, write_bundle
from ops.spark.compare import (
    Trust,
    first_mismatch,
    master_queues,
    merge_master,
    merge_slave,
    slave_queues,
)
from ops.spark.parts import RangeSummary, parse_to_parquet, part_name, summarise
from ops.spark.progress import Phase, Ticker, group_progress
from ops.spark.segments import BackupError, Segment, list_segments, merge_backups
from ops.spark.verdict import LogSide, Verdict, decide, lag_millis

MAX_LISTED = 100  # corrupt records named in the report, per side
# Parsed logs the job reads and removes (the master's is index.parquet unless --dry-run).
SCRATCH_MASTER, SCRATCH_SLAVE = ".master.parquet", ".slave.parquet"


def check_backups(backups: list[Path]) -> tuple[list[Segment], int]:
    """The backups' segments merged and checked (before Spark starts)."""
    return merge_backups(backups)


class _Parsed:
    """One side's log, parsed once into Parquet parts in ``folder``, and its figures from the
    parse's own range summaries (first corrupt record, trusted messages, end, hosts)."""

    def __init__(self, folder: Path, ranges_: list[RangeSummary], segments: list[Segment]) -> None:
        self.start = segments[0].start
        self.parts = [part_name(r.start) for r in ranges_]
        self.summary = summarise(ranges_, MAX_LISTED)
        self.corrupt = [{"offset": o, "reason": r} for o, r in self.summary.corrupt]
        self.first_corrupt = self.summary.first_corrupt
        self.trust = Trust(str(folder), self.first_corrupt)
        end = self.summary.end
        self.side = LogSide(
            self.start,
            self.start if end is None else end,
            self.summary.messages,
            self.first_corrupt,
        )


def reconcile(
    spark: Any,
    backups: list[Path],
    slave_store: Path,
    out: Path,
    *,
    dry_run: bool = False,
    split_bytes: int = 256 << 20,
    say: Callable[[str], None] | None = None,
    phase: Phase | None = None,
) -> dict[str, Any]:
    phase = phase or (Phase(say) if say else Phase())
    segments, segment_size = check_backups(backups)
    slave_log = slave_store / "commitlog"
    slave_segments = list_segments(slave_log) if slave_log.exists() else []
    phase(
        f"{len(segments)} backup segments of {segment_size} bytes, "
        f"{len(slave_segments)} on the slave"
    )
    if slave_segments and slave_segments[0].size != segment_size:
        raise BackupError(
            f"the slave's segments are {slave_segments[0].size} bytes, the backup's {segment_size}"
        )
    out.mkdir(parents=True, exist_ok=True)
    scratch = [out / SCRATCH_SLAVE] + ([out / SCRATCH_MASTER] if dry_run else [])
    try:
        index = out / (SCRATCH_MASTER if dry_run else "index.parquet")
        with _ticking(spark, phase, "parsing the backup", segments):
            master = _Parsed(index, parse_to_parquet(spark, segments, split_bytes, index), segments)
        hosts = master.summary.hosts
        if len(hosts) > 1:
            count = f"more than {len(hosts)}" if master.summary.more_hosts else len(hosts)
            raise BackupError(
                f"the backup mixes records of {count} masters (e.g. {hosts[0]}, {hosts[-1]}): "
                "a segment from another cluster? refusing to build a bundle from it"
            )
        phase(
            f"master backup parsed: {master.side.messages} messages up to offset "
            f"{master.side.end}" + ("" if dry_run else f"; index in {index}")
        )
        slave = None
        if slave_segments:
            with _ticking(spark, phase, "parsing the slave", slave_segments):
                folder = out / SCRATCH_SLAVE
                parsed = parse_to_parquet(spark, slave_segments, split_bytes, folder)
                slave = _Parsed(folder, parsed, slave_segments)
        verdict = decide(master.side, slave and slave.side, _mismatch(spark, master, slave))
        agree_text = "nothing (empty)" if verdict.agree is None else str(verdict.agree)
        phase(
            f"slave ends at {slave.side.end if slave else 0}, agrees with the master up to "
            f"{agree_text}"
        )
        report = _report(backups, slave_store, segment_size, master, slave, verdict)
        report["queues"] = _queues(spark, master, slave, verdict)
        report["missing"] = sum(q["missing"] for q in report["queues"])
        report["missingBytes"] = sum(q["missingBytes"] for q in report["queues"])
        phase(f"{report['missing']} messages ({report['missingBytes']} bytes) missing on the slave")
        if not dry_run and verdict.repair is not None:
            start, end = verdict.repair
            report["bundle"] = write_bundle(segments, start, end, out / "bundle", report)
            phase(
                f"repair bundle: {report['bundle']['bytes']} bytes in "
                f"{len(report['bundle']['files'])} file(s)"
            )
        else:
            remove_stale_bundle(out / "bundle")
        (out / "report.json").write_text(json.dumps(report, indent=2, sort_keys=True))
        return report
    finally:
        for folder in scratch:
            shutil.rmtree(folder, ignore_errors=True)


def _ticking(spark: Any, phase: Phase, label: str, segments: list[Segment]) -> Ticker:
    """Progress lines while ``label`` runs: its jobs run under a job group named after it."""
    context = spark.sparkContext
    context.setJobGroup(label, label)
    tracker = context.statusTracker()
    total = sum(seg.size for seg in segments)
    return Ticker(phase, label, total, lambda: group_progress(tracker, label))


def _mismatch(spark: Any, master: _Parsed, slave: _Parsed | None) -> int | None:
    """The lowest offset of a trusted slave message inside the master's trusted range that the
    master has not, byte for byte, at that offset: one task per slave part."""
    if slave is None:
        return None
    find = functools.partial(
        first_mismatch, master.trust, slave.trust, master.side.start, master.side.end
    )
    ours = set(master.parts)
    pairs = [(name, name in ours) for name in slave.parts]
    found = _each_part(spark, pairs).map(find).filter(lambda o: o is not None).collect()
    return min(found, default=None)


def _each_part(spark: Any, parts: list) -> Any:
    return spark.sparkContext.parallelize(parts, max(len(parts), 1))


def _report(
    backups: list[Path],
    slave_store: Path,
    segment_size: int,
    master: _Parsed,
    slave: _Parsed | None,
    verdict: Verdict,
) -> dict[str, Any]:
    hosts = list(master.summary.hosts)
    return {
        "backups": [str(b) for b in backups],
        "slaveStore": str(slave_store),
        "segmentSize": segment_size,
        "masterStoreHosts": hosts,
        "master": {
            "messages": master.side.messages,
            "firstOffset": master.side.start,
            "endOffset": master.side.end,
            "corrupt": master.corrupt,
        },
        "slave": {
            "messages": slave.side.messages if slave else 0,
            "endOffset": slave.side.end if slave else 0,
            "corrupt": slave.corrupt if slave else [],
        },
        "firstDivergence": verdict.divergence,
        "agreeOffset": verdict.agree,
        "repair": None if verdict.repair is None else list(verdict.repair),
        "haCatchUpSuffices": verdict.ha_suffices,
        "findings": list(verdict.findings),
    }


def _queues(spark: Any, master: _Parsed, slave: _Parsed | None, verdict: Verdict) -> list[dict]:
    """Per topic/queue: the master's max queue offset, what the slave keeps of it (below the
    agreeing offset), what the bundle brings, and the time lag. Each part's figures are merged
    by queue in Spark; one row per queue reaches the driver."""
    missing_from = verdict.repair[0] if verdict.repair else master.side.end
    m_queue = dict(
        _each_part(spark, master.parts)
        .flatMap(functools.partial(master_queues, master.trust, missing_from))
        .reduceByKey(merge_master)
        .collect()
    )
    s_queue: dict = {}
    if slave is not None and verdict.agree is not None:
        s_queue = dict(
            _each_part(spark, slave.parts)
            .flatMap(functools.partial(slave_queues, slave.trust, verdict.agree))
            .reduceByKey(merge_slave)
            .collect()
        )
    rows = []
    for (topic, queue_id), (master_max, master_ts, missing, size) in sorted(m_queue.items()):
        slave_max, slave_ts = s_queue.get((topic, queue_id), (None, None))
        rows.append(
            {
                "topic": topic,
                "queueId": queue_id,
                "masterMaxOffset": master_max,
                "slaveMaxOffset": -1 if slave_max is None else slave_max,
                "missing": missing,
                "missingBytes": size,
                "lagMillis": lag_millis(master_ts, slave_ts),
            }
        )
    return rows


def summary(report: dict[str, Any]) -> str:
    agree = report["agreeOffset"]
    lines = [
        f"master: {report['master']['messages']} messages, ends at {report['master']['endOffset']}",
        f"slave:  {report['slave']['messages']} messages, ends at {report['slave']['endOffset']}",
        f"agree up to {'nothing (empty slave)' if agree is None else agree}; "
        f"first divergence: {report['firstDivergence']}",
        "",
        f"{'topic':<24} {'queue':>5} {'master max':>11} {'slave max':>10} {'missing':>8} "
        f"{'bytes':>10} {'lag ms':>9}",
    ]
    for q in report["queues"]:
        lag = "-" if q["lagMillis"] is None else q["lagMillis"]
        lines.append(
            f"{q['topic']:<24} {q['queueId']:>5} {q['masterMaxOffset']:>11} "
            f"{q['slaveMaxOffset']:>10} {q['missing']:>8} {q['missingBytes']:>10} {lag:>9}"
        )
    lines += ["", *(f"finding: {f}" for f in report["findings"])]
    return "\n".join(lines)
