"""How much detail the consumer figures get (broker/metrics/cardinality.py) and the walk that
follows the plan (broker/metrics/group_lag.py), on a broker made of plain objects."""

from __future__ import annotations

import types

import trio

from broker.config import BrokerConfig
from broker.metrics.cardinality import GroupTotals, plan, stats_series
from broker.metrics.queue_families import QueueFamilies, _in_slices
from broker.stats import GROUP_GET_NUMS, GROUP_GET_SIZE, SNDBCK_PUT_NUMS, TOPIC_PUT_NUMS
from metrics.lag import Lag
from tests.kits.metricskit import parse, value


def by_group(groups: int, queues: int) -> dict[str, int]:
    return {f"G{g}": queues for g in range(groups)}


def bounds(queues: int = 8, queue_series: int = 40, pair_series: int = 100) -> dict[str, int]:
    return {"max_queues": queues, "max_queue_series": queue_series, "max_pair_series": pair_series}


def test_per_queue_series_stop_above_their_bound() -> None:
    assert plan(by_group(2, 8), 2, 0, **bounds()).per_queue == {"G0", "G1"}  # 32 series
    over = plan(by_group(3, 8), 3, 0, **bounds())  # 48 series
    assert over.per_queue == frozenset() and not over.per_group and over.queue_series == 48


def test_groups_over_the_queue_limit_neither_get_nor_count_per_queue_series() -> None:
    groups = {**by_group(2, 8), "Big": 100}
    assert plan(groups, 3, 0, **bounds()).per_queue == {"G0", "G1"}


def test_past_the_pair_bound_the_figures_are_per_group_and_never_per_queue() -> None:
    # 20 pairs x 5 families = 100 series: at the bound, still per group and topic
    assert not plan(by_group(2, 8), 20, 0, **bounds()).per_group
    # the pull stats of the pairs count too
    over = plan(by_group(2, 8), 20, 1, **bounds())
    assert over.per_group and over.per_queue == frozenset() and over.pair_series == 101


def test_the_issue_scale_with_default_bounds_is_per_group() -> None:
    config = BrokerConfig(broker_name="b")
    scale = plan(
        by_group(50, 8_000),
        50_000,
        0,
        max_queues=config.metrics_per_queue_max_queues,
        max_queue_series=config.metrics_per_queue_max_series,
        max_pair_series=config.metrics_per_group_topic_max_series,
    )
    assert scale.per_group and scale.pair_series == 250_000


def test_stats_series_count_only_the_per_group_and_topic_items() -> None:
    names = [GROUP_GET_NUMS, GROUP_GET_SIZE, SNDBCK_PUT_NUMS, TOPIC_PUT_NUMS, "BROKER_PUT_NUMS"]
    assert stats_series(names) == 5


def test_group_totals_add_messages_and_keep_the_oldest_by_kind() -> None:
    totals = GroupTotals()
    totals.add("A", Lag(3, 2_000), 10)
    totals.add("B", Lag(4, 1_000), 5)
    totals.add("%RETRY%G", Lag(1, 500), 1)
    totals.add("C", Lag(0, 0), 7)
    assert totals.lag("ordinary") == Lag(7, 1_000)
    assert totals.lag("ordinary", "retry") == Lag(8, 500)
    assert totals.lag("dlq") is None
    assert totals.committed == 23


# ---------------------------------------------------------------- the walk, on a fake broker


class Queue:
    def __init__(self, max_offset: int, first_store_ms: int) -> None:
        self.min_queue_offset, self.max_queue_offset = 0, max_offset
        self.first_store_ms = first_store_ms

    def unit(self, at: int) -> tuple[int, int, int]:
        return (self.first_store_ms + at, 0, 0)  # the "phys offset" is the store time


def fake_broker(queues: dict[tuple[str, int], Queue], offsets: dict, **keys: int):  # type: ignore[no-untyped-def]
    store = types.SimpleNamespace(
        consume_queues=types.SimpleNamespace(find=lambda t, q: queues.get((t, q))),
        commit_log=types.SimpleNamespace(store_timestamp_at=lambda phys: phys),
        get_max_offset_in_queue=lambda t, q: queues[t, q].max_queue_offset,
    )
    topics = {t for t, _ in queues}
    return types.SimpleNamespace(
        config=BrokerConfig(broker_name="b", **keys),
        store=store,
        topics=types.SimpleNamespace(
            table={t: types.SimpleNamespace(write_queue_nums=2) for t in topics}
        ),
        offsets=types.SimpleNamespace(table=offsets),
        clients=types.SimpleNamespace(consumer_groups={}),
        stats=types.SimpleNamespace(items={}),
    )


async def snapshot(broker) -> str:  # type: ignore[no-untyped-def]
    families = QueueFamilies(broker)
    return "".join(f.take() for f in await families.collect(now_ms=10_000))


