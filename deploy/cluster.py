"""mqcluster's work: start a layout's processes in order (each a daemon, deploy/daemon.py), wait
until each serves and each slave is in sync, report status, stop in reverse. A promotion swaps
a pair's roles (deploy/promote.py); they are kept in ``promotions.json`` and every later start
follows them."""

from __future__ import annotations

import json
import shutil
import socket
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from deploy.daemon import POLL_S, ClusterError, Daemons
from deploy.manifest import Manifest, ProcessSpec
from deploy.probes import runtime_infos
from remoting import properties
from remoting.ports import ephemeral_conflicts

SYNC_TIMEOUT_S = 120.0


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
        self.daemons = Daemons(self.base, out, stop or threading.Event())
        self.stop = self.daemons.stop

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

    # ------------------------------------------------------------------ processes

    def running(self) -> dict[str, int]:
        pids = ((p.name, self.daemons.pid(p)) for p in self.manifest.processes)
        return {name: pid for name, pid in pids if pid is not None}

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
        conf = str(self.daemons.conf_path(spec))
        if spec.kind == "namesrv":
            return [sys.executable, "-m", "namesrv", "-c", conf, "--host", "127.0.0.1"]
        if spec.kind == "etcd":
            members = [p for p in self.manifest.processes if p.kind == "etcd"]
            return etcd_argv(spec, self.base / "store" / spec.name, members, self.manifest.name)
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
            self._start_etcd_together(order)
            for step, spec in enumerate(order, 1):
                if spec.kind == "etcd" and len(self._etcd_members()) > 1:
                    continue  # started above, together
                self.daemons.check_stop(spec)
                self.out(f"[{step}/{len(order)}] starting {spec.name} ({spec.role}) on {spec.addr}")
                t0 = time.monotonic()
                self._start(spec)
                detail = ""
                if spec.role == "slave":
                    behind = self._wait_in_sync(spec)
                    detail = f", in sync ({behind} bytes behind)"
                self.out(
                    f"[{step}/{len(order)}] {spec.name} up, pid {self.daemons.pid(spec)}"
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
        for name in reversed(list(self.daemons.started)):
            if self.daemons.stop_process(by_name[name]):
                stopped.append(name)
                self.out(f"stopped {name}")
        return stopped

    def _etcd_members(self) -> list[ProcessSpec]:
        return [p for p in self.manifest.processes if p.kind == "etcd"]

    def _start_etcd_together(self, order: list[ProcessSpec]) -> None:
        """An etcd cluster of several members answers only once a quorum of them runs: start
        them all, then wait for each."""
        members = self._etcd_members()
        if len(members) < 2:
            return
        t0 = time.monotonic()
        for spec in members:
            self.daemons.check_stop(spec)
            step = order.index(spec) + 1
            self.out(f"[{step}/{len(order)}] starting {spec.name} ({spec.role}) on {spec.addr}")
            conf = self.manifest.effective_conf(spec, self.base, self.role_overrides(spec))
            self.daemons.start(spec, self.argv(spec), conf)
        for spec in members:
            self.daemons.wait_ready(spec)
            step = order.index(spec) + 1
            self.out(
                f"[{step}/{len(order)}] {spec.name} up, pid {self.daemons.pid(spec)}"
                f" ({time.monotonic() - t0:.1f} s)"
            )

    def _start(self, spec: ProcessSpec) -> None:
        """Start ``spec`` with its effective config (the manifest's, with any promotion's role)
        and wait for its READY line."""
        conf = self.manifest.effective_conf(spec, self.base, self.role_overrides(spec))
        self.daemons.start(spec, self.argv(spec), conf)
        self.daemons.wait_ready(spec)

    def _wait_in_sync(self, spec: ProcessSpec) -> int:
        master = self.current_master(spec)
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
            self.daemons.pause(spec, POLL_S * 5)
        raise ClusterError(
            f"{spec.name} did not catch up with {master.name} in {SYNC_TIMEOUT_S:.0f} s"
        )

    def current_master(self, spec: ProcessSpec) -> ProcessSpec | None:
        """The master of ``spec``'s group: the manifest's, unless auto-failover moved it (the
        member whose runtime info says it is not a slave)."""
        master = self.manifest.master_of(spec)
        group = [
            p
            for p in self.manifest.processes
            if p.broker_name == spec.broker_name and p.kind == "broker" and p != spec
        ]
        infos = runtime_infos([p.addr for p in group])
        serving = [p for p in group if infos.get(p.addr, {}).get("brokerRole", "SLAVE") != "SLAVE"]
        return serving[0] if serving else master

    # ------------------------------------------------------------------ down

    def down(self) -> list[str]:
        stopped = []
        for spec in reversed(self.manifest.start_order()):
            if self.daemons.stop_process(spec):
                stopped.append(spec.name)
                self.out(f"stopped {spec.name}")
        return stopped

    def spec(self, name: str) -> ProcessSpec:
        for spec in self.manifest.processes:
            if spec.name == name:
                return spec
        raise ClusterError(f"no process {name!r} in {self.manifest.name}")

    def start_one(self, name: str) -> None:
        spec = self.spec(name)
        if pid := self.daemons.pid(spec):
            raise ClusterError(f"{name} is already running (pid {pid})")
        try:
            self._start(spec)
            behind = self._wait_in_sync(spec) if spec.role == "slave" else None
        except BaseException:
            self.stop_started()
            raise
        detail = f", in sync ({behind} bytes behind)" if behind is not None else ""
        self.out(f"{name} up as {spec.role}, pid {self.daemons.pid(spec)}{detail}")

    def stop_one(self, name: str) -> None:
        if not self.daemons.stop_process(self.spec(name)):
            raise ClusterError(f"{name} is not running")
        self.out(f"stopped {name}")

    # ------------------------------------------------------------------ status

    def status(self) -> list[dict[str, object]]:
        infos = runtime_infos([p.addr for p in self.manifest.processes if p.kind == "broker"])
        rows = []
        for spec in self.manifest.start_order():
            pid = self.daemons.pid(spec)
            row: dict[str, object] = {
                "process": spec.name,
                "role": spec.role,
                "address": spec.addr,
                "pid": pid or "-",
                "state": "up" if pid else "down",
                "lag": "",
            }
            info = infos.get(spec.addr) or {}
            if "controllerEpoch" in info:  # auto-failover: the role it has now
                row["role"] = f"{info.get('brokerRole', '?')} (epoch {info['controllerEpoch']})"
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


def etcd_argv(
    spec: ProcessSpec, data_dir: Path, members: list[ProcessSpec], token: str
) -> list[str]:
    """One member of the layout's etcd cluster (every etcd process of the layout) on its port,
    peer port + 1. A data dir that exists already holds the cluster: etcd then ignores the
    --initial-* flags, so a restarted member rejoins."""
    binary = shutil.which("etcd")
    if binary is None:
        raise ClusterError(
            f"{spec.name}: no etcd binary; install Debian's etcd-server (make install does)"
        )
    client, peer = f"http://{spec.addr}", f"http://127.0.0.1:{spec.port + 1}"
    return [
        binary,
        f"--name={spec.name}",
        f"--data-dir={data_dir}",
        f"--listen-client-urls={client}",
        f"--advertise-client-urls={client}",
        f"--listen-peer-urls={peer}",
        f"--initial-advertise-peer-urls={peer}",
        "--initial-cluster=" + ",".join(f"{m.name}=http://127.0.0.1:{m.port + 1}" for m in members),
        f"--initial-cluster-token={token}",
        "--initial-cluster-state=new",
    ]
