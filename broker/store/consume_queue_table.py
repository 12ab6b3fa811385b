"""ConsumeQueueTable: every (topic, queue id)'s ConsumeQueue (Java's
DefaultMessageStore.consumeQueueTable; docs/spec/store-format.md §1, §3).

Opened from ``consumequeue/<topic>/<queueId>/`` at start, created when dispatch first puts a unit
in a queue, dropped when a topic is deleted. The one place a topic becomes a directory, so the
one place that refuses a topic that cannot be one.

``dirty`` holds the queues written since the flush service last found them flushed: every unit
dispatch puts goes through ``find_or_create``, which adds the queue, so a flush round visits the
queues that took units rather than all 8,000 of a large broker (walking them all held the loop
40-85 ms a second).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from broker.store.consume_queue import UNIT, ConsumeQueue
from broker.store.layout import CQ_UNIT
from broker.store.slotted import Slotted
from broker.store.store_native import native

if TYPE_CHECKING:
    from broker.store.plain_dispatch import PlainRun

log = logging.getLogger(__name__)

_REFUSED_NAMES_LOGGED = 1024
_refused_names: set[str] = set()


def safe_directory_name(topic: str) -> bool:
    """Whether ``topic`` can be a directory of ``consumequeue/`` and nothing else.

    Names from clients were held to RocketMQ's rules at the wire (remoting/names.py), but a
    record also arrives from a master over HA, or from a CommitLog another broker wrote: its
    topic must still not become a path out of the store. A refused topic gets no ConsumeQueue
    (its messages stay in the CommitLog, unreachable by pulls) and one WARNING."""
    if (
        topic
        and "/" not in topic
        and "\0" not in topic
        and topic not in (".", "..")
        and len(topic.encode("utf-8", "surrogatepass")) <= 255
    ):
        return True
    if len(_refused_names) < _REFUSED_NAMES_LOGGED and topic not in _refused_names:
        _refused_names.add(topic)
        log.warning(
            "topic %r cannot be a ConsumeQueue directory: its messages are not queued", topic
        )
    return False


class ConsumeQueueTable(Slotted):
    # read by plain_pass.c from their slots (broker/store/slotted.py)
    __slots__ = ("by_topic", "dirty")

    def __init__(self, root: Path, file_size: int) -> None:
        self.root = root
        self.file_size = file_size
        self._table: dict[str, dict[int, ConsumeQueue]] = {}
        self.dirty: set[ConsumeQueue] = set()
        # put_cq_runs' view of the table (the same dict, never rebound): a plain pass's units
        # go in without a call per queue
        self.by_topic = self._table

    def load(self) -> None:
        """Open every ConsumeQueue directory on disk (RocketMQ's layout; non-numeric queue
        directories are skipped, as RocketMQ does)."""
        if not self.root.is_dir():
            return
        for topic_dir in sorted(self.root.iterdir()):
            if not topic_dir.is_dir():
                continue
            for queue_dir in sorted(topic_dir.iterdir()):
                if not queue_dir.name.isdigit():
                    continue
                consume_queue = ConsumeQueue(
                    topic_dir.name, int(queue_dir.name), self.root, self.file_size
                )
                consume_queue.queue.load()
                self._table.setdefault(topic_dir.name, {})[int(queue_dir.name)] = consume_queue
                self.dirty.add(consume_queue)  # the first flush round finds out

    def find(self, topic: str, queue_id: int) -> ConsumeQueue | None:
        queues = self._table.get(topic)
        return None if queues is None else queues.get(queue_id)

    def find_or_create(self, topic: str, queue_id: int) -> ConsumeQueue | None:
        """The queue a unit goes in, created (not yet its file) when new, and marked dirty;
        None for a topic that cannot be a directory."""
        queues = self._table.get(topic)
        if queues is None:
            if not safe_directory_name(topic):
                return None
            queues = self._table[topic] = {}
        consume_queue = queues.get(queue_id)
        if consume_queue is None:
            consume_queue = queues[queue_id] = ConsumeQueue(
                topic, queue_id, self.root, self.file_size
            )
        self.dirty.add(consume_queue)
        return consume_queue

    def put_runs(self, runs: list[PlainRun], start: int = 0) -> bool:
        """Each run's units from ``runs[start]`` on into its queue
        (``find_or_create(topic, queue_id).put_units``) with the lookups inline; False when a
        topic had no queue (``find`` then tells which were skipped). A plain pass calls
        ``put_cq_runs`` first and this for the runs it left."""
        table, dirty = self._table, self.dirty
        every = True
        for topic, queue_id, queue_offset, units, _ in runs[start:] if start else runs:
            queues = table.get(topic)
            consume_queue = None if queues is None else queues.get(queue_id)
            if consume_queue is None:
                consume_queue = self.find_or_create(topic, queue_id)
                if consume_queue is None:  # a topic that cannot be a directory
                    every = False
                    continue
            else:
                dirty.add(consume_queue)
            consume_queue.put_units(units, queue_offset)
        return every

    def take_dirty(self) -> set[ConsumeQueue]:
        """The queues written since the last call (a flush round gives back, with
        ``mark_dirty``, those it left with unflushed units)."""
        dirty, self.dirty = self.dirty, set()
        return dirty

    def mark_dirty(self, queues: Iterable[ConsumeQueue]) -> None:
        self.dirty.update(q for q in queues if self.holds(q))

    def holds(self, consume_queue: ConsumeQueue) -> bool:
        """Whether ``consume_queue`` is still this table's (its topic was not deleted)."""
        return self._table.get(consume_queue.topic, {}).get(consume_queue.queue_id) is consume_queue

    def __iter__(self) -> Iterator[ConsumeQueue]:
        for queues in self._table.values():
            yield from queues.values()

    def topics(self) -> set[str]:
        return set(self._table)

    def queue_count(self, topic: str) -> int:
        """1 + the highest queue id held for ``topic`` (0: none)."""
        queues = self._table.get(topic)
        return max(queues) + 1 if queues else 0

    def max_phys_offset(self) -> int:
        """The end of the furthest message any queue points at."""
        return max((queue.max_phys_offset for queue in self), default=0)

    def delete_topic(self, topic: str) -> list[int]:
        """Destroy a deleted topic's queues and directories; the ids of the queues it had."""
        queue_ids = []
        for queue_id, consume_queue in self._table.pop(topic, {}).items():
            self.dirty.discard(consume_queue)
            consume_queue.destroy()
            queue_ids.append(queue_id)
        directory = self.root / topic
        if directory.is_dir():
            for child in directory.iterdir():
                if child.is_dir():
                    child.rmdir()
            directory.rmdir()
        return queue_ids

    def destroy(self) -> None:
        """Every queue's files gone (the CommitLog they pointed into is empty)."""
        for consume_queue in self:
            consume_queue.destroy()
        self._table.clear()
        self.dirty.clear()

    def close(self) -> None:
        for consume_queue in self:
            consume_queue.close()


