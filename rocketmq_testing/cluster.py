"""A running test cluster: NameServers and brokers of a layout (rocketmq_testing/layouts.py) as
real ``mqnamesrv``/``mqbroker`` processes, stores and logs under one directory, and what a test
does with it: topics, crashes and restarts, pauses, what the store holds, consumer offsets.

Start-up overlaps what can overlap: every process is spawned at once and imports its program
(most of a start) while the NameServers bind; masters then start together, slaves after them
(a slave learns its master from its first registration). Stopping is SIGTERM to every broker
at once, then the NameServers; a paused process is resumed first, and SIGKILL follows a grace
period. Whatever happens, nothing started here outlives ``stop()``."""

from __future__ import annotations

import atexit
import shutil
import signal
import threading
import weakref
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs

from rocketmq_testing import layouts, ports, wire
from rocketmq_testing.errors import ClusterError, ServerStartError
from rocketmq_testing.layouts import ProcessPlan
from rocketmq_testing.server import ServerProcess, SparePool

START_TIMEOUT_S = 60.0
SYNC_TIMEOUT_S = 60.0
PORT_ATTEMPTS = 5


@attrs.frozen
class BrokerInfo:
    """One broker process: ``name`` is its process name in the layout (``broker-a-m``),
    ``broker_name`` RocketMQ's brokerName (``broker-a``), ``role`` its brokerRole."""

    name: str
    broker_name: str
    broker_id: int
    role: str
    addr: str


