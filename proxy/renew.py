"""Receipt handles the proxy keeps alive for PushConsumers (ReceiveMessage with auto_renew), as
RocketMQ 5's DefaultReceiptHandleManager: a message handed out stays invisible while its client
consumes it. Every ``renewSchedulePeriodMillis`` the handles whose invisible time ends within
``renewAheadTimeMillis`` get a new one (1 min, 3, 5, 10, 30, then 1 h each time: the Proxy's
RenewStrategyPolicy); after ``renewMaxTimeMillis`` of consuming the message is let go with the
retry delay of its attempt; a client that leaves (NotifyClientTermination) gets its messages
back to the group after ``invisibleTimeMillisWhenClear``. The client's ack, change of invisible
time or dead-lettering takes the handle back, and uses the current one: the broker knows
only the latest.

HeldHandles is the pure table; Renewer is its Trio service (the proxy's remoting thread)."""

from __future__ import annotations

import collections
import logging
import time
from collections.abc import Callable

import attrs
import trio

from proxy.consume import ReceiptHandle
from proxy.settings import RETRY_DELAYS_S

log = logging.getLogger(__name__)

RENEW_DELAYS_MS = (60_000, 180_000, 300_000, 600_000, 1_800_000, 3_600_000)
MAX_HELD = 100_000  # handles renewed at once; past it the oldest are left to expire


@attrs.define
class Held:
    client: str
    group: str
    topic: str
    message_id: str
    handle: ReceiptHandle
    consumed_at_ms: int
    reconsume_times: int
    renew_times: int = 0
    failures: int = 0

    def next_visible_ms(self) -> int:
        return self.handle.extra.pop_time + self.handle.extra.invisible_time


Key = tuple[str, str]  # (group, message id)


class HeldHandles:
    def __init__(self) -> None:
        self._held: collections.OrderedDict[Key, Held] = collections.OrderedDict()

    def __len__(self) -> int:
        return len(self._held)

    def hold(self, held: Held) -> None:
        self._held[(held.group, held.message_id)] = held
        while len(self._held) > MAX_HELD:
            self._held.popitem(last=False)

    def release(self, group: str, message_id: str) -> Held | None:
        return self._held.pop((group, message_id), None)

    def due(self, now_ms: int, ahead_ms: int) -> list[Held]:
        return [h for h in self._held.values() if h.next_visible_ms() - now_ms <= ahead_ms]

    def of_client(self, client: str) -> list[Held]:
        gone = [key for key, held in self._held.items() if held.client == client]
        return [self._held.pop(key) for key in gone]


def renew_delay_ms(renew_times: int) -> int:
    return RENEW_DELAYS_MS[min(renew_times, len(RENEW_DELAYS_MS) - 1)]


def retry_delay_ms(reconsume_times: int) -> int:
    return RETRY_DELAYS_S[min(reconsume_times, len(RETRY_DELAYS_S) - 1)] * 1000


@attrs.frozen
class RenewPolicy:
    period_ms: int = 5_000  # renewSchedulePeriodMillis
    ahead_ms: int = 10_000  # renewAheadTimeMillis
    max_ms: int = 3 * 3600 * 1000  # renewMaxTimeMillis
    max_failures: int = 3  # maxRenewRetryTimes
    when_clear_ms: int = 1_000  # invisibleTimeMillisWhenClear


class Renewer:
    """``change_invisible(group, topic, handle, invisible_ms) -> new handle`` is PopClient's."""

    def __init__(
        self,
        change_invisible: Callable,
        policy: RenewPolicy,
        clock: Callable[[], int] = lambda: int(time.time() * 1000),
    ) -> None:
        self.change_invisible = change_invisible
        self.policy = policy
        self.clock = clock
        self.held = HeldHandles()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            await trio.sleep(self.policy.period_ms / 1000)
            await self.renew_due()

    async def hold(self, entries: list[Held]) -> None:
        for held in entries:
            self.held.hold(held)

    async def take(self, group: str, message_id: str, handle: ReceiptHandle) -> ReceiptHandle:
        """The handle to act on for the client's ack or change: the renewed one when held."""
        held = self.held.release(group, message_id)
        return held.handle if held is not None else handle

    async def renew_due(self) -> None:
        now = self.clock()
        for held in self.held.due(now, self.policy.ahead_ms):
            if now - held.consumed_at_ms >= self.policy.max_ms:
                self.held.release(held.group, held.message_id)
                await self._change(held, retry_delay_ms(held.reconsume_times), "stop renewing")
                continue
            renewed = await self._change(held, renew_delay_ms(held.renew_times), "renew")
            if renewed is not None:
                held.handle, held.renew_times, held.failures = renewed, held.renew_times + 1, 0
            else:
                held.failures += 1
                if held.failures >= self.policy.max_failures:
                    self.held.release(held.group, held.message_id)

    async def client_left(self, client: str) -> None:
        for held in self.held.of_client(client):
            await self._change(held, self.policy.when_clear_ms, "clear")

    async def _change(self, held: Held, invisible_ms: int, why: str) -> ReceiptHandle | None:
        try:
            return await self.change_invisible(held.group, held.topic, held.handle, invisible_ms)
        except Exception as exc:  # the broker's refusal or a lost connection: logged, retried
            log.info("%s of %s/%s failed: %r", why, held.group, held.message_id, exc)
            return None