QUEUES = {
    ("A", 0): Queue(5, 1_000),
    ("A", 1): Queue(5, 3_000),
    ("B", 0): Queue(2, 2_000),
    ("B", 1): Queue(2, 2_000),
    ("%RETRY%G", 0): Queue(4, 500),
    ("%RETRY%G", 1): Queue(4, 500),
}
# G lags 3 + 0 on A (oldest unconsumed stored at 1,002), 1 + 2 on B (2,001), 4 on its retry
# topic (500); H lags 1 on A queue 1 (3,004)
OFFSETS = {
    "A@G": {0: 2, 1: 5},
    "B@G": {0: 1, 1: 0},
    "%RETRY%G@G": {0: 0},
    "A@H": {1: 4},
}


async def test_per_group_and_topic_within_the_bounds() -> None:
    samples = parse(await snapshot(fake_broker(QUEUES, OFFSETS)))
    lag = "rocketmq_consumer_lag_messages"
    assert value(samples, lag, consumer_group="G", topic="A") == 3
    assert value(samples, lag, consumer_group="G", topic="B") == 3
    assert value(samples, "rocketmq_consumer_queue_lag_messages", topic="B", queue_id="1") == 2
    assert value(samples, "rocketmq_metrics_group_topic_series_aggregated") == 0


async def test_per_group_past_the_pair_bound_keeps_each_groups_lag_right() -> None:
    broker = fake_broker(QUEUES, OFFSETS, metrics_per_group_topic_max_series=19)  # 4 pairs: 20
    samples = parse(await snapshot(broker))
    lag, latency = "rocketmq_consumer_lag_messages", "rocketmq_consumer_lag_latency"
    assert value(samples, lag, consumer_group="G", topic="", is_retry="false") == 6
    assert value(samples, latency, consumer_group="G", topic="", is_retry="false") == 10_000 - 1_002
    assert value(samples, lag, consumer_group="G", topic="", is_retry="true") == 4
    assert value(samples, latency, consumer_group="G", topic="", is_retry="true") == 10_000 - 500
    assert value(samples, lag, consumer_group="H", topic="") == 1
    assert value(samples, "rocketmq_group_diff", group="G", topic="") == 6
    assert value(samples, "rocketmq_group_retrydiff", group="G", topic="") == 4
    assert value(samples, "rocketmq_consumer_offset", group="G", topic="") == 2 + 5 + 1
    assert value(samples, "rocketmq_group_get_latency_by_storetime", group="G") == 9_500
    assert value(samples, "rocketmq_metrics_group_topic_series_aggregated") == 1
    assert value(samples, "rocketmq_metrics_queue_series_aggregated") == 1
    consumer = ("rocketmq_consumer_", "rocketmq_group_")
    named = [dict(labels) for (name, labels) in samples if name.startswith(consumer)]
    assert named and all(labels.get("topic", "") == "" for labels in named)
    assert not any(name.startswith("rocketmq_consumer_queue_") for name, _ in samples)
    # the per-topic families of the producers are not the consumers' and stay per topic
    assert value(samples, "rocketmq_producer_offset", topic="A") == 10


async def test_pull_stats_are_summed_per_group_past_the_bound() -> None:
    stats_item = types.SimpleNamespace(
        value=7, snapshot=lambda window: types.SimpleNamespace(sum=7, tps=0.5)
    )
    broker = fake_broker(QUEUES, OFFSETS, metrics_per_group_topic_max_series=19)
    broker.stats.items = {
        (GROUP_GET_NUMS, "A@G"): stats_item,
        (GROUP_GET_NUMS, "B@G"): stats_item,
        (GROUP_GET_NUMS, "A@H"): stats_item,
    }
    samples = parse(await snapshot(broker))
    assert value(samples, "rocketmq_messages_out_total", consumer_group="G", topic="") == 14
    assert value(samples, "rocketmq_consumer_tps", group="G", topic="") == 1.0
    assert value(samples, "rocketmq_consumer_tps", group="H", topic="") == 0.5


async def test_the_walk_holds_the_loop_in_slices() -> None:
    # many pairs, no time allowed per slice: other tasks run in between (the walk is a
    # generator of one step per pair, as _in_slices runs it)
    queues = {(f"T{t}", 0): Queue(1, 1_000) for t in range(200)}
    offsets = {f"T{t}@G": {0: 0} for t in range(200)}
    families = QueueFamilies(fake_broker(queues, offsets, metrics_per_group_topic_max_series=1))
    ran = 0

    async def other() -> None:
        nonlocal ran
        while True:
            ran += 1
            await trio.lowlevel.checkpoint()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(other)
        await _in_slices(families.lag.walk(10_000), slice_s=0.0)
        nursery.cancel_scope.cancel()
    assert ran >= 10
    assert families.lag_messages.take().endswith(
        'topic="",consumer_group="G",is_retry="false",is_system="false"} 200\n'
    )
