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
from typing import TYPE_CHECKING

import trio

from broker.store.health import CHECKPOINT, FLUSH, RETRY_S
from broker.store.mapped_file import DiskError, MappedFile
from broker.store.types import PutMessageStatus

if TYPE_CHECKING:
    from broker.store.message_store import DefaultMessageStore

log = logging.getLogger(__name__)

Plan = list[tuple[MappedFile, int]]


def _fsync_all(files: list[MappedFile]) -> None:
    for mapped in files:
        mapped.flush()


def _redirty(plan: Plan) -> None:
    for mapped, position in plan:
        mapped.redirty(mapped.flushed_position, position)


async def flush_commit_log_once(store: DefaultMessageStore, least_pages: int) -> bool:
    """One flush round of the CommitLog; True if anything was flushed. Raises DiskError when
    the disk refused (recorded, pages dirtied again)."""
    queue = store.commit_log.queue
    health = store.health
    plan = queue.flush_plan(0 if FLUSH in health.problems else least_pages)
    if not plan:
        return False
    stamp = store.commit_log.last_put_timestamp
    try:
        await trio.to_thread.run_sync(_fsync_all, [mapped for mapped, _ in plan])
    except DiskError as exc:
        _redirty(plan)
        health.failed(FLUSH, exc)
        raise
    queue.flush_done(plan)
    if stamp:
        store.checkpoint.physic_msg_timestamp = stamp
    if FLUSH in health.problems:
        health.recovered(FLUSH)
    return True


def final_flush(store: DefaultMessageStore) -> bool:
    """Shutdown's flush, on the caller's thread: dispatch what is left, flush the newest files
    and write the checkpoint. False when the disk refused part of it, or refused a flush that
    was never made good since: the abort file must then stay, for a crash recovery."""
    try:
        store.reput.do_reput(1 << 62)
        for mapped in store.commit_log.queue.files[-2:]:
            mapped.flush()
        for consume_queue in store._all_queues():
            for mapped in consume_queue.queue.files[-2:]:
                mapped.flush()
        for mapped in store.index_service.flush_targets():
            mapped.flush()
        if store.commit_log.last_put_timestamp:
            store.checkpoint.physic_msg_timestamp = store.commit_log.last_put_timestamp
        if store.reput.last_dispatched_timestamp:
            store.checkpoint.logics_msg_timestamp = store.reput.last_dispatched_timestamp
        store.checkpoint.flush()
    except DiskError as exc:
        log.warning("shutdown flush failed: %s", exc)
        return False
    return not {FLUSH, CHECKPOINT} & store.health.problems.keys()


class FlushCommitLogService:
    name = "flush-commitlog"

    def __init__(self, store: DefaultMessageStore) -> None:
        self.store = store

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        config = self.store.config
        task_status.started()
        last_thorough = trio.current_time()
        while True:
            await trio.sleep(config.flush_interval_commit_log / 1000)
            least = config.flush_commit_log_least_pages
            now = trio.current_time()
            if now - last_thorough >= config.flush_commit_log_thorough_interval / 1000:
                least, last_thorough = 0, now
            try:
                await flush_commit_log_once(self.store, least)
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

    def __init__(self, store: DefaultMessageStore) -> None:
        self.store = store
        self._requested = trio.Event()
        self._round = _Round()  # replaced after every flush: one wake-up for all waiters

    def wake(self) -> None:
        self._requested.set()

    async def wait_flushed(self, end_offset: int, timeout_s: float) -> PutMessageStatus:
        """PUT_OK once ``end_offset`` is durable; FLUSH_DISK_TIMEOUT at the timeout, or at once
        when a flush meant to cover it failed."""
        queue = self.store.commit_log.queue
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
                await flush_commit_log_once(self.store, 0)
            except DiskError:
                flush_round.failed = True
            flush_round.done.set()
            if flush_round.failed:
                await trio.sleep(RETRY_S)


class FlushConsumeQueueService:
    name = "flush-consumequeue"

    def __init__(self, store: DefaultMessageStore) -> None:
        self.store = store

    async def flush_once(self, least_pages: int, *, thorough: bool) -> None:
        """Flush the ConsumeQueues (and the index files) that need it; on a thorough round,
        then the checkpoint, its logics timestamp moved only over what is now durable."""
        store = self.store
        health = store.health
        plans: list[tuple[object, Plan]] = []
        for queues in store.consume_queue_table.values():
            for consume_queue in queues.values():
                plans.append((consume_queue.queue, consume_queue.queue.flush_plan(least_pages)))
        files = [mapped for _, plan in plans for mapped, _ in plan]
        index_files = store.index_service.flush_targets() if thorough or files else []
        logics_stamp = store.reput.last_dispatched_timestamp
        if not files and not index_files and not thorough:
            return
        try:
            await trio.to_thread.run_sync(_fsync_all, files + index_files)
            for queue, plan in plans:
                queue.flush_done(plan)  # type: ignore[attr-defined]
            if thorough:
                if logics_stamp:
                    store.checkpoint.logics_msg_timestamp = logics_stamp
                await trio.to_thread.run_sync(store.checkpoint.flush)
        except DiskError as exc:
            for _, plan in plans:
                _redirty(plan)
            health.failed(CHECKPOINT, exc)
            return
        if thorough and CHECKPOINT in health.problems:
            health.recovered(CHECKPOINT)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        config = self.store.config
        task_status.started()
        last_thorough = trio.current_time()
        while True:
            await trio.sleep(config.flush_interval_consume_queue / 1000)
            now = trio.current_time()
            thorough = now - last_thorough >= config.flush_consume_queue_thorough_interval / 1000
            if thorough or CHECKPOINT in self.store.health.problems:
                last_thorough = now
                thorough = True
            await self.flush_once(
                0 if thorough else config.flush_consume_queue_least_pages, thorough=thorough
            )
