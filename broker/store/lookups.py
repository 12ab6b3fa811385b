"""Lookups by queue offset, time and key over what the store holds: GET_MAX_OFFSET and its
kin, SEARCH_OFFSET_BY_TIMESTAMP, VIEW_MESSAGE_BY_ID and QUERY_MESSAGE. Read-only: they answer
from the mapped ConsumeQueues, index files and CommitLog whatever state the disk is in.
DefaultMessageStore takes them in; they use its queues, log, index and config, declared here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.store.types import QueryMessageResult
from remoting.record import RecordKind, scan_record

if TYPE_CHECKING:
    from broker.store.commit_log import CommitLog
    from broker.store.config import MessageStoreConfig
    from broker.store.consume_queue_table import ConsumeQueueTable
    from broker.store.index_service import IndexService


class QueueLookups:
    commit_log: CommitLog
    consume_queues: ConsumeQueueTable
    config: MessageStoreConfig
    index_service: IndexService
    memory_threshold: int

    def get_max_offset_in_queue(self, topic: str, queue_id: int) -> int:
        consume_queue = self.consume_queues.find(topic, queue_id)
        return consume_queue.max_queue_offset if consume_queue else 0

    def get_min_offset_in_queue(self, topic: str, queue_id: int) -> int:
        consume_queue = self.consume_queues.find(topic, queue_id)
        return consume_queue.min_queue_offset if consume_queue else -1

    def get_commit_log_offset_in_queue(self, topic: str, queue_id: int, queue_offset: int) -> int:
        consume_queue = self.consume_queues.find(topic, queue_id)
        unit = consume_queue.unit(queue_offset) if consume_queue else None
        return unit[0] if unit else 0

    def check_in_disk_by_consume_offset(self, topic: str, queue_id: int, queue_offset: int) -> bool:
        """Whether the message at ``queue_offset`` has fallen out of the memory window."""
        consume_queue = self.consume_queues.find(topic, queue_id)
        unit = consume_queue.unit(queue_offset) if consume_queue else None
        if unit is None:
            return False
        return self.commit_log.max_phys_offset - unit[0] > self.memory_threshold

    def check_in_mem_by_consume_offset(self, topic: str, queue_id: int, queue_offset: int) -> bool:
        """Whether the message at ``queue_offset`` exists and is still in the memory window."""
        consume_queue = self.consume_queues.find(topic, queue_id)
        unit = consume_queue.unit(queue_offset) if consume_queue else None
        if unit is None:
            return False
        return self.commit_log.max_phys_offset - unit[0] <= self.memory_threshold

    def get_offset_in_queue_by_time(self, topic: str, queue_id: int, timestamp: int) -> int:
        consume_queue = self.consume_queues.find(topic, queue_id)
        if consume_queue is None:
            return 0
        return consume_queue.offset_by_time(
            timestamp, self.commit_log.store_timestamp_at, self.commit_log.min_phys_offset
        )

    def get_message_store_timestamp(self, topic: str, queue_id: int, queue_offset: int) -> int:
        consume_queue = self.consume_queues.find(topic, queue_id)
        unit = consume_queue.unit(queue_offset) if consume_queue else None
        return self.commit_log.store_timestamp_at(unit[0]) if unit else -1

    def get_earliest_message_time(self, topic: str, queue_id: int) -> int:
        consume_queue = self.consume_queues.find(topic, queue_id)
        if consume_queue is None:
            return -1
        low = consume_queue.min_queue_offset
        if consume_queue.max_queue_offset <= low:
            return -1
        return self.get_message_store_timestamp(topic, queue_id, low)

    def look_message_by_offset(
        self, phys_offset: int, size: int | None = None
    ) -> memoryview | None:
        """The raw record at ``phys_offset`` (its own TOTALSIZE when ``size`` is None)."""
        if size is None:
            head = self.commit_log.get_message(phys_offset, 8)
            if head is None:
                return None
            scan = scan_record(self.commit_log.get_data(phys_offset), 0)
            if scan.kind is not RecordKind.MESSAGE:
                return None
            size = scan.size
        return self.commit_log.get_message(phys_offset, size)

    def query_message(
        self, topic: str, key: str, max_num: int, begin_timestamp: int, end_timestamp: int
    ) -> QueryMessageResult:
        max_num = min(max_num, self.config.max_msgs_num_batch)
        phys_offsets, last_ts, last_phy = self.index_service.query(
            topic, key, max_num, begin_timestamp, end_timestamp
        )
        result = QueryMessageResult(
            index_last_update_timestamp=last_ts, index_last_update_phyoffset=last_phy
        )
        for phys_offset in phys_offsets:
            record = self.look_message_by_offset(phys_offset)
            if record is not None:
                result.buffers.append(record)
        return result
