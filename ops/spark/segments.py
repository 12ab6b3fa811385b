"""CommitLog backups as ranges (pure: no Spark here; ``reader`` streams the records).

A backup is a folder of segment files named by their 20-digit start offset. The driver lists
(path, file start, range start, range end) ranges, one per segment or per aligned sub-range,
and each task reads its range (see ``ops.spark.reader``).
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import NamedTuple

NAME_DIGITS = 20


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
