"""Flush services (docs/spec/store-format.md §8): make written bytes durable off the event loop.

* FlushCommitLogService (ASYNC_FLUSH): every ``flushIntervalCommitLog`` when at least
  ``flushCommitLogLeastPages`` pages are dirty, everything every ``flushCommitLogThoroughInterval``.
* GroupCommitService (SYNC_FLUSH): senders wait for ``flushed_where`` to pass their record's end;
  one ``fdatasync`` completes every waiter it covers (one wake-up per flush, not per message).
* FlushConsumeQueueService: ConsumeQueues and the index every ``flushIntervalConsumeQueue``,
  the checkpoint on each thorough flush.

The loop builds a plan (which files, up to where), a worker thread runs the ``fdatasync``s,
and the loop applies the result: no blocking call ever runs on the Trio loop.

A flush that fails (EIO; ENOSPC on file systems that allocate at write-back) means the bytes are
not durable. Nothing is counted as flushed, the planned pages are dirtied again (Linux reports a
write-back error once and may mark the pages clean), SYNC_FLUSH senders waiting on that round
are answered FLUSH_DISK_TIMEOUT, as Java's GroupCommitService answers a flush that did not
reach their offset, and sends are refused (health area ``flush``) until a round succeeds.
RocketMQ logs a failed force() and counts the bytes as flushed anyway.
A failed ConsumeQueue, index or checkpoint flush keeps the checkpoint where it was (area
``checkpoint``), so a crash meanwhile re-dispatches from there.
"""

from __future__ import annotations

import logging
import math

import trio

from broker.store.checkpoint import StoreCheckpoint
from broker.store.commit_log import CommitLog
from broker.store.config import MessageStoreConfig
from broker.store.consume_queue import ConsumeQueue
from broker.store.consume_queue_table import ConsumeQueueTable
from broker.store.dispatch import CommitLogDispatcher
from broker.store.health import CHECKPOINT, FLUSH, RETRY_S, StoreHealth
from broker.store.index_service import IndexService
from broker.store.mapped_file import DiskError, MappedFile
from broker.store.mapped_file_queue import MappedFileQueue
from broker.store.reput import ReputMessageService
from broker.store.types import PutMessageStatus

log = logging.getLogger(__name__)

Plan = list[tuple[MappedFile, int]]
PLAN_SLICE = 512  # ConsumeQueues planned between two looks at the rest of the loop


def _fsync_all(files: list[MappedFile]) -> None:
    for mapped in files:
        mapped.flush()


def _flush_plan(plan: Plan) -> None:
    """Each segment up to where the plan saw it written, not past it (MappedFile.flush_range)."""
    for mapped, position in plan:
        mapped.flush_range(mapped.flushed_position, position)


def _redirty(plan: Plan) -> None:
    for mapped, position in plan:
        mapped.redirty(mapped.flushed_position, position)


def final_flush(
    reput: ReputMessageService,
    consume_queues: ConsumeQueueTable,
    index_service: IndexService,
    checkpoint: StoreCheckpoint,
    health: StoreHealth,
) -> bool:
    """Shutdown's flush, on the caller's thread: dispatch what is left, flush the newest files
    and write the checkpoint. False when the disk refused part of it, or refused a flush that
    was never made good since: the abort file must then stay, for a crash recovery."""
    commit_log, dispatcher = reput.commit_log, reput.dispatcher
    try:
        reput.do_reput(1 << 62)
        for mapped in commit_log.queue.files[-2:]:
            mapped.flush()
        for consume_queue in consume_queues:
            for mapped in consume_queue.queue.files[-2:]:
                mapped.flush()
        for mapped in index_service.flush_targets():
            mapped.flush()
        if commit_log.last_put_timestamp:
            checkpoint.physic_msg_timestamp = commit_log.last_put_timestamp
        if dispatcher.last_dispatched_timestamp:
            checkpoint.logics_msg_timestamp = dispatcher.last_dispatched_timestamp
        checkpoint.flush()
    except DiskError as exc:
        log.warning("shutdown flush failed: %s", exc)
        return False
    return not {FLUSH, CHECKPOINT} & health.problems.keys()


class CommitLogFlusher:
    """One flush round of the CommitLog, shared by the two CommitLog flush services."""

    def __init__(
        self, commit_log: CommitLog, checkpoint: StoreCheckpoint, health: StoreHealth
    ) -> None:
        self.commit_log = commit_log
        self.checkpoint = checkpoint
        self.health = health

    async def flush_once(self, least_pages: int) -> bool:
        """True if anything was flushed. Raises DiskError when the disk refused (recorded,
        pages dirtied again)."""
        queue, health = self.commit_log.queue, self.health
        plan = queue.flush_plan(0 if FLUSH in health.problems else least_pages)
        if not plan:
            return False
        stamp = self.commit_log.last_put_timestamp
        try:
            await trio.to_thread.run_sync(_flush_plan, plan)
        except DiskError as exc:
            _redirty(plan)
            health.failed(FLUSH, exc)
            raise
        queue.flush_done(plan)
        if stamp:
            self.checkpoint.physic_msg_timestamp = stamp
        if FLUSH in health.problems:
            health.recovered(FLUSH)
        return True


class FlushCommitLogService:
    name = "flush-commitlog"

    def __init__(self, flusher: CommitLogFlusher, config: MessageStoreConfig) -> None:
        self.flusher = flusher
        self.config = config

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        config = self.config
        task_status.started()
        last_thorough = trio.current_time()
        while True:
            await trio.sleep(config.flush_interval_commit_log / 1000)
            least = config.flush_commit_log_least_pages
            now = trio.current_time()
            if now - last_thorough >= config.flush_commit_log_thorough_interval / 1000:
                least, last_thorough = 0, now
            try:
                await self.flusher.flush_once(least)
            except DiskError:
                await trio.sleep(RETRY_S)


