"""The broker's periodic jobs, besides registration (broker/namesrv_registrar.py) and the
store's own services: the config files written out (Java's scheduled ``persist`` of consumer
offsets, delay offsets, topics and subscription groups every ``flushConsumerOffsetInterval``),
and the client side kept tidy every 10 s (Java's ClientHousekeepingService closes channels of
clients silent past ``channelExpiredTimeout``; the stats windows take their sample then too).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Sequence
from typing import Protocol

import trio

from broker.client_manager import ClientManager
from broker.config import BrokerConfig
from broker.stats import BrokerStatsManager

log = logging.getLogger(__name__)

HOUSEKEEPING_INTERVAL_S = 10.0


class PersistedFile(Protocol):
    what: str


class Persisted(Protocol):
    """A manager kept in a JSON config file (broker/persist.py)."""

    file: PersistedFile

    async def persist(self) -> None: ...

    def persist_sync(self) -> None: ...


class ConfigPersistService:
    def __init__(self, config: BrokerConfig, managers: Sequence[Persisted]) -> None:
        self.config = config  # live: flushConsumerOffsetInterval is read at each round
        self.managers = managers

    async def run(self) -> None:
        """Offsets live in memory and land here; a failed write (full disk) is logged once by
        its file and retried every period until it succeeds."""
        while True:
            await trio.sleep(self.config.flush_consumer_offset_interval / 1000)
            for manager in self.managers:
                with contextlib.suppress(OSError):
                    await manager.persist()

    def persist_sync(self) -> None:
        """At shutdown, on the loop: every file, whatever the others do."""
        for manager in self.managers:
            try:
                manager.persist_sync()
            except OSError as exc:  # the file logged when its writes started failing
                log.error("%s not saved at shutdown: %s", manager.file.what, exc)


class ClientHousekeepingService:
    def __init__(
        self, clients: ClientManager, stats: BrokerStatsManager, clock: Callable[[], int]
    ) -> None:
        self.clients = clients
        self.stats = stats
        self.clock = clock

    async def run(self) -> None:
        while True:
            await trio.sleep(HOUSEKEEPING_INTERVAL_S)
            self.stats.sample(self.clock())
            for channel in self.clients.scan_expired():
                close = getattr(channel, "close_soon", None)
                if close is not None:
                    close("client channel expired")
