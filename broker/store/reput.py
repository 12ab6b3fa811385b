"""ReputMessageService: follows the CommitLog and hands each record to the dispatcher (its
ConsumeQueue unit, index entries and, masters only, the long-polling wake-up;
docs/spec/store-format.md §8).

On a master, a put made while dispatch is caught up is dispatched at once from what the put
already knows (``DefaultMessageStore.put_message``), which then tells this service
(``dispatched_to``); it only advances by itself over bytes it did not see being written:
records appended by HA on a slave, anything left behind at start-up, and records whose
ConsumeQueue file the disk refused. It is woken by those appends instead of polling every
millisecond.

A ConsumeQueue file that cannot be created (DiskError) stops dispatch at the record that needs
it: ``reput_from_offset`` stays there, the store refuses sends (health area ``dispatch``) and
every RETRY_S the run is tried again. Units and index entries are idempotent, so what went in
before the error is simply found there the next time; no record is skipped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import trio

from broker.store.commit_log import CommitLog
from broker.store.config import BrokerRole, MessageStoreConfig
from broker.store.dispatch import CommitLogDispatcher
from broker.store.health import DISPATCH, RETRY_S, StoreHealth
from broker.store.mapped_file import DiskError
from broker.store.slotted import Slotted
from remoting.record import RecordKind, scan_record

log = logging.getLogger(__name__)


class ReputMessageService(Slotted):
    # read by plain_pass.c from their slots (broker/store/slotted.py)
    __slots__ = ("reput_from_offset",)

    name = "reput"

    def __init__(
        self,
        commit_log: CommitLog,
        dispatcher: CommitLogDispatcher,
        health: StoreHealth,
        config: MessageStoreConfig,
        *,
        on_unblocked: Callable[[], None],
    ) -> None:
        """``on_unblocked``: dispatch got past what the disk refused."""
        self.commit_log = commit_log
        self.dispatcher = dispatcher
        self.health = health
        self.config = config  # reputBatchRecords, live
        self.is_slave = config.broker_role is BrokerRole.SLAVE
        self.on_unblocked = on_unblocked
        self.reput_from_offset = 0  # phys offset of the next record to dispatch
        self._wakeup = trio.Event()

    @property
    def behind_bytes(self) -> int:
        return max(0, self.commit_log.max_phys_offset - self.reput_from_offset)

    def caught_up(self) -> bool:
        """Everything written is dispatched: the next put may dispatch its own records."""
        return self.reput_from_offset == self.commit_log.max_phys_offset

    def dispatched_to(self, end_phys_offset: int) -> None:
        """A put that found dispatch caught up dispatched its own records, up to here."""
        self.reput_from_offset = end_phys_offset

    def start_from(self, phys_offset: int) -> None:
        """Where recovery left dispatch: the first record it has not dispatched."""
        self.reput_from_offset = phys_offset

    def wake(self) -> None:
        self._wakeup.set()

    def do_reput(self, max_records: int) -> int:
        """Dispatch up to ``max_records`` records; returns how many were dispatched. Raises
        DiskError with ``reput_from_offset`` at the first record of the run that failed."""
        commit_log = self.commit_log
        done = 0
        while done < max_records and self.reput_from_offset < commit_log.max_phys_offset:
            data = commit_log.get_data(self.reput_from_offset)
            if data is None:
                # Below the log's min offset (deleted) or in a gap: move to what exists.
                if self.reput_from_offset < commit_log.min_phys_offset:
                    self.reput_from_offset = commit_log.min_phys_offset
                    continue
                log.error("reput offset outside the log: offset=%d", self.reput_from_offset)
                return done
            position = 0
            requests = []
            next_file = -1
            while position < len(data) and done < max_records:
                scan = scan_record(data, position)
                if scan.kind is RecordKind.MESSAGE:
                    requests.append(commit_log.dispatch_request(scan))
                    position += scan.size
                    done += 1
                    continue
                if scan.kind is RecordKind.BLANK:
                    next_file = commit_log.roll_next_file(self.reput_from_offset + position)
                    break
                # A record cut in half by an HA chunk waits for its rest; on a master this
                # cannot happen, appends are whole.
                if not self.is_slave and scan.kind is RecordKind.CORRUPT:
                    log.error(
                        "reput found an invalid record on a master: offset=%d reason=%s",
                        self.reput_from_offset + position,
                        scan.reason,
                    )
                break
            self.dispatcher.dispatch_many(requests)  # moves nothing on if it raises
            if next_file >= 0:
                self.reput_from_offset = next_file
                continue
            self.reput_from_offset += position
            if position == 0:
                break
        return done

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Catch up with the log (or be stopped by the disk), then ``started()``; afterwards
        follow every wake-up, and while the disk refuses, try again every RETRY_S."""
        blocked = await self.catch_up()
        task_status.started()
        while True:
            if blocked:
                await trio.sleep(RETRY_S)
            else:
                with trio.move_on_after(1.0):
                    await self._wakeup.wait()
            self._wakeup = trio.Event()
            blocked = await self.catch_up()

    async def catch_up(self) -> bool:
        """Dispatch everything there is; True when the disk stopped it."""
        batch = self.config.reput_batch_records
        try:
            while self.do_reput(batch) == batch:
                await trio.lowlevel.checkpoint()
        except DiskError as exc:
            self.health.failed(DISPATCH, exc)
            return True
        if DISPATCH in self.health.problems:
            self.on_unblocked()
        return False
