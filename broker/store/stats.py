"""StoreStats: counters for GET_BROKER_RUNTIME_INFO (what Java's StoreStatsService reports)."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from broker.store.types import GetMessageResult, GetMessageStatus


class StoreStats:
    def __init__(self, clock: Callable[[], int]) -> None:
        self.clock = clock
        self.boot_timestamp = clock()
        self.put_message_times_total = 0
        self.put_message_size_total = 0
        self.get_message_times_total_found = 0
        self.get_message_times_total_miss = 0
        self.get_message_transferred_msg_count = 0
        self._put_samples: deque[tuple[int, int]] = deque(maxlen=64)  # (ms, total puts)

    def on_put(self, count: int, size: int) -> None:
        self.put_message_times_total += count
        self.put_message_size_total += size

    def on_get(self, result: GetMessageResult) -> None:
        if result.status is GetMessageStatus.FOUND:
            self.get_message_times_total_found += 1
            self.get_message_transferred_msg_count += result.message_count
        else:
            self.get_message_times_total_miss += 1

    def put_tps(self) -> float:
        now = self.clock()
        samples = self._put_samples
        samples.append((now, self.put_message_times_total))
        while len(samples) > 2 and now - samples[0][0] > 60_000:
            samples.popleft()
        first_ms, first_total = samples[0]
        elapsed = (now - first_ms) / 1000
        return (self.put_message_times_total - first_total) / elapsed if elapsed > 0 else 0.0

    def runtime_info(self) -> dict[str, str]:
        return {
            "bootTimestamp": str(self.boot_timestamp),
            "runtime": f"{(self.clock() - self.boot_timestamp) // 1000} s",
            "putMessageTimesTotal": str(self.put_message_times_total),
            "putMessageSizeTotal": str(self.put_message_size_total),
            "getMessageTimesTotalFound": str(self.get_message_times_total_found),
            "getMessageTimesTotalMiss": str(self.get_message_times_total_miss),
            "getMessageTransferedMsgCount": str(self.get_message_transferred_msg_count),
            "putTps": f"{self.put_tps():.2f}",
        }
