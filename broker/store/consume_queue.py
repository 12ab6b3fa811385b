"""ConsumeQueue: per (topic, queueId) a dense array of 20-byte units
``(commitLogOffset, size, tagsCode)``; a unit's index is the queue offset consumers use
(docs/spec/store-format.md §3).

Files live in ``consumequeue/<topic>/<queueId>/`` named by the byte offset of their first unit.
Writes are idempotent (a unit pointing at or below what the queue already holds is a duplicate,
ignored), so recovery can re-dispatch freely.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable, Sequence
from pathlib import Path

from broker.store.layout import CQ_FILLER_SIZE, CQ_UNIT
from broker.store.mapped_file import MappedFile
from broker.store.mapped_file_queue import MappedFileQueue
from broker.store.slotted import Slotted
from broker.store.store_native import native
from broker.store.types import DispatchRequest

log = logging.getLogger(__name__)


UNIT = CQ_UNIT.size
_FILLER = CQ_UNIT.pack(0, CQ_FILLER_SIZE, 0)
_UNIT_RUNS: dict[int, struct.Struct] = {}  # ">qiqqiq...": a batch's units in one pack


def python_pack_cq_units(
    buffer: memoryview | bytearray, position: int, requests: Sequence[DispatchRequest]
) -> None:
    """The units of ``requests`` back to back from ``position``: the reference of
    broker/store/native/consume_queue.c's pack_cq_units."""
    count = len(requests)
    layout = _UNIT_RUNS.get(count)
    if layout is None:
        layout = _UNIT_RUNS[count] = struct.Struct(">" + "qiq" * count)
    layout.pack_into(
        buffer,
        position,
        *[field for r in requests for field in (r.commit_log_offset, r.msg_size, r.tags_code)],
    )


pack_cq_units = native.pack_cq_units if native is not None else python_pack_cq_units


