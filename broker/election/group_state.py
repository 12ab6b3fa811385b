"""The decisions a broker group's members take from its state in etcd (etcdstate/group.py):
pure (no etcd, no clock), so every rule is a unit test.

As in RocketMQ 5's controller (ReplicasInfoManager.electMaster): a new master is chosen only
from the SyncStateSet (or any live member with enableElectUncleanMaster).
"""

from __future__ import annotations

import enum

from etcdstate.group import GroupState, Member


class Action(enum.Enum):
    SERVE_AS_MASTER = "serve as master"  # the state names us
    FOLLOW = "follow the master"  # another member is master and alive
    ELECT = "stand for election"  # the master is gone and we are the best one to take over
    WAIT = "wait"  # the master is gone and another member is the better candidate, or none is


def candidates(state: GroupState, alive: dict[int, Member], *, unclean: bool) -> list[int]:
    """Who may take over, best first: live members of the SyncStateSet (any live member with
    ``unclean``), the longest CommitLog first, then the lowest id. The longest holds every
    message a SYNC master acknowledged after any of them acked it. None until every one of
    them reported its final offset for this epoch (a report from before the master went may
    be a second old, shorter than the log it stands for)."""
    pool = [
        m
        for m in alive.values()
        if m.broker_id != state.master.broker_id
        and (unclean or m.broker_id in state.sync_state_set)
    ]
    if any(m.final_epoch != state.epoch for m in pool):
        return []
    pool.sort(key=lambda m: (-m.max_phys_offset, m.broker_id))
    return [m.broker_id for m in pool]


def decide(state: GroupState, me: int, alive: dict[int, Member], *, unclean: bool) -> Action:
    """What member ``me`` does, given the group's state and the members holding a lease (their
    last reported offsets included)."""
    if state.master.broker_id == me:
        return Action.SERVE_AS_MASTER
    if state.master.broker_id in alive:
        return Action.FOLLOW
    best = candidates(state, alive, unclean=unclean)
    return Action.ELECT if best and best[0] == me else Action.WAIT


def sync_state_set(
    state: GroupState, alive: dict[int, Member], master_offset: int, max_gap: int
) -> frozenset[int]:
    """The master's view of who is in sync: itself and every live member whose reported
    CommitLog end trails the master's by at most ``max_gap`` bytes (haMaxGapNotInSync)."""
    members = {state.master.broker_id}
    for member in alive.values():
        if master_offset - member.max_phys_offset <= max_gap:
            members.add(member.broker_id)
    return frozenset(members)
