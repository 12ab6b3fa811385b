"""DefaultMessageStore: the broker's message store (docs/spec/store-format.md).

Use::

    store = DefaultMessageStore(config, store_host=("10.0.0.1", 10911), arrival_listener=...)
    report = store.load()                      # lock, open files, recover (synchronous)
    async with trio.open_nursery() as n:
        await n.start(store.run)                # allocate/flush/reput/clean; started() once dispatch caught up
        result = store.put_message(msg)         # plain def: the broker answers inline
        status = await store.wait_flushed(result.append.end_offset, 5.0)   # SYNC_FLUSH only
        got = store.get_message(group, topic, queue_id, queue_offset, 32, TagsFilter(None))

The write path, in RocketMQ's words: ``put_message`` -> ``CommitLog.put_message`` (the record
appended, its DispatchRequest back) -> ``CommitLogDispatcher.dispatch(request)`` ->
``ConsumeQueue.put`` and ``IndexService.build_index``, at once when dispatch was caught up
(else ReputMessageService reads the record back). This class builds the parts, hands each the
few others it uses, and runs their services; it is the one object that knows them all.

``put_message``/``put_messages`` never await; ``wait_flushed`` is the separate SYNC_FLUSH wait.
Reads return memoryview slices of the mapped segments (no copies). HA uses
``get_commit_log_data`` (master) and ``append_to_commit_log`` (slave); an offline repair tool
uses ``truncate_dirty_tail``. Cancelling ``run`` shuts the store down cleanly.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from time import perf_counter_ns
from typing import Any

import trio

from broker.store.allocate import AllocateMappedFileService
from broker.store.checkpoint import AbortFile, StoreCheckpoint, StoreLock
from broker.store.clean import CleanService, DiskUsage, psutil_disk_usage
from broker.store.commit_log import CommitLog
from broker.store.config import BrokerRole, FlushDiskType, MessageStoreConfig
from broker.store.consume_queue import ConsumeQueue
from broker.store.consume_queue_table import ConsumeQueueTable
from broker.store.dispatch import ArrivalListener, CommitLogDispatcher
from broker.store.flush import (
    CommitLogFlusher,
    FlushCommitLogService,
    FlushConsumeQueueService,
    GroupCommitService,
    final_flush,
)
from broker.store.group_put import put_message_group
from broker.store.health import COMMIT_LOG, DISPATCH, StoreHealth
from broker.store.index_file import IndexFile
from broker.store.index_service import IndexService
from broker.store.lookups import QueueLookups
from broker.store.mapped_file import DiskError, StoreError
from broker.store.mapped_file_queue import now_ms
from broker.store.reads import MessageReader, memory_threshold
from broker.store.recovery import RecoveryReport
from broker.store.reput import ReputMessageService
from broker.store.startup import StoreRecovery
from broker.store.stats import StoreStats, StoreStatsService
from broker.store.types import (
    GetMessageResult,
    MessageExtBrokerInner,
    PutMessageResult,
    PutMessageStatus,
)
from remoting import message as codec

log = logging.getLogger(__name__)

__all__ = ["ArrivalListener", "DefaultMessageStore"]

SHUTDOWN_FLUSH_TIMEOUT_S = 30.0


class DefaultMessageStore(QueueLookups):
    # read by plain_pass.c from their slots (broker/store/slotted.py); QueueLookups gives the
    # other attributes their __dict__, as Slotted does elsewhere
    __slots__ = (
        "clean",
        "commit_log",
        "dispatcher",
        "health",
        "is_slave",
        "loaded",
        "plain_idle",
        "put_listener",
        "reput",
        "shutting_down",
        "stats",
    )

    def __init__(
        self,
        config: MessageStoreConfig,
        *,
        store_host: tuple[str, int] = ("127.0.0.1", 10911),
        clock: Callable[[], int] = now_ms,
        disk_usage: DiskUsage = psutil_disk_usage,
        arrival_listener: ArrivalListener | None = None,
        arrivals_wanted: Callable[[], bool] | None = None,
        total_physical_ram: int | None = None,
    ) -> None:
        self.config = config
        self.clock = clock
        self.store_host = store_host
        self.is_slave = config.broker_role is BrokerRole.SLAVE  # fixed at start
        # Called after every successful put (HA wakes its idle connection writers).
        self.put_listener: Callable[[], None] | None = None
        # (put listener, arrival listener, arrivals_wanted, ((object, counter name), ...)): the
        # listeners named have nothing to do for a user topic while each counter reads 0, so
        # a plain pass in one call skips them (broker/store/plain_pass.py); None: not known,
        # and a pass with a listener set goes through Python
        self.plain_idle: tuple[Any, Any, Any, tuple[tuple[object, str], ...]] | None = None
        self.health = health = StoreHealth()
        self.allocation = AllocateMappedFileService(config.mapped_file_size_commit_log)
        self.allocation.on_failed = lambda exc: health.failed(COMMIT_LOG, exc)
        self.allocation.on_recovered = lambda: health.recovered(COMMIT_LOG)
        self.commit_log = commit_log = CommitLog(
            config,
            store_host=(codec.host_bytes(store_host[0]), store_host[1]),
            clock=clock,
            allocator=self.allocation.allocate,
        )
        commit_log.on_segment_rolled = lambda _: self.allocation.request(commit_log.queue)
        self.allocation.on_ready = commit_log.warmer.offer
        self.allocation.on_handover = commit_log.warmer.take
        commit_log.on_disk_error = self._segment_refused
        self.consume_queues = ConsumeQueueTable(
            config.consume_queue_dir, config.mapped_file_size_consume_queue
        )
        self.index_service = IndexService(
            config.index_dir, config.max_hash_slot_num, config.max_index_num, health
        )
        self.dispatcher = CommitLogDispatcher(
            self.consume_queues,
            self.index_service,
            config,
            None if self.is_slave else arrival_listener,  # slaves wake no held pulls
            arrivals_wanted,
        )
        self.reput = ReputMessageService(
            commit_log, self.dispatcher, health, config, on_unblocked=self._dispatch_unblocked
        )
        self.checkpoint = StoreCheckpoint(config.checkpoint_path)
        self._build_services(disk_usage, total_physical_ram)
        self.shutting_down = False
        self.loaded = False
        self.recovery_report: RecoveryReport | None = None

    def _build_services(self, disk_usage: DiskUsage, total_physical_ram: int | None) -> None:
        """What runs beside the write path: recovery, flushes, cleanup, reads."""
        config, commit_log, health = self.config, self.commit_log, self.health
        queues, index, checkpoint = self.consume_queues, self.index_service, self.checkpoint
        dispatcher = self.dispatcher
        self.recovery = StoreRecovery(
            config, commit_log, queues, index, dispatcher, checkpoint, health
        )
        self.flusher = CommitLogFlusher(commit_log, checkpoint, health)
        self.group_commit = GroupCommitService(self.flusher)
        self.flush_queues = FlushConsumeQueueService(
            queues, index, dispatcher, checkpoint, health, config
        )
        self.clean = CleanService(config, self.clock, commit_log, queues, index, disk_usage)
        self.abort_file = AbortFile(config.abort_path)
        self.lock = StoreLock(config.lock_path)
        self.stats = StoreStats(self.clock)
        self.memory_threshold = memory_threshold(config, total_physical_ram)
        self.reader = MessageReader(queues, commit_log, config, self.memory_threshold)

    @property
    def disk_full(self) -> bool:
        return self.clean.disk_full

    # ================================================================ lifecycle

    def load(self) -> RecoveryReport:
        """Lock the directory, open every file and recover. Synchronous, before any task."""
        self.lock.acquire()
        try:
            last_exit_ok = not self.abort_file.exists()
            self.commit_log.queue.load()
            self.consume_queues.load()
            self.checkpoint.load()
            self.index_service.load()
            self.index_service.on_file_full = self._index_file_full
            report, reput_from = self.recovery.recover(last_exit_ok)
        except BaseException:
            self.checkpoint.close()
            self.lock.release()
            raise
        self.reput.start_from(reput_from)
        self.abort_file.create()
        self.loaded = True
        self.recovery_report = report
        return report

    def _index_file_full(self, index: IndexFile) -> None:
        self.checkpoint.index_msg_timestamp = index.header.end_timestamp

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """The store's services; ``started()`` once dispatch has caught up with the log."""
        assert self.loaded, "load() first"
        config = self.config
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(self.allocation.run, self.commit_log.queue)
                await nursery.start(self.reput.run)
                if config.flush_disk_type is FlushDiskType.SYNC_FLUSH:
                    await nursery.start(self.group_commit.run)
                else:
                    await nursery.start(FlushCommitLogService(self.flusher, config).run)
                await nursery.start(self.flush_queues.run)
                await nursery.start(self.clean.run)
                await nursery.start(StoreStatsService(self.stats).run)
                task_status.started()
        finally:
            with trio.CancelScope(shield=True), trio.move_on_after(SHUTDOWN_FLUSH_TIMEOUT_S):
                await trio.to_thread.run_sync(self.shutdown)

    def shutdown(self) -> None:
        """Flush everything, write the checkpoint, remove the abort file if all is dispatched,
        close files, release the lock. Blocking; idempotent."""
        if not self.loaded:
            return
        self.shutting_down = True
        self.loaded = False
        try:
            flushed = final_flush(
                self.reput, self.consume_queues, self.index_service, self.checkpoint, self.health
            )
            if flushed and self.reput.behind_bytes == 0:
                self.abort_file.delete()
            else:
                log.warning(
                    "shutdown incomplete (dispatch %d bytes behind, disk trouble: %s): "
                    "the next start recovers as after a crash",
                    self.reput.behind_bytes,
                    ", ".join(self.health.problems) or "none",
                )
        finally:
            self.allocation.close()
            self.commit_log.warmer.close()
            self.commit_log.queue.close()
            self.consume_queues.close()
            self.index_service.close()
            self.checkpoint.close()
            self.lock.release()

    # ================================================================ writing

    def _refuse(self) -> PutMessageResult | None:
        # group_put.put_plain_run makes the same tests inline: a change here goes there too
        if self.is_slave:
            return PutMessageResult(
                status=PutMessageStatus.SERVICE_NOT_AVAILABLE,
                remark="this broker is a slave: send to its master",
            )
        if self.shutting_down or not self.loaded:
            return PutMessageResult(
                status=PutMessageStatus.SERVICE_NOT_AVAILABLE,
                remark="the message store is shutting down",
            )
        if self.clean.disk_full:
            return PutMessageResult(
                status=PutMessageStatus.DISK_FULL,
                remark=f"disk full: usage above {self.config.disk_space_warning_level_ratio:.0%}, writes refused until space is freed",
            )
        if not self.health.writable:
            return self.health.refusal()
        return None

    def _segment_refused(self, exc: DiskError) -> PutMessageResult:
        """The CommitLog could not get its next segment: nothing was appended. Sends are
        refused until the allocation service has created it."""
        self.health.failed(COMMIT_LOG, exc)
        self.allocation.retry(exc.path)
        return self.health.refusal()

    def _dispatch_unblocked(self) -> None:
        """Reput got past what the disk refused. Queue offsets a blocked recovery could not
        count (sends were refused meanwhile) come from the queues, as after any recovery."""
        self.recovery.raise_topic_queue_table()
        self.health.recovered(DISPATCH)

    def put_message(self, msg: MessageExtBrokerInner) -> PutMessageResult:
        """Append one message; when dispatch was caught up, dispatch it at once."""
        refused = self._refuse()
        if refused is not None:
            return refused
        started = perf_counter_ns()
        caught_up = self.reput.caught_up()
        result, request = self.commit_log.put_message(msg)
        if result.status is PutMessageStatus.PUT_OK:
            self._appended(result)
            if not caught_up:
                self.reput.wake()
            elif self._dispatch_ok(self.dispatcher.dispatch, request):
                self.reput.dispatched_to(result.append.end_offset)  # type: ignore[union-attr]
        self.stats.on_put_time(perf_counter_ns() - started)
        return result

    def put_messages(self, batch: MessageExtBrokerInner) -> PutMessageResult:
        """``batch.body`` is the SEND_BATCH_MESSAGE body; entries get consecutive offsets."""
        refused = self._refuse()
        if refused is not None:
            return refused
        started = perf_counter_ns()
        caught_up = self.reput.caught_up()
        result, appended = self.commit_log.put_messages(batch)
        if result.status is PutMessageStatus.PUT_OK:
            self._appended(result)
            if not caught_up:
                self.reput.wake()
            elif self._dispatch_ok(self.dispatcher.dispatch_appended, appended):
                self.reput.dispatched_to(result.append.end_offset)  # type: ignore[union-attr]
        self.stats.on_put_time(perf_counter_ns() - started)
        return result

    def put_message_group(self, msgs: list[MessageExtBrokerInner]) -> list[PutMessageResult]:
        """Single messages of pipelined sends, in order, one result each (group_put.py)."""
        return put_message_group(self, msgs)

    def _appended(self, result: PutMessageResult) -> None:
        """Stats and HA learn of an append."""
        self.stats.on_put(result.append.msg_num, result.append.wrote_bytes)  # type: ignore[union-attr]
        if self.put_listener is not None:
            self.put_listener()

    def _dispatch_ok(self, dispatch: Callable[[Any], None], requests: Any) -> bool:
        """A put's own dispatch. A message that is appended is answered PUT_OK even when the
        disk refuses its dispatch: reput, left where it was, dispatches it once there is room."""
        try:
            dispatch(requests)
        except DiskError as exc:
            self.health.failed(DISPATCH, exc)
            return False
        return True

    async def wait_flushed(
        self, end_offset: int, timeout_s: float | None = None
    ) -> PutMessageStatus:
        """SYNC_FLUSH: PUT_OK once bytes up to ``end_offset`` (a phys offset) are on disk,
        else FLUSH_DISK_TIMEOUT."""
        if timeout_s is None:
            timeout_s = self.config.sync_flush_timeout / 1000
        return await self.group_commit.wait_flushed(end_offset, timeout_s)

    # ================================================================ replication and repair

    def get_commit_log_data(self, phys_offset: int) -> memoryview | None:
        return self.commit_log.get_data(phys_offset)

    def append_to_commit_log(self, phys_offset: int, data: bytes | memoryview) -> bool:
        """A slave appends replicated bytes at exactly ``phys_offset``; dispatch follows."""
        if not self.loaded or self.shutting_down:
            return False
        try:
            self.commit_log.append_data(phys_offset, data)
        except DiskError as exc:  # the HA client reconnects and sends it again
            self.health.failed(COMMIT_LOG, exc)
            return False
        except StoreError as exc:
            log.warning("replicated append refused: %s", exc)
            return False
        if COMMIT_LOG in self.health.problems:
            self.health.recovered(COMMIT_LOG)
        self.reput.wake()
        return True

    def truncate_dirty_tail(self, phys_offset: int) -> None:
        """Cut the log (and queues and index with it) at ``phys_offset``."""
        reput_from = self.recovery.truncate(phys_offset, self.consume_queues.max_phys_offset())
        self.reput.start_from(reput_from)

    # ================================================================ queues and reads

    def queue_count(self, topic: str) -> int:
        """1 + the highest queue id this store holds for ``topic`` (0: none)."""
        return self.consume_queues.queue_count(topic)

    def find_consume_queue(self, topic: str, queue_id: int) -> ConsumeQueue | None:
        return self.consume_queues.find(topic, queue_id)

    def get_message(
        self,
        group: str,
        topic: str,
        queue_id: int,
        queue_offset: int,
        max_msg_nums: int,
        message_filter: object | None = None,
        runs: bool = False,
    ) -> GetMessageResult:
        """``runs``: adjacent records may share a slice (MessageReader.get_message)."""
        started = perf_counter_ns()
        result = self.reader.get_message(
            topic, queue_id, queue_offset, max_msg_nums, message_filter, runs
        )
        self.stats.on_get(result, perf_counter_ns() - started)
        return result

    @property
    def max_phys_offset(self) -> int:
        return self.commit_log.max_phys_offset

    @property
    def min_phys_offset(self) -> int:
        return self.commit_log.min_phys_offset

    @property
    def dispatch_behind_bytes(self) -> int:
        return self.reput.behind_bytes

    def delete_topics(self, topics: set[str]) -> int:
        """Drop the ConsumeQueues of deleted topics (DELETE_TOPIC_IN_BROKER)."""
        deleted = 0
        for topic in topics:
            for queue_id in self.consume_queues.delete_topic(topic):
                self.commit_log.cursor.remove_queue(topic, queue_id)
                deleted += 1
        return deleted

    def runtime_info(self) -> dict[str, str]:
        info = self.stats.runtime_info()
        info.update(
            {
                "commitLogMinOffset": str(self.commit_log.min_phys_offset),
                "commitLogMaxOffset": str(self.commit_log.max_phys_offset),
                "dispatchBehindBytes": str(self.reput.behind_bytes),
                "commitLogDiskRatio": f"{self.clean.usage():.4f}",
                "diskFull": "true" if self.clean.disk_full else "false",
            }
        )
        info.update(self.health.runtime_info())
        return info
