"""BrokerStatsManager: per topic and group counters over minute, hour and day windows, with an
injected clock (Java's StatsItem sampling: every 10 s x 7, 10 min x 7, 1 h x 25)."""

from __future__ import annotations

from broker.stats import (
    BROKER_GET_NUMS,
    BROKER_PUT_NUMS,
    GROUP_GET_NUMS,
    GROUP_GET_SIZE,
    TOPIC_PUT_NUMS,
    TOPIC_PUT_SIZE,
    BrokerStatsManager,
)


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000_000

    def __call__(self) -> int:
        return self.now


def test_a_topics_puts_over_the_last_minute() -> None:
    clock = Clock()
    stats = BrokerStatsManager(clock)
    for _ in range(6):  # 10 messages (2 sends) every 10 s for a minute
        stats.on_put("T", "East", 4, 4096)
        stats.on_put("T", "East", 6, 6144)
        clock.now += 10_000
        stats.sample(clock.now)
    minute = stats.get(TOPIC_PUT_NUMS, "T").snapshot("minute")
    assert minute.sum == 60 and minute.tps == 1.0 and minute.avgpt == 5.0  # 5 per send
    assert stats.get(TOPIC_PUT_SIZE, "T").snapshot("minute").sum == 61440
    assert stats.get(BROKER_PUT_NUMS, "East").snapshot("minute").sum == 60


def test_puts_count_per_topic_and_per_broker() -> None:
    """Each send counts its messages, bytes and one call per topic, and for the broker's
    cluster across its topics (the items a send finds once are the same ``get`` returns)."""
    stats = BrokerStatsManager(Clock())
    stats.on_put("T", "East", 4, 4096)
    stats.on_put("U", "East", 1, 100)
    stats.on_put("T", "East", 2, 2048)
    stats.on_put("T", "West", 1, 10)
    nums, sizes = stats.get(TOPIC_PUT_NUMS, "T"), stats.get(TOPIC_PUT_SIZE, "T")
    assert (nums.value, nums.times, sizes.value, sizes.times) == (7, 3, 6154, 3)
    assert (stats.get(TOPIC_PUT_NUMS, "U").value, stats.get(TOPIC_PUT_SIZE, "U").value) == (1, 100)
    east, west = stats.get(BROKER_PUT_NUMS, "East"), stats.get(BROKER_PUT_NUMS, "West")
    assert (east.value, east.times, west.value, west.times) == (7, 3, 1, 1)


def test_pulls_count_per_group_and_per_broker() -> None:
    """Each found pull counts its messages, bytes and one call (avgpt is per pull), per
    topic@group and for the broker's cluster, another group on the same topic apart."""
    clock = Clock()
    stats = BrokerStatsManager(clock)
    stats.on_get("T", "G", "East", 32, 32_000)
    stats.on_get("T", "G", "East", 16, 16_000)
    stats.on_get("T", "H", "East", 2, 2_000)
    clock.now += 10_000
    stats.sample(clock.now)
    nums, sizes = stats.get(GROUP_GET_NUMS, "T@G"), stats.get(GROUP_GET_SIZE, "T@G")
    assert (nums.value, nums.times, sizes.value, sizes.times) == (48, 2, 48_000, 2)
    assert nums.snapshot("minute").avgpt == 24.0
    assert stats.get(GROUP_GET_NUMS, "T@H").value == 2
    broker = stats.get(BROKER_GET_NUMS, "East")
    assert (broker.value, broker.times) == (50, 3)


def test_the_minute_window_forgets_what_is_older_than_a_minute() -> None:
    clock = Clock()
    stats = BrokerStatsManager(clock)
    stats.on_get("T", "G", "East", 100, 1000)
    for _ in range(7):  # then a quiet minute and more
        clock.now += 10_000
        stats.sample(clock.now)
    item = stats.get(GROUP_GET_NUMS, "T@G")
    assert item.snapshot("minute").sum == 0 and item.snapshot("minute").tps == 0.0
    clock.now += 600_000 - 70_000
    stats.sample(clock.now)  # the first hour sample is due
    assert item.snapshot("hour").sum == 100


def test_an_unknown_counter_is_none_and_a_new_one_starts_at_zero() -> None:
    stats = BrokerStatsManager(Clock())
    assert stats.get(TOPIC_PUT_NUMS, "Nobody") is None
    stats.on_put("New", "East", 1, 10)
    assert stats.get(TOPIC_PUT_NUMS, "New").snapshot("day").sum == 0  # no sample taken yet


def test_a_pass_of_single_sends_counts_each_message_as_its_own_request() -> None:
    """on_puts (a pass's {topic: [messages, bytes]} in one call) leaves every item as one
    on_put per send does, a topic's first put included: each message was a request, and
    Java's avgpt is messages per request however the broker grouped them."""
    one_call, per_send = BrokerStatsManager(Clock()), BrokerStatsManager(Clock())
    per_send.on_put("T", "East", 1, 10)
    one_call.on_put("T", "East", 1, 10)
    totals = {"T": [3, 300], "U": [2, 20]}
    one_call.on_puts(totals, "East")
    for topic, (count, size) in totals.items():
        for _ in range(count):
            per_send.on_put(topic, "East", 1, size // count)
    for name, key in ((TOPIC_PUT_NUMS, "T"), (TOPIC_PUT_SIZE, "T"), (TOPIC_PUT_NUMS, "U"),
                      (TOPIC_PUT_SIZE, "U"), (BROKER_PUT_NUMS, "East")):  # fmt: skip
        got, want = one_call.get(name, key), per_send.get(name, key)
        assert (got.value, got.times) == (want.value, want.times), (name, key)
    nums = one_call.get(TOPIC_PUT_NUMS, "T")
    assert (nums.value, nums.times) == (4, 4)
