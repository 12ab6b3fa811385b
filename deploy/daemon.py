"""A layout's processes as local daemons, one at a time: each one's files under the base folder
(pid file, its own rotating log, a file of its stdout/stderr, its effective config), started in
its own session, its READY line awaited, stopped with SIGTERM and, after a grace period,
SIGKILL. What to start in which order, and when a slave is in sync, is deploy/cluster.py's."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import psutil

from deploy.manifest import ProcessSpec

READY_TIMEOUT_S = 120.0
STOP_GRACE_S = 30.0
POLL_S = 0.1


class ClusterError(RuntimeError):
    """``up``/``down`` could not do what was asked; the message says why in one line, ``detail``
    (a process's last log lines, say) shows more."""

    def __init__(self, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.detail = detail


class Interrupted(ClusterError):
    """A signal asked mqcluster to stop while it was starting or waiting."""


class Daemons:
    def __init__(
        self,
        base: Path,
        out: Callable[[str], None],
        stop: threading.Event,
    ) -> None:
        self.base = base
        self.out = out
        # Set by mqcluster's signal handlers: every wait checks it, so SIGTERM or Ctrl-C while
        # `up` starts things ends in `up`'s cleanup rather than in the middle of a Popen.
        self.stop = stop
        self.started: dict[str, subprocess.Popen] = {}  # by this invocation, in order
        self._log_start: dict[str, int] = {}  # log size before each start: its READY comes after

    # ------------------------------------------------------------------ files

    def log_path(self, spec: ProcessSpec) -> Path:
        """The process's own log (its logFile), rotated by the process."""
        return self.base / "logs" / f"{spec.name}.log"

    def out_path(self, spec: ProcessSpec) -> Path:
        """Its stdout and stderr: READY, warnings and errors (the rest goes to log_path)."""
        return self.base / "logs" / f"{spec.name}.out"

    def pid_path(self, spec: ProcessSpec) -> Path:
        return self.base / "run" / f"{spec.name}.pid"

    def conf_path(self, spec: ProcessSpec) -> Path:
        return self.base / "conf" / f"{spec.name}.conf"

    def pid(self, spec: ProcessSpec) -> int | None:
        """The live pid of ``spec``'s process (a stale pid file counts as not running)."""
        try:
            pid = int(self.pid_path(spec).read_text())
            process = psutil.Process(pid)
            cmdline = " ".join(process.cmdline())
        except (OSError, ValueError, psutil.Error):
            return None
        if spec.kind not in cmdline or process.status() == psutil.STATUS_ZOMBIE:
            return None
        return pid

    def tail(self, spec: ProcessSpec, lines: int = 20, *, out: bool = True) -> str:
        """The last lines of the process's stdout/stderr (``out``), or of its log."""
        path = self.out_path(spec) if out else self.log_path(spec)
        try:
            return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    # ------------------------------------------------------------------ start

    def check_stop(self, spec: ProcessSpec) -> None:
        if self.stop.is_set():
            raise Interrupted(f"interrupted while starting {spec.name}: stopped what was started")

    def pause(self, spec: ProcessSpec, seconds: float) -> None:
        """A poll interval that ends early, in Interrupted, when a signal asks to stop."""
        if self.stop.wait(seconds):
            self.check_stop(spec)

    def start(self, spec: ProcessSpec, argv: list[str], conf: str) -> None:
        for path in (self.out_path(spec), self.pid_path(spec), self.conf_path(spec)):
            path.parent.mkdir(parents=True, exist_ok=True)
        self.conf_path(spec).write_text(conf)
        # READY lines of earlier runs in the same file must not count for this one.
        out_path = self.out_path(spec)
        self._log_start[spec.name] = out_path.stat().st_size if out_path.exists() else 0
        with out_path.open("ab") as log:
            process = subprocess.Popen(
                argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # a daemon: outlives mqcluster, not its terminal's ^C
                cwd=self.base,
                env={**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": _repo_path()},
            )
        self.started[spec.name] = process  # first: a failed pid-file write still stops it
        self.pid_path(spec).write_text(str(process.pid))

    def wait_ready(self, spec: ProcessSpec) -> None:
        if spec.kind == "etcd":
            self._wait_healthy(spec)
            return
        deadline = time.monotonic() + READY_TIMEOUT_S
        needle = f"port={spec.port}".encode()
        offset = self._log_start[spec.name]
        process = self.started[spec.name]
        while time.monotonic() < deadline:
            with self.out_path(spec).open("rb") as log:
                log.seek(offset)
                for line in log.read().splitlines():
                    if line.startswith(b"READY") and needle in line:
                        return
            if process.poll() is not None:
                raise ClusterError(
                    f"{spec.name} exited with code {process.returncode} while starting: see "
                    f"the last lines of {self.out_path(spec)} above",
                    detail=self.tail(spec),
                )
            self.pause(spec, POLL_S)
        raise ClusterError(
            f"{spec.name} not ready after {READY_TIMEOUT_S:.0f} s: see the last lines of "
            f"{self.log_path(spec)} above",
            detail=self.tail(spec, out=False),
        )

    def _wait_healthy(self, spec: ProcessSpec) -> None:
        """etcd prints no READY line: its /health answers once it serves."""
        # Imported here: only etcd layouts need it, and it (with http.client and email) was
        # ~3 % of every mqcluster start's CPU.
        import urllib.request

        deadline = time.monotonic() + READY_TIMEOUT_S
        process = self.started[spec.name]
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://{spec.addr}/health", timeout=1) as reply:
                    if b'"true"' in reply.read():
                        return
            except OSError:
                pass
            if process.poll() is not None:
                raise ClusterError(
                    f"{spec.name} exited with code {process.returncode} while starting",
                    detail=self.tail(spec),
                )
            self.pause(spec, POLL_S)
        raise ClusterError(f"{spec.name} not healthy after {READY_TIMEOUT_S:.0f} s")

    # ------------------------------------------------------------------ stop

    def stop_process(self, spec: ProcessSpec, grace_s: float = STOP_GRACE_S) -> bool:
        pid = self.pid(spec)
        self.pid_path(spec).unlink(missing_ok=True)
        child = self.started.get(spec.name)
        if pid is None and child is not None and child.poll() is None:
            pid = child.pid  # started by us, its pid file not (yet) written
        if pid is None:
            return False
        try:
            process = psutil.Process(pid)
            process.send_signal(signal.SIGTERM)
            if not _gone(process, grace_s):
                self.out(f"{spec.name} ignored SIGTERM for {grace_s:.0f} s: SIGKILL")
                process.kill()
                _gone(process, 10)
        except psutil.NoSuchProcess:
            pass
        if child is not None:
            child.wait(10)  # reap our own child
        return True


def _gone(process: psutil.Process, timeout_s: float) -> bool:
    """Exited (a zombie counts: its parent, often init, reaps it when it likes)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if process.status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


def _repo_path() -> str:
    here = str(Path(__file__).resolve().parents[1])
    existing = os.environ.get("PYTHONPATH")
    return f"{here}{os.pathsep}{existing}" if existing else here