class RocketMQCluster:
    """Use ``RocketMQCluster.start(base_dir, layout=...)`` or the pytest fixtures."""

    def __init__(
        self, base_dir: Path, plans: list[ProcessPlan], spares: SparePool | None = None
    ) -> None:
        self.base_dir = base_dir
        self._spares = spares
        self._plans = {plan.name: plan for plan in plans}
        self._servers: dict[str, ServerProcess] = {}
        self._argv: dict[str, list[str]] = {}
        self._addrs: dict[str, str] = {}
        self._portal: Any = None
        self._lock = threading.Lock()
        self.namesrv_addr = ""
        self.cluster_name = next(
            (
                p.conf.get("brokerClusterName", "DefaultCluster")
                for p in plans
                if p.kind == "broker"
            ),
            "DefaultCluster",
        )
        _LIVE.add(self)

    # ------------------------------------------------------------------ start

    @classmethod
    def start(
        cls,
        base_dir: Path,
        layout: str = "single",
        broker_conf: Mapping[str, object] | None = None,
        *,
        spares: SparePool | None = None,
    ) -> RocketMQCluster:
        """``spares``: take processes from that pool, and refill it for the next cluster."""
        plans = layouts.plan(layout, broker_conf)
        cluster = cls(Path(base_dir), plans, spares)
        try:
            cluster._start()
        except BaseException:
            cluster.stop(remove_files=False)
            raise
        if spares is not None:
            spares.refill([plan.kind for plan in plans])
        return cluster

    def _start(self) -> None:
        for plan in self._plans.values():  # all at once: their imports overlap
            self._respawn(plan.name)
        namesrvs = [p for p in self._plans.values() if p.kind == "namesrv"]
        for plan in namesrvs:
            self._launch(plan, self._namesrv_conf(plan))
        for plan in namesrvs:
            self._addrs[plan.name] = f"127.0.0.1:{self._servers[plan.name].wait_ready()}"
        self.namesrv_addr = ";".join(self._addrs[p.name] for p in namesrvs)
        masters = [p for p in self._plans.values() if p.kind == "broker" and p.broker_id == 0]
        slaves = [p for p in self._plans.values() if p.kind == "broker" and p.broker_id != 0]
        for group in (masters, slaves):
            for plan in group:
                self._launch(plan, self._broker_conf(plan))
            for plan in group:
                self._wait_broker(plan)
        if slaves:
            self._wait_in_sync(slaves)

    def _namesrv_conf(self, plan: ProcessPlan) -> dict[str, object]:
        return {
            **plan.conf,
            "listenPort": 0,
            "listenHost": "127.0.0.1",
            "kvConfigPath": self.base_dir / "store" / plan.name / "kvConfig.json",
        }

    def _broker_conf(self, plan: ProcessPlan) -> dict[str, object]:
        taken = [p for addr in self._addrs.values() for p in ports.block_of(_port(addr))]
        return {
            **plan.conf,
            "listenPort": ports.broker_listen_port(avoid=taken),
            "namesrvAddr": self.namesrv_addr,
            "storePathRootDir": self.base_dir / "store" / plan.name,
        }

    def _launch(self, plan: ProcessPlan, conf: Mapping[str, object]) -> None:
        path = self.base_dir / "conf" / f"{plan.name}.conf"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(layouts.conf_text(conf))
        self._argv[plan.name] = ["-c", str(path)]
        if plan.kind == "broker":
            self._addrs[plan.name] = f"127.0.0.1:{conf['listenPort']}"
        self._servers[plan.name].launch(self._argv[plan.name])

    def _wait_broker(self, plan: ProcessPlan) -> None:
        """READY, or a new block of ports when one was taken under us (rocketmq_testing/ports.py)."""
        for attempt in range(PORT_ATTEMPTS):
            try:
                self._servers[plan.name].wait_ready(START_TIMEOUT_S)
                return
            except ServerStartError as exc:
                if not exc.address_in_use or attempt == PORT_ATTEMPTS - 1:
                    raise
            del self._addrs[plan.name]
            self._respawn(plan.name)
            self._launch(plan, self._broker_conf(plan))

    def _respawn(self, name: str) -> None:
        kind = self._plans[name].kind
        server = self._spares.take(kind) if self._spares is not None else ServerProcess(kind)
        self._servers[name] = server.adopt(name, self.base_dir / "logs" / f"{name}.log")

    def _wait_in_sync(self, slaves: list[ProcessPlan]) -> None:
        pairs = [(self._addrs[self._master_of(p).name], self._addrs[p.name]) for p in slaves]
        self._call(wire.wait_slaves_in_sync, pairs, SYNC_TIMEOUT_S)

    def _master_of(self, plan: ProcessPlan) -> ProcessPlan:
        return next(
            p
            for p in self._plans.values()
            if p.kind == "broker" and p.broker_name == plan.broker_name and p.broker_id == 0
        )

    # ------------------------------------------------------------------ what it runs

    @property
    def brokers(self) -> list[BrokerInfo]:
        return [self._info(p) for p in self._plans.values() if p.kind == "broker"]

    def _info(self, plan: ProcessPlan) -> BrokerInfo:
        assert plan.broker_name is not None
        return BrokerInfo(
            plan.name, plan.broker_name, plan.broker_id, plan.role, self._addrs[plan.name]
        )

    def topic(self, name: str) -> str:
        """A topic name for this test: this cluster is the test's own, so ``name`` itself (the
        session cluster's view makes it unique; rocketmq_testing/views.py)."""
        return name

    def group(self, name: str) -> str:
        return name

    def broker(self, name: str) -> BrokerInfo:
        """By process name (``broker-a-s``), or by brokerName for its master (``broker-a``)."""
        return self._info(self._broker_plan(name))

    def _broker_plan(self, name: str) -> ProcessPlan:
        plan = self._plans.get(name)
        if plan is not None and plan.kind == "broker":
            return plan
        for plan in self._plans.values():
            if plan.kind == "broker" and plan.broker_name == name and plan.broker_id == 0:
                return plan
        known = ", ".join(p.name for p in self._plans.values() if p.kind == "broker")
        raise ClusterError(f"no broker {name!r} in this cluster (brokers: {known})")

    def pids(self) -> set[int]:
        """Every server process this cluster runs or ran (restarts included: the current one)."""
        return {server.pid for server in self._servers.values()}

    def pid(self, name: str) -> int:
        return self._servers[self._broker_plan(name).name].pid

    def alive(self, name: str) -> bool:
        return self._servers[self._broker_plan(name).name].alive()

    # ------------------------------------------------------------------ faults

    def kill_broker(self, name: str, signal: int = signal.SIGKILL) -> int | None:
        """Sends ``signal`` (SIGKILL: a crash; SIGTERM: a clean stop) and waits for the exit;
        returns the exit code."""
        return self._servers[self._broker_plan(name).name].kill(signal)

    def restart_broker(self, name: str) -> None:
        """Stops the broker if it runs (cleanly), starts it again on the same ports and store,
        and returns once it serves (a slave: once it is back in sync)."""
        plan = self._broker_plan(name)
        self._servers[plan.name].stop()
        self._respawn(plan.name)
        self._servers[plan.name].launch(self._argv[plan.name])
        try:
            self._servers[plan.name].wait_ready(START_TIMEOUT_S)
        except ServerStartError as exc:
            hint = " (another program took its port meanwhile)" if exc.address_in_use else ""
            raise ClusterError(f"restart of {plan.name} failed{hint}: {exc}") from None
        master = self._servers[self._master_of(plan).name]
        if plan.broker_id != 0 and master.alive() and not master.paused:
            self._wait_in_sync([plan])

    def pause_broker(self, name: str) -> None:
        """SIGSTOP: the broker holds its connections and answers nothing (a GC pause, a hung
        disk). ``resume_broker`` or the cluster's stop sends SIGCONT."""
        self._servers[self._broker_plan(name).name].send(signal.SIGSTOP)

    def resume_broker(self, name: str) -> None:
        self._servers[self._broker_plan(name).name].send(signal.SIGCONT)

    # ------------------------------------------------------------------ through the wire

    def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``await fn(admin, *args)`` on the cluster's admin client (its own loop thread)."""
        with self._lock:
            if self._portal is None:
                from client.admin import AdminClient
                from client.sync import Portal

                self._portal = Portal(lambda: AdminClient.open(self.namesrv_addr))
        return self._portal.call(fn, self._portal.value, *args)

    def create_topic(
        self, name: str, queues: int = 4, order: bool = False, timeout_s: float = 30.0
    ) -> str:
        self._call(wire.create_topic, self.cluster_name, name, queues, order, timeout_s)
        return name

    def delete_topic(self, name: str) -> None:
        self._call(wire.delete_topic, self.cluster_name, name)

    def readers(self) -> list[tuple[str, str]]:
        """(brokerName, address) of the broker to read each brokerName from: its master, or a
        slave while the master is down or paused."""
        out: dict[str, str] = {}
        for info in sorted(self.brokers, key=lambda b: b.broker_id):
            server = self._servers[info.name]
            if info.broker_name not in out and server.alive() and not server.paused:
                out[info.broker_name] = info.addr
        return list(out.items())

    def messages(self, topic: str) -> list[Any]:
        """What the store holds for ``topic``, decoded (``remoting.message.MessageExt``: body,
        tags, keys, properties, queue_id, queue_offset, msg_id, reconsume_times, ...)."""
        return self._call(wire.messages, topic, self.readers())

    def consumer_offsets(self, group: str) -> dict[Any, int]:
        """``MessageQueue(topic, broker_name, queue_id)`` -> the group's committed offset."""
        return self._call(wire.consumer_offsets, group)

    def wait_consumed(self, group: str, topic: str, timeout: float = 30.0) -> None:
        self._call(wire.wait_consumed, group, topic, timeout)

    # ------------------------------------------------------------------ stop

    def stop(self, *, remove_files: bool = True) -> dict[str, int | None]:
        """Stops every process (brokers first, at once, then NameServers) and, with
        ``remove_files``, deletes the cluster's directory. Returns each process's exit code
        (0: a clean stop; a crash a test caused shows as its signal, -9). Safe to call twice."""
        portal, self._portal = self._portal, None
        if portal is not None:
            portal.close()
        brokers = [s for name, s in self._servers.items() if self._plans[name].kind == "broker"]
        namesrvs = [s for name, s in self._servers.items() if self._plans[name].kind != "broker"]
        for group in (brokers, namesrvs):
            for server in group:
                server.terminate()
            for server in group:
                server.stop()
        _LIVE.discard(self)
        if remove_files:
            shutil.rmtree(self.base_dir, ignore_errors=True)
        return {name: server.proc.returncode for name, server in self._servers.items()}

    def __enter__(self) -> RocketMQCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _port(addr: str) -> int:
    return int(addr.rsplit(":", 1)[1])


_LIVE: weakref.WeakSet[RocketMQCluster] = weakref.WeakSet()


@atexit.register
def _stop_leftovers() -> None:
    """A run that ends without its teardowns (an interrupted session) still stops its servers."""
    for cluster in list(_LIVE):
        cluster.stop(remove_files=False)
