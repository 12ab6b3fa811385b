"""``python -m rocketmq_testing.spawn broker|namesrv``: a server process that imports its program
first and learns its command line afterwards, one JSON list on stdin.

A test cluster starts every process at once: the imports (most of a start-up) overlap, and a
broker gets its ``namesrvAddr`` once the NameServer it needs has said READY. What then runs is
the program's own ``main`` (``mqbroker``'s, ``mqnamesrv``'s), unchanged.

A test run that dies without stopping its cluster (SIGKILL, a crashed interpreter) must not leave
servers behind: a thread here notices the parent is gone and asks the process to stop."""

from __future__ import annotations

import importlib
import json
import os
import signal
import sys
import threading
import time

PROGRAMS = {"broker": "broker.__main__", "namesrv": "namesrv.__main__"}
IMPORTED = "IMPORTED"
PARENT_POLL_S = 0.5
STOP_GRACE_S = 10.0


def watch_parent(parent: int) -> None:
    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        os.kill(os.getpid(), signal.SIGTERM)  # a clean stop if it serves
        time.sleep(STOP_GRACE_S)
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def read_argv(line: str) -> list[str] | None:
    """The command line the parent sent, or None when it sent none (it went away) or garbage."""
    try:
        argv = json.loads(line)
    except ValueError:
        return None
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        return None
    return argv


def main(args: list[str]) -> int:
    if len(args) != 1 or args[0] not in PROGRAMS:
        print(f"usage: python -m rocketmq_testing.spawn {'|'.join(PROGRAMS)}", file=sys.stderr)
        return 2
    watch_parent(os.getppid())
    program = importlib.import_module(PROGRAMS[args[0]])
    print(IMPORTED, flush=True)  # a spare is warm from here (rocketmq_testing/server.py)
    argv = read_argv(sys.stdin.readline())
    if argv is None:
        return 0  # nothing to run: the cluster stopped before it needed this process
    return program.main(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
