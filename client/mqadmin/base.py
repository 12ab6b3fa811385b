"""The command registry and what every mqadmin command shares (tables, targets, message views).

A command is ``async def fn(admin, args)`` registered with ``@command(name, help, setup)``;
``setup`` adds its flags (Apache 4.9.8's letters and long names, client/mqadmin/COMMANDS.md).
It returns what to print: a table (``table_result``), a list of lines, or any JSON-able value;
``--json`` prints the same result as JSON. A command that repeats (``-i`` intervals,
``startMonitoring``) hands each round to ``args.emit`` and returns None.
"""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable
from typing import Any

import attrs

from client.admin import AdminClient
from client.errors import MQClientError
from client.mqadmin import args as A
from remoting.message import MessageExt

Command = Callable[[AdminClient, argparse.Namespace], Awaitable[Any]]
Setup = Callable[[argparse.ArgumentParser], object]


COMMANDS: dict[str, tuple[str, Setup, Command]] = {}


def command(name: str, help: str, setup: Setup = lambda p: None):
    def register(fn: Command) -> Command:
        assert name not in COMMANDS, name
        COMMANDS[name] = (help, setup, fn)
        return fn

    return register


def cell(value: Any) -> str:
    """A table cell as Java's printf shows it (booleans lower case)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def table(headers: list[str], rows: list[list[Any]]) -> str:
    cells = [headers] + [[cell(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells
    )


def table_result(
    headers: list[str], rows: list[list[Any]], footer: str | None = None, data: Any = None
) -> dict[str, Any]:
    """A table for people; ``--json`` prints ``data`` when given, else headers and rows."""
    out: dict[str, Any] = {"headers": headers, "rows": rows}
    if footer:
        out["footer"] = footer
    if data is not None:
        out["json"] = data
    return out


@attrs.frozen
class Shown:
    """Text for people in Apache's layout (what scripts grep), ``data`` for ``--json``."""

    text: str
    data: Any


def key_values(table: dict[str, str], width: int = 32, sep: str = ": ") -> str:
    """Apache's ``%-32s: %s`` lines, sorted by key."""
    return "\n".join(f"{k:<{width}}{sep}{v}" for k, v in sorted(table.items()))


def message_view(m: MessageExt, charset: str = "utf-8", *, body: bool = True) -> dict[str, Any]:
    view = {
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
        "sysFlag": m.sys_flag,
        "properties": m.properties,
    }
    if body:
        view["body"] = m.body.decode(charset, "replace")
    return view


def where(p: argparse.ArgumentParser, *, cluster_long: str = "clusterName") -> None:
    """``-b brokerAddr`` or ``-c clusterName``: one of them. (Apache accepts neither and then
    prints the usage; here that is an argument error.)"""
    group = p.add_mutually_exclusive_group(required=True)
    group.add_argument("-b", "--brokerAddr", type=A.address, help="one broker (host:port)")
    group.add_argument("-c", f"--{cluster_long}", dest="clusterName", help="every master of it")


async def targets(admin: AdminClient, args: argparse.Namespace) -> list[str]:
    if args.brokerAddr:
        return [args.brokerAddr]
    masters = await admin.masters(args.clusterName)
    if not masters:
        raise MQClientError(f"cluster {args.clusterName!r} has no master online")
    return list(masters.values())


def flag(p: argparse.ArgumentParser, short: str, long: str, help: str) -> None:
    """A switch without a value (Java's ``hasArg=false`` options)."""
    p.add_argument(short, f"--{long}", action="store_true", help=help)
