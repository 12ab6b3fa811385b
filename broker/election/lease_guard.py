"""LeaseGuard: the part of the Elector (elector.py) that keeps a master's lease and decides
how long it may take writes: until a second before etcd could expire its lease, or past that
while it holds a promise not to campaign from every other SyncStateSet member (promises.py);
and the member's side, giving such promises and keeping them.

A base of Elector, split off to keep each module to one job; it reads the Elector's role,
clock, config and lease state.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from broker.election import promise_file
from broker.election.promise_keeper import PromiseSeeker
from broker.election.promises import PromiseAnswer, PromiseLedger, PromiseRequest, PromiseTable
from etcdstate.etcd_json import EtcdError
from etcdstate.group import GroupState, Member
from remoting.client import RemotingClient

if TYPE_CHECKING:
    from broker.election.elector import ElectorConfig, Role
    from etcdstate.etcd import EtcdClient

log = logging.getLogger(__name__)

POLL_S = 0.3
# A master stops writing this long before its lease could expire at etcd: the last refresh
# etcd saw was sent no earlier than the one we count from.
FENCE_MARGIN_S = 1.0
# A master asks for promises once its lease refresh is this much past due.
SEEK_AFTER_S = 0.5


class LeaseGuard:
    etcd: EtcdClient
    config: ElectorConfig
    role: Role | None
    clock: Callable[[], float]
    lease_id: int
    last_refresh_sent: float
    status: str
    restarting: bool
    fence: Callable[[str], None]
    _request_restart: Callable[[str], None]
    me: int

    def _init_guard(self) -> None:
        # Promises not to campaign (promises.py): those this member gave, those it holds as
        # master, and where a given one is kept across a restart.
        self.ledger = PromiseLedger()
        self.table = PromiseTable()
        self.store_root: Path | None = None
        # Builds the client promises are asked through (the broker's TLS and signature).
        self.open_client: Callable[[trio.Nursery], RemotingClient] | None = None
        self.seeker: PromiseSeeker | None = None
        self.members_seen: dict[int, Member] = {}  # every member's last report (addresses)
        # Members a SyncStateSet write whose outcome is unknown may have added.
        self.sss_unsure: frozenset[int] = frozenset()
        self.etcd_ok_at = -math.inf
        self.etcd_failed_at = -math.inf
        # One promise at a time: none is answered before the longest given is on disk.
        self._promise_lock = trio.Lock()

    @property
    def etcd_reachable(self) -> bool:
        """Whether this member's latest etcd call was answered."""
        return self.etcd_ok_at > self.etcd_failed_at

    async def _keep_lease(self) -> None:
        """Refresh every third of the TTL. A master that gets no answer is fenced by _guard
        when neither its lease nor promises cover it any more, however long the call hangs."""
        ttl = self.config.lease_ttl_s
        while True:
            await trio.sleep(ttl / 3)
            sent = self.clock()
            try:
                left = await self.etcd.lease_keepalive(self.lease_id)
            except EtcdError as exc:
                self.etcd_failed_at = self.clock()
                self.status = f"lease refresh failed: {exc}"
                log.warning("controller: %s", self.status)
                continue
            self.etcd_ok_at = self.clock()
            if left <= 0:
                self._lease_lost("the lease expired at etcd")
                continue
            if self.last_refresh_sent + ttl - FENCE_MARGIN_S < sent:
                log.warning("controller: etcd answers again; the lease held")
            self.last_refresh_sent = sent
            self.table.clear()
            if self.role is not None:
                self.status = "master" if self.role.master else "slave"

    # ------------------------------------------------------------------------ promises

    def lease_deadline(self) -> float:
        """A master stops writing then unless promised: the last refresh etcd saw was sent
        no earlier than the one we count from."""
        return self.last_refresh_sent + self.config.lease_ttl_s - FENCE_MARGIN_S

    def others(self) -> frozenset[int]:
        """The members that could be elected if this master's lease went (unclean off)."""
        assert self.role is not None
        return (self.role.state.sync_state_set | self.sss_unsure) - {self.me}

    def writable_until(self) -> float:
        lease = self.lease_deadline()
        if self.config.unclean:
            return lease
        return max(lease, self.table.valid_until(self.others()))

    def status_text(self) -> str:
        role = self.role
        now = self.clock()
        if role is not None and not role.master and not self.ledger.may_campaign(now):
            return (
                f"{self.status}; promised master {role.state.master.broker_id} not to campaign "
                f"for another {self.ledger.until - now:.1f} s"
            )
        if role is None or not role.master or now <= self.lease_deadline() or self.restarting:
            return self.status
        if self.config.unclean:
            return self.status
        others = self.others()
        if not others:
            return "etcd unreachable, serving alone in the SyncStateSet (no one else electable)"
        holders = self.table.holders(others, now)
        missing = sorted(others - set(holders))
        text = f"etcd unreachable, serving on promises of {','.join(map(str, holders)) or 'none'}"
        if missing:
            text += f" (none from {','.join(map(str, missing))})"
        return text

    async def _guard(self) -> None:
        """Fence the moment neither the lease nor every needed promise covers this master."""
        while True:
            left = self.writable_until() - self.clock()
            if left <= 0:
                refusals = self.seeker.refusals if self.seeker is not None else {}
                why = "; ".join(f"member {m}: {r}" for m, r in sorted(refusals.items()))
                self._lease_lost(
                    f"{self.status}; the lease may expire at etcd any moment and not every "
                    f"SyncStateSet member promised not to campaign ({why or 'none asked'})"
                )
                return
            await trio.sleep(min(left, POLL_S))

    async def _seek_promises(self, client: RemotingClient) -> None:
        ttl = self.config.lease_ttl_s
        self.seeker = PromiseSeeker(
            self.table,
            broker_name=self.config.broker_name,
            promise_s=ttl,
            clock=self.clock,
            invoke=client.invoke,
        )
        while True:
            await trio.sleep(POLL_S)
            role = self.role
            overdue = self.clock() - self.last_refresh_sent >= ttl / 3 + SEEK_AFTER_S
            # A failed read (every POLL_S) starts it sooner: with a short lease the refresh
            # is overdue only just before the lease's end.
            if role is None or (self.etcd_reachable and not overdue):
                continue
            await self.seeker.ask_round(role.epoch, self.me, self.members_seen, self.others())

    async def promise(self, request: PromiseRequest) -> PromiseAnswer:
        """CONTROLLER_PROMISE: a slave promises its master not to campaign for a while, if
        it cannot reach etcd either; kept on disk before it is answered."""
        async with self._promise_lock:
            return await self._promise(request)

    async def _promise(self, request: PromiseRequest) -> PromiseAnswer:
        role = self.role
        if role is not None and role.master:
            return PromiseAnswer(0, f"member {self.me} is master itself at epoch {role.epoch}")
        now = self.clock()
        before = self.ledger.until
        answer = self.ledger.answer(
            request,
            epoch=role.epoch if role is not None else None,
            master_id=role.state.master.broker_id if role is not None else None,
            etcd_reachable=self.etcd_reachable,
            max_ms=self.config.lease_ttl_s * 1000,
            now=now,
        )
        if answer.granted_ms and self.store_root is not None and self.ledger.until > before:
            until_ms = time.time_ns() // 1_000_000 + math.ceil((self.ledger.until - now) * 1000)
            try:
                await trio.to_thread.run_sync(promise_file.save, self.store_root, until_ms)
            except OSError as exc:  # the promise stands in memory; the master is not told so
                return PromiseAnswer(0, f"cannot keep the promise on disk: {exc}")
        return answer

    def _may_campaign(self, state: GroupState) -> bool:
        """False while a promise given stands (status_text says so)."""
        if self.ledger.may_campaign(self.clock()):
            return True
        log.debug(
            "controller: master %d is gone; a promise keeps us waiting", state.master.broker_id
        )
        return False

    def _lease_lost(self, why: str) -> None:
        self.status = why
        if self.role is not None and self.role.master:
            self.fence(f"FENCED: controller: {why}; refusing writes")
        self._request_restart(why)
