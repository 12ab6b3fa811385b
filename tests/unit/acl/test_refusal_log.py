"""The ACL's refusal lines: one per reason per window and then a count, so one flooding
client neither fills the log nor hides another client's refusal for a different reason; the reasons
tracked are bounded whatever keys clients invent."""

from __future__ import annotations

import logging

import pytest

from acl import refusal_log
from acl.refusal_log import LOG_WINDOW_S, MAX_REASONS, RefusalLog


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(autouse=True)
def warnings_captured(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="acl.hook")


def refuse(log: RefusalLog, reason: str, key: str = "k") -> None:
    log("127.0.0.1:5000", 10, key, reason)


def test_a_retrying_client_is_one_line_a_window_then_a_count(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    log = RefusalLog(clock)
    for _ in range(5):
        refuse(log, "Check signature failed")
    assert caplog.messages == [
        "ACL refused: peer=127.0.0.1:5000 code=10 accessKey=k reason=Check signature failed"
    ]
    clock.now += LOG_WINDOW_S
    refuse(log, "Check signature failed")
    assert caplog.messages[1:] == [
        "ACL: 4 more refusals in the last 10 s (reason=Check signature failed)",
        "ACL refused: peer=127.0.0.1:5000 code=10 accessKey=k reason=Check signature failed",
    ]


def test_another_reason_in_the_same_window_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    log = RefusalLog(Clock())
    refuse(log, "Check signature failed")
    refuse(log, "Check signature failed")
    refuse(log, "No acl config for stranger1", "stranger1")
    assert [line.rpartition("reason=")[2] for line in caplog.messages] == [
        "Check signature failed",
        "No acl config for stranger1",
    ]


def test_invented_keys_share_one_window_past_the_bound(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    log = RefusalLog(clock)
    for n in range(MAX_REASONS + 50):
        refuse(log, f"No acl config for key{n}", f"key{n}")
    assert len(log._started) == MAX_REASONS + 1  # the bound, and the shared window
    assert len(caplog.messages) == MAX_REASONS + 1
    clock.now += LOG_WINDOW_S
    refuse(log, "No acl config for late", "late")  # windows over make room again
    assert caplog.messages[-2:] == [
        "ACL: 49 more refusals in the last 10 s (other reasons)",
        "ACL refused: peer=127.0.0.1:5000 code=10 accessKey=late reason=No acl config for late",
    ]
    assert list(log._started) == ["No acl config for late"]


def test_the_hook_logs_through_the_module_logger_operators_filter_on() -> None:
    assert refusal_log.log.name == "acl.hook"
