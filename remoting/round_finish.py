"""The end of a selector round answered with reply frames only (a round of plain sends), in one
call (``finish_plain_round``; remoting/native/codec/finish.c, whose twin is
``finish_plain_round_reference`` here, which pure mode runs): the frames handed to the server's
sender at once, each connection's read batch ended, what needs Python handed back.
remoting/reading.py ``finish_round`` takes it first and does the rest."""

from __future__ import annotations

from typing import Any

from remoting.codec_native import native
from remoting.command import RPC_ONEWAY

# C's long (and long long) on the machines we build for: wider values take Python's path
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1


def finish_plain_round_reference(
    owners: list[Any],
    staged: list[Any],
    frames: list[Any],
    writes_type: type,
    sender: Any,
    high_water: int,
) -> list[tuple[int, Any]] | None:
    """None, with nothing done, unless every ``frames[i]`` is a reply frame (bytes) for an open
    connection ``owners[i]`` whose request ``staged[i]`` wants one (not oneway) and whose
    writes are of ``writes_type``, open and ``sender``'s (an attribute that cannot be read
    counts as not; finish_round's own loop meets it again). Otherwise the frames go to
    ``sender.send_each`` in one call, and for each connection whose answer is a byte count
    not above ``high_water`` its writes' ``queued`` is set and its read batch ended. Returns
    the tail: (i, None) for such a connection whose in-flight table is full or whose writes
    are paused (the caller looks at its reading), (i, answer) for one whose answer is anything
    else (the caller's ``_sent`` takes it), (i, exception) for a bug met settling it (the
    caller closes that one). TypeError for arguments of the wrong kind; ``send_each``'s own
    errors, or an answer list of another length, raise with the replies it took queued."""
    if (
        type(owners) is not list
        or type(staged) is not list
        or not isinstance(writes_type, type)
        or type(high_water) is not int
    ):
        raise TypeError(
            "finish_plain_round(owners, staged, frames, writes_type, sender, high_water)"
        )
    if not _LONG_MIN <= high_water <= _LONG_MAX:
        raise OverflowError("finish_plain_round: high_water out of range")
    count = len(owners)
    if type(frames) is not list or len(staged) != count or len(frames) != count:
        return None
    owners, staged, frames = owners[:], staged[:], frames[:]
    handles: list[int] = []
    writes: list[Any] = []
    try:
        for connection, request, frame in zip(owners, staged, frames, strict=True):
            if type(frame) is not bytes or connection.closed is not False:
                return None
            flag = request.flag
            if (
                type(flag) is not int
                or not _LONG_MIN <= flag <= _LONG_MAX
                or flag == -1
                or flag & RPC_ONEWAY
            ):
                return None
            w = connection._writes
            if type(w) is not writes_type or w._closed is not False or w._sender is not sender:
                return None
            handle = w._handle
            if type(handle) is not int:
                return None
            handles.append(handle)
            writes.append(w)
    except Exception:
        return None
    if not count:
        return None
    answers = sender.send_each(handles, frames)
    if type(answers) is not list or len(answers) != count:
        raise TypeError("send_each: one answer per reply")
    tail: list[tuple[int, Any]] = []
    for index, answer in enumerate(tuple(answers)):  # settling must not change what is walked
        if type(answer) is not int or not _LONG_MIN <= answer <= high_water:
            tail.append((index, answer))
            continue
        try:
            if not _settle(owners[index], writes[index], answer):
                tail.append((index, None))
        except Exception as exc:
            tail.append((index, exc))
    return tail


def _settle(connection: Any, w: Any, queued: int) -> bool:
    """A connection's answer taken: False when its reading must be looked at."""
    w.queued = queued
    connection._in_read_batch = False
    return not (connection._in_flight.full or w.paused)


finish_plain_round = finish_plain_round_reference if native is None else native.finish_plain_round
