"""A brute-force reference for the reconciliation report: both logs read whole, segment by
segment from each segment's start with the store's pure-Python record scan (no Spark, no task
splits, none of ops.spark.reader's fast path), compared record by record on their bytes. The
job's report must equal what this computes, line for line."""

from __future__ import annotations

import shutil
from collections import defaultdict
from pathlib import Path
from types import ModuleType
from typing import Any, NamedTuple

import pytest

from ops.spark.segments import BackupError, list_segments
from remoting.record import RecordKind, python_scan_record


class Rec(NamedTuple):
    phys_offset: int
    size: int
    topic: str
    queue_id: int
    queue_offset: int
    store_timestamp: int


class Log(NamedTuple):
    start: int
    records: list[Rec]  # messages before the first corrupt record
    first_corrupt: int | None
    data: dict[int, bytes]  # record bytes by offset

    @property
    def end(self) -> int:
        return self.records[-1].phys_offset + self.records[-1].size if self.records else self.start


def need_spark() -> ModuleType:
    """pyspark, or the test skips saying what is missing and how to get it."""
    pyspark = pytest.importorskip(
        "pyspark", reason="pyspark is not installed (pip install '.[spark]')"
    )
    if shutil.which("java") is None:
        pytest.skip(
            "no `java` on PATH: Spark needs Java 17 or 21 "
            "(Debian: apt-get install openjdk-17-jre-headless; `make test` does it as root)"
        )
    return pyspark


def read_log(folders: list[Path]) -> Log | None:
    segments = {s.start: s for f in folders if f.is_dir() for s in list_segments(f)}
    if not segments:
        return None
    records, data, first_corrupt = [], {}, None
    for start in sorted(segments):
        view = memoryview(Path(segments[start].path).read_bytes())
        pos = 0
        while pos < len(view):
            scan = python_scan_record(view, pos, check_crc=True)
            if scan.kind is RecordKind.CORRUPT:
                first_corrupt = start + pos
                break
            if scan.kind is not RecordKind.MESSAGE:
                break
            rec = Rec(start + pos, scan.size, scan.topic, scan.queue_id, scan.queue_offset,
                      scan.store_timestamp)  # fmt: skip
            records.append(rec)
            data[rec.phys_offset] = bytes(view[pos : pos + scan.size])
            pos += scan.size
        if first_corrupt is not None:
            break
    return Log(min(segments), records, first_corrupt, data)


def first_mismatch(master: Log, slave: Log) -> int | None:
    for rec in slave.records:
        inside = master.start <= rec.phys_offset < master.end
        if inside and master.data.get(rec.phys_offset) != slave.data[rec.phys_offset]:
            return rec.phys_offset
    return None


def expected_report(backups: list[Path], slave_store: Path) -> dict[str, Any]:
    """The report's figures by definition; raises BackupError where the job must refuse."""
    master = read_log(backups)
    assert master is not None and master.records, "a reference needs a backup with messages"
    slave = read_log([slave_store / "commitlog"])
    if slave is None:
        agree, divergence, repair, ha = None, None, (master.start, master.end), False
    else:
        candidates = [o for o in (first_mismatch(master, slave), slave.first_corrupt) if o]
        divergence = min(candidates) if candidates else None
        agree = min(slave.end, master.end, *candidates)
        if agree < master.start:
            raise BackupError("an older backup is needed")
        ahead = divergence is None and slave.end > master.end
        repair = None if ahead else (agree, master.end)
        ha = divergence is None and master.start <= slave.end < master.end and bool(slave.records)
    missing_from = repair[0] if repair else master.end
    queues: dict[tuple[str, int], dict[str, Any]] = defaultdict(
        lambda: {"max": -1, "ts": None, "missing": 0, "bytes": 0, "s_max": -1, "s_ts": None}
    )
    for rec in master.records:
        q = queues[(rec.topic, rec.queue_id)]
        q["max"] = max(q["max"], rec.queue_offset)
        q["ts"] = max(q["ts"] or 0, rec.store_timestamp)
        if rec.phys_offset >= missing_from:
            q["missing"] += 1
            q["bytes"] += rec.size
    for rec in slave.records if slave and agree is not None else ():
        if rec.phys_offset < agree and (rec.topic, rec.queue_id) in queues:
            q = queues[(rec.topic, rec.queue_id)]
            q["s_max"] = max(q["s_max"], rec.queue_offset)
            q["s_ts"] = max(q["s_ts"] or 0, rec.store_timestamp)
    lines = [
        {
            "topic": topic,
            "queueId": queue_id,
            "masterMaxOffset": q["max"],
            "slaveMaxOffset": q["s_max"],
            "missing": q["missing"],
            "missingBytes": q["bytes"],
            "lagMillis": None if q["s_ts"] is None else max(0, q["ts"] - q["s_ts"]),
        }
        for (topic, queue_id), q in sorted(queues.items())
    ]
    return {
        "master": {
            "messages": len(master.records),
            "firstOffset": master.start,
            "endOffset": master.end,
            "firstCorrupt": master.first_corrupt,
        },
        "slave": {
            "messages": len(slave.records) if slave else 0,
            "endOffset": slave.end if slave else 0,
            "firstCorrupt": slave.first_corrupt if slave else None,
        },
        "firstDivergence": divergence,
        "agreeOffset": agree,
        "repair": None if repair is None else list(repair),
        "haCatchUpSuffices": ha,
        "queues": lines,
        "missing": sum(line["missing"] for line in lines),
        "missingBytes": sum(line["missingBytes"] for line in lines),
    }


def comparable(report: dict[str, Any]) -> dict[str, Any]:
    """The job's report in the reference's terms (corrupt lists by their first offset)."""
    out = {k: report[k] for k in ("firstDivergence", "agreeOffset", "repair",
                                  "haCatchUpSuffices", "queues", "missing", "missingBytes")}  # fmt: skip
    for side in ("master", "slave"):
        out[side] = {k: v for k, v in report[side].items() if k != "corrupt"}
        corrupt = report[side]["corrupt"]
        out[side]["firstCorrupt"] = corrupt[0]["offset"] if corrupt else None
    return out


def check_invariants(report: dict[str, Any]) -> None:
    """What holds for every report, whatever the shape."""
    agree = report["agreeOffset"]
    if agree is not None:
        assert agree <= report["master"]["endOffset"]
        assert agree <= report["slave"]["endOffset"]
    for line in report["queues"]:
        assert line["lagMillis"] is None or line["lagMillis"] >= 0
        assert line["slaveMaxOffset"] <= line["masterMaxOffset"]
    if report["haCatchUpSuffices"]:
        assert report["firstDivergence"] is None
        assert agree == report["slave"]["endOffset"] < report["master"]["endOffset"]
        assert any("HA catch-up suffices" in f for f in report["findings"])
    else:
        assert not any("HA catch-up suffices" in f for f in report["findings"])
