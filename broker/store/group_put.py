"""Pipelined sends stored as a group (issue 27): the messages of every SEND request one read
from a connection brought in, appended in request order in one pass, then dispatched in one
pass (``CommitLogDispatcher.dispatch_many``, as reput does) instead of a store call, a dispatch
and the bookkeeping per message.

Each message keeps its own result: one the log refuses (too large, a bad property) is refused
alone and the rest are stored. A refusal of the whole store (a slave, shutting down, the disk
full or failing) answers every message still to put with it, as a put per message would once
the condition holds. Dispatch behaves as a single put's: done here only when reput was caught
up before the group, and when the disk refuses it, left to reput from the group's first record
(dispatch_many moves nothing on when it raises; reput re-dispatches idempotently).

The plain messages of a run are appended by ``_append_run`` with the append's lookups done
once per run; anything else (a DELAY, a given tags code, SCHEDULE_TOPIC_XXXX, a record that does
not fit the segment, any refusal or error) goes through ``CommitLog.put_message``, the
reference, which answers it as a lone put would.
"""

from __future__ import annotations

from collections.abc import Callable
from time import perf_counter_ns
from typing import TYPE_CHECKING, Any

import attrs

from broker.store.health import DISPATCH
from broker.store.mapped_file import DiskError
from broker.store.plain_dispatch import AppendedRows, python_plain_dispatch
from broker.store.store_native import native
from broker.store.types import (
    AppendMessageResult,
    DispatchRequest,
    MessageExtBrokerInner,
    PutMessageResult,
    PutMessageStatus,
)
from remoting.constants import SCHEDULE_TOPIC
from remoting.frame import PREFIX
from remoting.message import MessageConst

if TYPE_CHECKING:
    from broker.store.commit_log import CommitLog
    from broker.store.message_store import DefaultMessageStore

_PUT_OK = PutMessageStatus.PUT_OK
_DELAY = MessageConst.DELAY
_KEYS, _UNIQ_KEY = MessageConst.KEYS, MessageConst.UNIQ_KEY


