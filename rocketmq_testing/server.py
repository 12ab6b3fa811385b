"""One server process of a test cluster: spawned early (rocketmq_testing/spawn.py imports the
program while other processes start), given its command line, READY awaited as an event on
its output, stopped for sure.

Its stdout and stderr go to a log file through a reader thread, which also watches for the
``READY ... port=N`` line every server prints once it serves."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

from rocketmq_testing.errors import ServerStartError

READY = re.compile(rb"^READY\b.*\bport=(\d+)")
ADDRESS_IN_USE = re.compile(r"Address already in use|\[Errno 98\]")
STOP_GRACE_S = 15.0
KILL_WAIT_S = 10.0
READY_TIMEOUT_S = 60.0


class ServerProcess:
    """Spawned at once (importing its program); ``adopt`` names it and gives it its log,
    ``launch`` its command line."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.name = kind
        self.log_path: Path | None = None
        self.port: int | None = None
        self.paused = False
        self._terminated = False
        self._ready = threading.Event()
        self.imported = threading.Event()  # past its imports: starts in a fraction of a second
        self._log: BinaryIO | None = None
        self._early: list[bytes] = []  # what it printed before it had a log (import warnings)
        self._log_lock = threading.Lock()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "rocketmq_testing.spawn", kind],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            # Its own session: a ^C on the terminal reaches pytest, whose teardown stops the
            # cluster, not every server at once in the middle of a test.
            start_new_session=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self._reader = threading.Thread(target=self._read, name=f"read-{kind}", daemon=True)
        self._reader.start()

    def adopt(self, name: str, log_path: Path) -> ServerProcess:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with self._log_lock:
            self.name, self.log_path = name, log_path
            self._log = log_path.open("ab")
            self._log.write(b"".join(self._early))
            self._log.flush()
            self._early.clear()
        return self

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._log_lock:
                if self._log is None:
                    self._early.append(line)
                else:
                    self._log.write(line)
                    self._log.flush()
            if line.startswith(b"IMPORTED"):
                self.imported.set()
            match = READY.match(line)
            if match and not self._ready.is_set():
                self.port = int(match.group(1))
                self._ready.set()
        with self._log_lock:
            if self._log is not None:
                self._log.close()
        self._ready.set()  # it ended: wake the waiter either way
        self.imported.set()

    def launch(self, argv: Sequence[str]) -> None:
        """Hands the spawned process its command line; it starts serving from there."""
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(list(argv)).encode() + b"\n")
            self.proc.stdin.close()
        except BrokenPipeError:
            pass  # it died while importing: wait_ready says so, with its output

    def wait_ready(self, timeout_s: float = READY_TIMEOUT_S) -> int:
        """The port it serves on, once it said READY."""
        ended = self._ready.wait(timeout_s)
        if ended and self.port is not None:
            return self.port
        if ended:  # its output closed: it is exiting, and its code tells how
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(KILL_WAIT_S)
        code = self.proc.poll()
        self.kill()
        tail = self.log_tail()
        state = f"exited with code {code}" if code is not None else f"not ready in {timeout_s:g} s"
        raise ServerStartError(
            f"{self.name} {state}; its last lines:\n{tail}",
            address_in_use=bool(ADDRESS_IN_USE.search(tail)),
        )

    def alive(self) -> bool:
        return self.proc.poll() is None

    def send(self, signum: int) -> None:
        if self.alive():
            self.proc.send_signal(signum)
        self.paused = signum == signal.SIGSTOP or (self.paused and signum != signal.SIGCONT)

    def terminate(self) -> None:
        """SIGTERM, once: a second one could land after the server's handler is gone and end
        its clean stop half-way. A paused process is resumed first, or it could not act."""
        if self.alive() and not self._terminated:
            if self.paused:
                self.send(signal.SIGCONT)
            self.proc.send_signal(signal.SIGTERM)
            self._terminated = True

    def stop(self, grace_s: float = STOP_GRACE_S) -> int | None:
        """A clean stop (``terminate``), SIGKILL after ``grace_s``. Returns the exit code."""
        self.terminate()
        if self.alive():
            try:
                self.proc.wait(grace_s)
            except subprocess.TimeoutExpired:
                self.kill()
        return self._finish()

    def kill(self, signum: int = signal.SIGKILL) -> int | None:
        """A crash: ``signum`` (SIGKILL by default), then wait for the exit."""
        if self.alive():
            self.proc.send_signal(signum)
            if self.paused and signum != signal.SIGKILL:
                self.proc.send_signal(signal.SIGCONT)
            try:
                self.proc.wait(KILL_WAIT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self._finish()

    def _finish(self) -> int | None:
        self.paused = False
        with contextlib.suppress(OSError):
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        self._reader.join(KILL_WAIT_S)
        return self.proc.returncode

    def log_tail(self, lines: int = 30) -> str:
        self._reader.join(1.0)  # what it printed before exiting
        if self.log_path is None:
            return b"".join(self._early).decode(errors="replace") or "(no output)"
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no output)"
        return "\n".join(text.splitlines()[-lines:]) or "(no output)"


class SparePool:
    """Spawned servers waiting for a cluster: one that starts after another takes its
    processes from here, already past their imports (about 0.5 s of CPU each), and the pool
    spawns the next cluster's while the test runs. Spares inherit the environment of the time
    they were spawned; ``close`` stops them (a spare whose parent dies stops itself)."""

    def __init__(self) -> None:
        self._spares: dict[str, list[ServerProcess]] = {}
        self._lock = threading.Lock()
        self.closed = False

    def take(self, kind: str) -> ServerProcess:
        with self._lock:
            while self._spares.get(kind):
                server = self._spares[kind].pop()
                if server.alive():
                    return server
                server.kill()
        return ServerProcess(kind)

    def refill(self, kinds: Sequence[str]) -> None:
        """Spares for a cluster of these ``kinds`` (one entry per process)."""
        with self._lock:
            if self.closed:
                return
            for kind in set(kinds):
                have = self._spares.setdefault(kind, [])
                have += [ServerProcess(kind) for _ in range(kinds.count(kind) - len(have))]

    def wait_warm(self, timeout_s: float = 60.0) -> bool:
        """Until every spare is past its imports (benchmarks; a test never needs to wait)."""
        with self._lock:
            spares = [server for group in self._spares.values() for server in group]
        return all(server.imported.wait(timeout_s) for server in spares)

    def close(self) -> None:
        with self._lock:
            self.closed = True
            spares = [server for group in self._spares.values() for server in group]
            self._spares.clear()
        for server in spares:
            server.proc.terminate()  # not serving yet: it ends at once
        for server in spares:
            server.kill()
