"""PartialFrameBudget: one limit over every connection's partial frame; over it, the holder
whose frame grew least recently is named, never one holding no more than a read."""

from __future__ import annotations

from remoting.budget import TRIM_AFTER_PEAK_BYTES, PartialFrameBudget


def test_the_total_follows_each_holders_changes() -> None:
    budget = PartialFrameBudget(limit=100, floor=10)
    budget.change("a", 0, 40, now=1.0)
    budget.change("b", 0, 30, now=2.0)
    budget.change("a", 40, 0, now=3.0)
    assert budget.total == 30 and not budget.over
    budget.change("b", 30, 101, now=4.0)
    assert budget.over


def test_the_stalest_holder_is_the_one_whose_frame_grew_least_recently() -> None:
    budget = PartialFrameBudget(limit=100, floor=10)
    budget.change("slow", 0, 50, now=1.0)
    budget.change("fast", 0, 20, now=2.0)
    budget.change("fast", 20, 40, now=3.0)
    assert budget.stalest() == "slow"
    budget.change("slow", 50, 60, now=4.0)  # it made progress
    assert budget.stalest() == "fast"
    assert budget.idle_s("fast", now=5.0) == 2.0


def test_a_frame_that_shrank_has_not_made_progress() -> None:
    # A read that completed one frame and started another leaves less held: the holder keeps
    # its place in the queue rather than looking fresh.
    budget = PartialFrameBudget(limit=100, floor=10)
    budget.change("a", 0, 50, now=1.0)
    budget.change("b", 0, 50, now=2.0)
    budget.change("a", 50, 30, now=3.0)
    assert budget.stalest() == "a"


def test_holders_of_at_most_one_read_are_never_picked() -> None:
    budget = PartialFrameBudget(limit=15, floor=10)
    budget.change("small", 0, 10, now=1.0)
    budget.change("big", 0, 11, now=2.0)
    assert budget.over and budget.stalest() == "big"
    budget.change("big", 11, 0, now=3.0)
    assert budget.stalest() is None


def test_a_trim_is_due_once_after_the_held_bytes_fall_far_from_a_large_peak() -> None:
    budget = PartialFrameBudget(limit=1 << 40, floor=10)
    budget.change("a", 0, TRIM_AFTER_PEAK_BYTES, now=1.0)
    assert not budget.take_trim()
    budget.change("a", TRIM_AFTER_PEAK_BYTES, TRIM_AFTER_PEAK_BYTES // 4, now=2.0)
    assert budget.take_trim()
    assert not budget.take_trim()  # the peak starts again from here
    budget.change("a", TRIM_AFTER_PEAK_BYTES // 4, 0, now=3.0)
    assert not budget.take_trim()  # too small a peak to bother
