"""StoreStats: counters for GET_BROKER_RUNTIME_INFO (what Java's StoreStatsService reports)
and the metrics endpoint.

Put latency is counted per put request (one message or one batch) in Java's buckets of
``putMessageDistributeTime``, cumulative since start (Java shows the last minute's), with
Java's ``putMessageEntireTimeMax``; reads keep ``getMessageEntireTimeMax``. A put pays two clock
reads and a compare (~0.15 us on our machine).
"""

from __future__ import annotations

from bisect import bisect_left
from collections import deque
from collections.abc import Callable

from broker.store.types import GetMessageResult, GetMessageStatus

# Upper bounds (ms) of Java's putMessageDistributeTime buckets; one more bucket is open-ended.
PUT_BUCKET_BOUNDS_MS = (0, 10, 50, 100, 200, 500, 1000, 2000, 3000, 4000, 5000, 10_000)
PUT_BUCKET_NAMES = (
    "<=0ms", "0~10ms", "10~50ms", "50~100ms", "100~200ms", "200~500ms", "500ms~1s", "1~2s",
    "2~3s", "3~4s", "4~5s", "5~10s", "10s~",
)  # fmt: skip


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
        self.put_distribution = [0] * (len(PUT_BUCKET_BOUNDS_MS) + 1)
        self.put_time_sum_ns = 0
        self.put_time_max_ns = 0
        self.get_time_max_ns = 0

    def on_put_time(self, elapsed_ns: int) -> None:
        """A put request took ``elapsed_ns``; Java counts whole milliseconds."""
        self.put_time_sum_ns += elapsed_ns
        if elapsed_ns < 1_000_000:
            self.put_distribution[0] += 1
        else:
            self.put_distribution[bisect_left(PUT_BUCKET_BOUNDS_MS, elapsed_ns // 1_000_000)] += 1
        if elapsed_ns > self.put_time_max_ns:
            self.put_time_max_ns = elapsed_ns

    def on_get_time(self, elapsed_ns: int) -> None:
        if elapsed_ns > self.get_time_max_ns:
            self.get_time_max_ns = elapsed_ns

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
            "putMessageEntireTimeMax": str(self.put_time_max_ns // 1_000_000),
            "getMessageEntireTimeMax": str(self.get_time_max_ns // 1_000_000),
            "putMessageDistributeTime": " ".join(
                f"[{name}]:{count}"
                for name, count in zip(PUT_BUCKET_NAMES, self.put_distribution, strict=True)
            ),
        }
