"""RebalanceLockManager: queue locks for orderly consumers (LOCK_BATCH_MQ, UNLOCK_BATCH_MQ).

A lock is held by a client id for one group and lapses 60 s after its last renewal (Java's
``rocketmq.broker.rebalance.lockMaxLiveTime``), so a consumer that died without unlocking
cannot block its queues forever. Pure: the clock is injected.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from remoting.body import MessageQueue

LOCK_MAX_LIVE_MS = 60_000


class RebalanceLockManager:
    def __init__(self, clock: Callable[[], int], max_live_ms: int = LOCK_MAX_LIVE_MS) -> None:
        self.clock = clock
        self.max_live_ms = max_live_ms
        self._locks: dict[str, dict[MessageQueue, tuple[str, int]]] = {}

    def _holder(self, group: str, mq: MessageQueue, now: int) -> str | None:
        entry = self._locks.get(group, {}).get(mq)
        if entry is None or now - entry[1] > self.max_live_ms:
            return None
        return entry[0]

    def try_lock_batch(
        self, group: str, mqs: Iterable[MessageQueue], client_id: str
    ) -> list[MessageQueue]:
        """Lock (or renew) every queue that is free or already ours; return those we hold."""
        now = self.clock()
        table = self._locks.setdefault(group, {})
        locked = []
        for mq in mqs:
            holder = self._holder(group, mq, now)
            if holder is None or holder == client_id:
                table[mq] = (client_id, now)
                locked.append(mq)
        return locked

    def unlock_batch(self, group: str, mqs: Iterable[MessageQueue], client_id: str) -> None:
        table = self._locks.get(group)
        if not table:
            return
        for mq in mqs:
            entry = table.get(mq)
            if entry is not None and entry[0] == client_id:
                del table[mq]
        if not table:
            del self._locks[group]

    def is_locked(self, group: str, mq: MessageQueue, client_id: str) -> bool:
        return self._holder(group, mq, self.clock()) == client_id
