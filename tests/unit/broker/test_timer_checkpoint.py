"""The timer checkpoint a slave copies from its master: RocketMQ 5's TimerCheckpoint layout, a
hostile body refused, and the progress a promoted slave resumes from."""

from __future__ import annotations

import struct

import pytest

from broker.persist import JsonConfigFile
from broker.timer import checkpoint
from broker.timer.checkpoint import TimerCheckpoint, TimerCheckpointError
from broker.timer.service import TimerProgress


def test_layout_is_rocketmqs_seven_big_endian_longs() -> None:
    cp = TimerCheckpoint(
        last_read_time_ms=1_700_000_000_123,
        last_timer_queue_offset=7,
        master_timer_queue_offset=9,
        timestamp=42,
    )
    body = checkpoint.encode(cp)
    assert body == struct.pack(">7q", 1_700_000_000_123, 0, 7, 9, 0, 42, 0)
    assert checkpoint.decode(body) == cp


def test_an_older_masters_four_longs_are_read() -> None:
    cp = checkpoint.decode(struct.pack(">4q", 5, 100, 2, 3))
    assert (cp.last_read_time_ms, cp.last_timer_queue_offset, cp.master_timer_queue_offset) == (
        5,
        2,
        3,
    )


@pytest.mark.parametrize(
    "body",
    [
        None,
        b"{}",
        b"\0" * 40,
        struct.pack(">7q", -1, 0, 0, 0, 0, 0, 0),
        struct.pack(">7q", 0, 0, -3, 0, 0, 0, 0),
        struct.pack(">7q", 0, 0, 5, 4, 0, 0, 0),  # lowOffset past readOffset
    ],
)
def test_a_bad_body_is_refused(body) -> None:
    with pytest.raises(TimerCheckpointError):
        checkpoint.decode(body)


def test_progress_round_trips_through_the_checkpoint(tmp_path) -> None:
    master = TimerProgress(JsonConfigFile(tmp_path / "m.json"))
    master.low_offset, master.read_offset, master.delivered_up_to = 10, 20, 1_700_000_000_000
    slave = TimerProgress(JsonConfigFile(tmp_path / "s.json"))
    slave.adopt(checkpoint.decode(checkpoint.encode(master.checkpoint(now_ms=1))))
    assert (slave.low_offset, slave.read_offset, slave.delivered_up_to) == (
        10,
        20,
        1_700_000_000_000,
    )
