"""Elector: a broker's side of auto-failover (``enableControllerMode=true``), on etcd.

Start-up (``bootstrap``): grant a lease of ``controllerHeartBeatTimeoutMills``, publish this
member under it, read the group's state and take the role it gives (group_state.decide): the
first broker of a group becomes its master at epoch 1; a member the state names master starts
a new epoch; a member whose master is gone stands for election; the others follow.

Running (``run``): the lease is refreshed every third of its TTL, and the group's state is
read every ``POLL_S``:
- a slave whose master's lease is gone and who may take over runs the election (one
  transaction: the state unchanged since read and the master's member key absent -> the state
  with this member as master and epoch + 1); the winner restarts as master;
- a slave that sees a new term restarts, to cut its log to what the new master holds;
- a master that finds a newer epoch or another master stops taking writes at once
  (``fence``) and restarts, to rejoin as whatever the state says; so does one that cannot
  refresh its lease until just before etcd would expire it, unless it holds a promise not to
  campaign from every other SyncStateSet member (promises.py: etcd is down for them too).
A role change is a process restart (``restart``), the same path ``mqcluster promote`` takes:
the store recovers and every service starts in its new role.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import attrs
import trio

from broker.election.group_state import Action, decide, sync_state_set
from broker.election.lease_guard import POLL_S, LeaseGuard
from etcdstate.epochs import EpochEntry, append
from etcdstate.etcd import EtcdClient, EtcdError
from etcdstate.etcd_json import EtcdLeaseNotFound
from etcdstate.group import GroupState, Member
from etcdstate.store import GroupStore

log = logging.getLogger(__name__)

BOOTSTRAP_RETRY_S = 0.5
# A slave's offset in etcd is refreshed at most this often while its master lives (each put
# is an fsync at etcd), at once when the master is gone: elections read it.
REPORT_INTERVAL_S = 1.0


@attrs.frozen
class Role:
    master: bool
    epoch: int
    state: GroupState


@attrs.define
class ElectorConfig:
    prefix: str
    cluster: str
    broker_name: str
    member: Member
    lease_ttl_s: int
    unclean: bool
    max_gap_not_in_sync: int


class Elector(LeaseGuard):
    def __init__(
        self,
        etcd: EtcdClient,
        config: ElectorConfig,
        *,
        max_phys_offset: Callable[[], int] = lambda: 0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_phys_offset = max_phys_offset  # the local CommitLog's end
        self.etcd = etcd
        self.config = config
        self.clock = clock
        self.store = GroupStore(etcd, config.prefix, config.cluster, config.broker_name)
        self.member_key = self.store.member_key(config.member.broker_id)
        self.lease_id = 0
        self.reported_offset = -1
        self.reported_at = 0.0
        self.reported_final = 0
        self.role: Role | None = None
        self.last_refresh_sent = 0.0
        self.status = "starting"  # for operators (runtime info)
        # Set by the controller: stop writes now; restart into the role etcd gives.
        self.fence: Callable[[str], None] = lambda reason: None
        self.restart: Callable[[str], None] = lambda reason: None
        # A restart keeps the lease: the member key must outlive the few seconds the new
        # process takes to publish it again, or the other members would see this one gone.
        self.restarting = False
        self._init_guard()

    @property
    def me(self) -> int:
        return self.config.member.broker_id

    def runtime_rows(self) -> dict[str, str]:
        """GET_BROKER_RUNTIME_INFO rows (mqadmin getBrokerEpoch, haStatus)."""
        role = self.role
        if role is None:
            return {"controllerStatus": self.status}
        return {
            "controllerEpoch": str(role.epoch),
            "controllerMemberId": str(self.me),
            "controllerMasterId": str(role.state.master.broker_id),
            "controllerStatus": self.status_text(),
            "syncStateSet": ",".join(str(i) for i in sorted(role.state.sync_state_set)),
        }

    # ------------------------------------------------------------------------ reads

    async def read(self) -> tuple[GroupState | None, int, dict[int, Member]]:
        """(the state or None, its mod_revision, the members holding a lease by id)."""
        try:
            state, revision, alive = await self.store.read()
        except EtcdError:
            self.etcd_failed_at = self.clock()
            raise
        self.etcd_ok_at = self.clock()
        self.members_seen.update(alive)
        return state, revision, alive

    async def swap(self, seen_revision: int, new: GroupState, *, fallen: int | None) -> bool:
        return await self.store.swap(seen_revision, new, fallen=fallen)

    # ------------------------------------------------------------------------ start-up

    async def publish(self) -> None:
        self.lease_id, granted = await self.etcd.lease_grant(self.config.lease_ttl_s)
        self.last_refresh_sent = self.clock()
        await self._report_offset()
        log.info("controller: lease %x (%d s) for member %d", self.lease_id, granted, self.me)

    async def _report_offset(self, final_epoch: int = 0) -> Member:
        """This member's key, with the CommitLog end it holds now (elections prefer the
        longest log; the master counts slaves in sync by it), final for ``final_epoch`` when
        that epoch's master is gone."""
        offset = self.max_phys_offset()
        self.reported_offset, self.reported_at = offset, self.clock()
        self.reported_final = final_epoch
        member = attrs.evolve(self.config.member, max_phys_offset=offset, final_epoch=final_epoch)
        await self.etcd.put(self.member_key, member.encode(), lease=self.lease_id)
        return member

    async def bootstrap(self) -> Role:
        """The role this broker starts in; retries until etcd answers."""
        while True:
            try:
                if not self.lease_id:
                    await self.publish()
                role = await self._try_bootstrap()
            except EtcdLeaseNotFound:
                self.lease_id = 0  # expired meanwhile: a new one, and publish again
                role = None
            except EtcdError as exc:
                self.status = f"etcd: {exc}"
                log.warning("controller: cannot decide the role yet: %s", exc)
                role = None
            if role is not None:
                self.role = role
                self.status = "master" if role.master else "slave"
                log.info(
                    "controller: member %d starts as %s at epoch %d (master %d at %s)",
                    self.me,
                    self.status,
                    role.epoch,
                    role.state.master.broker_id,
                    role.state.master.addr,
                )
                return role
            await trio.sleep(BOOTSTRAP_RETRY_S)

    async def _try_bootstrap(self) -> Role | None:
        state, revision, alive = await self.read()
        member = self.config.member
        gone = state is not None and state.master.broker_id not in alive
        if gone and state is not None and self.reported_final != state.epoch:
            # the master is gone: our log's end is final for its epoch (elections wait for it)
            alive = {**alive, self.me: await self._report_offset(final_epoch=state.epoch)}
        if state is None:
            new = GroupState.first(member)
            return Role(True, new.epoch, new) if await self.swap(0, new, fallen=None) else None
        action = decide(state, self.me, alive, unclean=self.config.unclean)
        if action is Action.SERVE_AS_MASTER:
            # Our own term again after a restart: a new epoch, so that anything of the old
            # one still in flight is told apart.
            new = attrs.evolve(state.elect(member), sync_state_set=state.sync_state_set)
            return (
                Role(True, new.epoch, new) if await self.swap(revision, new, fallen=None) else None
            )
        if action is Action.ELECT:
            if not self._may_campaign(state):
                return None
            return await self._elect(state, revision)
        return Role(False, state.epoch, state)  # FOLLOW, or WAIT as a slave

    async def _elect(self, state: GroupState, revision: int) -> Role | None:
        new = state.elect(self.config.member)
        if self.me not in state.sync_state_set:
            log.warning(
                "controller: UNCLEAN election of member %d (outside the SyncStateSet %s): "
                "messages acknowledged by master %d after our last replicated offset are lost",
                self.me,
                sorted(state.sync_state_set),
                state.master.broker_id,
            )
        if await self.swap(revision, new, fallen=state.master.broker_id):
            log.warning(
                "controller: member %d elected master of %s at epoch %d (master %d lost its lease)",
                self.me,
                self.config.broker_name,
                new.epoch,
                state.master.broker_id,
            )
            return Role(True, new.epoch, new)
        return None

    async def begin_term(self, start_offset: int) -> bool:
        """A master records its term's first CommitLog byte in the group's history before it
        serves (slaves wait for it to cut their logs). False: the term is over already."""
        role = self.role
        assert role is not None and role.master
        while True:
            try:
                state, revision, _ = await self.read()
                if state is None or state.epoch != role.epoch or state.master.broker_id != self.me:
                    return False
                if state.term_recorded:
                    self.role = Role(True, role.epoch, state)
                    return True
                new = attrs.evolve(
                    state,
                    epochs=tuple(append(list(state.epochs), EpochEntry(role.epoch, start_offset))),
                )
                if await self.swap(revision, new, fallen=None):
                    self.role = Role(True, role.epoch, new)
                    return True
            except EtcdError as exc:
                self.status = f"etcd: {exc}"
                log.warning("controller: cannot record the term yet: %s", exc)
            await trio.sleep(BOOTSTRAP_RETRY_S)

    async def master_history(self) -> GroupState | None:
        """The state once its master has recorded its term (a slave cuts its log by it);
        None when that master went before recording it (start again: stand for election)."""
        while True:
            try:
                state, _, alive = await self.read()
            except EtcdError as exc:
                self.status = f"etcd: {exc}"
                state, alive = None, {}
            if state is not None and state.master.broker_id != self.me:
                if state.term_recorded:
                    self.role = Role(False, state.epoch, state)
                    return state
                if state.master.broker_id not in alive:
                    return None
            await trio.sleep(BOOTSTRAP_RETRY_S)

    # ------------------------------------------------------------------------ running

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        assert self.role is not None, "bootstrap first"
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._keep_lease)
                if self.role.master:
                    nursery.start_soon(self._guard)
                    if not self.config.unclean and self.open_client is not None:
                        nursery.start_soon(self._seek_promises, self.open_client(nursery))
                task_status.started()
                await self._watch()
        finally:
            with trio.move_on_after(1) as cleanup:
                cleanup.shield = True
                await self._revoke()

    def _request_restart(self, why: str) -> None:
        self.restarting = True
        self.restart(why)

    async def _revoke(self) -> None:
        """A clean stop lets the others elect at once instead of after the lease's TTL."""
        if self.lease_id and not self.restarting:
            try:
                await self.etcd.lease_revoke(self.lease_id)
            except EtcdError as exc:
                log.info("controller: lease not revoked (%s): it expires by itself", exc)

    async def _maintain_sync_state_set(
        self, state: GroupState, revision: int, alive: dict[int, Member]
    ) -> None:
        """Shrink or grow the SyncStateSet to the members in sync now (a CAS on the state's
        revision: a lost race is retried at the next poll with what was read then)."""
        members = sync_state_set(
            state, alive, self.max_phys_offset(), self.config.max_gap_not_in_sync
        )
        if members == state.sync_state_set:
            return
        new = state.with_sync_state_set(members)
        try:
            swapped = await self.swap(revision, new, fallen=None)
        except EtcdError:
            # etcd may have applied it: count the members it adds until a read tells
            self.sss_unsure |= members
            raise
        if swapped:
            log.info(
                "controller: SyncStateSet of %s at epoch %d: %s -> %s",
                self.config.broker_name,
                state.epoch,
                sorted(state.sync_state_set),
                sorted(members),
            )
            self.role = Role(True, state.epoch, new)

    async def _watch(self) -> None:
        while True:
            await trio.sleep(POLL_S)
            try:
                state, revision, alive = await self.read()
                if state is None:
                    self._lease_lost("the group's state is gone from etcd")
                    continue
                await self._step(state, revision, alive)
            except EtcdLeaseNotFound:
                self._lease_lost("the lease expired at etcd")
            except EtcdError as exc:
                self.status = f"etcd: {exc}"

    async def _step(self, state: GroupState, revision: int, alive: dict[int, Member]) -> None:
        role = self.role
        assert role is not None
        if role.master:
            if state.epoch != role.epoch or state.master.broker_id != self.me:
                self.fence(
                    f"FENCED: controller: epoch {state.epoch} has master {state.master.broker_id}"
                    f" ({state.master.addr}); this broker's epoch {role.epoch} is over"
                )
                self._request_restart(f"superseded by epoch {state.epoch}")
                return
            self.role = Role(True, role.epoch, state)
            self.sss_unsure = frozenset()
            await self._maintain_sync_state_set(state, revision, alive)
            return
        if state.master.broker_id not in alive:
            # the master is gone: this log cannot grow in its epoch any more; the election
            # waits for every candidate's final offset (group_state.candidates)
            if self.reported_final != state.epoch or self.max_phys_offset() != self.reported_offset:
                alive = {**alive, self.me: await self._report_offset(final_epoch=state.epoch)}
        elif self.max_phys_offset() != self.reported_offset and (
            self.clock() - self.reported_at >= REPORT_INTERVAL_S
        ):
            await self._report_offset()
        action = decide(state, self.me, alive, unclean=self.config.unclean)
        if action is Action.SERVE_AS_MASTER:
            self._request_restart(f"etcd names this member master at epoch {state.epoch}")
        elif action is Action.ELECT and self._may_campaign(state):
            won = await self._elect(state, revision)
            if won is not None:
                self._request_restart(f"elected master at epoch {won.epoch}")
        elif state.epoch != role.epoch:
            # A new term: this log may hold bytes the new master's does not; the restart
            # compares the epoch files and cuts them (broker/election/truncation.py).
            self._request_restart(f"epoch {state.epoch}: master {state.master.broker_id}")
