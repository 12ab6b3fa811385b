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
        if codec.transaction_type(request.sys_flag) in (
            codec.TRANSACTION_NOT_TYPE,
            codec.TRANSACTION_COMMIT_TYPE,
        ):
            self.find_consume_queue(request.topic, request.queue_id, create=True).put(
                request.commit_log_offset,
                request.msg_size,
                request.tags_code,
                request.consume_queue_offset,
            )
            if notify and self.store.arrival_listener is not None and not self.store.is_slave:
                self._notify_arrival(request)
        if self.index_enabled:
            self.index_service.build_index_batch((request,))
        self.reput.last_dispatched_timestamp = request.store_timestamp

    def dispatch_many(self, requests: list[DispatchRequest], *, notify: bool = True) -> None:
        """``dispatch`` for records read back in log order (reput, recovery, slaves): the
        entries of one batch (same topic, queue, sys flag and store time, consecutive queue
        offsets) are dispatched together, as when they were put."""
        index, count = 0, len(requests)
        while index < count:
            first = requests[index]
            end = index + 1
            topic, queue_id, sys_flag = first.topic, first.queue_id, first.sys_flag
            store_ts, next_offset = first.store_timestamp, first.consume_queue_offset + 1
            while end < count:
                other = requests[end]
                if (
                    other.consume_queue_offset != next_offset
                    or other.queue_id != queue_id
                    or other.store_timestamp != store_ts
                    or other.topic != topic
                    or other.sys_flag != sys_flag
                ):
                    break
                end += 1
                next_offset += 1
            if end - index == 1:
                self.dispatch(first, notify=notify)
            else:
                self.dispatch_batch(requests[index:end], notify=notify)
            index = end

    def dispatch_batch(self, requests: list[DispatchRequest], *, notify: bool = True) -> None:
        """``dispatch`` for the entries of one batch: one topic, one queue, one sys flag, so
        the queue is looked up once and the checks made once."""
        first = requests[0]
        if codec.transaction_type(first.sys_flag) in (
            codec.TRANSACTION_NOT_TYPE,
            codec.TRANSACTION_COMMIT_TYPE,
        ):
            queue = self.find_consume_queue(first.topic, first.queue_id, create=True)
            queue.put_batch(requests)
            if notify and not self.store.is_slave and self.store.arrival_listener is not None:
                # Once per tag, with the newest offset carrying it: the same wake-ups as a
                # call per message (a held pull wakes for a matching message past its offset).
                newest: dict[int, DispatchRequest] = {}
                for request in requests:
                    newest[request.tags_code] = request
                for request in newest.values():
                    self._notify_arrival(request)
        if self.index_enabled:
            self.index_service.build_index_batch(requests)
        self.reput.last_dispatched_timestamp = requests[-1].store_timestamp

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
