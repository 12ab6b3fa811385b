"""The command registry and what every mqadmin command shares (tables, targets, times)."""

from __future__ import annotations

import argparse
import time
from collections.abc import Awaitable, Callable
from typing import Any

from client.admin import AdminClient
from client.errors import MQClientError
from remoting.message import MessageExt

Command = Callable[[AdminClient, argparse.Namespace], Awaitable[Any]]


COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None], Command]] = {}


def command(
    name: str, help: str, setup: Callable[[argparse.ArgumentParser], None] = lambda p: None
):
    def register(fn: Command) -> Command:
        COMMANDS[name] = (help, setup, fn)
        return fn

    return register


def table(headers: list[str], rows: list[list[Any]]) -> str:
    cells = [headers] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells
    )


def message_view(m: MessageExt) -> dict[str, Any]:
    return {
        "msgId": m.msg_id,
        "offsetMsgId": m.offset_msg_id,
        "topic": m.topic,
        "tags": m.tags,
        "keys": m.keys,
        "queueId": m.queue_id,
        "queueOffset": m.queue_offset,
        "commitLogOffset": m.commit_log_offset,
        "reconsumeTimes": m.reconsume_times,
        "bornTimestamp": m.born_timestamp,
        "storeTimestamp": m.store_timestamp,
        "bornHost": m.born_host,
        "storeHost": m.store_host,
        "properties": m.properties,
        "body": m.body.decode("utf-8", "replace"),
    }


def where(p: argparse.ArgumentParser) -> None:
    group = p.add_mutually_exclusive_group(required=True)
    group.add_argument("-c", "--clusterName")
    group.add_argument("-b", "--brokerAddr")


async def targets(admin: AdminClient, args: argparse.Namespace) -> list[str]:
    if args.brokerAddr:
        return [args.brokerAddr]
    return list((await admin.masters(args.clusterName)).values())


def parse_time(text: str) -> int:
    """ms since the epoch, ``now``, or RocketMQ's ``yyyy-MM-dd#HH:mm:ss:SSS`` (local time)."""
    import datetime

    if text == "now":
        return int(time.time() * 1000)
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        moment = datetime.datetime.strptime(text, "%Y-%m-%d#%H:%M:%S:%f")
    except ValueError:
        raise MQClientError(
            f"bad time {text!r}: use ms, 'now' or yyyy-MM-dd#HH:mm:ss:SSS"
        ) from None
    return int(moment.timestamp() * 1000)
