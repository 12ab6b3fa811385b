"""The group's state in etcd and the decisions taken from it (pure)."""

from __future__ import annotations

import pytest

from broker.election.group_state import Action, candidates, decide, sync_state_set
from etcdstate.epochs import EpochEntry
from etcdstate.group import GroupState, GroupStateError, Member


def member(broker_id: int, offset: int = 0, final_epoch: int = 4) -> Member:
    """A member's report; final for epoch 4 (STATE's) unless told."""
    return Member(
        broker_id,
        f"127.0.0.1:{10000 + broker_id}",
        f"127.0.0.1:{20000 + broker_id}",
        offset,
        final_epoch,
    )


def alive(*members: Member) -> dict[int, Member]:
    return {m.broker_id: m for m in members}


STATE = GroupState(4, member(1, 0, 0), frozenset({1, 2, 3}), (EpochEntry(1, 0), EpochEntry(4, 800)))


def test_state_and_member_round_trip():
    assert GroupState.decode(STATE.encode()) == STATE
    assert Member.decode(member(2, 77).encode()) == member(2, 77)
    assert (
        Member.decode(b'{"brokerId":2,"addr":"a","haAddr":"b","maxPhyOffset":5}').final_epoch == 0
    )


def test_first_state_and_an_election():
    first = GroupState.first(member(5, 123))
    assert (first.epoch, first.sync_state_set) == (1, {5})
    won = STATE.elect(member(3, 999))
    assert won.epoch == 5 and won.master == member(3, 0, 0) and won.sync_state_set == {3}
    assert won.epochs == STATE.epochs and not won.term_recorded and STATE.term_recorded


@pytest.mark.parametrize(
    "text, message",
    [
        (b"[]", "not a JSON object"),
        (b"{", "not JSON"),
        (b'{"epoch": 0}', "epoch=0 out of range"),
        (b'{"epoch": true}', "epoch is missing or not a int"),
        (
            b'{"epoch":1,"masterBrokerId":1,"masterAddr":"a","masterHaAddr":"b",'
            b'"syncStateSet":[2]}',
            "the master is not in its own syncStateSet",
        ),
        (
            b'{"epoch":1,"masterBrokerId":0,"masterAddr":"a","masterHaAddr":"b",'
            b'"syncStateSet":[0]}',
            "masterBrokerId=0 is not a member id",
        ),
        (
            b'{"epoch":1,"masterBrokerId":1,"masterAddr":"a","masterHaAddr":"b",'
            b'"syncStateSet":[1],"epochs":[[2,5],[1,9]]}',
            "epochs: entry 1 9 does not follow 2 5",
        ),
    ],
)
def test_a_state_not_written_by_a_broker_is_refused(text, message):
    with pytest.raises(GroupStateError, match=message):
        GroupState.decode(text)


def test_the_master_and_its_followers():
    assert decide(STATE, 1, alive(member(1)), unclean=False) is Action.SERVE_AS_MASTER
    assert decide(STATE, 2, alive(member(1), member(2)), unclean=False) is Action.FOLLOW


def test_the_longest_log_in_the_sync_state_set_stands_for_election():
    members = alive(member(2, 500), member(3, 900))
    assert candidates(STATE, members, unclean=False) == [3, 2]
    assert decide(STATE, 3, members, unclean=False) is Action.ELECT
    assert decide(STATE, 2, members, unclean=False) is Action.WAIT
    tie = alive(member(2, 900), member(3, 900))
    assert decide(STATE, 2, tie, unclean=False) is Action.ELECT  # the lower id


def test_outside_the_sync_state_set_only_when_unclean():
    state = GroupState(4, member(1), frozenset({1, 2}))
    members = alive(member(2, 100), member(3, 5000))  # 3 is longer but not in sync
    assert decide(state, 3, members, unclean=False) is Action.WAIT
    assert decide(state, 2, members, unclean=False) is Action.ELECT
    assert decide(state, 3, members, unclean=True) is Action.ELECT
    assert decide(state, 3, alive(member(3, 5000)), unclean=False) is Action.WAIT


def test_the_master_counts_in_sync_by_reported_offsets():
    members = alive(member(1), member(2, 1000), member(3, 100))
    assert sync_state_set(STATE, members, 1000, max_gap=500) == {1, 2}
    assert sync_state_set(STATE, members, 1000, max_gap=900) == {1, 2, 3}
    assert sync_state_set(STATE, alive(member(1)), 1000, max_gap=900) == {1}


def test_no_one_stands_until_every_candidate_reported_its_final_offset():
    """A report from while the master lived may be a second old: the member it describes may
    hold more than a longer-looking report of another."""
    stale = alive(member(2, 500, final_epoch=0), member(3, 900))
    assert candidates(STATE, stale, unclean=False) == []
    assert decide(STATE, 3, stale, unclean=False) is Action.WAIT
    fresh = alive(member(2, 1500), member(3, 900))
    assert decide(STATE, 2, fresh, unclean=False) is Action.ELECT
