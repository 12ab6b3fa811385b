"""ReputMessageService: follows the CommitLog and dispatches each record to its ConsumeQueue,
the index, and (masters only) the long-polling listener (docs/spec/store-format.md §8).

On a master, a put made while dispatch is caught up is dispatched at once from what the put
already knows (``DefaultMessageStore.put_message``); this service then only advances over bytes
it did not see being written: records appended by HA on a slave, anything left behind at
start-up, and records whose ConsumeQueue file the disk refused. It is woken by those appends
instead of polling every millisecond.

A ConsumeQueue file that cannot be created (DiskError) stops dispatch at the record that needs
it: ``reput_from_offset`` stays there, the store refuses sends (health area ``dispatch``) and
every RETRY_S the run is tried again. Units and index entries are idempotent, so what went in
before the error is simply found there the next time; no record is skipped.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import trio

from broker.store.health import DISPATCH, RETRY_S
from broker.store.mapped_file import DiskError
from remoting.record import RecordKind, scan_record

if TYPE_CHECKING:
    from broker.store.message_store import DefaultMessageStore

log = logging.getLogger(__name__)


class ReputMessageService:
    name = "reput"

    def __init__(self, store: DefaultMessageStore) -> None:
        self.store = store
        self.reput_from_offset = 0
        self.last_dispatched_timestamp = 0
        self._wakeup = trio.Event()

    @property
    def behind_bytes(self) -> int:
        return max(0, self.store.commit_log.max_offset - self.reput_from_offset)

    def wake(self) -> None:
        self._wakeup.set()

    def do_reput(self, max_records: int) -> int:
        """Dispatch up to ``max_records`` records; returns how many were dispatched. Raises
        DiskError with ``reput_from_offset`` at the first record of the run that failed."""
        store = self.store
        commit_log = store.commit_log
        done = 0
        while done < max_records and self.reput_from_offset < commit_log.max_offset:
            data = commit_log.get_data(self.reput_from_offset)
            if data is None:
                # Below the log's min offset (deleted) or in a gap: move to what exists.
                if self.reput_from_offset < commit_log.min_offset:
                    self.reput_from_offset = commit_log.min_offset
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
                if not store.is_slave and scan.kind is RecordKind.CORRUPT:
                    log.error(
                        "reput found an invalid record on a master: offset=%d reason=%s",
                        self.reput_from_offset + position,
                        scan.reason,
                    )
                break
            store.dispatcher.dispatch_many(requests)  # moves nothing on if it raises
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
        batch = self.store.config.reput_batch_records
        health = self.store.health
        try:
            while self.do_reput(batch) == batch:
                await trio.lowlevel.checkpoint()
        except DiskError as exc:
            health.failed(DISPATCH, exc)
            return True
        if DISPATCH in health.problems:
            self.store.dispatch_unblocked()
        return False
