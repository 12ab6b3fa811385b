"""The store's put counters and the broker's stats items' counters (issue 27, passstate round):
``PutCounters``, the base of StoreStats (broker/store/stats.py), and ``StatsCounter``, the base
of StatsItem (broker/stats.py). Natively they are broker/store/native/counters.c's types, whose
int64 fields plain_pass adds to without a Python int per addition; these classes are their
twins, which pure mode uses (tests/unit/store/test_counters.py holds the two alike).

The counters are Java's longs: an addition past int64 raises OverflowError (Java would wrap; a
running broker never counts 2^63 bytes or ns). PythonStatsCounter is plain slots, which the
Python paths add to with ``+=``: past int64 it would go on counting (not reached either). ``put_distribution`` is a new list of the puts
per bucket of PUT_BUCKET_BOUNDS_MS, read by the stats' readers; only the methods add to it.
"""

from __future__ import annotations

from bisect import bisect_left

from broker.store.layout import PUT_BUCKET_BOUNDS_MS
from broker.store.store_native import native

_LOW, _HIGH = -(1 << 63), (1 << 63) - 1


def _int64(value: int) -> int:
    if not _LOW <= value <= _HIGH:
        raise OverflowError("a put counter past int64")
    return value


def _arguments(*values: int) -> None:
    """The C's checks of its arguments: ints (TypeError) of int64 (OverflowError)."""
    for value in values:
        if not isinstance(value, int):
            raise TypeError("the put counters take ints")
        _int64(value)


def put_bucket(elapsed_ns: int) -> int:
    """The bucket of a put that took ``elapsed_ns``: Java counts whole ms (under 1 ms: the
    first)."""
    if elapsed_ns < 1_000_000:
        return 0
    return bisect_left(PUT_BUCKET_BOUNDS_MS, elapsed_ns // 1_000_000)


class PythonPutCounters:
    __slots__ = (
        "_distribution",
        "put_message_size_total",
        "put_message_times_total",
        "put_time_max_ns",
        "put_time_sum_ns",
    )

    def __init__(self) -> None:
        self.put_message_times_total = 0
        self.put_message_size_total = 0
        self.put_time_sum_ns = 0
        self.put_time_max_ns = 0
        self._distribution = [0] * (len(PUT_BUCKET_BOUNDS_MS) + 1)

    @property
    def put_distribution(self) -> list[int]:
        return list(self._distribution)

    def on_put(self, count: int, size: int) -> None:
        """``count`` messages of ``size`` bytes in all were stored."""
        _arguments(count, size)
        times = _int64(self.put_message_times_total + count)
        self.put_message_size_total = _int64(self.put_message_size_total + size)
        self.put_message_times_total = times

    def on_put_times(self, elapsed_ns: int, count: int) -> None:
        """``count`` put requests took ``elapsed_ns`` each (a group's share of its pass)."""
        _arguments(elapsed_ns, count)
        at = put_bucket(elapsed_ns)
        spent = _int64(_int64(elapsed_ns * count) + self.put_time_sum_ns)
        self._distribution[at] = _int64(self._distribution[at] + count)
        self.put_time_sum_ns = spent
        if elapsed_ns > self.put_time_max_ns:
            self.put_time_max_ns = elapsed_ns

    def on_put_time(self, elapsed_ns: int) -> None:
        """A put request took ``elapsed_ns``."""
        self.on_put_times(elapsed_ns, 1)

    def on_put_run(self, messages: int, size: int, elapsed_ns: int, puts: int) -> None:
        """``on_put`` and ``on_put_times`` in one call (a plain pass's bookkeeping, once per
        selector round): both checked before either adds."""
        _arguments(messages, size, elapsed_ns, puts)
        was = (self.put_message_times_total, self.put_message_size_total)
        self.on_put(messages, size)
        try:
            self.on_put_times(elapsed_ns, puts)
        except OverflowError:
            self.put_message_times_total, self.put_message_size_total = was
            raise


class PythonStatsCounter:
    __slots__ = ("times", "value")

    def __init__(self) -> None:
        self.value = 0
        self.times = 0


PutCounters = PythonPutCounters if native is None else native.PutCounters
StatsCounter = PythonStatsCounter if native is None else native.StatsCounter
