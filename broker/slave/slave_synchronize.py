"""SlaveSynchronize: a slave copies its master's topics, consumer offsets, delay offsets and
subscription groups every 10 s (docs/spec/ha.md §6.1), and at once when it learns a new master
(RocketMQ waits 3 s after start-up for the first round). RocketMQ keeps it in
``broker/slave/``: it copies configuration over the remoting port, not the CommitLog (that is
broker/ha).

Topic configs come over the master's VIP port (listenPort - 2) as RocketMQ does; the rest over
the main port. Offsets are merged, never removed, so a consumer that committed on the slave while
the master was away keeps its position until the master's newer value arrives.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import trio

from broker.ha.client import split_addr
from remoting.body import (
    ConsumerOffsetSerializeWrapper,
    DelayOffsetSerializeWrapper,
    SubscriptionGroupWrapper,
    TopicConfigSerializeWrapper,
)
from remoting.codes import RequestCode
from remoting.command import RemotingCommand
from remoting.errors import RemotingError
from remoting.serde import decode_body

if TYPE_CHECKING:
    from broker.namesrv_registrar import HaState
    from broker.offsets import ConsumerOffsetManager, DelayOffsetTable
    from broker.subscription_group import SubscriptionGroupManager
    from broker.topic_config import TopicConfigManager
    from remoting.client import RemotingClient

log = logging.getLogger(__name__)

FIRST_DELAY_S = 3.0
INTERVAL_S = 10.0
TIMEOUT_S = 3.0


def vip_addr(addr: str) -> str:
    host, port = split_addr(addr)
    return f"{host}:{port - 2}"


class SlaveSynchronize:
    def __init__(
        self,
        *,
        ha: HaState,
        broker_addr: str,
        topics: TopicConfigManager,
        offsets: ConsumerOffsetManager,
        delay_offsets: DelayOffsetTable,
        groups: SubscriptionGroupManager,
        client: RemotingClient,
    ) -> None:
        self.ha = ha  # the master's address, from registration
        self.broker_addr = broker_addr  # our own: never a master of ourselves
        self.topics = topics
        self.offsets = offsets
        self.delay_offsets = delay_offsets
        self.groups = groups
        self.client = client
        self.last_sync_ok = False

    async def run(self) -> None:
        if not self.ha.master_addr:
            await trio.sleep(FIRST_DELAY_S)
        while True:
            changed = self.ha.changed
            master = self.ha.master_addr
            if master and master != self.broker_addr:
                try:
                    await self.sync_all(master)
                    self.last_sync_ok = True
                except (
                    OSError,
                    RemotingError,
                    trio.TooSlowError,
                    trio.BrokenResourceError,
                    ValueError,
                ) as exc:
                    # The master went away mid-sync (it is being killed or restarted): a slave
                    # keeps serving and tries again at the next round.
                    self.last_sync_ok = False
                    log.warning("config sync from master %s failed: %s", master, exc)
            # A new master is synchronized at once, not at the next tick.
            with trio.move_on_after(INTERVAL_S):
                await changed.wait()

    async def _fetch(self, addr: str, code: int) -> bytes:
        response = await self.client.invoke(addr, RemotingCommand.request(code, {}), TIMEOUT_S)
        if response.code != 0:
            raise ValueError(f"request {code} answered {response.code}: {response.remark}")
        return response.body or b"{}"

    async def sync_all(self, master: str) -> None:
        topics = decode_body(
            TopicConfigSerializeWrapper,
            await self._fetch(vip_addr(master), RequestCode.GET_ALL_TOPIC_CONFIG),
        )
        manager = self.topics
        if topics.data_version != manager.data_version:
            manager.table.clear()
            manager.table.update(topics.topic_config_table)
            manager.data_version = topics.data_version
            manager.persist_sync()
            log.info("topic config synchronized from master %s", master)

        offsets = decode_body(
            ConsumerOffsetSerializeWrapper,
            await self._fetch(master, RequestCode.GET_ALL_CONSUMER_OFFSET),
        )
        for key, table in offsets.offset_table.items():
            self.offsets.replace(key, table)
        await self.offsets.persist()

        delays = decode_body(
            DelayOffsetSerializeWrapper,
            await self._fetch(master, RequestCode.GET_ALL_DELAY_OFFSET),
        )
        self.delay_offsets.table = dict(delays.offset_table)
        await self.delay_offsets.persist()

        groups = decode_body(
            SubscriptionGroupWrapper,
            await self._fetch(master, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG),
        )
        if groups.data_version != self.groups.data_version:
            self.groups.table.update(groups.subscription_group_table)
            self.groups.data_version = groups.data_version
            self.groups.persist_sync()
