"""What ``mqbroker`` and ``mqnamesrv`` check as they start, so that start-up ends either in
``READY`` or in one line on stderr with an exit code, never in a traceback:

- 2 (EXIT_CONFIG): the configuration cannot be used, a key's value or a directory it names
  (permission, something in the way, a read-only filesystem);
- 3 (EXIT_START): the store or a port could not be opened.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
from collections.abc import Iterable
from pathlib import Path

from remoting.logs import setup_logging

log = logging.getLogger(__name__)

# A full disk is weather, not configuration: the process starts, serves what it has and refuses
# writes until space is freed (the store and the config files each say so when they fail).
_FULL = (errno.ENOSPC, errno.EDQUOT)

EXIT_CONFIG = 2
EXIT_START = 3


def prepare_directory(path: Path) -> str | None:
    """Create ``path`` and prove a block can be written and synced there; None when it can (or
    when only a full disk stops it, logged), else why not (EACCES, EROFS, EIO, ENOTDIR, ...)."""
    probe = path / f".write-probe.{os.getpid()}"
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, bytes(4096))
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        if exc.errno in _FULL:
            log.warning(
                "%s: the disk is full: starting, writes are refused until space is freed", path
            )
            return None
        return f"cannot write in {path}: {exc.strerror or exc}"
    finally:
        with contextlib.suppress(OSError):
            probe.unlink(missing_ok=True)
    return None


def prepare_process(
    directories: Iterable[tuple[str, Path]],
    level: str,
    log_file: Path | None,
    max_bytes: int,
    backups: int,
) -> str | None:
    """A server's directories (config key, path) created and proven writable and its log file
    opened; None when all are, else the one line naming the key."""
    for key, path in directories:
        problem = prepare_directory(path)
        if problem is not None:
            return f"{key} is not usable: {problem}"
    if log_file is not None:
        try:
            setup_logging(level, log_file, max_bytes=max_bytes, backups=backups)
        except OSError as exc:
            return f"logFile={str(log_file)!r} is not usable: {exc.strerror or exc}"
    return None


def start_failure(
    exc: BaseException, expected: tuple[type[BaseException], ...] = ()
) -> BaseException | None:
    """The error that ended start-up when it is the disk's or a port's (OSError) or one of
    ``expected``: told in one line. None for anything else, our bug, whose traceback is wanted."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc if isinstance(exc, (OSError, *expected)) else None
