"""Promises not to campaign: how a master that lost etcd keeps serving when etcd is down for
the whole group, and still fences when only the master is cut off (pure: clocks are passed in).

A master cannot tell "etcd is down" from "I alone cannot reach etcd": both look like a lease
refresh that fails. Its SyncStateSet peers can. When the master's refreshes fail it asks each
other member of its SyncStateSet (CONTROLLER_PROMISE over remoting) for a *promise*:

- a member that cannot reach etcd either promises not to stand for election for ``W`` from the
  moment it answers, and keeps that promise even if etcd returns sooner (it waits it out; a
  restart reads it back from the store, promise_file.py);
- a member that reaches etcd refuses: an election may be due, and the master fences when its
  lease runs out, as without promises.

The master counts each promise from the moment it *sent* the request (never later than the
member's own start), and keeps taking writes past its lease's end only while it holds an
unexpired promise of every other SyncStateSet member. With enableElectUncleanMaster=false only
those members can be elected, so no one can become master meanwhile. A SyncStateSet of the
master alone needs no promise. With unclean elections on, any member may win: no promise is
asked and the master fences at its lease's end.
"""

from __future__ import annotations

import math

import attrs

# Promises are counted this much shorter than granted: two processes' monotonic clocks may run
# at slightly different rates over a promise's few seconds.
PROMISE_MARGIN_S = 0.2


@attrs.define
class PromiseTable:
    """The master's side: when each member's promise ends, by the master's clock."""

    until: dict[int, float] = attrs.field(factory=dict)

    def record(self, member: int, sent_at: float, granted_s: float) -> None:
        end = sent_at + granted_s - PROMISE_MARGIN_S
        if end > self.until.get(member, -math.inf):
            self.until[member] = end

    def clear(self) -> None:
        self.until.clear()

    def valid_until(self, others: frozenset[int]) -> float:
        """The moment the first of ``others``' promises runs out (-inf if one has none;
        +inf when there are no others: a master alone in its SyncStateSet needs none)."""
        return min((self.until.get(m, -math.inf) for m in others), default=math.inf)

    def holders(self, others: frozenset[int], now: float) -> list[int]:
        return sorted(m for m in others if self.until.get(m, -math.inf) > now)


@attrs.frozen
class PromiseRequest:
    epoch: int
    master_id: int
    millis: int


@attrs.frozen
class PromiseAnswer:
    granted_ms: int  # 0: refused
    reason: str


@attrs.define
class PromiseLedger:
    """A member's side: the promise it gave, by its own monotonic clock."""

    until: float = -math.inf

    def may_campaign(self, now: float) -> bool:
        return now >= self.until

    def answer(
        self,
        request: PromiseRequest,
        *,
        epoch: int | None,
        master_id: int | None,
        etcd_reachable: bool,
        max_ms: int,
        now: float,
    ) -> PromiseAnswer:
        """Promise, or say why not. Only the master of the term this member follows is
        promised anything: a deposed master asking must fence, not be kept alive."""
        if epoch is None or master_id is None:
            return PromiseAnswer(0, "this member has no role yet")
        if request.epoch != epoch or request.master_id != master_id:
            return PromiseAnswer(
                0, f"this member follows master {master_id} of epoch {epoch}, not the asker"
            )
        if etcd_reachable:
            return PromiseAnswer(0, "this member reaches etcd: no promise")
        granted = min(request.millis, max_ms)
        if granted <= 0:
            return PromiseAnswer(0, "no time asked")
        self.until = max(self.until, now + granted / 1000)
        return PromiseAnswer(granted, f"no campaign for {granted} ms")
