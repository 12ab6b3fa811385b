"""What the project's operator command lines share (``mqadmin``, ``mqcluster``,
``mqreconcile``): bad input becomes one line on stderr that names what is wrong and where to
look, with exit status 1, never a traceback.

Argument errors come from argparse (a ``type=`` that raises ``ArgumentTypeError``, a missing
flag, a bad choice); argparse's own habit is a usage block plus a line, exit 2. Errors found
later are the caller's ``fail()``. A failure nobody anticipated is our bug: one line too, and
the traceback only when ``ROCKETMQ_TRIO_TRACEBACK=1`` asks for it.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from typing import NoReturn

TRACEBACK_ENV = "ROCKETMQ_TRIO_TRACEBACK"


class OneLineArgumentParser(argparse.ArgumentParser):
    """argparse, but an argument error is one line (and status 1, like every other error)."""

    def error(self, message: str) -> NoReturn:
        self.exit(1, f"{self.prog}: {one_line(message)} (see {self.prog} --help)\n")


def one_line(text: object) -> str:
    """``text`` as a single line: later lines joined with ' / '."""
    return " / ".join(part.strip() for part in str(text).splitlines() if part.strip())


def fail(prog: str, message: object) -> int:
    print(f"{prog}: {one_line(message)}", file=sys.stderr, flush=True)
    return 1


def unexpected(prog: str, exc: BaseException) -> int:
    """Our bug, not the operator's: say so in one line; the traceback on request."""
    if os.environ.get(TRACEBACK_ENV):
        traceback.print_exception(exc)
    return fail(
        prog,
        f"unexpected {type(exc).__name__}: {exc} (a bug in rocketmq-trio: please report it; "
        f"{TRACEBACK_ENV}=1 shows where)",
    )
