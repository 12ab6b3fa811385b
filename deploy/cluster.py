"""mqcluster's work: start a layout's processes in order as daemons (pid files, one log per
process, a progress line per step), wait until each serves and each slave is in sync, report
status, stop in reverse (SIGTERM, then SIGKILL after a grace period)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import trio

from deploy.manifest import Manifest, ProcessSpec
from remoting.body import KVTable
from remoting.client import RemotingClient
from remoting.codes import RequestCode
from remoting.command import RemotingCommand
from remoting.errors import RemotingError
from remoting.serde import decode_body

READY_TIMEOUT_S = 120.0
SYNC_TIMEOUT_S = 120.0
STOP_GRACE_S = 30.0
POLL_S = 0.1


class ClusterError(RuntimeError):
    """``up``/``down`` could not do what was asked; the message says why."""


class Cluster:
    def __init__(self, manifest: Manifest, base_dir: Path, out: Callable[[str], None] = print):
        self.manifest = manifest
        self.base = base_dir.resolve()
        self.out = out

    # ------------------------------------------------------------------ files

    def log_path(self, spec: ProcessSpec) -> Path:
        return self.base / "logs" / f"{spec.name}.log"

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

    def tail(self, spec: ProcessSpec, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path(spec).read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    # ------------------------------------------------------------------ up

    def check_ports(self) -> None:
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
        started: list[ProcessSpec] = []
        try:
            for step, spec in enumerate(order, 1):
                self.out(f"[{step}/{len(order)}] starting {spec.name} ({spec.role}) on {spec.addr}")
                t0 = time.monotonic()
                self._start(spec)
                started.append(spec)
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
            for spec in reversed(started):
                self._stop(spec)
            raise
        self.out(f"cluster {self.manifest.name} up: namesrvAddr={self.manifest.namesrv_addr}")

    def _start(self, spec: ProcessSpec) -> None:
        for path in (self.log_path(spec), self.pid_path(spec), self.conf_path(spec)):
            path.parent.mkdir(parents=True, exist_ok=True)
        self.conf_path(spec).write_text(self.manifest.effective_conf(spec, self.base))
        with self.log_path(spec).open("ab") as log:
            process = subprocess.Popen(
                self.argv(spec),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # a daemon: outlives mqcluster, not its terminal's ^C
                cwd=self.base,
                env={**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": _repo_path()},
            )
        self.pid_path(spec).write_text(str(process.pid))
        self._processes = getattr(self, "_processes", {})
        self._processes[spec.name] = process

    def _wait_ready(self, spec: ProcessSpec) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        needle = f"port={spec.port}".encode()
        offset = self.log_path(spec).stat().st_size if self.log_path(spec).exists() else 0
        process = self._processes[spec.name]
        while time.monotonic() < deadline:
            with self.log_path(spec).open("rb") as log:
                log.seek(max(0, offset - 4096))
                for line in log.read().splitlines():
                    if line.startswith(b"READY") and needle in line:
                        return
            if process.poll() is not None:
                raise ClusterError(
                    f"{spec.name} exited with code {process.returncode} while starting; "
                    f"last log lines ({self.log_path(spec)}):\n{self.tail(spec)}"
                )
            time.sleep(POLL_S)
        raise ClusterError(
            f"{spec.name} not ready after {READY_TIMEOUT_S:.0f} s:\n{self.tail(spec)}"
        )

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
            time.sleep(POLL_S * 5)
        raise ClusterError(
            f"{spec.name} did not catch up with {master.name} in {SYNC_TIMEOUT_S:.0f} s"
        )

    # ------------------------------------------------------------------ down

    def down(self) -> list[str]:
        stopped = []
        for spec in reversed(self.manifest.start_order()):
            if self._stop(spec):
                stopped.append(spec.name)
                self.out(f"stopped {spec.name}")
        return stopped

    def _stop(self, spec: ProcessSpec, grace_s: float = STOP_GRACE_S) -> bool:
        pid = self.pid(spec)
        self.pid_path(spec).unlink(missing_ok=True)
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
        child = getattr(self, "_processes", {}).get(spec.name)
        if child is not None:
            child.wait(10)  # reap our own child
        return True

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


def runtime_infos(addrs: list[str], timeout_s: float = 2.0) -> dict[str, dict[str, str]]:
    """GET_BROKER_RUNTIME_INFO from each address that answers."""

    async def main() -> dict[str, dict[str, str]]:
        out: dict[str, dict[str, str]] = {}
        async with RemotingClient.open() as client:
            for addr in addrs:
                request = RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO, {})
                try:
                    response = await client.invoke(addr, request, timeout_s)
                except (RemotingError, OSError):
                    continue
                if response.code == 0:
                    out[addr] = decode_body(KVTable, response.body).table
        return out

    return trio.run(main)
