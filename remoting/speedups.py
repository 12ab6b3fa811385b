"""The native twins of the store's inner loops (remoting/_speedups.c), or None.

None when the extension was not built (no C compiler at install time) or when
ROCKETMQ_TRIO_PURE=1 asks for the pure-Python code, which stays the reference: the tests run
both and require the same results.
"""

from __future__ import annotations

import os
from types import ModuleType

native: ModuleType | None = None
if os.environ.get("ROCKETMQ_TRIO_PURE") != "1":
    try:
        from remoting import _speedups as native
    except ImportError:  # pragma: no cover - depends on the build
        native = None
