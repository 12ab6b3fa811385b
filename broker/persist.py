"""The broker's JSON configs under ``storePathRootDir/config/`` (RocketMQ's ConfigManager):
topics, subscription groups, consumer offsets, delay offsets.

Each file is a ``DurableFile`` (remoting/atomic_file.py): atomic, crash-safe writes, one at a
time, newest state wins. A load falls back to ``.bak`` when the file is missing or unreadable,
as Java's does.

A change a request asks for (a topic, a group) is written before it is acknowledged: when the
write fails the change is undone and the request refused with ``ConfigPersistError``. Offsets
stay in memory and are written periodically: a failed write is retried at the next period.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from remoting import fastjson
from remoting.atomic_file import DurableFile
from remoting.codes import ResponseCode
from remoting.errors import RequestError

log = logging.getLogger(__name__)


class ConfigPersistError(RequestError):
    """A change that could not be written (ENOSPC, EIO, ...) and was therefore not made."""

    def __init__(self, what: str, exc: OSError) -> None:
        super().__init__(
            ResponseCode.SERVICE_NOT_AVAILABLE,
            f"service not available now: cannot write {what} ({exc.strerror or exc}); the "
            "broker's disk may be full or failing. Nothing was changed",
        )


def read_json(file: DurableFile) -> Any | None:
    """The parsed file, else its ``.bak``, else None (nothing persisted yet)."""
    for candidate, text in file.candidates():
        try:
            return fastjson.loads(text)
        except Exception as exc:
            log.error("%s is unreadable (%s); trying the backup", candidate, exc)
    return None


class JsonConfigFile(DurableFile):
    """One persisted manager: its ``encode()`` runs on the event loop (the tables are only
    touched there); ``persist`` writes in a worker thread, ``persist_sync`` on the loop."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, what=f"config/{path.name}")

    def load(self) -> Any | None:
        return read_json(self)

    def persist_change(self, text: str) -> None:
        """Write a change a request is waiting for; ConfigPersistError when it cannot be."""
        try:
            self.persist_sync(text)
        except OSError as exc:
            raise ConfigPersistError(self.what, exc) from exc
