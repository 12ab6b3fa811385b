"""Client-side message ids (UNIQ_KEY), laid out as RocketMQ's MessageClientIDSetter: host IP (4
bytes), pid (2), a per-process random (4), milliseconds since the start of the month (4), and a
counter (2), as 32 upper-case hex digits. Unique per producer; brokers index them as keys."""

from __future__ import annotations

import datetime
import itertools
import os
import secrets
import socket
import struct

_counter = itertools.count()


def _local_ip() -> bytes:
    try:
        return socket.inet_aton(socket.gethostbyname(socket.gethostname()))
    except OSError:
        return b"\x7f\x00\x00\x01"


_FIX = (_local_ip() + struct.pack(">H", os.getpid() & 0xFFFF) + secrets.token_bytes(4)).hex()


def _month_start_ms(now: datetime.datetime) -> int:
    start = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    return int(start.timestamp() * 1000)


def create_uniq_id() -> str:
    now = datetime.datetime.now()
    since = int(now.timestamp() * 1000) - _month_start_ms(now)
    tail = struct.pack(">iH", since & 0x7FFFFFFF, next(_counter) & 0xFFFF)
    return (_FIX + tail.hex()).upper()
