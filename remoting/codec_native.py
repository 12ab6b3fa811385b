"""The record codec's native twins (remoting/native/codec/, module remoting._codec), or None.

Loaded once, checked against remoting/record_layout.py (remoting/native_loader.py says why when
it is not used): every process that reads or writes records takes its loops from here, the
pure-Python functions in remoting/record.py, remoting/message.py, remoting/send_header.py and
remoting/java_hash.py when it is None.
"""

from __future__ import annotations

from remoting import idle_sleep, lone_loop
from remoting import record_layout as layout
from remoting.native_loader import load
from remoting.wire_types import CLIENT_SYS_FLAG_BITS

ABI_VERSION = 16
SWITCH = "ROCKETMQ_TRIO_PURE_CODEC"
NAMES = (
    "java_hash",
    "pack_records_into",
    "configure_scan",
    "scan_record",
    "decode_batch_body",
    "decode_send_header",
    "decode_plain_header",
    "string_to_properties",
    "plain_command",
    "json_frame_head",
    "split_frames",
    "whole_frame",
    "split_commands",
    "whole_command",
    "recv_command",
    "recv_round",
    "finish_plain_round",
    "plain_send_rows",
    "scan_send_command",
    "configure_send_scan",
    "configure_header_scan",
    "idle_wait",
    "answer_lone",
    "serve_lone",
    "LoneLooks",
)
# What the C defines too (remoting/native/record_layout.h, codec/module.c): one definition
# each, held equal here.
CONSTANTS = {
    "MESSAGE_MAGIC_CODE": layout.MESSAGE_MAGIC_CODE,
    "BLANK_MAGIC_CODE": layout.BLANK_MAGIC_CODE,
    "END_FILE_MIN_BLANK_LENGTH": layout.END_FILE_MIN_BLANK_LENGTH,
    "BORNHOST_V6_FLAG": layout.BORNHOST_V6_FLAG,
    "STOREHOSTADDRESS_V6_FLAG": layout.STOREHOSTADDRESS_V6_FLAG,
    "RECORD_FIXED_BYTES": layout.RECORD_FIXED_BYTES,
    "IPV6_EXTRA_BYTES": layout.IPV6_EXTRA_BYTES,
    "RECORD_SCAN_FIELDS": layout.RecordScan._fields,
    "BATCH_ENTRY_FIELDS": layout.BatchEntry._fields,
    "SEND_SYS_FLAG_MASK": CLIENT_SYS_FLAG_BITS,
    "IDLE_MAX_TASKS": idle_sleep.MAX_TASKS,
    "IDLE_MAX_EVENTS": idle_sleep.MAX_EVENTS,
    "IDLE_MAX_SLEEP_S": idle_sleep.MAX_SLEEP_S,
    "LOOKS_PROBE_EVERY": lone_loop.PROBE_EVERY,
    "LOOKS_ONE": lone_loop.LOOKS_ONE,
    "LOOKS_ENOUGH": lone_loop.LOOKS_ENOUGH,
    "LOOKS_WEIGHT_SHIFT": lone_loop.LOOKS_WEIGHT_SHIFT,
}

native = load(
    "remoting._codec", abi_version=ABI_VERSION, switch=SWITCH, names=NAMES, constants=CONSTANTS
)

if native is not None:
    kinds = layout.RecordKind
    native.configure_scan(layout.RecordScan, kinds.MESSAGE, kinds.BLANK, kinds.END, kinds.CORRUPT)
