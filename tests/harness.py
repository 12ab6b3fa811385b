"""Real server processes for integration tests (docs/STYLE.md §10).

Every server we ship prints a line ``READY ... port=N`` on stdout once it serves. A
``ServerProcess`` starts one, waits for that line (an event, not a sleep), drains the rest of
its output to a log file, and stops it with SIGTERM, then SIGKILL after a grace period. If the
process dies or never gets ready, the error carries its last log lines.
"""

from __future__ import annotations

import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

READY = re.compile(rb"READY\b.*\bport=(\d+)")
METRICS_PORT = re.compile(rb"\bmetricsPort=(\d+)")  # the /metrics port bound, when served


class ServerProcessError(RuntimeError):
    pass


class ServerProcess:
    def __init__(
        self,
        argv: Sequence[str],
        *,
        name: str,
        log_path: Path,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
    ) -> None:
        self.argv = list(argv)
        self.name = name
        self.log_path = log_path
        self.env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
        self.cwd = cwd
        self.proc: subprocess.Popen[bytes] | None = None
        self.port: int | None = None
        self.metrics_port: int | None = None  # from " metricsPort=N" on the READY line
        self._drain: threading.Thread | None = None

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self, timeout_s: float = 60.0) -> ServerProcess:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            self.argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=self.env, cwd=self.cwd
        )
        ready = threading.Event()

        def drain() -> None:
            assert self.proc is not None and self.proc.stdout is not None
            for line in self.proc.stdout:
                log.write(line)
                log.flush()
                match = READY.search(line)
                if match and not ready.is_set():
                    self.port = int(match.group(1))
                    metrics = METRICS_PORT.search(line)
                    self.metrics_port = int(metrics.group(1)) if metrics else None
                    ready.set()
            log.close()
            ready.set()  # the process ended: wake the waiter either way

        self._drain = threading.Thread(target=drain, name=f"drain-{self.name}", daemon=True)
        self._drain.start()
        if not ready.wait(timeout_s) or self.port is None:
            code = self.proc.poll()
            self.kill()
            state = (
                f"exited with {code}" if code is not None else f"not ready after {timeout_s:g} s"
            )
            raise ServerProcessError(f"{self.name} {state}; last log lines:\n{self.log_tail()}")
        return self

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def terminate(self, grace_s: float = 15.0) -> int | None:
        """SIGTERM, then SIGKILL after ``grace_s``. Returns the exit code."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(grace_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._join_drain()
        return self.proc.returncode

    def kill(self) -> None:
        """SIGKILL: the crash tests' way out."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._join_drain()

    def send_signal(self, sig: int) -> None:
        assert self.proc is not None
        self.proc.send_signal(sig)

    def _join_drain(self) -> None:
        if self._drain is not None:
            self._drain.join(5)

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])


def python_module(module: str, *args: str) -> list[str]:
    return [sys.executable, "-m", module, *args]


def _below_ephemeral_range() -> tuple[int, int]:
    """Ports the kernel never hands out to outgoing connections: a server restarted on its old
    port (kill -9 tests) must not find it taken by some client's ephemeral socket."""
    try:
        first = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        first = 32768
    return (10000, first - 1) if first > 12000 else (20000, 30000)


def free_port_block(size: int = 1, attempts: int = 200) -> int:
    """The first of ``size`` consecutive free TCP ports on 127.0.0.1 (a broker needs
    listenPort - 2, listenPort and listenPort + 1)."""
    low, high = _below_ephemeral_range()
    for _ in range(attempts):
        base = random.randint(low, high - size)
        sockets = []
        try:
            for port in range(base, base + size):
                s = socket.socket()
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.bind(("127.0.0.1", port))
                sockets.append(s)
            return base
        except OSError:
            continue
        finally:
            for s in sockets:
                s.close()
    raise RuntimeError(f"no block of {size} free ports found")


class ProcessPool:
    """Starts processes for one test and makes sure none outlives it."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.processes: list[ServerProcess] = []

    def start(self, name: str, argv: Sequence[str], **kwargs: object) -> ServerProcess:
        process = ServerProcess(argv, name=name, log_path=self.log_dir / f"{name}.log", **kwargs)  # type: ignore[arg-type]
        self.processes.append(process)
        return process.start()

    def stop_all(self) -> None:
        for process in reversed(self.processes):
            process.terminate(grace_s=10)


@pytest.fixture
def processes(tmp_path: Path) -> Iterator[ProcessPool]:
    pool = ProcessPool(tmp_path / "logs")
    try:
        yield pool
    finally:
        pool.stop_all()


@pytest.fixture(scope="module")
def module_processes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessPool]:
    """Processes shared by one module's tests, stopped after its last test: for clusters whose
    tests each use their own topics and groups (tests/README.md, "Shared clusters")."""
    pool = ProcessPool(tmp_path_factory.mktemp("module") / "logs")
    try:
        yield pool
    finally:
        pool.stop_all()
