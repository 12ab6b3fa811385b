"""CommitLogDispatcher: what each stored record gives the rest of the store, as Java's
CommitLogDispatchers do: its ConsumeQueue unit, its IndexFile entries and, on a master, the
long-polling wake-up.

A put dispatches its own records when dispatch is caught up (``DefaultMessageStore._put``);
reput, recovery and slaves dispatch records read back from the log, in log order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.store.types import DispatchRequest
from remoting import message as codec

if TYPE_CHECKING:
    from broker.store.message_store import DefaultMessageStore


class CommitLogDispatcher:
    def __init__(self, store: DefaultMessageStore) -> None:
        self.store = store
        # What dispatch reads for every record, looked up once
        self.find_consume_queue = store.find_consume_queue
        self.index_service = store.index_service
        self.index_enabled = store.config.message_index_enable
        self.reput = store.reput

    def dispatch(self, request: DispatchRequest, *, notify: bool = True) -> None:
        """ConsumeQueue unit, index entries, long-polling wake-up (masters only)."""
        if not request.sys_flag & codec.TRANSACTION_NOT_QUEUED_BIT:
            queue = self.find_consume_queue(request.topic, request.queue_id, create=True)
            if queue is not None:  # None: a topic that cannot be a directory
                queue.put(
                    request.commit_log_offset,
                    request.msg_size,
                    request.tags_code,
                    request.consume_queue_offset,
                )
                if notify and self.store.arrival_listener is not None and not self.store.is_slave:
                    self._notify_arrival(request)
        if self.index_enabled:
            self.index_service.build_index(request)
        self.reput.last_dispatched_timestamp = request.store_timestamp

    def dispatch_many(self, requests: list[DispatchRequest], *, notify: bool = True) -> None:
        """``dispatch`` for records read back in log order (reput, recovery, slaves), a run at
        a time instead of a record at a time: each queue's consecutive records get their units
        in one write (queues are independent, each keeps its own order), and consecutive records
        of one topic their index entries in one pass."""
        if not requests:
            return
        runs: dict[tuple[str, int], list[list[DispatchRequest]]] = {}
        run: list[DispatchRequest] = []
        topic, queue_id, next_offset = "", -1, -1
        for request in requests:
            if request.sys_flag & codec.TRANSACTION_NOT_QUEUED_BIT:
                continue
            if (
                request.consume_queue_offset == next_offset
                and request.queue_id == queue_id
                and request.topic == topic
            ):
                run.append(request)  # the common case: the run of the record before
                next_offset += 1
                continue
            topic, queue_id, offset = request.topic, request.queue_id, request.consume_queue_offset
            next_offset = offset + 1
            queue_runs = runs.setdefault((topic, queue_id), [])
            if queue_runs and queue_runs[-1][-1].consume_queue_offset + 1 == offset:
                run = queue_runs[-1]  # this queue's run, after records of other queues
            else:  # a new queue, or a gap (a topic deleted and created again)
                run = []
                queue_runs.append(run)
            run.append(request)
        wake = notify and not self.store.is_slave and self.store.arrival_listener is not None
        for (topic, queue_id), queue_runs in runs.items():
            queue = self.find_consume_queue(topic, queue_id, create=True)
            if queue is None:  # a topic that cannot be a directory
                continue
            for run in queue_runs:
                queue.put_batch(run)
                if wake:
                    self._notify_newest(run)
        if self.index_enabled:
            self.index_service.build_index_runs(requests)
        self.reput.last_dispatched_timestamp = requests[-1].store_timestamp

    def dispatch_batch(self, requests: list[DispatchRequest], *, notify: bool = True) -> None:
        """``dispatch`` for the entries of one batch: one topic, one queue, one sys flag, so
        the queue is looked up once and the checks made once."""
        first = requests[0]
        if not first.sys_flag & codec.TRANSACTION_NOT_QUEUED_BIT:
            queue = self.find_consume_queue(first.topic, first.queue_id, create=True)
        else:
            queue = None
        if queue is not None:
            queue.put_batch(requests)
            if notify and not self.store.is_slave and self.store.arrival_listener is not None:
                self._notify_newest(requests)
        if self.index_enabled:
            self.index_service.build_index_batch(requests)
        self.reput.last_dispatched_timestamp = requests[-1].store_timestamp

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
        self.store.arrival_listener(  # type: ignore[misc]
            request.topic,
            request.queue_id,
            request.consume_queue_offset + 1,
            request.tags_code,
            request.store_timestamp,
            request.properties,
        )
