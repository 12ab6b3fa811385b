"""The promise a member gave (promises.py), kept in the store root so that a member killed and
started again inside its promise still keeps it: ``controllerPromise`` holds the promise's end
as epoch milliseconds (wall clock: the process's monotonic clock does not survive it).

Written before the promise is answered (temporary file, fsync, rename). A wall clock stepped
back makes the promise last longer, which is safe; an unreadable file counts as a promise of
``fallback_s`` from now (we cannot tell what was promised, so we keep the longest we give).
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

log = logging.getLogger(__name__)

FILE_NAME = "controllerPromise"
MAX_TEXT = 32


def save(store_root: Path, until_wall_ms: int) -> None:
    path = store_root / FILE_NAME
    tmp = path.with_name(FILE_NAME + ".tmp")
    store_root.mkdir(parents=True, exist_ok=True)
    with tmp.open("w", encoding="ascii") as f:
        f.write(str(until_wall_ms))
        f.flush()
        os.fsync(f.fileno())
    tmp.replace(path)


def remaining_s(store_root: Path, fallback_s: float, *, now_ms: int | None = None) -> float:
    """Seconds left of the promise saved here (0 when none is)."""
    now_ms = time.time_ns() // 1_000_000 if now_ms is None else now_ms
    try:
        text = (store_root / FILE_NAME).read_text(encoding="ascii")[: MAX_TEXT + 1]
    except FileNotFoundError:
        return 0.0
    except (OSError, UnicodeDecodeError) as exc:
        log.warning(
            "controller: %s unreadable (%s): keeping a promise of %s s", FILE_NAME, exc, fallback_s
        )
        return fallback_s
    text = text.strip()
    if len(text) > MAX_TEXT or not text.isdigit():
        log.warning(
            "controller: %s holds %r: keeping a promise of %s s", FILE_NAME, text[:20], fallback_s
        )
        return fallback_s
    return min(max(0.0, (int(text) - now_ms) / 1000), fallback_s)
