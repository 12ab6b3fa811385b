"""Atomic JSON files under ``storePathRootDir/config/`` (RocketMQ's ConfigManager).

A write goes to ``<name>.tmp``, is fsynced, the current file becomes ``<name>.bak`` and the
temp file is renamed over the name, then the directory is fsynced: a crash at any point
leaves either the old or the new file whole, and the previous version in ``.bak``. A load
falls back to ``.bak`` when the file is missing or unreadable, as Java's does.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import trio

from remoting import fastjson

log = logging.getLogger(__name__)


def write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    if path.exists():
        bak = path.with_name(path.name + ".bak")
        bak.unlink(missing_ok=True)
        os.link(path, bak)
    os.replace(tmp, path)
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_json(path: Path) -> Any | None:
    """The parsed file, else its ``.bak``, else None (nothing persisted yet)."""
    for candidate in (path, path.with_name(path.name + ".bak")):
        try:
            text = candidate.read_text(encoding="utf-8")
        except FileNotFoundError:
            continue
        if not text.strip():
            continue
        try:
            return fastjson.loads(text)
        except Exception as exc:
            log.error("%s is unreadable (%s); trying the backup", candidate, exc)
    return None


class JsonConfigFile:
    """One persisted manager: ``encode()`` is called on the event loop (the tables are only
    touched there), the write runs in a worker thread."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._written: str | None = None

    def persist_sync(self, text: str) -> None:
        if text != self._written:
            write_atomically(self.path, text)
            self._written = text

    async def persist(self, text: str) -> None:
        if text != self._written:
            await trio.to_thread.run_sync(write_atomically, self.path, text)
            self._written = text

    def load(self) -> Any | None:
        data = read_json(self.path)
        return data
