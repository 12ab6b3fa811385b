"""Timer messages' pure rules (5.x HookUtils.transformTimerMessage) and topic attributes."""

from __future__ import annotations

import pytest

from broker import topic_attributes
from broker.timer import transform
from broker.timer.transform import TimerRefused


def park(props: dict[str, str], now: int = 10_000, precision: int = 1000, max_sec: int = 60):
    return transform.park(props, "T", 3, now_ms=now, precision_ms=precision, max_delay_sec=max_sec)


def test_due_time_is_rounded_as_5x_and_the_real_address_kept() -> None:
    props = {"TIMER_DELIVER_MS": "12500"}
    assert park(props) == 12_000
    assert props["TIMER_OUT_MS"] == "12000"
    assert props["REAL_TOPIC"] == "T" and props["REAL_QID"] == "3"
    assert park({"TIMER_DELIVER_MS": "13000"}) == 12_000  # a multiple: one step lower
    assert park({"TIMER_DELAY_SEC": "2"}) == 11_000  # 12000 is a multiple
    assert park({"TIMER_DELAY_MS": "1", "TIMER_DELIVER_MS": "99999"}) == 10_000  # DELAY_MS first
    assert park({"TIMER_DELIVER_MS": "9999"}) is None  # already due: stored at once


@pytest.mark.parametrize(
    "props",
    [
        {"TIMER_DELIVER_MS": "71000"},  # past 60 s
        {"TIMER_DELAY_SEC": "61"},
        {"TIMER_DELIVER_MS": "soon"},
        {"TIMER_DELAY_MS": str(2**63)},
    ],
)
def test_refusals(props: dict[str, str]) -> None:
    with pytest.raises(TimerRefused, match="timer message illegal"):
        park(props)


def test_is_timer() -> None:
    assert not transform.is_timer({"TAGS": "a", "DELAY": "3"})
    assert all(transform.is_timer({k: "1"}) for k in transform.TIMER_KEYS)


def test_topic_attributes_follow_5x_rules() -> None:
    alter = topic_attributes.alter
    assert alter(None, "+message.type=FIFO") == {"message.type": "FIFO"}
    assert alter({"message.type": "FIFO"}, None) == {"message.type": "FIFO"}
    assert alter({"message.type": "FIFO"}, "-message.type") is None
    assert alter({"message.type": "FIFO"}, "+message.type=DELAY") == {"message.type": "DELAY"}
    for bad, why in [
        ("message.type=FIFO", "format is wrong"),
        ("message.type", "format is wrong"),
        ("+message.type=SOON", "not in set"),
        ("+colour=red", "unsupported key"),
        ("+message.type=FIFO,-message.type", "duplication"),
        ("+" + "x" * 2000 + "=1", "longer than"),
    ]:
        with pytest.raises(topic_attributes.AttributeError_, match=why):
            alter(None, bad)
