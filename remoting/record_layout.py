"""The CommitLog record layout as data (docs/spec/message-format.md §1-§4, §6): magic codes,
the sys flag bits that change the layout, sizes and positions, and the tuple types the native
codec fills by position (RecordScan, BatchEntry). Imports nothing of ours: remoting/record.py,
remoting/message.py and remoting/codec_native.py (which checks the C build against these values
when it loads it) all take them from here. remoting/native/record_layout.h is the C twin.
"""

from __future__ import annotations

import enum
import struct
from typing import NamedTuple

MESSAGE_MAGIC_CODE = -626843481  # 0xDAA320A7
BLANK_MAGIC_CODE = -875286124  # 0xCBD43194: end of a CommitLog file
END_FILE_MIN_BLANK_LENGTH = 8

# MessageSysFlag bits that change the layout (the others are in remoting.message)
BORNHOST_V6_FLAG = 0x10
STOREHOSTADDRESS_V6_FLAG = 0x20

RECORD_FIXED_BYTES = 91  # TOTALSIZE with IPv4 hosts and no body, topic or properties
IPV6_EXTRA_BYTES = 12  # per 16-byte host address

# Fixed part of a record, by (born host IPv6, store host IPv6). Fields in order: TOTALSIZE,
# MAGICCODE, BODYCRC, QUEUEID, FLAG, QUEUEOFFSET, PHYSICALOFFSET, SYSFLAG, BORNTIMESTAMP,
# BORNHOST (addr, port), STORETIMESTAMP, STOREHOSTADDRESS (addr, port), RECONSUMETIMES,
# PREPAREDTRANSACTIONOFFSET, BODYLENGTH.
HEADERS = {
    (born6, store6): struct.Struct(f">iiiiiqqiq{16 if born6 else 4}siq{16 if store6 else 4}siiqi")
    for born6 in (False, True)
    for store6 in (False, True)
}
HEADER_V4 = HEADERS[(False, False)]
assert HEADER_V4.size == RECORD_FIXED_BYTES - 3  # + TOPICLENGTH (1) + PROPERTIESLENGTH (2)
assert HEADERS[(True, True)].size == HEADER_V4.size + 2 * IPV6_EXTRA_BYTES
QUEUE_OFFSET_POS = 20
PHYS_OFFSET_POS = 28
SYS_FLAG_POS = 36
BORN_TIMESTAMP_POS = 40
BORN_HOST_POS = 48


def record_size(
    body_length: int,
    topic_length: int,
    properties_length: int,
    *,
    born_v6: bool = False,
    store_v6: bool = False,
) -> int:
    """TOTALSIZE = 91 + body + topic + properties (+12 per IPv6 host)."""
    return (
        RECORD_FIXED_BYTES
        + body_length
        + topic_length
        + properties_length
        + (IPV6_EXTRA_BYTES if born_v6 else 0)
        + (IPV6_EXTRA_BYTES if store_v6 else 0)
    )


class RecordKind(enum.Enum):
    MESSAGE = "MESSAGE"
    BLANK = "BLANK"  # the end-of-file filler: jump to the next segment
    END = "END"  # zeros: nothing was ever written here
    CORRUPT = "CORRUPT"


class RecordScan(NamedTuple):
    """What dispatch and recovery read of a record (remoting.record.scan_record)."""

    kind: RecordKind
    size: int  # bytes to skip; for BLANK the rest of the segment
    topic: str = ""
    queue_id: int = 0
    queue_offset: int = 0
    phys_offset: int = 0
    sys_flag: int = 0
    store_timestamp: int = 0
    properties: str = ""
    reason: str = ""


class BatchEntry(NamedTuple):
    """One message of a SEND_BATCH_MESSAGE body (remoting.message.decode_batch_body)."""

    flag: int
    body: memoryview | bytes
    properties: str
