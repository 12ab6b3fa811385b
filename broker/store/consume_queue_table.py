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

from broker.store.consume_queue import ConsumeQueue

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


class ConsumeQueueTable:
    def __init__(self, root: Path, file_size: int) -> None:
        self.root = root
        self.file_size = file_size
        self._table: dict[str, dict[int, ConsumeQueue]] = {}
        self.dirty: set[ConsumeQueue] = set()

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

    def put_runs(self, runs: list[PlainRun]) -> bool:
        """Each run's units into its queue (``find_or_create(topic, queue_id).put_units``), in
        one call for a plain pass with the lookups inline; False when a topic had no queue
        (``find`` then tells which were skipped)."""
        table, dirty = self._table, self.dirty
        every = True
        for topic, queue_id, queue_offset, units, _ in runs:
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
