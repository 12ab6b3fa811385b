"""PullRequestHoldService: pulls that found nothing wait here for a new message.

A held pull waits on its queue until the dispatcher reports a message past the pull's offset
whose tags code its filter accepts, or until its suspend timeout; either way its ``wake``
callback runs once (Java's PullMessageProcessor.executeRequestWhenWakeup), which runs the pull
again without suspension and answers it, or holds it anew. A held pull is a record, not a task:
the arrival listener wakes it in the same pass as the send that stored the message, and one
timer task (``run``) serves every deadline. A slave's dispatcher does not notify (as in Java),
so every ``check_interval_s`` the timer also wakes the held pulls whose queue has grown.
"""

from __future__ import annotations

import heapq
import logging
import math
from collections.abc import Callable
from itertools import count

import trio

from broker.store.slotted import Slotted
from broker.store.types import TagsFilter
from remoting.log_limit import bug_tracebacks, log_limited

log = logging.getLogger(__name__)

# Deadlines of pulls already woken stay in the heap until popped; past this share the heap is
# rebuilt from the live ones, so its size stays within twice the held pulls.
_COMPACT_MIN = 64


def _run_wakes(pulls: list[HeldPull]) -> None:
    """Each wake once. A wake that raises (a bug) is logged and does not reach the store's
    dispatch or the timer task that called it; the other pulls are still woken."""
    for pull in pulls:
        try:
            pull.wake()
        except Exception:
            log_limited(log, bug_tracebacks, "pull wake", logging.ERROR,
                        "waking a held pull failed", exc_info=True)  # fmt: skip


class HeldPull:
    __slots__ = ("deadline", "key", "live", "offset", "owned", "owner", "tags_filter", "wake")

    def __init__(
        self,
        key: tuple[str, int],
        offset: int,
        tags_filter: TagsFilter | None,
        deadline: float,
        wake: Callable[[], None],
        owner: object,
    ) -> None:
        self.key = key
        self.offset = offset
        self.tags_filter = tags_filter
        self.deadline = deadline
        self.wake = wake
        self.owner = owner  # the connection: its close drops the pull
        self.owned: set[HeldPull] | None = None  # the owner's live held pulls, this one among them
        self.live = True


