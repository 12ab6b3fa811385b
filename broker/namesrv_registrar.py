"""NamesrvRegistrar: the broker's side of registration (Java's BrokerController.registerBrokerAll
and its scheduled task; docs/spec/namesrv.md §3, §4). The wire calls are BrokerOuterAPI's
(broker/registration.py); this module decides when to call and what the replies change.

It registers once when the broker starts serving, then every ``registerNameServerPeriod``
(clamped to 10-60 s as RocketMQ does) and at once when a topic or the broker's permission
changes. A reply tells a slave its master (``HaState``, read by the HA client and the config
sync), the ordered topics, or that a NameServer fenced this broker's name after its slave was
promoted: then every write is refused (``fenced``). On stop it unregisters.
"""

from __future__ import annotations

import logging

import attrs
import trio

from broker.config import BrokerConfig
from broker.registration import BrokerIdentity, BrokerOuterAPI, RegisterResult
from broker.store.config import BrokerRole, MessageStoreConfig
from broker.store.slotted import Slotted
from broker.topic_config import TopicConfigManager

log = logging.getLogger(__name__)

UNREGISTER_TIMEOUT_S = 3.0
MIN_PERIOD_MS, MAX_PERIOD_MS = 10_000, 60_000


@attrs.define
class HaState:
    """What registration learned for the HA side (a slave's master), see broker/ha."""

    master_addr: str | None = None
    ha_master_addr: str | None = None
    changed: trio.Event = attrs.Factory(trio.Event)


class NamesrvRegistrar(Slotted):
    __slots__ = ("fenced",)  # read by the lone-send front in C (broker/store/slotted.py)

    def __init__(
        self,
        config: BrokerConfig,
        store_config: MessageStoreConfig,
        topics: TopicConfigManager,
        ha: HaState,
    ) -> None:
        self.config = config  # live: brokerPermission and the period are read at each round
        self.store_config = store_config
        self.topics = topics
        self.ha = ha
        self.outer: BrokerOuterAPI | None = None
        # Set when a NameServer refuses us as master after our slave was promoted: split-brain
        # writes are refused (the remark says how to rejoin).
        self.fenced: str | None = None
        self._register_now = trio.Event()
        # Controller mode: the epoch this broker serves in, sent as the DataVersion's
        # stateVersion (RocketMQ 5), so a NameServer keeps the newest term's master.
        self.state_version: int | None = None

    @property
    def is_slave(self) -> bool:
        return self.store_config.broker_role is BrokerRole.SLAVE

    def identity(self) -> BrokerIdentity:
        return BrokerIdentity(
            cluster_name=self.config.broker_cluster_name,
            broker_name=self.config.broker_name,
            broker_addr=self.config.broker_addr,
            broker_id=self.config.broker_id,
            ha_server_addr=self.config.ha_server_addr(self.store_config.ha_listen_port),
        )

    def request(self) -> None:
        """Register with every NameServer soon (a topic or the permission changed)."""
        self._register_now.set()

    async def run(
        self,
        outer: BrokerOuterAPI,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """The first registration, then ``started()``; then every period or request."""
        self.outer = outer
        await self.register_all()
        task_status.started()
        while True:
            period_ms = min(
                max(self.config.register_name_server_period, MIN_PERIOD_MS), MAX_PERIOD_MS
            )
            with trio.move_on_after(period_ms / 1000):
                await self._register_now.wait()
            await self.register_all()

    async def register_all(self) -> None:
        # Reset first: a broker without NameServers used to return with the event still set and
        # spin this loop (a third of its CPU) after the first topic change.
        self._register_now = trio.Event()
        if self.outer is None or not self.outer.namesrv_addrs:
            return
        topics = self.topics.with_permission(self.config.broker_permission)
        if self.state_version is not None:
            version = attrs.evolve(topics.data_version, state_version=self.state_version)
            topics = attrs.evolve(topics, data_version=version)
        results = await self.outer.register_all(
            self.identity(),
            topics,
            self.config.register_broker_timeout_mills / 1000,
        )
        for result in results:
            self._apply(result)

    async def unregister_all(self) -> None:
        if self.outer is not None:
            with trio.move_on_after(UNREGISTER_TIMEOUT_S + 1):
                await self.outer.unregister_all(self.identity(), UNREGISTER_TIMEOUT_S)

    def _apply(self, result: RegisterResult) -> None:
        if result.fenced:
            if self.fenced is None:
                log.critical("%s: refusing every write from now on", result.fenced)
            self.fenced = result.fenced
            return
        ha = self.ha
        if self.is_slave and result.master_addr and result.master_addr != ha.master_addr:
            log.info(
                "master of %s is %s (HA %s)",
                self.config.broker_name,
                result.master_addr,
                result.ha_server_addr,
            )
            ha.master_addr = result.master_addr
            if result.ha_server_addr and not self.store_config.ha_master_address:
                ha.ha_master_addr = result.ha_server_addr
            ha.changed.set()
            ha.changed = trio.Event()
        if result.order_topics is not None:
            table = self.topics.table
            for name, config in list(table.items()):
                order = name in result.order_topics
                if config.order != order:
                    table[name] = attrs.evolve(config, order=order)
