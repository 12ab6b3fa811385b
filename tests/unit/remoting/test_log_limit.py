"""LogLimiter: a few lines per key and overall per period; the next line that passes says how
many were held back."""

from __future__ import annotations

from remoting.log_limit import LogLimiter


def test_lines_past_the_per_key_limit_are_held_back_and_counted() -> None:
    limiter = LogLimiter(per_key=2, overall=100, period_s=60)
    assert [limiter.admit("a", now=0.0) for _ in range(5)] == [0, 0, None, None, None]
    assert limiter.admit("b", now=1.0) == 0  # another peer has its own allowance
    assert limiter.admit("a", now=60.0) == 3  # a new period, and the count of what was held


def test_the_overall_limit_holds_back_every_key() -> None:
    limiter = LogLimiter(per_key=10, overall=3, period_s=60)
    assert [limiter.admit(key, now=0.0) for key in "abcd"] == [0, 0, 0, None]
    assert limiter.admit("d", now=61.0) == 1


def test_the_keys_remembered_are_bounded() -> None:
    limiter = LogLimiter(per_key=1, overall=10**9, period_s=60, max_keys=100)
    for n in range(1000):
        assert limiter.admit(n, now=0.0) == 0
    assert len(limiter._keys) <= 100


def test_forget_starts_every_key_and_the_total_afresh() -> None:
    limiter = LogLimiter(per_key=1, overall=1, period_s=60)
    assert limiter.admit("a", 0.0) == 0
    assert limiter.admit("a", 1.0) is None
    limiter.forget()
    assert limiter.admit("a", 2.0) == 0
