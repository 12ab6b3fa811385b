"""The native twins of the store's inner loops (C sources in remoting/native/, built as the
module remoting._speedups), or None.

None when the extension was not built (no C compiler at install time), when it was built from
older sources that lack one of them (`make` rebuilds it), or when ROCKETMQ_TRIO_PURE=1 asks for
the pure-Python code, which stays the reference: the tests run both and require the same
results.
"""

from __future__ import annotations

import logging
import os
from types import ModuleType

log = logging.getLogger(__name__)

FUNCTIONS = (
    "java_hash",
    "pack_records_into",
    "configure_scan",
    "scan_record",
    "decode_batch_body",
    "index_put_entries",
    "dispatch_fields",
    "populate_write",
    "batch_records",
    "batch_requests",
    "index_requests",
    "pack_cq_units",
    "append_message",
    "configure_put",
    "put_single",
    "dispatch_single",
    "Sender",
)

native: ModuleType | None = None
if os.environ.get("ROCKETMQ_TRIO_PURE") != "1":
    try:
        from remoting import _speedups as native
    except ImportError:  # pragma: no cover - depends on the build
        native = None
    if native is not None and not all(hasattr(native, name) for name in FUNCTIONS):
        log.warning("remoting._speedups is out of date (run make): using the pure-Python code")
        native = None
