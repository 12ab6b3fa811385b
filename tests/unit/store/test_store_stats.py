"""StoreStats' rates as Java's StoreStatsService reports them in GET_BROKER_RUNTIME_INFO:
"10s 1min 10min" from a sample a second, a window not covered yet empty; clusterList reads the
first, the console the second."""

from __future__ import annotations

from broker.store.stats import StoreStats
from broker.store.types import GetMessageResult, GetMessageStatus
from client.mqadmin.cluster import first_number
from console.pages.cluster import put_tps_text


class Clock:
    def __init__(self) -> None:
        self.ms = 1_700_000_000_000

    def __call__(self) -> int:
        return self.ms


def run_for(stats: StoreStats, clock: Clock, seconds: int, puts_a_second: int) -> None:
    for _ in range(seconds):
        clock.ms += 1000
        stats.on_put(puts_a_second, 100 * puts_a_second)
        stats.sample()


def test_put_tps_is_three_windows_filled_as_the_samples_cover_them() -> None:
    clock = Clock()
    stats = StoreStats(clock)
    stats.sample()
    assert stats.runtime_info()["putTps"] == "  "  # nothing covered: three empty windows
    run_for(stats, clock, 10, 5)
    assert stats.runtime_info()["putTps"] == "5.0  "
    run_for(stats, clock, 50, 5)
    assert stats.runtime_info()["putTps"] == "5.0 5.0 "
    run_for(stats, clock, 480, 20)
    run_for(stats, clock, 60, 2)
    ten_s, one_min, ten_min = stats.runtime_info()["putTps"].split(" ")
    assert (float(ten_s), float(one_min)) == (2.0, 2.0)
    assert float(ten_min) == (480 * 20 + 60 * 2 + 60 * 5) / 600
    assert stats.put_tps() == 2.0
    assert first_number(stats.runtime_info()["putTps"]) == 2.0  # clusterList's column
    assert put_tps_text(stats.runtime_info()["putTps"], None) == "2.00"  # the console's


def test_get_rates_count_found_missed_and_transferred() -> None:
    clock = Clock()
    stats = StoreStats(clock)
    stats.sample()
    found_four = GetMessageResult(status=GetMessageStatus.FOUND, buffers=[memoryview(b"m")] * 4)
    for _ in range(10):
        clock.ms += 1000
        stats.on_get(found_four)
        stats.on_get(GetMessageResult(status=GetMessageStatus.NO_MESSAGE_IN_QUEUE))
        stats.on_get(GetMessageResult(status=GetMessageStatus.NO_MESSAGE_IN_QUEUE))
        stats.sample()
    info = stats.runtime_info()
    assert info["getFoundTps"] == "1.0  "
    assert info["getMissTps"] == "2.0  "
    assert info["getTotalTps"] == "3.0  "
    assert info["getTransferedTps"] == "4.0  "


def test_cluster_list_shows_zero_for_a_broker_too_young_for_a_rate() -> None:
    from client.mqadmin.cluster import _tps

    assert _tps({"putTps": "  "}, "putTps", "send").startswith("0.00(")
    assert _tps({"putTps": "3.5  "}, "putTps", "send").startswith("3.50(")
    assert _tps({}, "putTps", "send") == "-"


def test_a_plain_pass_counts_as_its_puts_and_their_times() -> None:
    """on_put_run (a pass's bookkeeping in one call) leaves the counters, the latency buckets,
    the sum and the maximum as on_put and on_put_times do: fast passes, a new maximum, a slow
    one."""
    one_call, two_calls = StoreStats(Clock()), StoreStats(Clock())
    for messages, size, elapsed_ns, puts in (
        (3, 300, 40_000, 3), (1, 100, 90_000, 1), (2, 200, 50_000, 2), (32, 3200, 12_000_000, 1),
        (4, 400, 20_000, 4), (8, 800, 30_000, 1),
    ):  # fmt: skip
        one_call.on_put_run(messages, size, elapsed_ns, puts)
        two_calls.on_put(messages, size)
        two_calls.on_put_times(elapsed_ns, puts)
        assert one_call.runtime_info() == two_calls.runtime_info()
        assert one_call.put_time_sum_ns == two_calls.put_time_sum_ns
    assert one_call.runtime_info()["putMessageEntireTimeMax"] == "12"
    assert one_call.put_distribution[0] == 11 and one_call.put_message_times_total == 50
