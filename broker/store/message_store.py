"""DefaultMessageStore: the broker's message store (docs/spec/store-format.md).

Use::

    store = DefaultMessageStore(config, store_host=("10.0.0.1", 10911), arrival_listener=...)
    report = store.load()                      # lock, open files, recover (synchronous)
    async with trio.open_nursery() as n:
        await n.start(store.run)                # allocate/flush/reput/clean; started() once dispatch caught up
        result = store.put_message(msg)         # plain def: the broker answers inline
        status = await store.wait_flushed(result.append.end_offset, 5.0)   # SYNC_FLUSH only
        got = store.get_message(group, topic, queue_id, queue_offset, 32, TagsFilter(None))

``put_message``/``put_messages`` never await; ``wait_flushed`` is the separate SYNC_FLUSH wait.
Reads return memoryview slices of the mapped segments (no copies). HA uses
``get_commit_log_data`` (master) and ``append_to_commit_log`` (slave); an offline repair tool
uses ``truncate_dirty_tail``. Cancelling ``run`` shuts the store down cleanly.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import psutil
import trio

from broker.store import reads, startup
from broker.store.allocate import AllocateMappedFileService
from broker.store.checkpoint import AbortFile, StoreCheckpoint, StoreLock
from broker.store.clean import CleanService, DiskUsage, psutil_disk_usage
from broker.store.commit_log import CommitLog
from broker.store.config import BrokerRole, FlushDiskType, MessageStoreConfig
from broker.store.consume_queue import ConsumeQueue, safe_directory_name
from broker.store.dispatch import CommitLogDispatcher
from broker.store.flush import (
    FlushCommitLogService,
    FlushConsumeQueueService,
    GroupCommitService,
    final_flush,
)
from broker.store.health import COMMIT_LOG, DISPATCH, StoreHealth
from broker.store.index_file import IndexFile
from broker.store.index_service import IndexService
from broker.store.lookups import QueueLookups
from broker.store.mapped_file import DiskError, StoreError
from broker.store.mapped_file_queue import now_ms
from broker.store.recovery import RecoveryReport
from broker.store.reput import ReputMessageService
from broker.store.stats import StoreStats
from broker.store.types import (
    GetMessageResult,
    MessageExtBrokerInner,
    PutMessageResult,
    PutMessageStatus,
)
from remoting import message as codec

log = logging.getLogger(__name__)

ArrivalListener = Callable[[str, int, int, int, int, dict[str, str]], None]
SHUTDOWN_FLUSH_TIMEOUT_S = 30.0


class DefaultMessageStore(QueueLookups):
    def __init__(
        self,
        config: MessageStoreConfig,
        *,
        store_host: tuple[str, int] = ("127.0.0.1", 10911),
        clock: Callable[[], int] = now_ms,
        disk_usage: DiskUsage = psutil_disk_usage,
        arrival_listener: ArrivalListener | None = None,
        total_physical_ram: int | None = None,
    ) -> None:
        self.config = config
        self.clock = clock
        self.store_host = store_host
        self.arrival_listener = arrival_listener
        # Called after every successful put (HA wakes its idle connection writers).
        self.put_listener: Callable[[], None] | None = None
        self.health = StoreHealth()
        self.allocation = AllocateMappedFileService(config.mapped_file_size_commit_log)
        self.allocation.on_failed = lambda exc: self.health.failed(COMMIT_LOG, exc)
        self.allocation.on_recovered = lambda: self.health.recovered(COMMIT_LOG)
        self.commit_log = CommitLog(
            config,
            store_host=(codec.host_bytes(store_host[0]), store_host[1]),
            clock=clock,
            allocator=self.allocation.allocate,
        )
        self.commit_log.on_segment_rolled = lambda _: self.allocation.request(self.commit_log.queue)
        self.commit_log.on_disk_error = self._segment_refused
        self.consume_queue_table: dict[str, dict[int, ConsumeQueue]] = {}
        self.index_service = IndexService(
            config.index_dir, config.max_hash_slot_num, config.max_index_num, self.health
        )
        self.checkpoint: StoreCheckpoint | None = None  # type: ignore[assignment]
        self.abort_file = AbortFile(config.abort_path)
        self.lock = StoreLock(config.lock_path)
        self.reput = ReputMessageService(self)
        self.dispatcher = CommitLogDispatcher(self)
        self.group_commit = GroupCommitService(self)
        self.clean = CleanService(self, disk_usage)
        self.stats = StoreStats(clock)
        self.memory_threshold = (
            (total_physical_ram or psutil.virtual_memory().total)
            * config.access_message_in_memory_max_ratio
            // 100
        )
        self.disk_full = False
        self.shutting_down = False
        self.loaded = False
        self.recovery_report: RecoveryReport | None = None

    @property
    def is_slave(self) -> bool:
        return self.config.broker_role is BrokerRole.SLAVE

    # ================================================================ lifecycle

    def load(self) -> RecoveryReport:
        """Lock the directory, open every file and recover. Synchronous, before any task."""
        config = self.config
        self.lock.acquire()
        try:
            last_exit_ok = not self.abort_file.exists()
            self.commit_log.queue.load()
            startup.load_consume_queues(self)
            self.checkpoint = StoreCheckpoint(config.checkpoint_path)
            self.index_service.load()
            self.index_service.on_file_full = self._index_file_full
            report = startup.recover(self, last_exit_ok)
        except BaseException:
            self.lock.release()
            raise
        self.abort_file.create()
        self.loaded = True
        self.recovery_report = report
        return report

    def _index_file_full(self, index: IndexFile) -> None:
        self.checkpoint.index_msg_timestamp = index.header.end_timestamp

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """The store's services; ``started()`` once dispatch has caught up with the log."""
        assert self.loaded, "load() first"
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(self.allocation.run, self.commit_log.queue)
                await nursery.start(self.reput.run)
                if self.config.flush_disk_type is FlushDiskType.SYNC_FLUSH:
                    await nursery.start(self.group_commit.run)
                else:
                    await nursery.start(FlushCommitLogService(self).run)
                await nursery.start(FlushConsumeQueueService(self).run)
                await nursery.start(self.clean.run)
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
            if final_flush(self) and self.reput.behind_bytes == 0:
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
            for consume_queue in self._all_queues():
                consume_queue.close()
            self.index_service.close()
            self.checkpoint.close()
            self.lock.release()

    # ================================================================ writing

    def _refuse(self) -> PutMessageResult | None:
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
        if self.disk_full:
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

    def dispatch_unblocked(self) -> None:
        """Reput got past what the disk refused. Queue offsets a blocked recovery could not
        count (sends were refused meanwhile) come from the queues, as after any recovery."""
        startup.raise_offset_tables(self)
        self.health.recovered(DISPATCH)

    def put_message(self, msg: MessageExtBrokerInner) -> PutMessageResult:
        return self._put(msg, self.commit_log.put_message, self.dispatcher.dispatch)

    def put_messages(self, batch: MessageExtBrokerInner) -> PutMessageResult:
        """``batch.body`` is the SEND_BATCH_MESSAGE body; entries get consecutive offsets."""
        return self._put(batch, self.commit_log.put_messages, self.dispatcher.dispatch_batch)

    def _put(
        self,
        msg: MessageExtBrokerInner,
        append: Callable[[MessageExtBrokerInner], tuple[PutMessageResult, Any]],
        dispatch: Callable[[Any], None],
    ) -> PutMessageResult:
        """Append; stats and HA learn of it; when dispatch was caught up the put dispatches
        what it appended (one request, or a batch's), else reput is woken to read it. A
        message that is appended is answered PUT_OK even when the disk refuses its dispatch:
        reput dispatches it once there is room."""
        refused = self._refuse()
        if refused is not None:
            return refused
        reput = self.reput
        caught_up = reput.reput_from_offset == self.commit_log.queue.max_offset
        result, dispatched = append(msg)
        if result.status is not PutMessageStatus.PUT_OK:
            return result
        append_result = result.append
        self.stats.on_put(append_result.msg_num, append_result.wrote_bytes)
        if self.put_listener is not None:
            self.put_listener()
        if caught_up:
            try:
                dispatch(dispatched)
            except DiskError as exc:
                self.health.failed(DISPATCH, exc)  # reput_from_offset stays: reput retries
            else:
                reput.reput_from_offset = append_result.wrote_offset + append_result.wrote_bytes
        else:
            reput.wake()
        return result

    async def wait_flushed(
        self, end_offset: int, timeout_s: float | None = None
    ) -> PutMessageStatus:
        """SYNC_FLUSH: PUT_OK once bytes up to ``end_offset`` are on disk, else FLUSH_DISK_TIMEOUT."""
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
        max_cq_phys = max((cq.max_phys_offset for cq in self._all_queues()), default=0)
        startup.cut(self, phys_offset, max_cq_phys)

    # ================================================================ queues and reads

    def queue_count(self, topic: str) -> int:
        """1 + the highest queue id this store holds for ``topic`` (0: none)."""
        queues = self.consume_queue_table.get(topic)
        return max(queues) + 1 if queues else 0

    def _all_queues(self) -> list[ConsumeQueue]:
        return [cq for queues in self.consume_queue_table.values() for cq in queues.values()]

    def find_consume_queue(
        self, topic: str, queue_id: int, *, create: bool = False
    ) -> ConsumeQueue | None:
        queues = self.consume_queue_table.get(topic)
        if queues is None:
            if not create or not safe_directory_name(topic):
                return None
            queues = self.consume_queue_table[topic] = {}
        consume_queue = queues.get(queue_id)
        if consume_queue is None and create:
            consume_queue = queues[queue_id] = ConsumeQueue(
                topic,
                queue_id,
                self.config.consume_queue_dir,
                self.config.mapped_file_size_consume_queue,
            )
        return consume_queue

    def get_message(
        self,
        group: str,
        topic: str,
        queue_id: int,
        queue_offset: int,
        max_msg_nums: int,
        message_filter: object | None = None,
    ) -> GetMessageResult:
        result = reads.get_message(
            self, topic, queue_id, queue_offset, max_msg_nums, message_filter
        )
        self.stats.on_get(result)
        return result

    @property
    def max_phys_offset(self) -> int:
        return self.commit_log.max_offset

    @property
    def min_phys_offset(self) -> int:
        return self.commit_log.min_offset

    @property
    def dispatch_behind_bytes(self) -> int:
        return self.reput.behind_bytes

    def delete_topics(self, topics: set[str]) -> int:
        """Drop the ConsumeQueues of deleted topics (DELETE_TOPIC_IN_BROKER)."""
        deleted = 0
        for topic in topics:
            for queue_id, consume_queue in self.consume_queue_table.pop(topic, {}).items():
                consume_queue.destroy()
                self.commit_log.cursor.remove_queue(topic, queue_id)
                deleted += 1
            directory = self.config.consume_queue_dir / topic
            if directory.is_dir():
                for child in directory.iterdir():
                    if child.is_dir():
                        child.rmdir()
                directory.rmdir()
        return deleted

    def runtime_info(self) -> dict[str, str]:
        info = self.stats.runtime_info()
        info.update(
            {
                "commitLogMinOffset": str(self.commit_log.min_offset),
                "commitLogMaxOffset": str(self.commit_log.max_offset),
                "dispatchBehindBytes": str(self.reput.behind_bytes),
                "commitLogDiskRatio": f"{self.clean.usage():.4f}",
                "diskFull": "true" if self.disk_full else "false",
            }
        )
        info.update(self.health.runtime_info())
        return info
