"""The put counters and stats items' counters (broker/store/native/counters.c) against their
twins (broker/store/counters.py): the same calls give the same counters, buckets and errors,
and StoreStats and StatsItem read the same through them natively and pure."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.stats import BrokerStatsManager, StatsItem
from broker.store.counters import (
    PutCounters,
    PythonPutCounters,
    PythonStatsCounter,
    StatsCounter,
    put_bucket,
)
from broker.store.layout import PUT_BUCKET_BOUNDS_MS
from broker.store.stats import StoreStats
from broker.store.store_native import native
from tests.kits.nativekit import needs_store_native

TOP = (1 << 63) - 1
_amounts = st.one_of(
    st.integers(0, 5_000),
    st.sampled_from([0, 999_999, 1_000_000, 10_000_000, 10_000_001, 10**10, 10**11]),
    st.integers(0, TOP),
    st.integers(TOP - 10, TOP + 10),
)
_calls = st.lists(
    st.one_of(
        st.tuples(st.just("on_put"), _amounts, _amounts),
        st.tuples(st.just("on_put_times"), _amounts, _amounts),
        st.tuples(st.just("on_put_time"), _amounts),
        st.tuples(st.just("on_put_run"), _amounts, _amounts, _amounts, _amounts),
    ),
    max_size=12,
)


def _state(counters: object) -> tuple:
    return (
        counters.put_message_times_total,  # type: ignore[attr-defined]
        counters.put_message_size_total,  # type: ignore[attr-defined]
        counters.put_time_sum_ns,  # type: ignore[attr-defined]
        counters.put_time_max_ns,  # type: ignore[attr-defined]
        counters.put_distribution,  # type: ignore[attr-defined]
    )


def _apply(counters: object, call: tuple) -> str:
    try:
        getattr(counters, call[0])(*call[1:])
    except OverflowError:
        return "overflow"
    return "ok"


@needs_store_native
@settings(max_examples=300, deadline=None)
@given(_calls)
def test_the_c_counts_as_its_twin(calls: list[tuple]) -> None:
    c, twin = native.PutCounters(), PythonPutCounters()
    for call in calls:
        assert _apply(c, call) == _apply(twin, call), call
        assert _state(c) == _state(twin), call


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 10**12))
def test_the_bucket_is_java_s(elapsed_ns: int) -> None:
    counters = PutCounters()
    counters.on_put_time(elapsed_ns)
    ms = elapsed_ns // 1_000_000
    expected = 0 if elapsed_ns < 1_000_000 else sum(1 for b in PUT_BUCKET_BOUNDS_MS if b < ms)
    assert put_bucket(elapsed_ns) == expected
    assert counters.put_distribution == [int(i == expected) for i in range(13)]
    assert counters.put_time_max_ns == counters.put_time_sum_ns == elapsed_ns


def test_a_run_that_would_overflow_adds_nothing() -> None:
    for counters in (PutCounters(), PythonPutCounters()):
        counters.on_put_run(1, 10, 5, 1)
        before = _state(counters)
        with pytest.raises(OverflowError):
            counters.on_put_run(1, 10, TOP, 2)  # the time's sum passes int64
        assert _state(counters) == before


@needs_store_native
def test_bad_arguments_are_refused() -> None:
    counters = native.PutCounters()
    for bad in ((1,), (1, 2, 3), ("1", 2), (1.0, 2)):
        with pytest.raises(TypeError):
            counters.on_put(*bad)
    with pytest.raises(TypeError):
        counters.on_put_run(1, 2, 3)
    with pytest.raises(TypeError):
        counters.on_put_time("5")
    with pytest.raises(AttributeError):
        counters.put_distribution = []  # only the methods add to it
    assert _state(counters) == _state(PythonPutCounters())


def test_store_stats_and_stats_items_read_through_the_counters() -> None:
    stats = StoreStats(lambda: 1_000)
    assert isinstance(stats, PutCounters)
    stats.on_put_run(3, 300, 20_000_000, 3)  # 20 ms: the 10~50ms bucket
    stats.on_put(1, 7)
    stats.on_put_time(5)
    info = stats.runtime_info()
    assert info["putMessageTimesTotal"] == "4"
    assert info["putMessageSizeTotal"] == "307"
    assert info["putMessageEntireTimeMax"] == "20"
    assert info["putMessageDistributeTime"].startswith("[<=0ms]:1 [0~10ms]:0 [10~50ms]:3 ")
    manager = BrokerStatsManager(lambda: 0)
    manager.on_put("T", "C", 2, 20)
    manager.on_puts({"T": [3, 30]}, "C")
    nums, sizes, broker = manager.put_items["T", "C"]
    assert isinstance(nums, StatsCounter) and isinstance(nums, StatsItem)
    assert (nums.value, nums.times, sizes.value, sizes.times) == (5, 4, 50, 4)
    assert (broker.value, broker.times) == (5, 4)
    manager.sample(10_000)
    assert manager.get("TOPIC_PUT_NUMS", "T").snapshot("minute").sum == 5


def test_the_twin_counter_is_slotted_as_the_c() -> None:
    for counter in (StatsCounter(), PythonStatsCounter()):
        counter.value += 3
        counter.times += 1
        assert (counter.value, counter.times) == (3, 1)
        with pytest.raises(AttributeError):
            counter.other = 1  # type: ignore[attr-defined]
