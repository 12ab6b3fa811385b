"""Start-up of the message store: open the ConsumeQueues, recover the CommitLog (recovery.py
scans it), then cut the log, queues and index to its valid end and rebuild the offset tables.
``truncate_dirty_tail`` (a slave rejoining, the repair tool) reuses the cut.

Recovery reads; it needs the disk to give it nothing. On a full disk a record whose re-dispatch
needs a new ConsumeQueue file stops re-dispatching there (the scan goes on to find the log's
end): reput starts from that record and dispatches the rest once there is room, and sends are
refused until then (health area ``dispatch``)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from broker.store.consume_queue import ConsumeQueue
from broker.store.health import DISPATCH, FLUSH
from broker.store.mapped_file import DiskError
from broker.store.recovery import RecoveryReport, abnormal_start_index, scan_commit_log
from remoting.record import iter_records

if TYPE_CHECKING:
    from broker.store.message_store import DefaultMessageStore

log = logging.getLogger(__name__)
# Records re-dispatched together during abnormal recovery (a batch's entries go as one).
REDISPATCH_RUN = 1024


def load_consume_queues(store: DefaultMessageStore) -> None:
    """Open every ConsumeQueue directory the store holds (RocketMQ's layout)."""
    root = store.config.consume_queue_dir
    if not root.is_dir():
        return
    for topic_dir in sorted(root.iterdir()):
        if not topic_dir.is_dir():
            continue
        for queue_dir in sorted(topic_dir.iterdir()):
            if not queue_dir.name.isdigit():
                continue  # RocketMQ skips non-numeric directories too
            consume_queue = ConsumeQueue(
                topic_dir.name,
                int(queue_dir.name),
                root,
                store.config.mapped_file_size_consume_queue,
            )
            consume_queue.queue.load()
            store.consume_queue_table.setdefault(topic_dir.name, {})[int(queue_dir.name)] = (
                consume_queue
            )


def recover(store: DefaultMessageStore, last_exit_ok: bool) -> RecoveryReport:
    """Scan the CommitLog as the last exit calls for, then cut everything to its valid end."""
    queues = [cq for qs in store.consume_queue_table.values() for cq in qs.values()]
    for consume_queue in queues:
        consume_queue.recover()
    max_cq_phys = max((cq.max_phys_offset for cq in queues), default=0)
    segments = [(mf.start_offset, mf.view) for mf in store.commit_log.queue.files]
    if not segments:
        for consume_queue in queues:
            consume_queue.destroy()
        store.consume_queue_table.clear()
        store.index_service.destroy()
        return scan_commit_log([], 0, mode="empty", check_crc=False)

    def progress(done: int, total: int) -> None:
        log.info("recovering commit log: %d / %d MiB", done >> 20, total >> 20)

    if last_exit_ok:
        report = scan_commit_log(
            segments,
            max(0, len(segments) - 3),
            mode="normal",
            check_crc=store.config.check_crc_on_recover,
            progress=progress,
        )
    else:
        start = abnormal_start_index(
            segments, store.checkpoint.min_timestamp(index_safe=store.config.message_index_safe)
        )

        pending: list = []
        blocked: list[int] = []  # where re-dispatch stopped for the disk
        request_of = store.commit_log.dispatch_request

        def dispatch_pending() -> None:
            if pending and not blocked:
                try:
                    store.dispatcher.dispatch_many(pending, notify=False)
                except DiskError as exc:
                    blocked.append(pending[0].commit_log_offset)
                    store.health.failed(DISPATCH, exc)
            pending.clear()

        def redispatch(scan: object) -> None:
            if blocked:
                return
            pending.append(request_of(scan))
            if len(pending) >= REDISPATCH_RUN:
                dispatch_pending()

        report = scan_commit_log(
            segments,
            start,
            mode="abnormal",
            check_crc=store.config.check_crc_on_recover,
            visit=redispatch,
            progress=progress,
        )
        dispatch_pending()
    log.info("commit log recovered: %s", report.describe())
    cut(store, report.valid_end, max_cq_phys)
    if not last_exit_ok and blocked:
        store.reput.reput_from_offset = min(store.reput.reput_from_offset, blocked[0])
        log.warning("re-dispatch stopped at %d by the disk: reput goes on from there", blocked[0])
    return report


def cut(store: DefaultMessageStore, valid_end: int, max_cq_phys: int) -> None:
    """Truncate the log at its valid end and make the queues and the index agree."""
    store.commit_log.queue.truncate_dirty(valid_end)
    if max_cq_phys >= valid_end:
        for consume_queue in store._all_queues():
            if consume_queue.max_phys_offset > valid_end:
                consume_queue.truncate_to_phys(valid_end)
    rebuild_from = store.index_service.truncate_from(valid_end)
    if rebuild_from is not None and store.config.message_index_enable:
        log.info("rebuilding index from %d to %d", rebuild_from, valid_end)
        _rebuild_index(store, max(rebuild_from, store.commit_log.min_offset), valid_end)
    _flush_recovered(store)
    _rebuild_offset_tables(store)


def _flush_recovered(store: DefaultMessageStore) -> None:
    """What survived the crash in the page cache is made durable now. If the disk refuses,
    the flush service tries again (and sends wait for it, health area ``flush``)."""
    queue = store.commit_log.queue
    tail = queue.files[-2:]
    try:
        for mapped in tail:
            mapped.flush()
    except DiskError as exc:
        store.health.failed(FLUSH, exc)
        for mapped in tail:
            mapped.redirty(0, mapped.wrote_position)
            mapped.flushed_position = 0
        queue.flushed_where = tail[0].start_offset
        return
    queue.flushed_where = store.commit_log.max_offset


def raise_offset_tables(store: DefaultMessageStore) -> None:
    """Each queue's next offset is at least what its ConsumeQueue holds: a recovery that the
    disk stopped counted only what it could dispatch."""
    cursor = store.commit_log.cursor
    for topic, queues in store.consume_queue_table.items():
        for queue_id, consume_queue in queues.items():
            next_offset = max(cursor.queue_offset(topic, queue_id), consume_queue.max_offset)
            cursor.set_queue_offset(topic, queue_id, next_offset)


def _rebuild_index(store: DefaultMessageStore, start: int, end: int) -> None:
    offset = start
    while offset < end:
        data = store.commit_log.get_data(offset)
        if not data:
            break
        requests: list = []
        for _, scan in iter_records(data):
            if scan.phys_offset >= end:
                break  # end lies in this segment: the loop ends after it
            requests.append(store.commit_log.dispatch_request(scan))
            if len(requests) >= REDISPATCH_RUN:
                store.index_service.build_index_runs(requests)
                requests.clear()
        store.index_service.build_index_runs(requests)
        offset = store.commit_log.roll_next_file(offset)


def _rebuild_offset_tables(store: DefaultMessageStore) -> None:
    cursor = store.commit_log.cursor
    cursor.clear_queue_offsets()
    commit_log_min = store.commit_log.min_offset
    max_phys = 0
    for topic, queues in store.consume_queue_table.items():
        for queue_id, consume_queue in queues.items():
            cursor.set_queue_offset(topic, queue_id, consume_queue.max_offset)
            consume_queue.correct_min_offset(commit_log_min)
            max_phys = max(max_phys, consume_queue.max_phys_offset)
    store.reput.reput_from_offset = min(max(max_phys, commit_log_min), store.commit_log.max_offset)
