"""Files rewritten whole: the broker's JSON configs under ``storePathRootDir/config/``, the
NameServer's ``kvConfig.json``, and the runtime config files admin updates write
(remoting/runtime_config.py) (RocketMQ's ``MixAll.string2File``, made crash-safe and safe for
concurrent writers).

``write_atomically``: the new text goes to a temp file with a name no other writer uses, is
fsynced; the current file is hard-linked to another private name that is renamed over
``<name>.bak``; the temp file is renamed over the name; the directory is fsynced. A crash at any
step leaves the old or the new file whole (and the previous version in ``.bak``); a failed
write removes its temp files and leaves the file as it was. ENOSPC and EIO are ordinary
``OSError``s to the caller.

``DurableFile``: one file many tasks write. Writes are numbered when their text is made, one
runs at a time, and a write older than what is already on disk is skipped: the newest state
always wins, whichever thread gets there first. A failure is logged once, when it starts, and
once more when writing works again.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import stat
import threading
from pathlib import Path

import trio

log = logging.getLogger(__name__)

_names = itertools.count(1)  # next() on a count is atomic under the GIL


def _private_name(path: Path, suffix: str) -> Path:
    return path.with_name(f"{path.name}.{os.getpid()}.{next(_names)}.{suffix}")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomically(path: Path, text: str | bytes, *, mode: int = 0o644) -> None:
    """``mode``: a new file's permissions (an existing file keeps its own)."""
    data = text.encode("utf-8") if isinstance(text, str) else text
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp, bak_tmp = _private_name(path, "tmp"), _private_name(path, "baktmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        try:
            with contextlib.suppress(FileNotFoundError):  # keep an operator's permissions
                os.fchmod(fd, stat.S_IMODE(os.stat(path).st_mode))
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(path, bak_tmp)
        except FileNotFoundError:
            pass  # the first version: nothing to keep
        else:
            os.replace(bak_tmp, path.with_name(path.name + ".bak"))
        os.replace(tmp, path)
    finally:
        # after a failure, no half-written temp file stays behind (after success, none exists)
        tmp.unlink(missing_ok=True)
        bak_tmp.unlink(missing_ok=True)
    _fsync_dir(path.parent)


def remove_stale_temps(path: Path) -> None:
    """Temp files a crashed writer left beside ``path`` (only ever incomplete copies)."""
    prefix = path.name + "."
    try:
        entries = list(path.parent.iterdir())
    except FileNotFoundError:
        return
    for entry in entries:
        if not entry.name.startswith(prefix):
            continue
        pid, _, rest = entry.name[len(prefix) :].partition(".")
        number, _, suffix = rest.partition(".")
        if pid.isdigit() and number.isdigit() and suffix in ("tmp", "baktmp"):
            entry.unlink(missing_ok=True)


def read_with_backup(path: Path) -> list[tuple[Path, str]]:
    """The file's text, then its ``.bak``'s, for those that exist and are not empty: a loader
    takes the first it can parse, as Java's ConfigManager falls back to the backup."""
    found = []
    for candidate in (path, path.with_name(path.name + ".bak")):
        try:
            text = candidate.read_text(encoding="utf-8")
        except FileNotFoundError:
            continue
        if text.strip():
            found.append((candidate, text))
    return found


class DurableFile:
    """Writes of one file, serialized, newest state wins. ``persist_sync`` may run on the event
    loop (it then waits for a write in progress); ``persist`` writes in a worker thread."""

    def __init__(self, path: Path, *, what: str | None = None) -> None:
        self.path = path
        self.what = what or path.name
        self._lock = threading.Lock()  # one write at a time, from any thread
        self._turn = trio.Lock()  # one worker thread per file at a time
        self._issued = 0  # number of the newest text handed to a write (event loop only)
        self._on_disk = 0  # number of the newest text on disk (under _lock)
        self._on_disk_text: str | None = None
        self.failure: OSError | None = None  # the last write's error, until one succeeds

    def _number(self) -> int:
        self._issued += 1
        return self._issued

    def _write(self, number: int, text: str) -> None:
        with self._lock:
            if number <= self._on_disk:
                return  # a newer state landed first
            try:
                if text != self._on_disk_text:
                    write_atomically(self.path, text)
            except OSError as exc:
                if self.failure is None:
                    log.warning(
                        "cannot write %s (%s): %s; the next change or periodic persist tries "
                        "again (logged once until it works)",
                        self.what,
                        self.path,
                        exc,
                    )
                self.failure = exc
                raise
            if self.failure is not None:
                log.warning("%s written again (writes had failed: %s)", self.what, self.failure)
                self.failure = None
            self._on_disk, self._on_disk_text = number, text

    def persist_sync(self, text: str) -> None:
        self._write(self._number(), text)

    async def persist(self, text: str) -> None:
        number = self._number()
        async with self._turn:
            if number > self._on_disk and text == self._on_disk_text and self.failure is None:
                with self._lock:  # unchanged: no thread needed (no worker runs under our turn)
                    self._on_disk = number
            elif number > self._on_disk:
                await trio.to_thread.run_sync(self._write, number, text)

    def candidates(self) -> list[tuple[Path, str]]:
        """What a loader may parse, newest first (see read_with_backup); stale temps go."""
        remove_stale_temps(self.path)
        return read_with_backup(self.path)
