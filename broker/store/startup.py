"""StoreRecovery: start-up of the message store, Java's DefaultMessageStore.recover
(docs/spec/store-format.md §7). Recover the ConsumeQueues, scan the CommitLog (recovery.py),
then cut the log, queues and index to its valid end and rebuild the topic queue table.
``truncate`` (a slave rejoining, the repair tool) reuses the cut.

Recovery reads; it needs the disk to give it nothing. On a full disk a record whose re-dispatch
needs a new ConsumeQueue file stops re-dispatching there (the scan goes on to find the log's
end): reput starts from that record and dispatches the rest once there is room, and sends are
refused until then (health area ``dispatch``)."""

from __future__ import annotations

import logging

import attrs

from broker.store.checkpoint import StoreCheckpoint
from broker.store.commit_log import CommitLog
from broker.store.config import MessageStoreConfig
from broker.store.consume_queue_table import ConsumeQueueTable
from broker.store.dispatch import CommitLogDispatcher
from broker.store.health import DISPATCH, FLUSH, StoreHealth
from broker.store.index_service import IndexService
from broker.store.mapped_file import DiskError
from broker.store.recovery import RecoveryReport, Segment, abnormal_start_index, scan_commit_log
from broker.store.types import DispatchRequest
from remoting.record import RecordScan, iter_records

log = logging.getLogger(__name__)
# Records re-dispatched together during abnormal recovery (a batch's entries go as one).
REDISPATCH_RUN = 1024


def _progress(done: int, total: int) -> None:
    log.info("recovering commit log: %d / %d MiB", done >> 20, total >> 20)


