"""BrokerStatsManager: per topic and per consumer group counters with minute, hour and day
windows, what VIEW_BROKER_STATS_DATA (``mqadmin statsAll``, monitoring exporters) reads.

As Java's StatsItem: each (stats name, key) keeps a running value (messages or bytes) and the
number of calls adding to it, and samples both every 10 s (the last 7 samples: one minute),
every 10 min (7: one hour) and every hour (25: one day). A window's figures come from its first
and last sample: the sum in between, that sum per second, and per call. Pure: the caller drives
``sample(now_ms)`` and passes the clock.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from broker.store.counters import StatsCounter
from broker.store.slotted import Slotted
from remoting.body import BrokerStatsItem

TOPIC_PUT_NUMS = "TOPIC_PUT_NUMS"
TOPIC_PUT_SIZE = "TOPIC_PUT_SIZE"
GROUP_GET_NUMS = "GROUP_GET_NUMS"
GROUP_GET_SIZE = "GROUP_GET_SIZE"
SNDBCK_PUT_NUMS = "SNDBCK_PUT_NUMS"
BROKER_PUT_NUMS = "BROKER_PUT_NUMS"
BROKER_GET_NUMS = "BROKER_GET_NUMS"

SAMPLE_EVERY_MS = 10_000
# window name: (sample period, samples kept)
WINDOWS = {"minute": (10_000, 7), "hour": (600_000, 7), "day": (3_600_000, 25)}


class StatsItem(StatsCounter):
    """``value`` and ``times`` are StatsCounter's (broker/store/counters.py: C int64s natively,
    which a plain pass adds to in C)."""

    __slots__ = ("samples",)

    def __init__(self, now_ms: int) -> None:
        super().__init__()
        # a first sample at creation, so the first window has a start
        self.samples = {
            name: deque([(now_ms, 0, 0)], maxlen=kept) for name, (_, kept) in WINDOWS.items()
        }

    def add(self, value: int, times: int = 1) -> None:
        self.value += value
        self.times += times

    def snapshot(self, window: str) -> BrokerStatsItem:
        samples = self.samples[window]
        first_ms, first_value, first_times = samples[0]
        last_ms, last_value, last_times = samples[-1]
        total = last_value - first_value
        elapsed = last_ms - first_ms
        calls = last_times - first_times
        return BrokerStatsItem(
            sum=total,
            tps=total * 1000.0 / elapsed if elapsed > 0 else 0.0,
            avgpt=total / calls if calls > 0 else 0.0,
        )


def _count(items: tuple[StatsItem, StatsItem, StatsItem], count: int, size: int) -> None:
    """A put's or a get's three items (messages, bytes, the broker's messages) counted in
    place: StatsItem.add's work without its three calls."""
    nums, sizes, broker_nums = items
    nums.value += count
    nums.times += 1
    sizes.value += size
    sizes.times += 1
    broker_nums.value += count
    broker_nums.times += 1


class BrokerStatsManager(Slotted):
    __slots__ = ("put_items",)  # read by the plain passes in C (broker/store/slotted.py)

    def __init__(self, clock: Callable[[], int]) -> None:
        self.clock = clock
        self.items: dict[tuple[str, str], StatsItem] = {}
        # on_get's (topic, group, cluster) -> its GROUP_GET_NUMS, GROUP_GET_SIZE and
        # BROKER_GET_NUMS items (of ``items``, which never drops one); ``get_items`` is the
        # same dict, never rebound: the plain pull pass counts a found pull in them itself
        # (broker/store/reads_found.py), once on_get has made them
        self._get_items: dict[tuple[str, str, str], tuple[StatsItem, StatsItem, StatsItem]] = {}
        self.get_items = self._get_items
        # on_put's (topic, cluster) -> its TOPIC_PUT_NUMS, TOPIC_PUT_SIZE and BROKER_PUT_NUMS
        # items, as on_get's
        self._put_items: dict[tuple[str, str], tuple[StatsItem, StatsItem, StatsItem]] = {}
        # the same dict, never rebound: a plain pass in one call (broker/store/plain_pass.py)
        # counts a round's sends in them itself once on_puts has made a topic's
        self.put_items = self._put_items
        self._last_sampled = {name: clock() for name in WINDOWS}

    def add(self, name: str, key: str, value: int, times: int = 1) -> None:
        item = self.items.get((name, key))
        if item is None:
            item = self.items[name, key] = StatsItem(self.clock())
        item.add(value, times)

    def on_put(self, topic: str, cluster: str, count: int, size: int) -> None:
        """A send stored ``count`` messages of ``size`` bytes in all on ``topic``."""
        # Per send (a lone sync send is a call each): one lookup, counted in place
        items = self._put_items.get((topic, cluster))
        if items is None:
            items = self._new_put_items(topic, cluster)
        _count(items, count, size)

    def on_puts(self, totals: dict[str, list[int]], cluster: str) -> None:
        """``on_put`` for each topic of a pass of single sends, {topic: [messages, bytes]}, in
        one call (once per selector round), counted in place. Every message was its own
        request, and Java counts a request as one time of TOPIC_PUT_NUMS and TOPIC_PUT_SIZE
        (``incTopicPutNums(topic, msgNum, 1)``): avgpt stays Java's however the requests
        were grouped."""
        put_items = self._put_items
        for topic, (count, size) in totals.items():
            items = put_items.get((topic, cluster))
            if items is None:
                items = self._new_put_items(topic, cluster)
            nums, sizes, broker_nums = items
            nums.value += count
            nums.times += count
            sizes.value += size
            sizes.times += count
            broker_nums.value += count
            broker_nums.times += count

    def _new_put_items(self, topic: str, cluster: str) -> tuple[StatsItem, StatsItem, StatsItem]:
        """A topic's first put: its TOPIC_PUT_NUMS, TOPIC_PUT_SIZE and BROKER_PUT_NUMS items."""
        self.add(TOPIC_PUT_NUMS, topic, 0, 0)
        self.add(TOPIC_PUT_SIZE, topic, 0, 0)
        self.add(BROKER_PUT_NUMS, cluster, 0, 0)
        items = self._put_items[topic, cluster] = (
            self.items[TOPIC_PUT_NUMS, topic],
            self.items[TOPIC_PUT_SIZE, topic],
            self.items[BROKER_PUT_NUMS, cluster],
        )
        return items

    def on_get(self, topic: str, group: str, cluster: str, count: int, size: int) -> None:
        """A pull of ``group`` found ``count`` messages of ``size`` bytes on ``topic``."""
        # Per pull: the three items found with one lookup, no key string built, and counted
        # in place (StatsItem.add's work without its three calls)
        items = self._get_items.get((topic, group, cluster))
        if items is None:
            key = f"{topic}@{group}"
            self.add(GROUP_GET_NUMS, key, 0, 0)
            self.add(GROUP_GET_SIZE, key, 0, 0)
            self.add(BROKER_GET_NUMS, cluster, 0, 0)
            items = self._get_items[topic, group, cluster] = (
                self.items[GROUP_GET_NUMS, key],
                self.items[GROUP_GET_SIZE, key],
                self.items[BROKER_GET_NUMS, cluster],
            )
        _count(items, count, size)

    def get(self, name: str, key: str) -> StatsItem | None:
        return self.items.get((name, key))

    def sample(self, now_ms: int) -> None:
        """Take each window's sample that is due (call at least every 10 s)."""
        for window, (period, _) in WINDOWS.items():
            if now_ms - self._last_sampled[window] >= period:
                self._last_sampled[window] = now_ms
                for item in self.items.values():
                    item.samples[window].append((now_ms, item.value, item.times))
