"""A plain batch stored from its request's values (issue 27): the same plan, append and packed
dispatch as ``DefaultMessageStore.put_messages`` (CommitLog.put_messages), without the
MessageExtBrokerInner, the PutMessageResult, the AppendMessageResult and its list of one msgId
string per entry.

It answers only a batch the reference would store in the writable segment as it is. Anything
else returns None before anything is written, and the caller gives the request to the
reference, which answers it as it always did: a store that refuses puts now, a body the plan
refuses (or an entry the record checks refuse, or a batch too large), no writable segment or
one the batch does not fit (the reference pads it and rolls to the next).
"""

from __future__ import annotations

from time import perf_counter_ns
from typing import TYPE_CHECKING

from broker.store.append_cursor import record_problem
from broker.store.batch_records import batch_plan
from broker.store.layout import MAX_PROPERTIES_BYTES
from broker.store.types import AppendedBatch
from remoting.record import END_FILE_MIN_BLANK_LENGTH, record_size

if TYPE_CHECKING:
    from broker.store.message_store import DefaultMessageStore

# (the reply's comma-joined msgId, the first entry's queue offset, entries, bytes)
StoredBatch = tuple[str, int, int, int]


def put_plain_batch(
    store: DefaultMessageStore,
    topic: str,
    queue_id: int,
    sys_flag: int,
    batch_properties: bytes,
    body: bytes,
    born_timestamp: int,
    born_host: tuple[bytes, int],
    reconsume_times: int,
) -> StoredBatch | None:
    """Append and dispatch the batch ``body`` (the SEND_BATCH_MESSAGE body; ``batch_properties``
    the header's properties encoded, appended to each entry's own) as ``put_messages`` does,
    or None, having written nothing, when the reference must answer it. The caller has ruled
    out a transaction type and DELAY (the reference's refusals of a batch as a whole)."""
    if store._refuse() is not None:
        return None
    log = store.commit_log
    files = log.queue.files
    if not files:
        return None
    mapped = files[-1]
    topic_bytes = topic.encode()
    max_size = log.config.max_message_size
    fixed = record_size(
        0, len(topic_bytes), 0, born_v6=len(born_host[0]) == 16,
        store_v6=len(log.cursor.store_address) == 16,
    )  # fmt: skip
    try:
        records, count, total, _, first_body, refused_props, _ = batch_plan(
            body, batch_properties, fixed, max_size, MAX_PROPERTIES_BYTES
        )
    except Exception:  # a body the plan refuses: the reference says why
        return None
    if (
        not count
        or refused_props is not None
        # the topic's length, as the reference checks it (the header decoder has the same limit)
        or record_problem(topic_bytes, b"", first_body, max_size) is not None
        or total > max_size + 64 * 1024 * count
        or total + END_FILE_MIN_BLANK_LENGTH > mapped.file_size - mapped.wrote_position
    ):
        return None
    started = perf_counter_ns()
    position = mapped.wrote_position
    # reput.caught_up() without its calls: the log's end is this segment's written end
    caught_up = store.reput.reput_from_offset == mapped.start_offset + position
    store_timestamp = log.clock()
    queue_offset = log.cursor.queue_offset(topic, queue_id)
    msg_id, units, keys, wakes = log.cursor.put_batch_dispatch(
        mapped.mmap, position, mapped.start_offset, store_timestamp, records, topic, queue_id,
        sys_flag, born_timestamp, born_host, reconsume_times,
    )  # fmt: skip
    mapped.wrote_position = position + total
    warmer = log.warmer
    if position + total + warmer.ahead > mapped.warmed_position:  # wrote's first test, no call
        warmer.wrote(mapped)
    if store.put_listener is not None:
        store.put_listener()
    if not caught_up:
        store.reput.wake()
    else:
        appended = AppendedBatch(
            topic, queue_id, sys_flag, store_timestamp, queue_offset, units, keys, wakes
        )
        if store._dispatch_ok(store.dispatcher.dispatch_appended, appended):
            store.reput.reput_from_offset = mapped.start_offset + position + total  # dispatched_to
    store.stats.on_put_run(count, total, perf_counter_ns() - started, 1)
    return msg_id, queue_offset, count, total
