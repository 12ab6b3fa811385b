"""LinkTimers: heartbeats run on the write clock, expiry on the read clock (docs/spec/ha.md §3.2)."""

from __future__ import annotations

from broker.ha.link import LinkTimers


def timers() -> LinkTimers:
    return LinkTimers.started(100.0, heartbeat_ms=5000, expire_ms=20_000)


def test_a_heartbeat_is_due_five_seconds_after_the_last_write_however_much_was_read() -> None:
    link = timers()
    for now in (101.0, 102.0, 103.0, 104.0, 104.9):
        link.heard(now)
        assert not link.heartbeat_due(now)
    link.heard(105.0)
    assert link.heartbeat_due(105.0)
    link.wrote(105.0)
    assert not link.heartbeat_due(109.9)
    assert link.heartbeat_due(110.0)


def test_a_link_expires_only_when_the_peer_stopped_speaking() -> None:
    link = timers()
    for now in range(105, 200, 5):  # we write every 5 s, the peer says nothing
        link.wrote(float(now))
    assert link.expired(120.0) and link.silent_for(199.0) == 99.0

    link = timers()
    for now in range(105, 200, 5):  # the peer speaks every 5 s, we never write
        link.heard(float(now))
        assert not link.expired(float(now) + 4.9)


def test_the_next_deadline_is_the_earlier_of_heartbeat_and_expiry() -> None:
    link = timers()
    assert link.next_deadline() == 105.0
    link.wrote(118.0)
    assert link.next_deadline() == 120.0  # heard last at 100: expiry comes first
    link.heard(119.0)
    assert link.next_deadline() == 123.0
