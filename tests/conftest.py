"""Shared test fixtures. Paths to the shared interop captures live here."""

from __future__ import annotations

from pathlib import Path

import pytest

from remoting.log_limit import bug_tracebacks, peer_warnings

REPO_ROOT = Path(__file__).resolve().parent.parent
# Frames the official C++ client (rocketmq==0.4.4) really sent, captured once and kept here so a
# fresh clone tests the codec against them without anything outside the repository.
INTEROP_FRAMES = REPO_ROOT / "tests" / "data" / "interop-frames"

pytest_plugins = ["tests.harness", "tests.kits.tlskit"]


@pytest.fixture(autouse=True)
def fresh_log_limits() -> None:
    """The process-wide log limiters (5 warnings a minute per host) start each test afresh: a
    test that checks a warning must not find 127.0.0.1's quota spent by the tests before it
    in the same worker process."""
    peer_warnings.forget()
    bug_tracebacks.forget()
