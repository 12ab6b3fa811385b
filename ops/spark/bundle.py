"""The repair bundle: the master's bytes [start, end) as segment-aligned files named by their
start offset, and ``manifest.msgpack`` with a SHA-256 per file (``apply`` checks them all
before it changes a byte). Pure file work: no Spark."""

from __future__ import annotations

import hashlib
import shutil
import time
from pathlib import Path
from typing import Any

import msgpack

from ops.spark.segments import BackupError, Segment

BUNDLE_VERSION = 1
COPY_CHUNK = 8 << 20


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
        files.append(
            {"file": name, "start": lo, "end": hi, "sha256": _copy(seg, lo, hi, folder / name)}
        )
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


def _copy(seg: Segment, lo: int, hi: int, target_path: Path) -> str:
    digest = hashlib.sha256()
    with open(seg.path, "rb") as source, open(target_path, "wb") as target:
        source.seek(lo - seg.start)
        left = hi - lo
        while left:
            chunk = source.read(min(COPY_CHUNK, left))
            if not chunk:
                raise BackupError(f"{seg.path} is shorter than its listing said")
            target.write(chunk)
            digest.update(chunk)
            left -= len(chunk)
    return digest.hexdigest()


def remove_stale_bundle(folder: Path) -> None:
    """A run that builds no bundle leaves none behind from an earlier run: applying that one
    would act on a report that no longer holds."""
    if folder.is_dir():
        shutil.rmtree(folder)