def put_message_group(
    store: DefaultMessageStore, msgs: list[MessageExtBrokerInner]
) -> list[PutMessageResult]:
    """One result per message, in order."""
    refused = store._refuse()
    if refused is not None:
        return [attrs.evolve(refused) for _ in msgs]
    started = perf_counter_ns()
    caught_up = store.reput.caught_up()
    commit_log = store.commit_log
    put = commit_log.put_message
    results: list[PutMessageResult] = []
    requests: list[DispatchRequest] = []
    index, count = 0, len(msgs)
    while index < count:
        if refused is not None:
            results.append(attrs.evolve(refused))
            index += 1
            continue
        index = _append_run(commit_log, msgs, index, results, requests)
        if index == count:
            break
        result, request = put(msgs[index])
        if request is not None and result.ok:
            requests.append(request)
        else:
            # What refused this one may refuse the rest (a disk error marks the store
            # unhealthy): a put per message would have asked again.
            refused = store._refuse()
        results.append(result)
        index += 1
    if requests:
        last = requests[-1]
        end = last.commit_log_offset + last.msg_size
        dispatch = store.dispatcher.dispatch_many
        _stored(
            store,
            len(requests),
            sum(r.msg_size for r in requests),
            caught_up,
            end,
            dispatch,
            requests,
        )
    # Java times each putMessage; a message of the group took its share of the pass.
    store.stats.on_put_times((perf_counter_ns() - started) // len(msgs), len(msgs))
    return results


def _stored(
    store: DefaultMessageStore,
    count: int,
    size: int,
    caught_up: bool,
    end_offset: int,
    dispatch: Callable[[Any], None],
    dispatched: Any,
) -> None:
    """A group's bookkeeping once its ``count`` records (``size`` bytes, up to the phys offset
    ``end_offset``) are appended: stats, the put listener, and ``dispatch(dispatched)`` here when
    reput was caught up before the group (else reput is woken for it)."""
    store.stats.on_put(count, size)
    if store.put_listener is not None:
        store.put_listener()
    if not caught_up:
        store.reput.wake()
    elif store._dispatch_ok(dispatch, dispatched):
        store.reput.dispatched_to(end_offset)


def _append_run(
    log: CommitLog,
    msgs: list[MessageExtBrokerInner],
    index: int,
    results: list[PutMessageResult],
    requests: list[DispatchRequest],
) -> int:
    """Append ``msgs[index:]`` while each is plain and fits the writable segment, as
    ``CommitLog.put_message`` would; the index of the first one left to it."""
    files = log.queue.files
    if not files:
        return index
    mapped = files[-1]
    if mapped.wrote_position >= mapped.file_size:
        return index
    cursor_put, clock, wrote = log.cursor.put, log.clock, log.warmer.wrote
    mmap, start_offset = mapped.mmap, mapped.start_offset
    max_size = log.config.max_message_size
    for msg in msgs[index:]:
        properties = msg.properties
        if _DELAY in properties or msg.tags_code is not None or msg.topic == SCHEDULE_TOPIC:
            break
        store_timestamp = clock()
        position = mapped.wrote_position
        try:
            put = cursor_put(
                mmap, position, start_offset, store_timestamp, max_size, msg.topic,
                msg.queue_id, msg.sys_flag, properties, msg.body, msg.flag,
                msg.born_timestamp, msg.born_host, msg.reconsume_times,
                msg.prepared_transaction_offset,
            )  # fmt: skip
        except Exception:  # a refusal or an error: put_message says which, as for a lone put
            break
        if type(put) is int:  # does not fit: put_message goes on to the next segment
            break
        msg_id, request = put
        size = request.msg_size
        mapped.wrote_position = position + size
        wrote(mapped)
        append = AppendMessageResult(
            request.commit_log_offset, size, msg_id, [msg_id], store_timestamp,
            request.consume_queue_offset,
        )  # fmt: skip
        results.append(PutMessageResult(_PUT_OK, append))
        requests.append(request)
        index += 1
    return index


def put_plain_run(
    store: DefaultMessageStore, rows: list[tuple[Any, ...]], pieces: tuple[bytes, ...]
) -> tuple[list[bytes], dict[str, list[int]]] | None:
    """The plain sends' pass (broker/processor/send_plain.py): ``rows`` are the values of plain
    single messages (topic, queue id, sysFlag, properties: a dict or the record's property
    bytes already encoded, body, flag, born timestamp, born host, reconsume times, the
    request's opaque), appended in order as ``put_message_group``
    appends them, in one ``put_rows`` call, and dispatched from what it packed
    (``dispatch_rows``, the same work as ``dispatch_many`` without an object per message): the
    reply frames of the stored ones (``pieces`` the reply header around its values) and
    {topic: [messages, bytes]}. It stops at the first row the append passes on (the caller
    gives it and the rest to the reference); None when the store refuses every put now."""
    # _refuse()'s tests without its call (it builds the refusal the reference answers with)
    if (
        store.is_slave
        or store.shutting_down
        or not store.loaded
        or store.clean.disk_full
        or not store.health.writable
    ):
        return None
    log = store.commit_log
    files = log.queue.files
    if not files or files[-1].wrote_position >= files[-1].file_size:
        return [], {}  # the reference makes the next segment
    started = perf_counter_ns()
    mapped = files[-1]
    wrote_from = mapped.wrote_position
    # One store timestamp for the pass (a clock read per row was a Python call per send): the
    # rows are appended within microseconds, as a batch's entries share one in Java
    position, appended, replies, totals = put_rows(
        log.cursor, mapped.mmap, wrote_from, mapped.start_offset, log.clock(),
        log.config.max_message_size, rows, pieces,
    )  # fmt: skip
    if not replies:
        return replies, totals
    return finish_plain_run(store, (replies, totals, appended, position, wrote_from, started))


def finish_plain_run(
    store: DefaultMessageStore, appended_rows: tuple[Any, ...]
) -> tuple[list[bytes], dict[str, list[int]]]:
    """What ``put_plain_run`` does once ``put_rows`` appended rows in the last segment:
    ``appended_rows`` is (reply frames, totals, the packed dispatch, the segment's next write
    position, where the pass began writing, the pass's perf_counter_ns start), the tuple
    plain_pass (broker/store/plain_pass.py) hands back when it stops after the append. The
    dispatch is done here only when reput is caught up to where the pass began (else it was
    woken and dispatches from the log)."""
    replies, totals, appended, position, wrote_from, started = appended_rows
    mapped = store.commit_log.queue.files[-1]  # put_rows rolls no segment
    start_offset = mapped.start_offset
    # reput.caught_up() before the pass without its three calls: nothing but dispatch moves
    # reput's position between there and here
    reput = store.reput
    caught_up = reput.reput_from_offset == start_offset + wrote_from
    count = len(replies)
    mapped.wrote_position = position
    warmer = store.commit_log.warmer
    if position + warmer.ahead > mapped.warmed_position:  # wrote's first test, no call
        warmer.wrote(mapped)
    if store.put_listener is not None:
        store.put_listener()
    # _stored's bookkeeping inline (a lone sync send pays it per message): _dispatch_ok and
    # dispatched_to without their calls
    if not caught_up:
        reput.wake()
    else:
        try:
            store.dispatcher.dispatch_rows(appended, topics=totals)
        except DiskError as exc:  # answered PUT_OK all the same: reput dispatches it later
            store.health.failed(DISPATCH, exc)
        else:
            reput.reput_from_offset = start_offset + position
    elapsed = (perf_counter_ns() - started) // count
    store.stats.on_put_run(count, position - wrote_from, elapsed, count)
    return replies, totals


def python_put_rows(
    cursor: Any,
    mm: Any,
    position: int,
    start_offset: int,
    clock: int | Callable[[], int],
    max_body: int,
    rows: list[tuple[Any, ...]],
    pieces: tuple[bytes, ...],
) -> tuple[int, AppendedRows, list[bytes], dict[str, list[int]]]:
    """Each row through ``cursor.put`` at the next position until one is not taken: (the next
    position, what dispatch needs of the records packed (plain_dispatch.py), the reply frames,
    {topic: [messages, bytes]}). ``clock``: the store timestamp of every row (an int), or a
    callable read per row. The reference of broker/store/native/plain_rows.c."""
    requests: list[DispatchRequest] = []
    replies: list[bytes] = []
    totals: dict[str, list[int]] = {}
    for topic, queue_id, sys_flag, properties, body, flag, born_ts, host, reconsume, opaque in rows:
        if not _index_keys_are_text(properties):
            break
        try:
            put = cursor.put(
                mm, position, start_offset, clock if type(clock) is int else clock(), max_body,
                topic, queue_id, sys_flag,
                properties, body, flag, born_ts, host, reconsume, 0,
            )  # fmt: skip
        except Exception:  # a refusal or an error: the reference puts it again and says why
            break
        if type(put) is int:  # does not fit: the reference goes on to the next segment
            break
        msg_id, request = put
        size = request.msg_size
        position += size
        requests.append(request)
        pair = totals.setdefault(topic, [0, 0])
        pair[0] += 1
        pair[1] += size
        replies.append(reply_frame(pieces, msg_id, queue_id, request.consume_queue_offset, opaque))
    return position, python_plain_dispatch(requests), replies, totals


def _index_keys_are_text(properties: Any) -> bool:
    """Whether what the packed dispatch hashes (KEYS, UNIQ_KEY) is text, as the wire gives it
    (a row of other values stops the run: the reference decides)."""
    if type(properties) is not dict:
        return True  # the put refuses it
    keys, uniq_key = properties.get(_KEYS, ""), properties.get(_UNIQ_KEY, "")
    return isinstance(keys, str) and isinstance(uniq_key, str)


def reply_frame(
    pieces: tuple[bytes, ...], msg_id: str, queue_id: int, queue_offset: int, opaque: int
) -> bytes:
    """A frame whose header is ``pieces`` around the four values, in that order."""
    values = (msg_id.encode(), b"%d" % queue_id, b"%d" % queue_offset, b"%d" % opaque, b"")
    header = b"".join(piece + value for piece, value in zip(pieces, values, strict=True))
    return PREFIX.pack(4 + len(header), len(header)) + header


put_rows = python_put_rows if native is None else native.put_rows
