"""CommitLog backups as ranges (pure: no Spark here; ``reader`` streams the records).

A backup is a folder of segment files named by their 20-digit start offset. The driver lists
(path, file start, range start, range end) ranges, one per segment or per aligned sub-range,
and each task reads its range (see ``ops.spark.reader``).
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import NamedTuple
from urllib.parse import unquote, urlsplit

NAME_DIGITS = 20
COMPARE_CHUNK = 8 << 20


class BackupError(ValueError):
    """The backup cannot be read as one CommitLog; the message says where and why."""


class Segment(NamedTuple):
    path: str
    start: int  # the offset its name says
    size: int  # bytes in the file


class Range(NamedTuple):
    path: str
    file_start: int
    start: int  # absolute offsets [start, end)
    end: int


def local_path(text: str) -> Path:
    """A backup or store location as a path every Spark task opens itself: a plain path or a
    ``file://`` URI (the form a shared mount is named by on a cluster). Other schemes are
    refused: the tasks read with Python's own files, not Hadoop's."""
    parts = urlsplit(text)
    if parts.scheme in ("", "file") and not (parts.scheme == "" and parts.netloc):
        if parts.scheme == "file" and parts.netloc not in ("", "localhost"):
            raise BackupError(f"{text}: a file:// URI names no host (file:///path)")
        return Path(unquote(parts.path) if parts.scheme else text)
    raise BackupError(
        f"{text}: {parts.scheme}:// is not read by this job's tasks; mount the storage at the "
        "same path on the driver and every worker (NFS, a FUSE mount of HDFS or S3) and pass "
        "that path or a file:// URI"
    )


def list_segments(folder: Path | str) -> list[Segment]:
    """The segments of a CommitLog folder, in order, checked for gaps and overlaps."""
    folder = Path(folder)
    if not folder.is_dir():
        raise BackupError(f"{folder}: not a directory")
    segments = []
    for path in sorted(folder.iterdir()):
        if not path.is_file() or path.name.startswith("."):
            continue
        if len(path.name) != NAME_DIGITS or not path.name.isdigit():
            raise BackupError(f"{path}: not a CommitLog segment (name must be a 20-digit offset)")
        segments.append(Segment(str(path), int(path.name), path.stat().st_size))
    for previous, current in itertools.pairwise(segments):
        expected = previous.start + previous.size
        if current.start > expected:
            raise BackupError(
                f"missing segment: {Path(previous.path).name} ends at {expected} but the next "
                f"file starts at {current.start} ({current.start - expected} bytes absent)"
            )
        if current.start < expected:
            raise BackupError(
                f"overlapping segments: {Path(previous.path).name} runs to {expected}, "
                f"past {Path(current.path).name}"
            )
    return segments


def ranges(segments: list[Segment], split_bytes: int | None = None) -> list[Range]:
    out = []
    for seg in segments:
        step = split_bytes or max(seg.size, 1)
        for start in range(0, max(seg.size, 1), step):
            out.append(
                Range(
                    seg.path, seg.start, seg.start + start, seg.start + min(seg.size, start + step)
                )
            )
    return out


def merge_backups(backups: list[Path]) -> tuple[list[Segment], int]:
    """Segments of every backup, merged by offset (a later backup may extend an earlier one);
    the segment size they share. A segment in several backups must be one file's copies (the
    shorter a prefix of the longer): the longer is read."""
    by_start: dict[int, Segment] = {}
    for backup in backups:
        for seg in list_segments(backup):
            old = by_start.get(seg.start)
            if old is not None:
                _check_copies(old, seg)
            if old is None or seg.size > old.size:
                by_start[seg.start] = seg
    if not by_start:
        raise BackupError(f"no CommitLog segment in {', '.join(map(str, backups))}")
    segments = [by_start[k] for k in sorted(by_start)]
    sizes = {seg.size for seg in segments}  # a store's segments are all preallocated whole
    if len(sizes) != 1:
        raise BackupError(f"segments of different sizes {sorted(sizes)}: not one CommitLog")
    for previous, current in itertools.pairwise(segments):
        if current.start != previous.start + previous.size:
            raise BackupError(
                f"the backups leave a hole between {previous.start + previous.size} and "
                f"{current.start}: a segment is missing"
            )
    return segments, next(iter(sizes))


def _check_copies(a: Segment, b: Segment) -> None:
    with open(a.path, "rb") as left, open(b.path, "rb") as right:
        compared = 0
        while compared < min(a.size, b.size):
            step = min(COMPARE_CHUNK, min(a.size, b.size) - compared)
            if left.read(step) != right.read(step):
                raise BackupError(
                    f"{a.path} and {b.path} differ within their first {compared + step} bytes: "
                    "the backups are not copies of one log"
                )
            compared += step
