"""The lag-reconciliation job: compare a master's CommitLog backup(s) with a stopped slave's
store, report what the slave lacks or has wrong, and write a repair bundle.

Phases (each prints a progress line): list and check segments; parse both logs in Spark; find the
slave's end and the first offset where it diverges from the master (full outer join on physical
offset, comparing record size and a CRC of the whole record); per topic/queue counts, bytes and
time lag; the per-message index as Parquet; the bundle (segment-aligned files of the master's
bytes from the last agreeing offset, a msgpack manifest with SHA-256 per file).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgpack

from ops.spark.segments import BackupError, Segment, list_segments

BUNDLE_VERSION = 1
COPY_CHUNK = 8 << 20


def _say(line: str) -> None:
    print(line, flush=True)


class Phase:
    def __init__(self, out: Callable[[str], None]) -> None:
        self.out = out
        self.t0 = time.monotonic()
        self.n = 0

    def __call__(self, text: str) -> None:
        self.n += 1
        self.out(f"[{self.n}] {text} ({time.monotonic() - self.t0:.1f} s)")


def check_backups(backups: list[Path]) -> tuple[list[Segment], int]:
    """Segments of every backup, merged by offset (a later backup may extend an earlier one);
    the segment size they share."""
    by_start: dict[int, Segment] = {}
    for backup in backups:
        for seg in list_segments(backup):
            old = by_start.get(seg.start)
            if old is None or seg.size > old.size:
                by_start[seg.start] = seg
    if not by_start:
        raise BackupError(f"no CommitLog segment in {', '.join(map(str, backups))}")
    segments = [by_start[k] for k in sorted(by_start)]
    sizes = {seg.size for seg in segments}
    if len(sizes) != 1:
        raise BackupError(f"segments of different sizes {sorted(sizes)}: not one CommitLog")
    for previous, current in itertools.pairwise(segments):
        if current.start != previous.start + previous.size:
            raise BackupError(
                f"the backups leave a hole between {previous.start + previous.size} and "
                f"{current.start}: a segment is missing"
            )
    return segments, sizes.pop()


def reconcile(
    spark: Any,
    backups: list[Path],
    slave_store: Path,
    out: Path,
    *,
    dry_run: bool = False,
    split_bytes: int = 256 << 20,
    say: Callable[[str], None] = _say,
) -> dict[str, Any]:
    from pyspark.sql import functions as F

    phase = Phase(say)
    segments, segment_size = check_backups(backups)
    slave_log = slave_store / "commitlog"
    slave_segments = list_segments(slave_log) if slave_log.exists() else []
    phase(
        f"{len(segments)} backup segments of {segment_size} bytes, {len(slave_segments)} on the slave"
    )
    if slave_segments and slave_segments[0].size != segment_size:
        raise BackupError(
            f"the slave's segments are {slave_segments[0].size} bytes, the backup's {segment_size}"
        )

    def load(folder: Path):
        return (
            spark.read.format("commitlog").option("splitBytes", str(split_bytes)).load(str(folder))
        )

    master = None
    for backup in backups:
        frame = load(backup)
        master = frame if master is None else master.unionByName(frame)
    master = master.dropDuplicates(["phys_offset", "digest", "size", "kind"]).cache()
    slave = load(slave_log).cache() if slave_segments else None

    m_msgs = master.filter(F.col("kind") == "MESSAGE")
    stats = m_msgs.agg(
        F.count("*").alias("n"),
        F.min("phys_offset").alias("lo"),
        F.max(F.col("phys_offset") + F.col("size")).alias("end"),
        F.countDistinct("store_host").alias("hosts"),
        F.max("store_timestamp").alias("ts"),
    ).first()
    if not stats["n"]:
        raise BackupError("the backup holds no message")
    disagree = (
        master.groupBy("phys_offset")
        .agg(F.countDistinct("digest").alias("d"))
        .filter("d > 1")
        .count()
    )
    if disagree:
        raise BackupError(f"the backups disagree about {disagree} records: not copies of one log")
    hosts = [r["store_host"] for r in m_msgs.select("store_host").distinct().collect()]
    report: dict[str, Any] = {
        "backups": [str(b) for b in backups],
        "slaveStore": str(slave_store),
        "segmentSize": segment_size,
        "masterStoreHosts": sorted(hosts),
        "master": {
            "messages": stats["n"],
            "firstOffset": segments[0].start,
            "endOffset": stats["end"],
        },
        "findings": [],
    }
    findings: list[str] = report["findings"]
    if stats["hosts"] > 1:
        raise BackupError(
            f"the backup mixes records of {stats['hosts']} masters {sorted(hosts)}: a segment "
            "from another cluster? refusing to build a bundle from it"
        )
    corrupt_m = master.filter(F.col("kind") == "CORRUPT").select("phys_offset", "topic").collect()
    report["master"]["corrupt"] = [{"offset": r[0], "reason": r[1]} for r in corrupt_m]
    if corrupt_m:
        findings.append(
            f"the backup has {len(corrupt_m)} corrupt record(s); records after them in their segment are unread"
        )
    phase(f"master backup parsed: {stats['n']} messages up to offset {stats['end']}")

    # ---------------------------------------------------------------- the slave's end and divergence
    m_end = stats["end"]
    if slave is None:
        slave_end, divergence, s_messages, corrupt_s = 0, None, 0, []
        findings.append("the slave store is empty: the bundle holds the whole backup")
    else:
        s_msgs = slave.filter(F.col("kind") == "MESSAGE")
        s_stats = s_msgs.agg(
            F.count("*").alias("n"), F.max(F.col("phys_offset") + F.col("size")).alias("end")
        ).first()
        s_messages, slave_end = s_stats["n"], s_stats["end"] or slave_segments[0].start
        corrupt_s = (
            slave.filter(F.col("kind") == "CORRUPT").select("phys_offset", "topic").collect()
        )
        theirs = m_msgs.select(
            "phys_offset", F.col("digest").alias("m_digest"), F.col("size").alias("m_size")
        )
        bad = (
            s_msgs.filter(F.col("phys_offset") >= F.lit(segments[0].start))
            .filter(F.col("phys_offset") < F.lit(m_end))
            .join(theirs, "phys_offset", "left")
            .filter(
                F.col("m_digest").isNull()
                | (F.col("m_digest") != F.col("digest"))
                | (F.col("m_size") != F.col("size"))
            )
        )
        divergence = bad.agg(F.min("phys_offset")).first()[0]
        if corrupt_s:
            first_corrupt = min(r[0] for r in corrupt_s)
            divergence = first_corrupt if divergence is None else min(divergence, first_corrupt)
            findings.append(f"the slave has a corrupt record at {first_corrupt}")
    report["slave"] = {
        "messages": s_messages,
        "endOffset": slave_end,
        "corrupt": [{"offset": r[0], "reason": r[1]} for r in corrupt_s],
    }
    report["firstDivergence"] = divergence
    agree = min(slave_end, divergence) if divergence is not None else slave_end
    if slave is None:
        agree = segments[0].start
    if agree < segments[0].start:
        raise BackupError(
            f"the slave's log agrees with the master only up to {agree}, but the backup starts at "
            f"{segments[0].start}: an older backup is needed to bridge the gap"
        )
    if divergence is not None:
        findings.append(
            f"the slave diverges from the master at offset {divergence}: its log is cut there"
        )
    if slave_end > m_end and divergence is None:
        findings.append(
            f"the slave ({slave_end}) is ahead of the backup ({m_end}): a newer backup is needed"
        )
    report["agreeOffset"] = agree
    phase(f"slave ends at {slave_end}, agrees with the master up to {agree}")

    # ---------------------------------------------------------------- per topic and queue
    missing = m_msgs.filter(F.col("phys_offset") >= F.lit(agree))
    m_queue = m_msgs.groupBy("topic", "queue_id").agg(
        F.max("queue_offset").alias("master_max"), F.max("store_timestamp").alias("master_ts")
    )
    lacking = missing.groupBy("topic", "queue_id").agg(
        F.count("*").alias("missing"), F.sum("size").alias("missing_bytes")
    )
    if slave is not None:
        kept = slave.filter((F.col("kind") == "MESSAGE") & (F.col("phys_offset") < F.lit(agree)))
        s_queue = kept.groupBy("topic", "queue_id").agg(
            F.max("queue_offset").alias("slave_max"), F.max("store_timestamp").alias("slave_ts")
        )
    else:
        s_queue = spark.createDataFrame(
            [], "topic string, queue_id int, slave_max long, slave_ts long"
        )
    queues = (
        m_queue.join(s_queue, ["topic", "queue_id"], "left")
        .join(lacking, ["topic", "queue_id"], "left")
        .orderBy("topic", "queue_id")
        .collect()
    )
    report["queues"] = [
        {
            "topic": r["topic"],
            "queueId": r["queue_id"],
            "masterMaxOffset": r["master_max"],
            "slaveMaxOffset": -1 if r["slave_max"] is None else r["slave_max"],
            "missing": r["missing"] or 0,
            "missingBytes": r["missing_bytes"] or 0,
            "lagMillis": (r["master_ts"] - r["slave_ts"]) if r["slave_ts"] is not None else None,
        }
        for r in queues
    ]
    report["missing"] = sum(q["missing"] for q in report["queues"])
    report["missingBytes"] = sum(q["missingBytes"] for q in report["queues"])
    phase(f"{report['missing']} messages ({report['missingBytes']} bytes) missing on the slave")

    out.mkdir(parents=True, exist_ok=True)
    if not dry_run:
        master.write.mode("overwrite").parquet(str(out / "index.parquet"))
        phase(f"per-message index written to {out / 'index.parquet'}")
        report["bundle"] = write_bundle(segments, agree, m_end, out / "bundle", report)
        phase(
            f"repair bundle: {report['bundle']['bytes']} bytes in {len(report['bundle']['files'])} file(s)"
        )
    (out / "report.json").write_text(json.dumps(report, indent=2, sort_keys=True))
    master.unpersist()
    if slave is not None:
        slave.unpersist()
    return report


def write_bundle(
    segments: list[Segment], start: int, end: int, folder: Path, report: dict[str, Any]
) -> dict[str, Any]:
    """The master's bytes [start, end) as segment-aligned files plus ``manifest.msgpack``."""
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.iterdir():
        stale.unlink()
    files = []
    for seg in segments:
        lo, hi = max(start, seg.start), min(end, seg.start + seg.size)
        if lo >= hi:
            continue
        name = f"{lo:020d}"
        digest = hashlib.sha256()
        with open(seg.path, "rb") as source, open(folder / name, "wb") as target:
            source.seek(lo - seg.start)
            left = hi - lo
            while left:
                chunk = source.read(min(COPY_CHUNK, left))
                if not chunk:
                    raise BackupError(f"{seg.path} is shorter than its listing said")
                target.write(chunk)
                digest.update(chunk)
                left -= len(chunk)
        files.append({"file": name, "start": lo, "end": hi, "sha256": digest.hexdigest()})
    manifest = {
        "version": BUNDLE_VERSION,
        "segmentSize": segments[0].size,
        "start": start,
        "end": end,
        "files": files,
        "masterStoreHosts": report["masterStoreHosts"],
        "backups": report["backups"],
        "createdAt": int(time.time() * 1000),
    }
    (folder / "manifest.msgpack").write_bytes(msgpack.packb(manifest))
    return {
        "path": str(folder),
        "bytes": end - start if files else 0,
        "files": [f["file"] for f in files],
    }


def summary(report: dict[str, Any]) -> str:
    lines = [
        f"master: {report['master']['messages']} messages, ends at {report['master']['endOffset']}",
        f"slave:  {report['slave']['messages']} messages, ends at {report['slave']['endOffset']}",
        f"agree up to {report['agreeOffset']}; first divergence: {report['firstDivergence']}",
        "",
        f"{'topic':<24} {'queue':>5} {'master max':>11} {'slave max':>10} {'missing':>8} {'bytes':>10} {'lag ms':>9}",
    ]
    for q in report["queues"]:
        lines.append(
            f"{q['topic']:<24} {q['queueId']:>5} {q['masterMaxOffset']:>11} {q['slaveMaxOffset']:>10} "
            f"{q['missing']:>8} {q['missingBytes']:>10} {q['lagMillis'] if q['lagMillis'] is not None else '-':>9}"
        )
    lines += ["", *(f"finding: {f}" for f in report["findings"])]
    return "\n".join(lines)