def python_put_cq_runs(
    table: dict[str, dict[int, ConsumeQueue]], dirty: set[ConsumeQueue], runs: list[PlainRun]
) -> int:
    """How many of ``runs`` (from the first) were written the common way: the queue is in
    ``table`` and its last file holds the run's units where the queue ends, all pointing past
    what it holds (``ConsumeQueue.put_units``' one-slice case); each such queue added to
    ``dirty``. Stops at the first run that is anything else (a new queue or file, a
    re-dispatch, values of another type): ``put_runs`` takes it and the rest. The reference
    of broker/store/native/consume_queue.c's put_cq_runs."""
    taken = 0
    for run in runs:
        if type(run) is not tuple or len(run) != 5:
            break
        topic, queue_id, queue_offset, units, _ = run
        if not (
            type(topic) is str
            and type(queue_id) is int
            and type(queue_offset) is int
            and type(units) is bytes
        ):
            break
        length = len(units)
        queues = table.get(topic)
        consume_queue = queues.get(queue_id) if type(queues) is dict else None
        if consume_queue is None or not length or length % UNIT or not _int64(queue_offset):
            break
        if not _takes(consume_queue, units, queue_offset):
            break
        dirty.add(consume_queue)
        mapped = consume_queue.queue.files[-1]
        position = mapped.wrote_position
        mapped.mmap[position : position + length] = units
        mapped.wrote_position = position + length
        phys, size, _ = CQ_UNIT.unpack_from(units, length - UNIT)
        consume_queue.max_phys_offset = phys + size
        taken += 1
    return taken


_INT64 = -(1 << 63)


def _int64(value: object) -> bool:
    return type(value) is int and _INT64 <= value < -_INT64  # type: ignore[operator]


def _takes(consume_queue: ConsumeQueue, units: bytes, queue_offset: int) -> bool:
    """Whether ``units`` go in ``consume_queue``'s last file in one slice (put_cq_runs' test,
    every value an int64 as the C reads them)."""
    max_phys = getattr(consume_queue, "max_phys_offset", None)
    files = getattr(getattr(consume_queue, "queue", None), "files", None)
    if not _int64(max_phys) or type(files) is not list or not files:
        return False
    mapped = files[-1]
    position = getattr(mapped, "wrote_position", None)
    file_size = getattr(mapped, "file_size", None)
    start = getattr(mapped, "start_offset", None)
    if not (_int64(position) and _int64(file_size) and _int64(start)):
        return False
    phys, size, _ = CQ_UNIT.unpack_from(units, 0)
    last_phys, last_size, _ = CQ_UNIT.unpack_from(units, len(units) - UNIT)
    end = position + len(units)  # type: ignore[operator]
    mm = getattr(mapped, "mmap", None)
    return (
        _int64(phys + size)
        and phys + size > max_phys  # type: ignore[operator]
        and _int64(queue_offset * UNIT)
        and _int64(start + position)  # type: ignore[operator]
        and start + position == queue_offset * UNIT  # type: ignore[operator]
        and position >= 0  # type: ignore[operator]
        and _int64(end)
        and end <= file_size  # type: ignore[operator]
        and _writable_length(mm) >= end
        and _int64(last_phys + last_size)
    )


def _writable_length(mm: object) -> int:
    """The bytes a writable buffer holds, -1 for anything else (a closed mmap)."""
    try:
        view = memoryview(mm)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return -1
    with view:
        return -1 if view.readonly else view.nbytes


put_cq_runs = python_put_cq_runs if native is None else native.put_cq_runs
