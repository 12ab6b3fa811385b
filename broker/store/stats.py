"""StoreStats: counters for GET_BROKER_RUNTIME_INFO (what Java's StoreStatsService reports)
and the metrics endpoint.

Rates are Java's: a sample of the totals every second (``StoreStatsService.run``, as Java's
StoreStatsService thread does), the last 601 kept, and ``putTps``, ``getFoundTps``,
``getMissTps``, ``getTotalTps`` and ``getTransferedTps`` each three rates over the last 10 s,
60 s and 600 s, space-separated; a window the samples do not cover yet is empty, as in Java
(a broker up for 30 s reports ``putTps`` as "12.5 11.0 ").

Put latency is counted per put request (one message or one batch) in Java's buckets of
``putMessageDistributeTime``, cumulative since start (Java shows the last minute's), with
Java's ``putMessageEntireTimeMax``; reads keep ``getMessageEntireTimeMax``. A put pays two clock
reads and a compare (~0.15 us on our machine). The put counters and their methods are
``PutCounters``' (broker/store/counters.py: C int64s natively, which a plain pass adds to in
C, broker/store/native/plain_pass.c).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

import trio

from broker.store.counters import PutCounters
from broker.store.types import GetMessageResult, GetMessageStatus

_STATUS_FOUND = GetMessageStatus.FOUND  # bound once: ~80 ns a pull from the Enum class

TPS_WINDOWS_S = (10, 60, 600)  # Java's StoreStatsService: "10s 1min 10min"
SAMPLE_INTERVAL_S = 1.0  # Java's FREQUENCY_OF_SAMPLING
# a sample: (ms, puts, gets found, gets missed, messages transferred by gets)
_PUT, _FOUND, _MISS, _TRANSFERRED = 1, 2, 3, 4

# PUT_BUCKET_BOUNDS_MS (broker/store/layout.py): the upper bounds (ms) of Java's
# putMessageDistributeTime buckets; one more bucket is open-ended.
PUT_BUCKET_NAMES = (
    "<=0ms", "0~10ms", "10~50ms", "50~100ms", "100~200ms", "200~500ms", "500ms~1s", "1~2s",
    "2~3s", "3~4s", "4~5s", "5~10s", "10s~",
)  # fmt: skip


class StoreStats(PutCounters):
    def __init__(self, clock: Callable[[], int]) -> None:
        super().__init__()
        self.clock = clock
        self.boot_timestamp = clock()
        self.get_message_times_total_found = 0
        self.get_message_times_total_miss = 0
        self.get_message_transferred_msg_count = 0
        self._samples: deque[tuple[int, int, int, int, int]] = deque(maxlen=TPS_WINDOWS_S[-1] + 1)
        self.get_time_max_ns = 0

    def on_get(self, result: GetMessageResult, elapsed_ns: int = 0) -> None:
        """A GetMessage answered in ``elapsed_ns`` (one call per pull, not two)."""
        if elapsed_ns > self.get_time_max_ns:
            self.get_time_max_ns = elapsed_ns
        if result.status is _STATUS_FOUND:
            self.get_message_times_total_found += 1
            self.get_message_transferred_msg_count += result.message_count
        else:
            self.get_message_times_total_miss += 1

    def sample(self) -> None:
        """Java's sampling(): the totals now, every SAMPLE_INTERVAL_S."""
        self._samples.append(
            (
                self.clock(),
                self.put_message_times_total,
                self.get_message_times_total_found,
                self.get_message_times_total_miss,
                self.get_message_transferred_msg_count,
            )
        )

    def tps(self, window_s: int, *fields: int) -> float | None:
        """Per second over the last ``window_s`` samples of the sum of ``fields`` (None: the
        samples do not cover it yet)."""
        samples = self._samples
        if len(samples) <= window_s:
            return None
        first, last = samples[-(window_s + 1)], samples[-1]
        elapsed_ms = last[0] - first[0]
        if elapsed_ms <= 0:
            return None
        return sum(last[f] - first[f] for f in fields) / elapsed_ms * 1000

    def put_tps(self) -> float:
        """Puts per second over the last 10 s (0 before there are 10 s of samples)."""
        return self.tps(TPS_WINDOWS_S[0], _PUT) or 0.0

    def _rates(self, *fields: int) -> str:
        """Java's "10s 1min 10min" string; a window not covered yet is empty."""
        rates = (self.tps(window, *fields) for window in TPS_WINDOWS_S)
        return " ".join("" if rate is None else repr(rate) for rate in rates)

    def runtime_info(self) -> dict[str, str]:
        return {
            "bootTimestamp": str(self.boot_timestamp),
            "runtime": f"{(self.clock() - self.boot_timestamp) // 1000} s",
            "putMessageTimesTotal": str(self.put_message_times_total),
            "putMessageSizeTotal": str(self.put_message_size_total),
            "getMessageTimesTotalFound": str(self.get_message_times_total_found),
            "getMessageTimesTotalMiss": str(self.get_message_times_total_miss),
            "getMessageTransferedMsgCount": str(self.get_message_transferred_msg_count),
            "putTps": self._rates(_PUT),
            "getFoundTps": self._rates(_FOUND),
            "getMissTps": self._rates(_MISS),
            "getTotalTps": self._rates(_FOUND, _MISS),
            "getTransferedTps": self._rates(_TRANSFERRED),
            "putMessageEntireTimeMax": str(self.put_time_max_ns // 1_000_000),
            "getMessageEntireTimeMax": str(self.get_time_max_ns // 1_000_000),
            "putMessageDistributeTime": " ".join(
                f"[{name}]:{count}"
                for name, count in zip(PUT_BUCKET_NAMES, self.put_distribution, strict=True)
            ),
        }


class StoreStatsService:
    """Samples ``stats`` every second, as Java's StoreStatsService thread does."""

    name = "store-stats"

    def __init__(self, stats: StoreStats, interval_s: float = SAMPLE_INTERVAL_S) -> None:
        self.stats = stats
        self.interval_s = interval_s

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            self.stats.sample()
            await trio.sleep(self.interval_s)