class _Round:
    """One group-commit flush: its waiters wake together and learn whether it failed."""

    __slots__ = ("done", "failed")

    def __init__(self) -> None:
        self.done = trio.Event()
        self.failed = False


class GroupCommitService:
    """SYNC_FLUSH: ``await wait_flushed(end_offset)`` returns once the bytes are on disk."""

    name = "group-commit"

    def __init__(self, flusher: CommitLogFlusher) -> None:
        self.flusher = flusher
        self._requested = trio.Event()
        self._round = _Round()  # replaced after every flush: one wake-up for all waiters

    def wake(self) -> None:
        self._requested.set()

    async def wait_flushed(self, end_offset: int, timeout_s: float) -> PutMessageStatus:
        """PUT_OK once ``end_offset`` is durable; FLUSH_DISK_TIMEOUT at the timeout, or at once
        when a flush meant to cover it failed."""
        queue = self.flusher.commit_log.queue
        with trio.move_on_after(timeout_s if timeout_s > 0 else math.inf):
            while queue.flushed_where < end_offset:
                flush_round = self._round
                self._requested.set()
                await flush_round.done.wait()
                if flush_round.failed and queue.flushed_where < end_offset:
                    break
            else:
                return PutMessageStatus.PUT_OK
        return PutMessageStatus.FLUSH_DISK_TIMEOUT

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            with trio.move_on_after(0.01):
                await self._requested.wait()
            self._requested = trio.Event()
            flush_round, self._round = self._round, _Round()
            try:
                await self.flusher.flush_once(0)
            except DiskError:
                flush_round.failed = True
            flush_round.done.set()
            if flush_round.failed:
                await trio.sleep(RETRY_S)


class FlushConsumeQueueService:
    name = "flush-consumequeue"

    def __init__(
        self,
        consume_queues: ConsumeQueueTable,
        index_service: IndexService,
        dispatcher: CommitLogDispatcher,
        checkpoint: StoreCheckpoint,
        health: StoreHealth,
        config: MessageStoreConfig,
    ) -> None:
        self.consume_queues = consume_queues
        self.index_service = index_service
        self.dispatcher = dispatcher  # the last dispatched store time: the logics timestamp
        self.checkpoint = checkpoint
        self.health = health
        self.config = config
        # written, not flushed (under flushConsumeQueueLeastPages), not written since
        self._under_least_pages: set[ConsumeQueue] = set()

    async def flush_once(self, least_pages: int, *, thorough: bool) -> None:
        """Flush the ConsumeQueues (and the index files) that need it; on a thorough round,
        then the checkpoint, its logics timestamp moved only over what is now durable."""
        health = self.health
        # Only the queues dispatch wrote since the last round (a large broker has thousands that
        # took nothing), and on a thorough round those left under the least pages before: a
        # queue's unflushed bytes change only when it is written, so looking at it again
        # before then finds the same (8,000 queues each holding a few units would otherwise
        # be walked every second, as Java does).
        dirty = self.consume_queues.take_dirty()
        if thorough:
            dirty |= {q for q in self._under_least_pages if self.consume_queues.holds(q)}
            self._under_least_pages = set()
        plans: list[tuple[MappedFileQueue, Plan]] = []
        for done, consume_queue in enumerate(dirty, 1):
            plans.append((consume_queue.queue, consume_queue.queue.flush_plan(least_pages)))
            if done % PLAN_SLICE == 0:  # a burst that wrote every queue: spread the walk
                await trio.lowlevel.checkpoint()
        files = [mapped for _, plan in plans for mapped, _ in plan]
        index_files = self.index_service.flush_targets() if thorough or files else []
        logics_stamp = self.dispatcher.last_dispatched_timestamp
        if not files and not index_files and not thorough:
            self._under_least_pages.update(q for q in dirty if q.queue.dirty_bytes() > 0)
            return
        try:
            await trio.to_thread.run_sync(_fsync_all, files + index_files)
            for done, (queue, plan) in enumerate(plans, 1):
                queue.flush_done(plan)  # monotonic: writes between slices do not upset it
                if done % PLAN_SLICE == 0:
                    await trio.lowlevel.checkpoint()
            if thorough:
                if logics_stamp:
                    self.checkpoint.logics_msg_timestamp = logics_stamp
                await trio.to_thread.run_sync(self.checkpoint.flush)
        except DiskError as exc:
            for _, plan in plans:
                _redirty(plan)
            self.consume_queues.mark_dirty(dirty)  # tried again next round
            health.failed(CHECKPOINT, exc)
            return
        except BaseException:
            self.consume_queues.mark_dirty(dirty)  # cancelled mid-round: nothing forgotten
            raise
        self._under_least_pages.update(q for q in dirty if q.queue.dirty_bytes() > 0)
        if thorough and CHECKPOINT in health.problems:
            health.recovered(CHECKPOINT)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        config = self.config
        task_status.started()
        last_thorough = trio.current_time()
        while True:
            await trio.sleep(config.flush_interval_consume_queue / 1000)
            now = trio.current_time()
            thorough = now - last_thorough >= config.flush_consume_queue_thorough_interval / 1000
            if thorough or CHECKPOINT in self.health.problems:
                last_thorough = now
                thorough = True
            await self.flush_once(
                0 if thorough else config.flush_consume_queue_least_pages, thorough=thorough
            )