@attrs.frozen
class StoreRecovery:
    config: MessageStoreConfig
    commit_log: CommitLog
    consume_queues: ConsumeQueueTable
    index_service: IndexService
    dispatcher: CommitLogDispatcher
    checkpoint: StoreCheckpoint
    health: StoreHealth

    def recover(self, last_exit_ok: bool) -> tuple[RecoveryReport, int]:
        """Scan the CommitLog as the last exit calls for, cut everything to its valid end:
        the report, and the phys offset dispatch (reput) goes on from."""
        for consume_queue in self.consume_queues:
            consume_queue.recover()
        max_cq_phys = self.consume_queues.max_phys_offset()
        segments = [(mf.start_offset, mf.view) for mf in self.commit_log.queue.files]
        if not segments:
            self.consume_queues.destroy()
            self.index_service.destroy()
            return scan_commit_log([], 0, mode="empty", check_crc=False), 0
        if last_exit_ok:
            report = scan_commit_log(
                segments,
                max(0, len(segments) - 3),
                mode="normal",
                check_crc=self.config.check_crc_on_recover,
                progress=_progress,
            )
            blocked_at = None
        else:
            report, blocked_at = self._scan_abnormally(segments)
        log.info("commit log recovered: %s", report.describe())
        reput_from = self.truncate(report.valid_end, max_cq_phys)
        if blocked_at is not None:
            reput_from = min(reput_from, blocked_at)
            log.warning(
                "re-dispatch stopped at %d by the disk: reput goes on from there", blocked_at
            )
        return report, reput_from

    def _scan_abnormally(self, segments: list[Segment]) -> tuple[RecoveryReport, int | None]:
        """The scan after a crash, re-dispatching every valid record from the checkpoint's safe
        point: the report, and the phys offset where the disk stopped re-dispatch (or None)."""
        safe_ms = self.checkpoint.min_timestamp(index_safe=self.config.message_index_safe)
        pending: list[DispatchRequest] = []
        blocked: list[int] = []
        request_of = self.commit_log.dispatch_request

        def dispatch_pending() -> None:
            if pending and not blocked:
                try:
                    self.dispatcher.dispatch_many(pending, notify=False)
                except DiskError as exc:
                    blocked.append(pending[0].commit_log_offset)
                    self.health.failed(DISPATCH, exc)
            pending.clear()

        def redispatch(scan: RecordScan) -> None:
            if blocked:
                return
            pending.append(request_of(scan))
            if len(pending) >= REDISPATCH_RUN:
                dispatch_pending()

        report = scan_commit_log(
            segments,
            abnormal_start_index(segments, safe_ms),
            mode="abnormal",
            check_crc=self.config.check_crc_on_recover,
            visit=redispatch,
            progress=_progress,
        )
        dispatch_pending()
        return report, blocked[0] if blocked else None

    def truncate(self, valid_end: int, max_cq_phys: int) -> int:
        """Truncate the log at ``valid_end`` (a phys offset) and make the queues and the index
        agree (Java's truncateDirtyLogicFiles); the phys offset dispatch goes on from."""
        self.commit_log.queue.truncate_dirty(valid_end)
        if max_cq_phys >= valid_end:
            for consume_queue in self.consume_queues:
                if consume_queue.max_phys_offset > valid_end:
                    consume_queue.truncate_to_phys(valid_end)
        rebuild_from = self.index_service.truncate_from(valid_end)
        if rebuild_from is not None and self.config.message_index_enable:
            log.info("rebuilding index from %d to %d", rebuild_from, valid_end)
            self._rebuild_index(max(rebuild_from, self.commit_log.min_phys_offset), valid_end)
        self._flush_recovered()
        return self._recover_topic_queue_table()

    def _flush_recovered(self) -> None:
        """What survived the crash in the page cache is made durable now. If the disk refuses,
        the flush service tries again (and sends wait for it, health area ``flush``)."""
        queue = self.commit_log.queue
        tail = queue.files[-2:]
        try:
            for mapped in tail:
                mapped.flush()
        except DiskError as exc:
            self.health.failed(FLUSH, exc)
            for mapped in tail:
                mapped.redirty(0, mapped.wrote_position)
                mapped.flushed_position = 0
            queue.flushed_where = tail[0].start_offset
            return
        queue.flushed_where = self.commit_log.max_phys_offset

    def _rebuild_index(self, start: int, end: int) -> None:
        commit_log, index_service = self.commit_log, self.index_service
        phys_offset = start
        while phys_offset < end:
            data = commit_log.get_data(phys_offset)
            if not data:
                break
            requests: list[DispatchRequest] = []
            for _, scan in iter_records(data):
                if scan.phys_offset >= end:
                    break  # end lies in this segment: the loop ends after it
                requests.append(commit_log.dispatch_request(scan))
                if len(requests) >= REDISPATCH_RUN:
                    index_service.build_index_runs(requests)
                    requests.clear()
            index_service.build_index_runs(requests)
            phys_offset = commit_log.roll_next_file(phys_offset)

    def _recover_topic_queue_table(self) -> int:
        """Java's recoverTopicQueueTable: each queue's next offset from its ConsumeQueue, each
        queue's min offset against the log's; the phys offset dispatch goes on from."""
        cursor = self.commit_log.cursor
        cursor.clear_queue_offsets()
        commit_log_min = self.commit_log.min_phys_offset
        max_phys = 0
        for consume_queue in self.consume_queues:
            cursor.set_queue_offset(
                consume_queue.topic, consume_queue.queue_id, consume_queue.max_queue_offset
            )
            consume_queue.correct_min_offset(commit_log_min)
            max_phys = max(max_phys, consume_queue.max_phys_offset)
        return min(max(max_phys, commit_log_min), self.commit_log.max_phys_offset)

    def raise_topic_queue_table(self) -> None:
        """Each queue's next offset is at least what its ConsumeQueue holds: a recovery that the
        disk stopped counted only what it could dispatch."""
        cursor = self.commit_log.cursor
        for consume_queue in self.consume_queues:
            topic, queue_id = consume_queue.topic, consume_queue.queue_id
            next_offset = max(cursor.queue_offset(topic, queue_id), consume_queue.max_queue_offset)
            cursor.set_queue_offset(topic, queue_id, next_offset)
