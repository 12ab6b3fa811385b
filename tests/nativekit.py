"""Markers for tests of the native extension modules (remoting/native_loader.py): the record
codec's and the store's twins, compared with their pure-Python references, and the servers'
native-only sender thread. Each is skipped only when its module is switched off on purpose;
a module that did not build fails test_native_modules.py instead of passing quietly."""

from __future__ import annotations

import pytest

from broker.store.store_native import native as store_native
from remoting.codec_native import native as codec_native
from remoting.native_loader import switched_off
from remoting.sender import native_sender

CODEC_SWITCH = "ROCKETMQ_TRIO_PURE_CODEC"
STORE_SWITCH = "ROCKETMQ_TRIO_PURE_STORE"
SENDER_SWITCH = "ROCKETMQ_TRIO_NO_SENDER"


def not_built(module: str, switch: str) -> str:
    """Why a test of ``module`` cannot run here."""
    if switched_off(switch):
        return f"{module} is switched off ({switch} or ROCKETMQ_TRIO_PURE=1)"
    return f"{module} is not built or stale (see tests/unit/test_native_modules.py)"


needs_codec = pytest.mark.skipif(
    codec_native is None, reason=not_built("remoting._codec", CODEC_SWITCH)
)
needs_store_native = pytest.mark.skipif(
    store_native is None, reason=not_built("broker.store._native", STORE_SWITCH)
)
# The servers' sender thread: without it servers write from the loop.
needs_sender = pytest.mark.skipif(
    native_sender() is None, reason=not_built("remoting._sender", SENDER_SWITCH)
)
