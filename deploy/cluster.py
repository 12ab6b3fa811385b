"""mqcluster's work: start a layout's processes in order as daemons (pid files, per process a
log it rotates itself and a file of its stdout/stderr, a progress line per step), wait until
each serves and each slave is in sync, report status, stop in reverse (SIGTERM, then SIGKILL
after a grace period)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import psutil

from deploy.manifest import Manifest, ProcessSpec
from deploy.probes import runtime_infos
from remoting import properties
from remoting.ports import ephemeral_conflicts

READY_TIMEOUT_S = 120.0
SYNC_TIMEOUT_S = 120.0
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


class Cluster:
    def __init__(
        self,
        manifest: Manifest,
        base_dir: Path,
        out: Callable[[str], None] = print,
        stop: threading.Event | None = None,
    ):
        self.base = base_dir.resolve()
        self.layout = manifest
        self.manifest = manifest.with_promotions(self.promotions())
        self.out = out
        # Set by mqcluster's signal handlers: every wait checks it, so SIGTERM or Ctrl-C while
        # `up` starts things ends in `up`'s cleanup rather than in the middle of a Popen.
        self.stop = stop or threading.Event()
        self._processes: dict[str, subprocess.Popen] = {}  # started by this invocation
        self._log_start: dict[str, int] = {}  # log size before each start: its READY comes after

    # ------------------------------------------------------------------ promotions

    @property
    def promotions_path(self) -> Path:
        return self.base / "promotions.json"

    def promotions(self) -> dict[str, dict[str, str]]:
        try:
            return json.loads(self.promotions_path.read_text())
        except (OSError, ValueError):
            return {}

    def role_overrides(self, spec: ProcessSpec) -> dict[str, str]:
        """brokerId/brokerRole when a promotion swapped a pair's roles."""
        original = next(p for p in self.layout.processes if p.name == spec.name)
        if original.role == spec.role:
            return {}
        if spec.role == "master":
            old_master = next(
                p
                for p in self.layout.processes
                if p.broker_name == spec.broker_name and p.role == "master"
            )
            role = properties.loads(old_master.conf.read_text()).get("brokerRole", "ASYNC_MASTER")
            return {"brokerId": "0", "brokerRole": role}
        return {"brokerId": "1", "brokerRole": "SLAVE"}

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

    def running(self) -> dict[str, int]:
        return {p.name: pid for p in self.manifest.processes if (pid := self.pid(p)) is not None}

    def tail(self, spec: ProcessSpec, lines: int = 20, *, out: bool = True) -> str:
        """The last lines of the process's stdout/stderr (``out``), or of its log."""
        path = self.out_path(spec) if out else self.log_path(spec)
        try:
            return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    # ------------------------------------------------------------------ up

    def check_ports(self) -> None:
        """Refuses ports that are taken, and ports an outgoing connection could take while a
        process is down (its restart would then fail): ``remoting/ports.py``."""
        needed = [(f"port of {s.name}", port) for s in self.manifest.processes for port in s.ports]
        stealable = ephemeral_conflicts(needed)
        if stealable:
            more = f" (and {len(stealable) - 1} more)" if len(stealable) > 1 else ""
            raise ClusterError(f"{stealable[0]}{more}; pick another --port-offset")
        for spec in self.manifest.processes:
            for port in spec.ports:
                with socket.socket() as probe:
                    probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    try:
                        probe.bind(("127.0.0.1", port))
                    except OSError as exc:
                        raise ClusterError(
                            f"port {port} (needed by {spec.name}) is already in use: {exc.strerror}"
                        ) from None

    def argv(self, spec: ProcessSpec) -> list[str]:
        conf = str(self.conf_path(spec))
        if spec.kind == "namesrv":
            return [sys.executable, "-m", "namesrv", "-c", conf, "--host", "127.0.0.1"]
        return [sys.executable, "-m", "broker", "-c", conf]

    def up(self) -> None:
        running = self.running()
        if running:
            raise ClusterError(
                f"layout {self.manifest.name} is already running in {self.base} "
                f"({', '.join(f'{n} pid {p}' for n, p in running.items())}); "
                "run `mqcluster down` first"
            )
        self.check_ports()
        order = self.manifest.start_order()
        try:
            for step, spec in enumerate(order, 1):
                self._check_stop(spec)
                self.out(f"[{step}/{len(order)}] starting {spec.name} ({spec.role}) on {spec.addr}")
                t0 = time.monotonic()
                self._start(spec)
                self._wait_ready(spec)
                detail = ""
                if spec.role == "slave":
                    behind = self._wait_in_sync(spec)
                    detail = f", in sync ({behind} bytes behind)"
                self.out(
                    f"[{step}/{len(order)}] {spec.name} up, pid {self.pid(spec)}"
                    f"{detail} ({time.monotonic() - t0:.1f} s)"
                )
        except BaseException:
            self.stop_started()
            raise
        self.out(f"cluster {self.manifest.name} up: namesrvAddr={self.manifest.namesrv_addr}")

    def stop_started(self) -> list[str]:
        """Stop, in reverse, every process this invocation started (a pid file it never wrote
        included): `up`'s way out of any failure or signal."""
        by_name = {spec.name: spec for spec in self.manifest.processes}
        stopped = []
        for name in reversed(list(self._processes)):
            if self.stop_process(by_name[name]):
                stopped.append(name)
                self.out(f"stopped {name}")
        return stopped

    def _check_stop(self, spec: ProcessSpec) -> None:
        if self.stop.is_set():
            raise Interrupted(f"interrupted while starting {spec.name}: stopped what was started")

    def _start(self, spec: ProcessSpec) -> None:
        for path in (self.out_path(spec), self.pid_path(spec), self.conf_path(spec)):
            path.parent.mkdir(parents=True, exist_ok=True)
        self.conf_path(spec).write_text(
            self.manifest.effective_conf(spec, self.base, self.role_overrides(spec))
        )
        # READY lines of earlier runs in the same file must not count for this one.
        out_path = self.out_path(spec)
        self._log_start[spec.name] = out_path.stat().st_size if out_path.exists() else 0
        with out_path.open("ab") as log:
            process = subprocess.Popen(
                self.argv(spec),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # a daemon: outlives mqcluster, not its terminal's ^C
                cwd=self.base,
                env={**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": _repo_path()},
            )
        self._processes[spec.name] = process  # first: a failed pid-file write still stops it
        self.pid_path(spec).write_text(str(process.pid))

    def _wait_ready(self, spec: ProcessSpec) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        needle = f"port={spec.port}".encode()
        offset = self._log_start[spec.name]
        process = self._processes[spec.name]
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
            self._pause(spec, POLL_S)
        raise ClusterError(
            f"{spec.name} not ready after {READY_TIMEOUT_S:.0f} s: see the last lines of "
            f"{self.log_path(spec)} above",
            detail=self.tail(spec, out=False),
        )

    def _pause(self, spec: ProcessSpec, seconds: float) -> None:
        """A poll interval that ends early, in Interrupted, when a signal asks to stop."""
        if self.stop.wait(seconds):
            self._check_stop(spec)

    def _wait_in_sync(self, spec: ProcessSpec) -> int:
        master = self.manifest.master_of(spec)
        if master is None:
            return 0
        deadline = time.monotonic() + SYNC_TIMEOUT_S
        while time.monotonic() < deadline:
            infos = runtime_infos([master.addr, spec.addr])
            m, s = infos.get(master.addr), infos.get(spec.addr)
            if m and s and s.get("haConnected") == "true":
                behind = int(m["commitLogMaxOffset"]) - int(s["commitLogMaxOffset"])
                if behind <= 0:
                    return 0
            self._pause(spec, POLL_S * 5)
        raise ClusterError(
            f"{spec.name} did not catch up with {master.name} in {SYNC_TIMEOUT_S:.0f} s"
        )

    # ------------------------------------------------------------------ down

    def down(self) -> list[str]:
        stopped = []
        for spec in reversed(self.manifest.start_order()):
            if self.stop_process(spec):
                stopped.append(spec.name)
                self.out(f"stopped {spec.name}")
        return stopped

    def stop_process(self, spec: ProcessSpec, grace_s: float = STOP_GRACE_S) -> bool:
        pid = self.pid(spec)
        self.pid_path(spec).unlink(missing_ok=True)
        child = self._processes.get(spec.name)
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
        child = self._processes.get(spec.name)
        if child is not None:
            child.wait(10)  # reap our own child
        return True

    def spec(self, name: str) -> ProcessSpec:
        for spec in self.manifest.processes:
            if spec.name == name:
                return spec
        raise ClusterError(f"no process {name!r} in {self.manifest.name}")

    def start_one(self, name: str) -> None:
        spec = self.spec(name)
        if self.pid(spec):
            raise ClusterError(f"{name} is already running (pid {self.pid(spec)})")
        try:
            self._start(spec)
            self._wait_ready(spec)
            behind = self._wait_in_sync(spec) if spec.role == "slave" else None
        except BaseException:
            self.stop_started()
            raise
        detail = f", in sync ({behind} bytes behind)" if behind is not None else ""
        self.out(f"{name} up as {spec.role}, pid {self.pid(spec)}{detail}")

    def stop_one(self, name: str) -> None:
        if not self.stop_process(self.spec(name)):
            raise ClusterError(f"{name} is not running")
        self.out(f"stopped {name}")

    def promote(self, broker_name: str, *, force: bool = False) -> None:
        from deploy.promote import promote  # it drives this class

        promote(self, broker_name, force=force)

    # ------------------------------------------------------------------ status

    def status(self) -> list[dict[str, object]]:
        infos = runtime_infos([p.addr for p in self.manifest.processes if p.kind == "broker"])
        rows = []
        for spec in self.manifest.start_order():
            pid = self.pid(spec)
            row: dict[str, object] = {
                "process": spec.name,
                "role": spec.role,
                "address": spec.addr,
                "pid": pid or "-",
                "state": "up" if pid else "down",
                "lag": "",
            }
            master = self.manifest.master_of(spec) if spec.role == "slave" else None
            if master is not None and pid:
                m, s = infos.get(master.addr), infos.get(spec.addr)
                if m and s:
                    behind = int(m["commitLogMaxOffset"]) - int(s["commitLogMaxOffset"])
                    row["lag"] = f"{max(behind, 0)} B" + (
                        "" if s.get("haConnected") == "true" else " (not connected)"
                    )
                else:
                    row["lag"] = "?"
            rows.append(row)
        return rows


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
