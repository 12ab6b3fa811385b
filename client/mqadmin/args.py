"""mqadmin's argument boundary: every value typed on the command line is checked here, once,
as argparse ``type=`` functions. A bad value is an ``ArgumentTypeError`` whose text names what
was expected; argparse puts the flag in front (``argument -i/--msgId: ...``) and mqadmin prints
that one line and exits 1 (deploy/cli.py). Commands only ever see checked values."""

from __future__ import annotations

import argparse
import datetime
import re
import time

from remoting import names

_HOST_PORT = re.compile(r"^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9_.-]+):(\d{1,5})$")
_HEX = re.compile(r"^[0-9A-Fa-f]+$")
JAVA_TIME_FORMAT = "%Y-%m-%d#%H:%M:%S:%f"  # RocketMQ's yyyy-MM-dd#HH:mm:ss:SSS


def _bad(text: str) -> argparse.ArgumentTypeError:
    return argparse.ArgumentTypeError(text)


def address_problem(addr: str) -> str | None:
    """Why ``addr`` is not ``host:port`` (port 1..65535), or None."""
    match = _HOST_PORT.match(addr.strip())
    if match is None:
        return f"{addr!r} is not host:port (e.g. 127.0.0.1:9876)"
    if not 1 <= int(match.group(2)) <= 65535:
        return f"{addr!r}: port {match.group(2)} is outside 1..65535"
    return None


def address(text: str) -> str:
    problem = address_problem(text)
    if problem:
        raise _bad(problem)
    return text.strip()


def namesrv_list(text: str) -> str:
    """``host:port;host:port``, as RocketMQ's namesrvAddr."""
    addrs = [a.strip() for a in text.split(";") if a.strip()]
    if not addrs:
        raise _bad("no NameServer address: give host:port, several joined with ';'")
    for addr in addrs:
        problem = address_problem(addr)
        if problem:
            raise _bad(f"{problem}; several NameServers are joined with ';'")
    return ";".join(addrs)


def _integer(text: str, low: int, high: int, what: str) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        raise _bad(f"{text!r} is not a whole number ({what})") from None
    if not low <= value <= high:
        raise _bad(f"{value} is outside {low}..{high} ({what})")
    return value


def int_range(low: int, high: int, what: str):
    """A ``type=`` for a whole number in ``low..high``; ``what`` says what it counts."""

    def parse(text: str) -> int:
        return _integer(text, low, high, what)

    parse.__name__ = what.replace(" ", "_")
    return parse


queue_nums = int_range(1, 1024, "queues")
queue_id = int_range(0, 65535, "queue id")
queue_offset = int_range(0, 2**63 - 1, "queue offset")
count = int_range(1, 1_000_000, "count")
non_negative = int_range(0, 2**63 - 1, "a number >= 0")
broker_id = int_range(0, 2**31 - 1, "brokerId")
retry_max_times = int_range(-1, 2**31 - 1, "retries, -1 for none")
seconds = int_range(1, 86_400, "seconds")
message_size = int_range(1, 4 * 1024 * 1024, "bytes")
timeout_ms = int_range(1, 3_600_000, "milliseconds")


def perm(text: str) -> int:
    """A topic permission as RocketMQ's tools take it: 2 (W), 4 (R) or 6 (RW)."""
    value = _integer(text, 0, 7, "permission")
    if value not in (2, 4, 6):
        raise _bad(f"{value} is not a topic permission: 2 (write), 4 (read) or 6 (read+write)")
    return value


def java_bool(text: str) -> bool:
    """``true`` or ``false`` (any case). Java's Boolean.parseBoolean reads anything else,
    ``yes`` included, as false; a typo here is refused instead."""
    lowered = text.strip().lower()
    if lowered not in ("true", "false"):
        raise _bad(f"{text!r} is not true or false")
    return lowered == "true"


def topic(text: str) -> str:
    problem = names.topic_problem(text.strip())
    if problem:
        raise _bad(f"invalid topic {text!r}: {problem}")
    return text.strip()


def group(text: str) -> str:
    """A consumer or producer group name (Java's Validators.checkGroup)."""
    problem = names.group_problem(text.strip())
    if problem:
        raise _bad(f"invalid group {text!r}: {problem}")
    return text.strip()


def offset_msg_id(text: str) -> str:
    """A broker-made message id: store host + port + CommitLog offset, 32 hex characters for
    IPv4, 56 for IPv6."""
    text = text.strip()
    if len(text) not in (32, 56) or not _HEX.match(text):
        raise _bad(
            f"{text!r} is not an offset message id (32 or 56 hex characters, as a send result's "
            "offsetMsgId); a client msgId is found with queryMsgByUniqueKey -t TOPIC -i ID"
        )
    return text.upper()


def offset_msg_ids(text: str) -> list[str]:
    """One or more offset message ids, comma-separated (as Apache's queryMsgById -i)."""
    ids = [part for part in (p.strip() for p in text.split(",")) if part]
    if not ids:
        raise _bad("no message id given")
    return [offset_msg_id(part) for part in ids]


def timestamp(text: str) -> int:
    """ms since the epoch, ``now``, or RocketMQ's ``yyyy-MM-dd#HH:mm:ss:SSS`` (local time)."""
    text = text.strip()
    if text == "now":
        return int(time.time() * 1000)
    if text.isdigit():
        return int(text)
    try:
        moment = datetime.datetime.strptime(text, JAVA_TIME_FORMAT)
    except ValueError:
        raise _bad(
            f"{text!r} is not a time: give ms since the epoch, 'now' or yyyy-MM-dd#HH:mm:ss:SSS"
        ) from None
    return int(moment.timestamp() * 1000)


def charset(text: str) -> str:
    import codecs

    try:
        return codecs.lookup(text.strip()).name
    except LookupError:
        raise _bad(f"{text!r} is not a known charset (e.g. UTF-8, GBK)") from None


def path_to_write(text: str) -> str:
    if not text.strip():
        raise _bad("empty path")
    return text.strip()


def order_conf(text: str) -> str:
    """``brokerName:queueNums;brokerName:queueNums`` (NameServer KV ORDER_TOPIC_CONFIG)."""
    for item in (p for p in text.split(";") if p.strip()):
        name, sep, nums = item.partition(":")
        if not sep or not name.strip() or not nums.strip().isdigit():
            raise _bad(f"{item!r} is not brokerName:queueNums (several joined with ';')")
    if not text.strip():
        raise _bad("empty orderConf: give brokerName:queueNums;brokerName:queueNums")
    return text.strip()


def ip_list(text: str) -> list[str]:
    ips = [p.strip() for p in text.split(",") if p.strip()]
    if not ips:
        raise _bad("no client id given: a comma-separated list, e.g. 10.0.0.1,10.0.0.2")
    return ips