class ConsumeQueue(Slotted):
    # read by plain_pass.c from their slots (broker/store/slotted.py)
    __slots__ = ("max_phys_offset", "queue")

    def __init__(self, topic: str, queue_id: int, root: Path, file_size: int) -> None:
        self.topic = topic
        self.queue_id = queue_id
        self.file_size = file_size
        self.queue = MappedFileQueue(root / topic / str(queue_id), file_size)
        self.max_phys_offset = 0  # end (offset + size) of the last message this queue points at
        self.min_logic_offset = 0  # byte offset of the first unit still pointing into the log

    # ------------------------------------------------------------------ offsets

    @property
    def max_queue_offset(self) -> int:
        """The next queue offset to be written (GET_MAX_OFFSET)."""
        return self.queue.max_byte_offset // UNIT

    @property
    def min_queue_offset(self) -> int:
        return self.min_logic_offset // UNIT

    # ------------------------------------------------------------------ writing

    def put(self, phys_offset: int, size: int, tags_code: int, queue_offset: int) -> None:
        """Append the unit for ``queue_offset`` (Java's putMessagePositionInfo). Nothing when
        the queue already has it (a re-dispatch after recovery or a slave resync). DiskError
        when its file cannot be created."""
        end = phys_offset + size
        if end <= self.max_phys_offset:
            return
        files = self.queue.files  # the common case first, without a call: once per message
        if files:
            mapped = files[-1]
            position = mapped.wrote_position
            if position < mapped.file_size and (
                mapped.start_offset + position == queue_offset * UNIT
            ):
                CQ_UNIT.pack_into(mapped.mmap, position, phys_offset, size, tags_code)
                mapped.wrote_position = position + UNIT
                self.max_phys_offset = end
                return
        self._put_elsewhere(phys_offset, size, tags_code, queue_offset)

    def _put_elsewhere(
        self, phys_offset: int, size: int, tags_code: int, queue_offset: int
    ) -> None:
        """``put`` for a unit that starts a file, or is not where the queue ends."""
        expected = queue_offset * UNIT
        files = self.queue.files
        mapped = files[-1] if files else None
        if mapped is None or mapped.wrote_position >= mapped.file_size:
            first = mapped is None
            mapped = self.queue.next_segment(expected)
            if first and expected != mapped.start_offset:
                self._fill_before(mapped, expected)
        position = mapped.wrote_position
        current = mapped.start_offset + position
        if expected < current:
            log.warning(
                "consume queue unit written twice: %s-%d queue_offset=%d",
                self.topic,
                self.queue_id,
                queue_offset,
            )
            return
        if expected != current:
            # RocketMQ logs this as a bug and appends where the queue is; so do we.
            log.error(
                "consume queue out of order: %s-%d expected=%d at=%d",
                self.topic,
                self.queue_id,
                expected,
                current,
            )
        CQ_UNIT.pack_into(mapped.mmap, position, phys_offset, size, tags_code)
        mapped.wrote_position = position + UNIT
        self.max_phys_offset = phys_offset + size

    def put_batch(self, requests: Sequence[DispatchRequest]) -> None:
        """The units of one batch's messages (consecutive queue offsets). When they follow the
        queue's end and fit in its current file, one pack writes them all; anything else
        (a file boundary, a re-dispatch) goes unit by unit through ``put``."""
        mapped = self.queue.last
        count = len(requests)
        if not count:
            return
        first = requests[0]
        if (
            mapped is not None
            and first.commit_log_offset + first.msg_size > self.max_phys_offset
            and mapped.start_offset + mapped.wrote_position == first.consume_queue_offset * UNIT
            and mapped.wrote_position + count * UNIT <= mapped.file_size
        ):
            pack_cq_units(mapped.mmap, mapped.wrote_position, requests)
            mapped.wrote_position += count * UNIT
            last = requests[-1]
            self.max_phys_offset = last.commit_log_offset + last.msg_size
            return
        for r in requests:
            self.put(r.commit_log_offset, r.msg_size, r.tags_code, r.consume_queue_offset)

    def put_units(self, units: bytes, queue_offset: int) -> None:
        """``put_batch`` for a batch put's units already packed (AppendCursor
        .put_batch_dispatch), the first for ``queue_offset``: copied in one slice when they
        follow the queue's end and fit in its current file, else unit by unit through ``put``."""
        count = len(units) // UNIT
        if not count:
            return
        files = self.queue.files  # MappedFileQueue.last without its call
        mapped = files[-1] if files else None
        phys, size, _ = CQ_UNIT.unpack_from(units, 0)
        if mapped is not None and phys + size > self.max_phys_offset:
            position = mapped.wrote_position
            end = position + count * UNIT
            if mapped.start_offset + position == queue_offset * UNIT and end <= mapped.file_size:
                mapped.mmap[position:end] = units
                mapped.wrote_position = end
                if count > 1:  # a lone send's unit is its own last (one unpack, per send)
                    phys, size, _ = CQ_UNIT.unpack_from(units, (count - 1) * UNIT)
                self.max_phys_offset = phys + size
                return
        for phys_offset, size, tags_code in CQ_UNIT.iter_unpack(units):
            self.put(phys_offset, size, tags_code, queue_offset)
            queue_offset += 1

    def _fill_before(self, mapped: MappedFile, expected: int) -> None:
        """A queue whose first unit is not offset 0 (a slave starting mid-log) pads the file's
        start with filler units, as RocketMQ does."""
        count = (expected - mapped.start_offset) // UNIT
        mapped.mmap[0 : count * UNIT] = _FILLER * count
        mapped.wrote_position = count * UNIT
        self.min_logic_offset = expected

    # ------------------------------------------------------------------ reading

    def units(self, queue_offset: int, max_units: int | None = None) -> memoryview | None:
        """Units from ``queue_offset`` to the end of the written data of that file (a read
        never crosses a file), or None when the offset is outside the queue."""
        byte_offset = queue_offset * UNIT
        mapped = self.queue.find(byte_offset)
        if mapped is None:
            return None
        start = byte_offset - mapped.start_offset
        end = mapped.wrote_position
        if max_units is not None and start + max_units * UNIT < end:  # not min(): per pull
            end = start + max_units * UNIT
        if start >= end:
            return None
        return mapped.view[start:end]

    def unit(self, queue_offset: int) -> tuple[int, int, int] | None:
        view = self.units(queue_offset, 1)
        return None if view is None else CQ_UNIT.unpack_from(view)

    def roll_next_file(self, queue_offset: int) -> int:
        per_file = self.file_size // UNIT
        return queue_offset + per_file - queue_offset % per_file

    # ------------------------------------------------------------------ recovery

    def recover(self) -> None:
        """Find the end of valid units: scan from the third-last file, stop at the first unit
        that is not ``offset >= 0 and size > 0``; drop what follows."""
        files = self.queue.files
        if not files:
            return
        start = max(0, len(files) - 3)
        end_offset = files[start].start_offset
        max_phys = 0
        for mapped in files[start:]:
            view = mapped.view
            position = 0
            while position + UNIT <= mapped.file_size:
                phys_offset, size, _ = CQ_UNIT.unpack_from(view, position)
                if phys_offset < 0 or size <= 0:
                    break
                if size != CQ_FILLER_SIZE:
                    max_phys = phys_offset + size
                position += UNIT
            end_offset = mapped.start_offset + position
            if position < mapped.file_size:
                break
        self.queue.truncate_dirty(end_offset)
        self.max_phys_offset = max_phys

    def truncate_to_phys(self, phys_offset: int) -> None:
        """Drop units pointing at or beyond ``phys_offset`` (the CommitLog was cut there)."""
        while self.queue.files:
            mapped = self.queue.files[-1]
            first_phys, first_size, _ = CQ_UNIT.unpack_from(mapped.view, 0)
            if (
                mapped.wrote_position > 0
                and first_size != CQ_FILLER_SIZE
                and first_phys >= phys_offset
            ):
                mapped.destroy()
                self.queue.files.pop()
                continue
            position = mapped.wrote_position - UNIT
            while position >= 0:
                unit_phys, size, _ = CQ_UNIT.unpack_from(mapped.view, position)
                if size != CQ_FILLER_SIZE and unit_phys + size <= phys_offset:
                    break
                position -= UNIT
            cut = mapped.start_offset + position + UNIT
            self.queue.truncate_dirty(cut)
            break
        self.max_phys_offset = self._last_phys_end()

    def _last_phys_end(self) -> int:
        mapped = self.queue.last
        if mapped is None or mapped.wrote_position == 0:
            return 0
        phys_offset, size, _ = CQ_UNIT.unpack_from(mapped.view, mapped.wrote_position - UNIT)
        return 0 if size == CQ_FILLER_SIZE else phys_offset + size

    def correct_min_offset(self, commit_log_min: int) -> None:
        """The first unit whose message is still in the log defines the queue's min offset."""
        files = self.queue.files
        if not files:
            self.min_logic_offset = 0
            return
        mapped = files[0]
        for position in range(0, mapped.wrote_position, UNIT):
            phys_offset, size, _ = CQ_UNIT.unpack_from(mapped.view, position)
            if size != CQ_FILLER_SIZE and phys_offset >= commit_log_min:
                self.min_logic_offset = mapped.start_offset + position
                return
        self.min_logic_offset = mapped.start_offset + mapped.wrote_position

    def delete_expired(self, commit_log_min: int, max_files: int) -> int:
        """Delete files (never the last) whose last unit points below the log's min offset."""

        def keep(mapped: MappedFile) -> bool:
            if mapped.wrote_position < UNIT:
                return True
            phys_offset, _, _ = CQ_UNIT.unpack_from(mapped.view, mapped.wrote_position - UNIT)
            return phys_offset >= commit_log_min

        deleted = self.queue.delete_below(keep, max_files)
        self.correct_min_offset(commit_log_min)
        return len(deleted)

    # ------------------------------------------------------------------ time search

    def offset_by_time(
        self, timestamp: int, store_timestamp_at: Callable[[int], int], commit_log_min: int
    ) -> int:
        """SEARCH_OFFSET_BY_TIMESTAMP: binary search by each message's store time, the nearest
        neighbour by absolute difference when there is no exact hit."""
        low, high = self.min_queue_offset, self.max_queue_offset - 1
        if high < low:
            return 0
        best_low = best_high = None
        while low <= high:
            middle = (low + high) // 2
            unit = self.unit(middle)
            if unit is None or unit[0] < commit_log_min:
                low = middle + 1
                continue
            store_ts = store_timestamp_at(unit[0])
            if store_ts < 0:
                return 0
            if store_ts == timestamp:
                return middle
            if store_ts < timestamp:
                best_low = (middle, store_ts)
                low = middle + 1
            else:
                best_high = (middle, store_ts)
                high = middle - 1
        if best_low is None:
            return best_high[0] if best_high else 0
        if best_high is None:
            return best_low[0]
        return best_low[0] if timestamp - best_low[1] <= best_high[1] - timestamp else best_high[0]

    def flush_plan(self, least_pages: int) -> list[tuple[MappedFile, int]]:
        return self.queue.flush_plan(least_pages)

    def close(self) -> None:
        self.queue.close()

    def destroy(self) -> None:
        self.queue.destroy()
        self.max_phys_offset = 0
        self.min_logic_offset = 0
