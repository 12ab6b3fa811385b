"""SlaveSynchronize: a slave copies its master's topics, consumer offsets, delay offsets and
subscription groups every 10 s (docs/spec/ha.md §6.1; our key slaveSynchronizeInterval changes
it), and at once when it learns a new master (RocketMQ waits 3 s after start-up for the first
round). RocketMQ keeps it in
``broker/slave/``: it copies configuration over the remoting port, not the CommitLog (that is
broker/ha).

The timer checkpoint (GET_TIMER_CHECK_POINT, broker/timer/checkpoint.py) is copied every 3 s, as
RocketMQ 5 does it ("latency-sensitive"): a promoted slave delivers again only the timers its
master delivered in the last 3 s. Pop state needs no request of its own: checkpoints and acks
are records of the revive topic in the replicated CommitLog, and the revive offsets and the pop
groups' offsets are consumer offsets.

Topic configs come over the master's VIP port (listenPort - 2) as RocketMQ does; the rest over
the main port. Offsets are merged, never removed, so a consumer that committed on the slave while
the master was away keeps its position until the master's newer value arrives.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import trio

from broker.ha.client import split_addr
from broker.timer import checkpoint
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
    from broker.timer.service import TimerProgress
    from broker.topic_config import TopicConfigManager
    from remoting.client import RemotingClient

log = logging.getLogger(__name__)

FIRST_DELAY_S = 3.0
INTERVAL_S = 10.0
TIMER_INTERVAL_S = 3.0  # RocketMQ 5 syncs the timer checkpoint on its 3 s tick
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
        timer_progress: TimerProgress | None,
        client: RemotingClient,
        interval_s: float = INTERVAL_S,
    ) -> None:
        self.ha = ha  # the master's address, from registration
        self.broker_addr = broker_addr  # our own: never a master of ourselves
        self.topics = topics
        self.offsets = offsets
        self.delay_offsets = delay_offsets
        self.groups = groups
        self.timer_progress = timer_progress  # None: timerWheelEnable=false, nothing to copy
        self.client = client
        self.interval_s = interval_s  # slaveSynchronizeInterval: between full config rounds
        self.last_sync_ok = False

    async def run(self) -> None:
        if not self.ha.master_addr:
            await trio.sleep(FIRST_DELAY_S)
        synced_at: float | None = None  # trio time of the last full round
        while True:
            changed = self.ha.changed
            master = self.ha.master_addr
            if master and master != self.broker_addr:
                now = trio.current_time()
                if synced_at is None or now - synced_at >= self.interval_s:
                    synced_at = now
                    await self._round(master, self.sync_all, "config")
                if self.timer_progress is not None:
                    await self._round(master, self.sync_timer_check_point, "timer checkpoint")
            # A new master is synchronized at once, not at the next tick.
            with trio.move_on_after(min(TIMER_INTERVAL_S, self.interval_s)):
                await changed.wait()
                synced_at = None

    async def _round(self, master: str, sync: Callable[[str], Awaitable[None]], what: str) -> None:
        try:
            await sync(master)
            self.last_sync_ok = True
        except (
            OSError,
            RemotingError,
            trio.TooSlowError,
            trio.BrokenResourceError,
            ValueError,
        ) as exc:
            # The master went away mid-sync (it is being killed or restarted): a slave keeps
            # serving and tries again at the next round.
            self.last_sync_ok = False
            log.warning("%s sync from master %s failed: %s", what, master, exc)

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

    async def sync_timer_check_point(self, master: str) -> None:
        """RocketMQ 5's syncTimerCheckPoint; a bad body is a TimerCheckpointError (ValueError)."""
        assert self.timer_progress is not None
        copied = checkpoint.decode(await self._fetch(master, RequestCode.GET_TIMER_CHECK_POINT))
        progress = self.timer_progress
        before = progress.encode()
        progress.adopt(copied)
        if progress.encode() != before:  # an idle master's progress is not rewritten every 3 s
            await progress.persist()
