"""The Telemetry streams the proxy holds open (asyncio side): each consumer's stream is known
by its group (proxy/relay.py puts a broker's calls for the group to one), each producer's by
the topics it publishes, so a broker's transaction check-back for a half of that topic's
producer group (the Proxy names it after the topic) can be put to one of them as a
RecoverOrphanedTransactionCommand. Each stream's outbox is bounded: a producer that stops
reading loses check-backs, which the broker repeats."""

from __future__ import annotations

import asyncio
import collections
import itertools
import logging

from proxy.apis import service_pb2 as rpc

log = logging.getLogger(__name__)

OUTBOX = 64  # commands waiting for one stream
MAX_TOPICS_PER_STREAM = 256


class TelemetryStreams:
    def __init__(self) -> None:
        self._by_topic: dict[str, list[asyncio.Queue]] = collections.defaultdict(list)
        self._by_group: dict[str, list[asyncio.Queue]] = collections.defaultdict(list)
        self._turn = itertools.count()

    def open(self) -> asyncio.Queue:
        return asyncio.Queue(OUTBOX)

    def publishes(self, outbox: asyncio.Queue, topics: list[str]) -> None:
        for topic in topics[:MAX_TOPICS_PER_STREAM]:
            holders = self._by_topic[topic]
            if outbox not in holders:
                holders.append(outbox)

    def consumes(self, outbox: asyncio.Queue, group: str) -> None:
        """The stream is a consumer of ``group`` (a broker's calls for the group go to it)."""
        holders = self._by_group[group]
        if outbox not in holders:
            holders.append(outbox)

    def of_group(self, group: str) -> asyncio.Queue | None:
        """One stream of a consumer of ``group`` (taking turns), None when none is open."""
        holders = self._by_group.get(group) or []
        return holders[next(self._turn) % len(holders)] if holders else None

    def close(self, outbox: asyncio.Queue) -> None:
        for table in (self._by_topic, self._by_group):
            for key in [k for k, holders in table.items() if outbox in holders]:
                table[key].remove(outbox)
                if not table[key]:
                    del table[key]

    def ask(self, topic: str, command: rpc.TelemetryCommand) -> bool:
        """Put ``command`` to one producer of ``topic`` (taking turns); False when none can
        take it now."""
        holders = self._by_topic.get(topic) or []
        if not holders:
            return False
        start = next(self._turn)
        for i in range(len(holders)):
            outbox = holders[(start + i) % len(holders)]
            try:
                outbox.put_nowait(command)
                return True
            except asyncio.QueueFull:
                continue
        return False
