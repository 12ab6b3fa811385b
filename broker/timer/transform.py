"""Pure: whether a message sent is a timer message, and its due time (5.x HookUtils
.transformTimerMessage). A timer message is parked in ``rmq_sys_wheel_timer`` queue 0 with
TIMER_OUT_MS, REAL_TOPIC and REAL_QID. TIMER_OUT_MS is 5.x's value: the due time rounded down to
the precision, one step lower when it is a multiple of it (5.x's wheel slot). We deliver at
TIMER_OUT_MS + precision: never before the time asked, at most one precision after it.
"""

from __future__ import annotations

from remoting.message import MessageConst

TIMER_TOPIC = "rmq_sys_wheel_timer"
TIMER_DELIVER_MS = "TIMER_DELIVER_MS"
TIMER_DELAY_SEC = "TIMER_DELAY_SEC"
TIMER_DELAY_MS = "TIMER_DELAY_MS"
TIMER_OUT_MS = "TIMER_OUT_MS"
TIMER_KEYS = (TIMER_DELAY_SEC, TIMER_DELAY_MS, TIMER_DELIVER_MS)  # 5.x reads them in this order
LONG_MAX = 2**63 - 1


class TimerRefused(ValueError):
    """WHEEL_TIMER_MSG_ILLEGAL / WHEEL_TIMER_NOT_ENABLE: the send is answered MESSAGE_ILLEGAL."""


def is_timer(properties: dict[str, str]) -> bool:
    # three lookups: the cost a send without timer properties pays
    return (
        TIMER_DELIVER_MS in properties
        or TIMER_DELAY_SEC in properties
        or TIMER_DELAY_MS in properties
    )


def _long(text: str, key: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise TimerRefused(f"timer message illegal: {key}={text[:40]!r} is not a number") from None
    if not -LONG_MAX - 1 <= value <= LONG_MAX:
        raise TimerRefused(f"timer message illegal: {key}={text[:40]} is out of range")
    return value


def deliver_ms(properties: dict[str, str], now_ms: int) -> int:
    """The due time the properties ask for (ms since the epoch), as 5.x computes it."""
    if TIMER_DELAY_SEC in properties:
        return now_ms + _long(properties[TIMER_DELAY_SEC], TIMER_DELAY_SEC) * 1000
    if TIMER_DELAY_MS in properties:
        return now_ms + _long(properties[TIMER_DELAY_MS], TIMER_DELAY_MS)
    return _long(properties[TIMER_DELIVER_MS], TIMER_DELIVER_MS)


def park(
    properties: dict[str, str],
    topic: str,
    queue_id: int,
    *,
    now_ms: int,
    precision_ms: int,
    max_delay_sec: int,
) -> int | None:
    """Mark a timer message to be parked: its rounded due time (also set as TIMER_OUT_MS), or
    None when it is due already (5.x then stores it on its own topic at once)."""
    due = deliver_ms(properties, now_ms)
    if due <= now_ms:
        return None
    if due - now_ms > max_delay_sec * 1000:
        raise TimerRefused(
            "timer message illegal, the delay time should not be bigger than the max delay "
            f"{max_delay_sec * 1000}ms"
        )
    due = due - precision_ms if due % precision_ms == 0 else due // precision_ms * precision_ms
    properties[TIMER_OUT_MS] = str(due)
    properties[MessageConst.REAL_TOPIC] = topic
    properties[MessageConst.REAL_QID] = str(queue_id)
    return due
