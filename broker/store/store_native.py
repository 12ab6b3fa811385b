"""The store's native twins (broker/store/native/, module broker.store._native), or None.

Loaded once and checked against the Python definitions it mirrors (broker/store/layout.py, the
record layout, the transaction bit, DispatchRequest's field order; remoting/native_loader.py
says why when it is not used). The store's modules take their per-message work from here, and
their own ``python_`` functions (and PythonAppendCursor) when it is None. It needs nothing of
the record codec's extension: the two load, go stale and are switched off independently.
"""

from __future__ import annotations

from broker.store import layout
from broker.store.types import DispatchRequest
from remoting import record_layout
from remoting.codes import CURRENT_VERSION
from remoting.message import TRANSACTION_NOT_QUEUED_BIT, TRANSACTION_ROLLBACK_TYPE
from remoting.native_loader import load

ABI_VERSION = 12
SWITCH = "ROCKETMQ_TRIO_PURE_STORE"
NAMES = (
    "AppendCursor",
    "LoneSend",
    "PutCounters",
    "RoundSend",
    "StatsCounter",
    "RecordRefused",
    "batch_plan",
    "dispatch_fields",
    "index_put_entries",
    "index_put_keys",
    "index_request",
    "index_requests",
    "pack_cq_units",
    "put_cq_runs",
    "populate_write",
    "pull_found",
    "scan_runs",
    "put_rows",
    "plain_pass",
    "now_ms",
    "plain_dispatch",
    "scan_units",
    "sync_range",
)
# What the C defines too (broker/store/native/store.h, module.c, and the record layout of
# remoting/native/record_layout.h): one definition each, held equal here.
CONSTANTS = {
    "CQ_UNIT_SIZE": layout.CQ_UNIT.size,
    "CQ_FILLER_SIZE": layout.CQ_FILLER_SIZE,
    "INDEX_HEADER_SIZE": layout.INDEX_HEADER.size,
    "INDEX_SLOT_SIZE": layout.INDEX_SLOT.size,
    "INDEX_ENTRY_SIZE": layout.INDEX_ENTRY.size,
    "MAX_TOPIC_BYTES": layout.MAX_TOPIC_BYTES,
    "MAX_PROPERTIES_BYTES": layout.MAX_PROPERTIES_BYTES,
    "TRANSACTION_NOT_QUEUED_BIT": TRANSACTION_NOT_QUEUED_BIT,
    "TRANSACTION_ROLLBACK_TYPE": TRANSACTION_ROLLBACK_TYPE,
    "INDEX_REQUEST_MAX_KEYS": layout.INDEX_REQUEST_MAX_KEYS,
    "BATCH_KEY_SIZE": layout.BATCH_KEY.size,
    "MESSAGE_MAGIC_CODE": record_layout.MESSAGE_MAGIC_CODE,
    "BLANK_MAGIC_CODE": record_layout.BLANK_MAGIC_CODE,
    "END_FILE_MIN_BLANK_LENGTH": record_layout.END_FILE_MIN_BLANK_LENGTH,
    "BORNHOST_V6_FLAG": record_layout.BORNHOST_V6_FLAG,
    "STOREHOSTADDRESS_V6_FLAG": record_layout.STOREHOSTADDRESS_V6_FLAG,
    "RECORD_FIXED_BYTES": record_layout.RECORD_FIXED_BYTES,
    "IPV6_EXTRA_BYTES": record_layout.IPV6_EXTRA_BYTES,
    "DISPATCH_REQUEST_FIELDS": DispatchRequest._fields,
    "PUT_BUCKET_BOUNDS_MS": layout.PUT_BUCKET_BOUNDS_MS,
    "REMOTING_VERSION": CURRENT_VERSION,
}

native = load(
    "broker.store._native",
    abi_version=ABI_VERSION,
    switch=SWITCH,
    names=NAMES,
    constants=CONSTANTS,
)
