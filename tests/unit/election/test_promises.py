"""Promises not to campaign (broker/election/promises.py, promise_file.py): pure, clocks given."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from broker.election import promise_file
from broker.election.promises import (
    PROMISE_MARGIN_S,
    PromiseLedger,
    PromiseRequest,
    PromiseTable,
)


def test_a_master_alone_needs_no_promise_and_one_missing_counts_as_none():
    table = PromiseTable()
    assert table.valid_until(frozenset()) == math.inf
    table.record(2, sent_at=100.0, granted_s=5.0)
    assert table.valid_until(frozenset({2})) == 105.0 - PROMISE_MARGIN_S
    assert table.valid_until(frozenset({2, 3})) == -math.inf
    table.record(3, sent_at=101.0, granted_s=2.0)
    assert table.valid_until(frozenset({2, 3})) == 103.0 - PROMISE_MARGIN_S  # the first to end
    assert table.holders(frozenset({2, 3}), now=104.0) == [2]


def test_a_promise_counts_from_when_it_was_asked_and_a_shorter_one_never_shortens():
    table = PromiseTable()
    table.record(2, sent_at=100.0, granted_s=5.0)
    table.record(2, sent_at=99.0, granted_s=1.0)  # a late answer to an older request
    assert table.until[2] == 105.0 - PROMISE_MARGIN_S
    table.clear()
    assert table.valid_until(frozenset({2})) == -math.inf


def answer(ledger: PromiseLedger, request: PromiseRequest, *, reachable=False, now=10.0):
    return ledger.answer(
        request, epoch=3, master_id=1, etcd_reachable=reachable, max_ms=4000, now=now
    )


def test_a_member_that_cannot_reach_etcd_promises_and_keeps_it():
    ledger = PromiseLedger()
    assert ledger.may_campaign(0.0)
    granted = answer(ledger, PromiseRequest(3, 1, 9000))
    assert granted.granted_ms == 4000  # never more than the member's own bound
    assert not ledger.may_campaign(13.9)
    assert ledger.may_campaign(14.0)
    # a renewal extends, an earlier one never shortens
    answer(ledger, PromiseRequest(3, 1, 1000), now=12.0)
    assert ledger.until == 14.0


def test_a_member_that_reaches_etcd_or_follows_another_term_refuses():
    ledger = PromiseLedger()
    assert answer(ledger, PromiseRequest(3, 1, 4000), reachable=True).granted_ms == 0
    assert answer(ledger, PromiseRequest(2, 1, 4000)).granted_ms == 0  # a deposed master
    assert answer(ledger, PromiseRequest(3, 2, 4000)).granted_ms == 0  # not our master
    assert answer(ledger, PromiseRequest(3, 1, 0)).granted_ms == 0
    none = ledger.answer(
        PromiseRequest(3, 1, 4000),
        epoch=None,
        master_id=None,
        etcd_reachable=False,
        max_ms=4000,
        now=10.0,
    )
    assert none.granted_ms == 0
    assert ledger.may_campaign(10.0)


def test_a_promise_survives_a_restart_on_disk(tmp_path: Path):
    assert promise_file.remaining_s(tmp_path, 5.0, now_ms=1000) == 0.0
    promise_file.save(tmp_path, 4000)
    assert promise_file.remaining_s(tmp_path, 5.0, now_ms=1000) == 3.0
    assert promise_file.remaining_s(tmp_path, 5.0, now_ms=9000) == 0.0
    promise_file.save(tmp_path, 10**12)  # a clock stepped back: never more than the bound
    assert promise_file.remaining_s(tmp_path, 5.0, now_ms=1000) == 5.0


def test_an_unreadable_promise_file_counts_as_the_longest_promise(tmp_path: Path):
    (tmp_path / promise_file.FILE_NAME).write_text("soon")
    assert promise_file.remaining_s(tmp_path, 5.0, now_ms=1000) == 5.0
    (tmp_path / promise_file.FILE_NAME).write_bytes(b"\xff" * 40)
    assert promise_file.remaining_s(tmp_path, 5.0, now_ms=1000) == 5.0


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def elector(clock: Clock, *, me: int, unclean: bool = False):
    from broker.election.elector import Elector, ElectorConfig, Role
    from etcdstate.group import GroupState, Member

    members = {i: Member(i, f"127.0.0.1:{10000 + i}", f"127.0.0.1:{20000 + i}") for i in (1, 2, 3)}
    state = GroupState(3, members[1], frozenset({1, 2, 3}))
    config = ElectorConfig("/p", "c", "b", members[me], 4, unclean, 0)
    e = Elector(object(), config, clock=clock)  # type: ignore[arg-type]  # no etcd call here
    e.role = Role(me == 1, 3, state)
    e.last_refresh_sent = clock.now
    return e


def test_a_master_writes_past_its_lease_only_on_every_peers_promise():
    clock = Clock()
    master = elector(clock, me=1)
    assert master.writable_until() == 103.0  # lease (4 s) less the fence margin
    master.table.record(2, 102.0, 4.0)
    assert master.writable_until() == 103.0  # member 3 has not promised
    master.table.record(3, 102.5, 4.0)
    assert master.writable_until() == 106.0 - PROMISE_MARGIN_S
    clock.now = 104.0
    assert master.status_text() == "etcd unreachable, serving on promises of 2,3"
    master.sss_unsure = frozenset({4})  # a SyncStateSet write of unknown outcome added 4
    assert master.writable_until() == 103.0
    assert "(none from 4)" in master.status_text()
    unclean = elector(clock, me=1, unclean=True)
    unclean.table.record(2, 102.0, 4.0)
    unclean.table.record(3, 102.0, 4.0)
    assert unclean.writable_until() == unclean.lease_deadline()


async def test_a_member_that_promised_does_not_campaign_until_the_promise_ends(tmp_path: Path):
    clock = Clock()
    member = elector(clock, me=2)
    member.store_root = tmp_path
    member.etcd_failed_at = clock.now
    answer = await member.promise(PromiseRequest(3, 1, 4000))
    assert answer.granted_ms == 4000
    assert promise_file.remaining_s(tmp_path, 4.0) > 3.0  # on disk before the answer
    assert member.role is not None
    assert not member._may_campaign(member.role.state)
    assert "promised master 1 not to campaign for another 4.0 s" in member.status_text()
    clock.now += 4.0
    assert member._may_campaign(member.role.state)
    member.etcd_ok_at = clock.now + 1  # etcd answers this member again: no new promise
    clock.now += 2
    assert (await member.promise(PromiseRequest(3, 1, 4000))).granted_ms == 0


async def test_a_master_promises_nothing():
    clock = Clock()
    master = elector(clock, me=1)
    master.etcd_failed_at = clock.now
    answer = await master.promise(PromiseRequest(3, 1, 4000))
    assert answer.granted_ms == 0 and "master itself" in answer.reason


async def test_the_guard_fences_when_the_last_promise_runs_out(autojump_clock):
    import trio

    master = elector(Clock(), me=1)
    master.clock = trio.current_time
    start = trio.current_time()
    master.last_refresh_sent = start  # lease of 4 s: writable until start + 3 without promises
    master.table.record(2, start + 2.0, 4.0)
    master.table.record(3, start + 2.5, 4.0)
    fenced: list[float] = []
    master.fence = lambda reason: fenced.append(trio.current_time())
    with trio.move_on_after(30):
        await master._guard()
    assert fenced == [
        pytest.approx(start + 6.0 - PROMISE_MARGIN_S)
    ]  # member 2's promise, the first to end
    assert master.restarting


async def test_the_guard_fences_at_the_lease_end_without_promises(autojump_clock):
    import trio

    master = elector(Clock(), me=1)
    master.clock = trio.current_time
    master.last_refresh_sent = start = trio.current_time()
    fenced: list[float] = []
    master.fence = lambda reason: fenced.append(trio.current_time())
    await master._guard()
    assert fenced == [pytest.approx(start + 3.0)]
