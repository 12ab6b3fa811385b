"""Pure: the timer checkpoint a slave copies from its master (GET_TIMER_CHECK_POINT, code 60),
in RocketMQ 5's TimerCheckpoint layout: big-endian longs lastReadTimeMs, lastTimerLogFlushPos,
lastTimerQueueOffset, masterTimerQueueOffset, then the DataVersion (stateVersion, timestamp,
counter). Older 5.x masters send the first four only.

Our timer has no timer log (service.py), so its three progress numbers fill the fields whose
meaning they share: lastReadTimeMs is deliveredUpTo (the wheel has delivered everything due
before it), masterTimerQueueOffset is readOffset (how far the timer queue was read), and
lastTimerQueueOffset is lowOffset (the oldest queue offset not yet delivered: where a replay
starts). lastTimerLogFlushPos is 0. A promoted slave resumes from these (service.load).
"""

from __future__ import annotations

import struct

import attrs

_LONGS = struct.Struct(">7q")
_SHORT = struct.Struct(">4q")


class TimerCheckpointError(ValueError):
    """A checkpoint body that is not one: the sync round fails and keeps the last good one."""


@attrs.frozen
class TimerCheckpoint:
    last_read_time_ms: int  # our deliveredUpTo
    last_timer_queue_offset: int  # our lowOffset
    master_timer_queue_offset: int  # our readOffset
    last_timer_log_flush_pos: int = 0
    state_version: int = 0
    timestamp: int = 0
    counter: int = 0


def encode(checkpoint: TimerCheckpoint) -> bytes:
    return _LONGS.pack(
        checkpoint.last_read_time_ms,
        checkpoint.last_timer_log_flush_pos,
        checkpoint.last_timer_queue_offset,
        checkpoint.master_timer_queue_offset,
        checkpoint.state_version,
        checkpoint.timestamp,
        checkpoint.counter,
    )


def decode(body: bytes | None) -> TimerCheckpoint:
    """A master's answer, checked: 32 or 56 bytes, offsets and times not negative."""
    body = body or b""
    if len(body) == _LONGS.size:
        values = _LONGS.unpack(body)
    elif len(body) == _SHORT.size:
        values = (*_SHORT.unpack(body), 0, 0, 0)
    else:
        raise TimerCheckpointError(f"timer checkpoint is {len(body)} bytes, not 32 or 56")
    read_time, flush_pos, low_offset, read_offset = values[:4]
    if min(read_time, low_offset, read_offset) < 0 or low_offset > read_offset:
        raise TimerCheckpointError(
            f"timer checkpoint lastReadTimeMs={read_time} lastTimerQueueOffset={low_offset} "
            f"masterTimerQueueOffset={read_offset} is out of range"
        )
    return TimerCheckpoint(
        last_read_time_ms=read_time,
        last_timer_queue_offset=low_offset,
        master_timer_queue_offset=read_offset,
        last_timer_log_flush_pos=flush_pos,
        state_version=values[4],
        timestamp=values[5],
        counter=values[6],
    )
