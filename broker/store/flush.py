"""Flush services (spec/store-format.md §8): make written bytes durable off the event loop.

* FlushCommitLogService (ASYNC_FLUSH): every ``flushIntervalCommitLog`` when at least
  ``flushCommitLogLeastPages`` pages are dirty, everything every ``flushCommitLogThoroughInterval``.
* GroupCommitService (SYNC_FLUSH): senders wait for ``flushed_where`` to pass their record's end;
  one ``fdatasync`` completes every waiter it covers (one wake-up per flush, not per message).
* FlushConsumeQueueService: ConsumeQueues and the index every ``flushIntervalConsumeQueue``,
  the checkpoint on each thorough flush.

The loop builds a plan (which files, up to where), a worker thread runs the ``fdatasync``s,
and the loop applies the result: no blocking call ever runs on the Trio loop.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import TYPE_CHECKING

import trio

from broker.store.mapped_file import MappedFile
from broker.store.types import PutMessageStatus

if TYPE_CHECKING:
    from broker.store.message_store import DefaultMessageStore

log = logging.getLogger(__name__)


def _fsync_all(files: list[MappedFile], extra: list[Callable[[], None]]) -> None:
    for mapped in files:
        try:
            mapped.flush()
        except ValueError:  # closed meanwhile (deleted by cleanup): nothing left to flush
            pass
    for call in extra:
        call()


async def flush_commit_log_once(store: DefaultMessageStore, least_pages: int) -> bool:
    """One flush round of the CommitLog; True if anything was flushed."""
    queue = store.commit_log.queue
    plan = queue.flush_plan(least_pages)
    if not plan:
        return False
    stamp = store.commit_log.last_put_timestamp
    await trio.to_thread.run_sync(_fsync_all, [mapped for mapped, _ in plan], [])
    queue.flush_done(plan)
    if stamp:
        store.checkpoint.physic_msg_timestamp = stamp
    return True


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
            except OSError as exc:
                log.critical("commit log flush failed: %s", exc)


class GroupCommitService:
    """SYNC_FLUSH: ``await wait_flushed(end_offset)`` returns once the bytes are on disk."""

    name = "group-commit"

    def __init__(self, store: DefaultMessageStore) -> None:
        self.store = store
        self._requested = trio.Event()
        self._flushed = trio.Event()  # replaced after every flush: one wake-up for all waiters

    def wake(self) -> None:
        self._requested.set()

    async def wait_flushed(self, end_offset: int, timeout_s: float) -> PutMessageStatus:
        queue = self.store.commit_log.queue
        with trio.move_on_after(timeout_s if timeout_s > 0 else math.inf):
            while queue.flushed_where < end_offset:
                flushed = self._flushed
                self._requested.set()
                await flushed.wait()
            return PutMessageStatus.PUT_OK
        return PutMessageStatus.FLUSH_DISK_TIMEOUT

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            with trio.move_on_after(0.01):
                await self._requested.wait()
            self._requested = trio.Event()
            try:
                await flush_commit_log_once(self.store, 0)
            except OSError as exc:
                log.critical("commit log flush failed: %s", exc)
            flushed, self._flushed = self._flushed, trio.Event()
            flushed.set()


class FlushConsumeQueueService:
    name = "flush-consumequeue"

    def __init__(self, store: DefaultMessageStore) -> None:
        self.store = store

    async def flush_once(self, least_pages: int, *, thorough: bool) -> None:
        store = self.store
        plans = []
        for queues in store.consume_queue_table.values():
            for consume_queue in queues.values():
                plans.append((consume_queue.queue, consume_queue.queue.flush_plan(least_pages)))
        files = [mapped for _, plan in plans for mapped, _ in plan]
        index_files = store.index_service.flush_targets() if thorough or files else []
        logics_stamp = store.reput.last_dispatched_timestamp
        extra = [store.checkpoint.flush] if thorough else []
        if thorough and logics_stamp:
            store.checkpoint.logics_msg_timestamp = logics_stamp
        if not files and not index_files and not extra:
            return
        await trio.to_thread.run_sync(_fsync_all, files + index_files, extra)
        for queue, plan in plans:
            queue.flush_done(plan)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        config = self.store.config
        task_status.started()
        last_thorough = trio.current_time()
        while True:
            await trio.sleep(config.flush_interval_consume_queue / 1000)
            now = trio.current_time()
            thorough = now - last_thorough >= config.flush_consume_queue_thorough_interval / 1000
            if thorough:
                last_thorough = now
            try:
                await self.flush_once(
                    0 if thorough else config.flush_consume_queue_least_pages, thorough=thorough
                )
            except OSError as exc:
                log.critical("consume queue flush failed: %s", exc)
