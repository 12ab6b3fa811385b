"""CommitLogDispatcher: what each stored record gives the rest of the store, as Java's
CommitLogDispatchers do (docs/spec/store-format.md §8): its ConsumeQueue unit
(``ConsumeQueue.put``), its IndexFile entries (``IndexService.build_index``) and, on a master,
the long-polling wake-up.

A put dispatches its own records when dispatch is caught up (``DefaultMessageStore.put_message``
and, from what the append packed, ``put_messages`` and ``put_plain_run``); reput, recovery and
slaves dispatch records read back from the log, in log order (``dispatch_many``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import TYPE_CHECKING

from broker.store.config import MessageStoreConfig
from broker.store.consume_queue_table import ConsumeQueueTable, put_cq_runs
from broker.store.index_service import IndexService
from broker.store.slotted import Slotted
from broker.store.types import AppendedBatch, DispatchRequest
from broker.timer.transform import TIMER_TOPIC
from remoting import message as codec
from remoting.constants import SCHEDULE_TOPIC

if TYPE_CHECKING:
    from broker.store.plain_dispatch import AppendedRows

# (topic, queue id, next queue offset, tags code, store timestamp, properties)
# (topic, queue id, next queue offset, tags code, store timestamp, properties: a dict, or a
# plain send's record property bytes from dispatch_rows; the broker's listener reads none)
ArrivalListener = Callable[[str, int, int, int, int, dict[str, str] | bytes], None]

# The broker's own services follow these topics' arrivals (the schedule's levels, the timer's
# wheel): they are heard whatever ``arrivals_wanted`` says
ALWAYS_HEARD = frozenset({SCHEDULE_TOPIC, TIMER_TOPIC})
_NOT_QUEUED = codec.TRANSACTION_NOT_QUEUED_BIT  # a prepared (0x4) or rolled-back (0xC) half


class CommitLogDispatcher(Slotted):
    # read by plain_pass.c from their slots (broker/store/slotted.py)
    __slots__ = (
        "arrival_listener",
        "arrivals_wanted",
        "config",
        "consume_queues",
        "index_service",
        "last_dispatched_timestamp",
    )

    def __init__(
        self,
        consume_queues: ConsumeQueueTable,
        index_service: IndexService,
        config: MessageStoreConfig,
        arrival_listener: ArrivalListener | None,
        arrivals_wanted: Callable[[], bool] | None = None,
    ) -> None:
        """``arrival_listener`` None: no wake-ups (a slave's held pulls are answered by their
        timeout, as in Java). ``arrivals_wanted``: False when the listener has nothing to do
        now for a topic outside ALWAYS_HEARD (no pull held, no pop waiting): a plain put asks
        it once instead of calling the listener for each queue it touched."""
        self.consume_queues = consume_queues
        self.index_service = index_service
        self.config = config  # messageIndexEnable, read per record as Java does: it is live
        self.arrival_listener = arrival_listener
        self.arrivals_wanted = arrivals_wanted
        self.last_dispatched_timestamp = 0  # the checkpoint's logicsMsgTimestamp

    def dispatch(self, request: DispatchRequest, *, notify: bool = True) -> None:
        """ConsumeQueue unit, index entries, long-polling wake-up."""
        if not request.sys_flag & _NOT_QUEUED:
            queue = self.consume_queues.find_or_create(request.topic, request.queue_id)
            if queue is not None:  # None: a topic that cannot be a directory
                queue.put(
                    request.commit_log_offset,
                    request.msg_size,
                    request.tags_code,
                    request.consume_queue_offset,
                )
                if notify and self.arrival_listener is not None:
                    self._notify_arrival(request)
        if self.config.message_index_enable:
            self.index_service.build_index(request)
        self.last_dispatched_timestamp = request.store_timestamp

    def dispatch_appended(self, batch: AppendedBatch, *, notify: bool = True) -> None:
        """``dispatch`` for the entries of one batch a put just appended (one topic, one queue,
        one sys flag), from what the append packed: the units in one copy, the index entries
        in one pass, the wake-ups once per tags code, no DispatchRequest per entry."""
        if not batch.sys_flag & _NOT_QUEUED:
            queue = self.consume_queues.find_or_create(batch.topic, batch.queue_id)
            if queue is not None:
                queue.put_units(batch.units, batch.queue_offset)
                wanted = self.arrivals_wanted
                if (
                    notify
                    and self.arrival_listener is not None
                    and (batch.topic in ALWAYS_HEARD or wanted is None or wanted())
                ):
                    for tags_code, queue_offset in batch.wakes:
                        self.arrival_listener(
                            batch.topic, batch.queue_id, queue_offset + 1, tags_code,
                            batch.store_timestamp, {},
                        )  # fmt: skip
        if self.config.message_index_enable:
            self.index_service.build_index_keys(batch.sys_flag, batch.store_timestamp, batch.keys)
        self.last_dispatched_timestamp = batch.store_timestamp

    def dispatch_many(self, requests: list[DispatchRequest], *, notify: bool = True) -> None:
        """``dispatch`` for records read back in log order (reput, recovery, slaves), a run at
        a time instead of a record at a time: each queue's consecutive records get their units
        in one write (queues are independent, each keeps its own order), and consecutive records
        of one topic their index entries in one pass."""
        if not requests:
            return
        wake = notify and self.arrival_listener is not None
        for (topic, queue_id), runs in queue_runs(requests).items():
            queue = self.consume_queues.find_or_create(topic, queue_id)
            if queue is None:  # a topic that cannot be a directory
                continue
            for run in runs:
                queue.put_batch(run)
                if wake:
                    self._notify_newest(run)
        if self.config.message_index_enable:
            self.index_service.build_index_runs(requests)
        self.last_dispatched_timestamp = requests[-1].store_timestamp

    def dispatch_rows(
        self, appended: AppendedRows, *, notify: bool = True, topics: Collection[str] | None = None
    ) -> None:
        """``dispatch_many`` for the records one ``put_rows`` call appended, from what it
        packed (broker/store/plain_dispatch.py): per queue run its units in one copy and its
        wake-ups, then the index entries in a pass per store timestamp; nothing per record.
        ``topics``: every topic of the runs, when the caller has them (``put_rows``' totals):
        a pass with nobody to wake then skips its queues' wake-up loop."""
        runs, key_chunks, last_timestamp = appended
        listener = self.arrival_listener if notify else None
        # asked once per pass, not per queue: most passes have nobody to wake
        wanted = self.arrivals_wanted
        wanted = listener is not None and (wanted is None or wanted())
        if not wanted and topics is not None and ALWAYS_HEARD.isdisjoint(topics):
            listener = None
        table = self.consume_queues
        taken = put_cq_runs(table.by_topic, table.dirty, runs)  # every run but the rare ones
        queued = taken == len(runs) or table.put_runs(runs, taken)
        if listener is not None:
            for topic, queue_id, _, _, wakes in runs:
                if (wanted or topic in ALWAYS_HEARD) and (
                    queued or self.consume_queues.find(topic, queue_id) is not None
                ):
                    for wake in wakes:
                        listener(*wake)
        if self.config.message_index_enable:
            build = self.index_service.build_index_keys
            for store_timestamp, keys in key_chunks:
                build(0, store_timestamp, keys)  # 0: no rolled-back half has entries here
        self.last_dispatched_timestamp = last_timestamp

    def _notify_newest(self, requests: list[DispatchRequest]) -> None:
        """Once per tag, with the newest offset carrying it: the same wake-ups as a call per
        message (a held pull wakes for a matching message past its offset)."""
        newest: dict[int, DispatchRequest] = {}
        for request in requests:
            newest[request.tags_code] = request
        for request in newest.values():
            self._notify_arrival(request)

    def _notify_arrival(self, request: DispatchRequest) -> None:
        """Long polling and the schedule service learn the queue has ``request``'s message."""
        self.arrival_listener(  # type: ignore[misc]
            request.topic,
            request.queue_id,
            request.consume_queue_offset + 1,
            request.tags_code,
            request.store_timestamp,
            request.properties,
        )


def queue_runs(
    requests: list[DispatchRequest],
) -> dict[tuple[str, int], list[list[DispatchRequest]]]:
    """The records that take a unit, by queue, in runs of consecutive queue offsets (a gap: a
    topic deleted and created again starts a new run)."""
    runs: dict[tuple[str, int], list[list[DispatchRequest]]] = {}
    run: list[DispatchRequest] = []
    topic, queue_id, next_queue_offset = "", -1, -1
    for request in requests:
        if request.sys_flag & _NOT_QUEUED:
            continue
        queue_offset = request.consume_queue_offset
        if (
            queue_offset == next_queue_offset
            and request.queue_id == queue_id
            and (request.topic == topic)
        ):
            run.append(request)  # the common case: the run of the record before
            next_queue_offset += 1
            continue
        topic, queue_id = request.topic, request.queue_id
        next_queue_offset = queue_offset + 1
        queue_runs = runs.setdefault((topic, queue_id), [])
        if queue_runs and queue_runs[-1][-1].consume_queue_offset + 1 == queue_offset:
            run = queue_runs[-1]  # this queue's run, after records of other queues
        else:
            run = []
            queue_runs.append(run)
        run.append(request)
    return runs