class PullRequestHoldService(Slotted):
    # a counter of the store's plain_idle, read by plain_pass.c from its slot
    # (broker/store/slotted.py)
    __slots__ = ("held",)

    def __init__(
        self,
        max_offset: Callable[[str, int], int],
        *,
        check_interval_s: float | Callable[[], float] = 5.0,
    ) -> None:
        """``check_interval_s`` may be a callable read at each check: the broker's depends on
        its (runtime-updatable) longPollingEnable."""
        self.max_offset = max_offset
        self._interval = (
            check_interval_s if callable(check_interval_s) else lambda: check_interval_s
        )
        self._held: dict[tuple[str, int], list[HeldPull]] = {}
        # id(owner) -> its live held pulls: a closing connection drops its own without a walk
        # over every held pull (a storm of closes beside many held pulls was quadratic). An
        # owner's set stays, empty or not, until its drop(): one per open connection.
        self._owned: dict[int, set[HeldPull]] = {}
        self.held = 0
        self._deadlines: list[tuple[float, int, HeldPull]] = []
        self._seq = count()
        self._next_check = math.inf
        self._timer: trio.CancelScope | None = None  # the timer's sleep, while it sleeps

    def suspend(
        self,
        topic: str,
        queue_id: int,
        offset: int,
        tags_filter: TagsFilter | None,
        deadline: float,
        wake: Callable[[], None],
        owner: object = None,
    ) -> HeldPull:
        """Hold a pull until a message past ``offset`` may be there, or ``deadline``
        (trio's clock); then ``wake`` runs once, from the loop, never from in here."""
        key = (topic, queue_id)
        pull = HeldPull(key, offset, tags_filter, deadline, wake, owner)
        held = self._held.get(key)
        if held is None:
            self._held[key] = [pull]
        else:
            held.append(pull)
        if owner is not None:
            owned = self._owned.get(id(owner))
            if owned is None:
                owned = self._owned[id(owner)] = set()
            owned.add(pull)
            pull.owned = owned
        if not self.held:
            self._next_check = trio.current_time() + self._interval()
        self.held += 1
        deadlines = self._deadlines
        heapq.heappush(deadlines, (deadline, next(self._seq), pull))
        if len(deadlines) > _COMPACT_MIN and len(deadlines) > 2 * self.held:
            self._deadlines = [entry for entry in deadlines if entry[2].live]
            heapq.heapify(self._deadlines)
        timer = self._timer
        due = min(deadline, self._next_check)
        if timer is not None and timer.deadline > due:
            timer.deadline = due
        return pull

    def notify_message_arriving(
        self, topic: str, queue_id: int, max_offset: int, tags_code: int | None = None
    ) -> None:
        """Called by dispatch (plain code on the event loop) for each new message."""
        key = (topic, queue_id)
        held = self._held.get(key)
        if not held:
            return
        keep: list[HeldPull] = []
        woken: list[HeldPull] = []
        for pull in held:
            if max_offset > pull.offset and (
                tags_code is None
                or pull.tags_filter is None
                or pull.tags_filter.is_matched_by_consume_queue(tags_code)
            ):
                pull.live = False
                woken.append(pull)
            else:
                keep.append(pull)
        if not woken:
            return
        if keep:
            self._held[key] = keep
        else:
            del self._held[key]
        self.held -= len(woken)
        for pull in woken:
            if pull.owned is not None:
                pull.owned.discard(pull)
        # Released first: a wake may hold its pull again (on this same queue).
        _run_wakes(woken)

    def drop(self, owner: object) -> None:
        """The owner's connection closed: its held pulls go unanswered."""
        owned = self._owned.pop(id(owner), None)
        if owned:
            self._release(list(owned))

    def wake_all(self) -> None:
        """Shutdown: every held pull answers now."""
        self._wake([pull for held in self._held.values() for pull in held])

    def expire(self, now: float) -> None:
        """Wake the pulls whose deadline has passed and, at each check, those whose queue
        has grown without a notify."""
        deadlines = self._deadlines
        due = []
        while deadlines and deadlines[0][0] <= now:
            pull = heapq.heappop(deadlines)[2]
            if pull.live:
                due.append(pull)
        if now >= self._next_check:
            self._next_check = now + self._interval()
            for (topic, queue_id), held in self._held.items():
                top = self.max_offset(topic, queue_id)
                due.extend(p for p in held if p.live and top > p.offset and p.deadline > now)
        if due:
            self._wake(due)
        if not self.held:
            self._next_check = math.inf

    def _release(self, pulls: list[HeldPull]) -> None:
        for pull in pulls:
            if not pull.live:
                continue
            pull.live = False
            self.held -= 1
            held = self._held[pull.key]
            held.remove(pull)
            if not held:
                del self._held[pull.key]
            if pull.owned is not None:
                pull.owned.discard(pull)

    def _wake(self, pulls: list[HeldPull]) -> None:
        # All released first: a wake may hold its pull again (on the same queue).
        self._release(pulls)
        _run_wakes(pulls)

    def _next_due(self) -> float:
        deadlines = self._deadlines
        while deadlines and not deadlines[0][2].live:
            heapq.heappop(deadlines)
        first = deadlines[0][0] if deadlines else math.inf
        return min(first, self._next_check)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """The one timer of every held pull."""
        task_status.started()
        try:
            while True:
                with trio.CancelScope(deadline=self._next_due()) as self._timer:
                    await trio.sleep_forever()
                self._timer = None
                self.expire(trio.current_time())
        finally:
            self._timer = None
