"""The markers for tests of the native module (remoting._speedups): its twins, compared with their
pure-Python references, and its native-only sender thread."""

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


def not_built(what: str) -> str:
    """Why a test of a native-only part (no pure twin to fall back on) cannot run here."""
    if os.environ.get("ROCKETMQ_TRIO_PURE") == "1":
        return f"{what} is native only, and ROCKETMQ_TRIO_PURE=1 runs without the native module"
    return (
        f"{what} needs remoting._speedups, which is not built (see test_the_native_twins_are_built)"
    )


# The servers' sender thread (remoting/native/sender.c): without it servers write from the loop.
needs_sender = pytest.mark.skipif(native is None, reason=not_built("the servers' sender thread"))
