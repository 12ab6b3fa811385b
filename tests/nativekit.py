"""The marker for tests that compare the native twins (remoting._speedups) with their
pure-Python references."""

from __future__ import annotations

import os

import pytest

from remoting.speedups import native

# Only the run that asks for the pure code on purpose (ROCKETMQ_TRIO_PURE=1) has no twins to
# compare; a build without them fails test_the_native_twins_are_built instead of passing quietly.
needs_native = pytest.mark.skipif(
    native is None,
    reason="no native twins to compare: ROCKETMQ_TRIO_PURE=1 runs the pure-Python code only"
    if os.environ.get("ROCKETMQ_TRIO_PURE") == "1"
    else "remoting._speedups is not built (see test_the_native_twins_are_built)",
)
