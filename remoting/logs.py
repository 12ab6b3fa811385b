"""Where ``mqbroker`` and ``mqnamesrv`` log (their ``__main__`` is the only caller, docs/STYLE.md §8).

Without ``logFile`` every record goes to stderr (the journal under systemd). With it, as
RocketMQ's logback keeps ``broker.log`` rolling, every record goes to that file, which is
rotated by size: past ``logFileMaxBytes`` it becomes ``<logFile>.1`` (``.1`` becomes ``.2``,
...) and at most ``logFileBackups`` old files are kept; 0 bytes never rotates (for an outside
logrotate with ``copytruncate``). stderr then gets WARNING and above only: the file has
everything, the console what needs someone's attention.

A log file that cannot be written (a full disk, EIO) never stops the process nor prints a
traceback: one line on stderr when writing starts failing, one when it works again.
"""

from __future__ import annotations

import logging
import sys
from logging.handlers import RotatingFileHandler
from pathlib import Path

from remoting.log_format import OneLineFormatter

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")  # --log-level
DEFAULT_MAX_BYTES = 128 * 1024 * 1024
DEFAULT_BACKUPS = 10


class RollingLogFile(RotatingFileHandler):
    """A RotatingFileHandler whose write errors are weather: told once, not per record."""

    def __init__(self, path: Path, max_bytes: int, backups: int) -> None:
        super().__init__(path, maxBytes=max_bytes, backupCount=backups, encoding="utf-8")
        self.failing = False  # the last record could not be written
        self._failed_now = False

    def emit(self, record: logging.LogRecord) -> None:
        self._failed_now = False
        super().emit(record)  # calls handleError on any failure
        if self.failing and not self._failed_now:
            self.failing = False
            print(f"log file {self.baseFilename} written again", file=sys.stderr, flush=True)

    def handleError(self, record: logging.LogRecord) -> None:
        self._failed_now = True
        if not self.failing:
            self.failing = True
            error = sys.exc_info()[1]
            print(
                f"cannot write the log file {self.baseFilename}: {error}; records are lost "
                "until it works again (told once)",
                file=sys.stderr,
                flush=True,
            )


def setup_logging(
    level: str,
    log_file: Path | None = None,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    backups: int = DEFAULT_BACKUPS,
) -> None:
    """Called once with the command line's level, again once the config names a log file:
    each call replaces the handlers. OSError when the file cannot be opened."""
    console = logging.StreamHandler(sys.stderr)
    handlers: list[logging.Handler] = [console]
    if log_file is not None:
        handlers.append(RollingLogFile(log_file, max_bytes, backups))
        console.setLevel(logging.WARNING)
    for handler in handlers:  # one event, one line: the wire's control characters escaped
        handler.setFormatter(OneLineFormatter(FORMAT))
    logging.basicConfig(level=level.upper(), handlers=handlers, force=True)
