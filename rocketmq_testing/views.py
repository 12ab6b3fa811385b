"""Other faces of a running cluster (rocketmq_testing/cluster.py): the session cluster as one
test sees it (names unique to the test, no faults), and the Trio-native cluster whose wire calls
run in the test's own event loop."""

from __future__ import annotations

import functools
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from rocketmq_testing import wire
from rocketmq_testing.cluster import ClusterError, RocketMQCluster

_FAULTS = frozenset({"kill_broker", "restart_broker", "pause_broker", "resume_broker", "stop"})


class SessionCluster:
    """The session-wide cluster, seen by one test. ``topic("orders")`` and ``group("g")`` give
    names no other test gets (``orders-1a2b3c4d``), so tests sharing the cluster stay
    independent; everything else is the cluster's own. Faults would reach every later test:
    they are refused here (the function-scoped ``rocketmq_cluster`` takes them)."""

    def __init__(self, cluster: RocketMQCluster) -> None:
        self._cluster = cluster
        self.suffix = uuid.uuid4().hex[:8]

    def topic(self, name: str) -> str:
        return f"{name}-{self.suffix}"

    def group(self, name: str) -> str:
        return f"{name}-{self.suffix}"

    def __getattr__(self, attr: str) -> Any:
        if attr in _FAULTS:
            raise ClusterError(
                f"{attr} on the session cluster would reach every later test: use the "
                "rocketmq_cluster (or rocketmq_cluster_factory) fixture for fault injection"
            )
        return getattr(self._cluster, attr)


class TrioCluster:
    """The cluster for Trio tests: wire calls are ``await``-ed in the test's loop with its own
    admin client, process control runs in a worker thread (it waits on processes)."""

    def __init__(self, cluster: RocketMQCluster, admin: Any) -> None:
        self.cluster = cluster
        self._admin = admin

    @classmethod
    @asynccontextmanager
    async def open(cls, cluster: RocketMQCluster) -> AsyncIterator[TrioCluster]:
        from client.admin import AdminClient

        async with AdminClient.open(cluster.namesrv_addr) as admin:
            yield cls(cluster, admin)

    @property
    def namesrv_addr(self) -> str:
        return self.cluster.namesrv_addr

    @property
    def brokers(self) -> list[Any]:
        return self.cluster.brokers

    def broker(self, name: str) -> Any:
        return self.cluster.broker(name)

    def topic(self, name: str) -> str:
        return self.cluster.topic(name)

    def group(self, name: str) -> str:
        return self.cluster.group(name)

    async def create_topic(
        self, name: str, queues: int = 4, order: bool = False, timeout_s: float = 30.0
    ) -> str:
        await wire.create_topic(
            self._admin, self.cluster.cluster_name, name, queues, order, timeout_s
        )
        return name

    async def delete_topic(self, name: str) -> None:
        await wire.delete_topic(self._admin, self.cluster.cluster_name, name)

    async def messages(self, topic: str) -> list[Any]:
        return await wire.messages(self._admin, topic, self.cluster.readers())

    async def consumer_offsets(self, group: str) -> dict[Any, int]:
        return await wire.consumer_offsets(self._admin, group)

    async def wait_consumed(self, group: str, topic: str, timeout: float = 30.0) -> None:
        await wire.wait_consumed(self._admin, group, topic, timeout)

    async def _in_thread(self, method: str, *args: Any) -> Any:
        import trio

        call = functools.partial(getattr(self.cluster, method), *args)
        return await trio.to_thread.run_sync(call)

    async def kill_broker(self, name: str, signal: int = 9) -> int | None:
        return await self._in_thread("kill_broker", name, signal)

    async def restart_broker(self, name: str) -> None:
        await self._in_thread("restart_broker", name)

    async def pause_broker(self, name: str) -> None:
        await self._in_thread("pause_broker", name)

    async def resume_broker(self, name: str) -> None:
        await self._in_thread("resume_broker", name)
