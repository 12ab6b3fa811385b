"""ReputMessageService: follows the CommitLog and dispatches each record to its ConsumeQueue,
the index, and (masters only) the long-polling listener (spec/store-format.md §8).

On a master, a put made while dispatch is caught up is dispatched at once from what the put
already knows (``DefaultMessageStore.put_message``); this service then only advances over bytes
it did not see being written: records appended by HA on a slave, and anything left behind at
start-up. It is woken by those appends instead of polling every millisecond.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import trio

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
        """Dispatch up to ``max_records`` records; returns how many were dispatched."""
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
            while position < len(data) and done < max_records:
                scan = scan_record(data, position)
                if scan.kind is RecordKind.MESSAGE:
                    requests.append(commit_log.dispatch_request(scan))
                    position += scan.size
                    done += 1
                    continue
                if scan.kind is RecordKind.BLANK:
                    self.reput_from_offset = commit_log.roll_next_file(
                        self.reput_from_offset + position
                    )
                    position = -1
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
            store.dispatcher.dispatch_many(requests)
            if position < 0:
                continue
            self.reput_from_offset += position
            if position == 0:
                break
        return done

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Catch up with the log, then ``started()``; afterwards follow every wake-up."""
        batch = self.store.config.reput_batch_records
        while self.do_reput(batch) == batch:
            await trio.lowlevel.checkpoint()
        task_status.started()
        while True:
            with trio.move_on_after(1.0):
                await self._wakeup.wait()
            self._wakeup = trio.Event()
            while self.do_reput(batch) == batch:
                await trio.lowlevel.checkpoint()
