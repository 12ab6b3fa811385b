"""Shared test fixtures. Paths to the shared interop captures live here."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from hypothesis import settings

from remoting.log_limit import bug_tracebacks, peer_warnings

REPO_ROOT = Path(__file__).resolve().parent.parent
# Frames the official C++ client (rocketmq==0.4.4) really sent, captured once and kept here so a
# fresh clone tests the codec against them without anything outside the repository.
INTEROP_FRAMES = REPO_ROOT / "tests" / "data" / "interop-frames"

pytest_plugins = ["tests.harness", "tests.kits.tlskit"]

# Hypothesis's per-example deadline (200 ms) is a timing assertion: on a loaded 2-core machine an
# example of test_codec's frame property took 361 ms once and 13 ms when replayed, and the run
# failed as "flaky". Speed is measured in benchmarks, so no property test has a deadline; a
# test's own @settings still decides everything else.
settings.register_profile("suite", deadline=None)
settings.load_profile("suite")


@pytest.fixture(autouse=True)
def fresh_log_limits() -> None:
    """The process-wide log limiters (5 warnings a minute per host) start each test afresh: a
    test that checks a warning must not find 127.0.0.1's quota spent by the tests before it
    in the same worker process."""
    peer_warnings.forget()
    bug_tracebacks.forget()


@pytest.fixture(autouse=True)
def root_logging_restored():
    """A test that runs a server's main() in-process (a bad config's exit code) gets the root
    logger's handlers set to that test's captured stderr, which pytest closes after it. Left
    in place, any later record in the worker (py4j's at interpreter exit) printed a "Logging
    error" traceback into the suite's output."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
