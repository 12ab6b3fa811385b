"""``mqadmin``: RocketMQ's admin command line (subcommand and flag names as in Java's tool).
Tables for people by default, ``--json`` for scripts. Exit 1 with a message on any error."""

from __future__ import annotations

import argparse
import enum
import json
import os
import sys
from typing import Any

import trio

from client.admin import AdminClient
from client.errors import MQClientError
from client.mqadmin import acl, cluster, groups, messages, topics  # noqa: F401  (they register)
from client.mqadmin.base import COMMANDS, table
from remoting.errors import RemotingError


def _expected_failure(group: BaseExceptionGroup) -> BaseException | None:
    """The first client, remoting or OS error in a (nested) exception group."""
    for exc in group.exceptions:
        if isinstance(exc, MQClientError | RemotingError | OSError):
            return exc
        if isinstance(exc, BaseExceptionGroup):
            found = _expected_failure(exc)
            if found is not None:
                return found
    return None


def _plain(value: Any) -> Any:
    """JSON for what json cannot write: an enum as its RocketMQ name, anything else as text."""
    return value.value if isinstance(value, enum.Enum) else str(value)


def render(result: Any, as_json: bool) -> str:
    if as_json:
        return json.dumps(result, indent=2, sort_keys=True, default=_plain)
    if isinstance(result, dict) and "headers" in result:
        out = table(result["headers"], result["rows"])
        return out + ("\n\n" + result["footer"] if result.get("footer") else "")
    if isinstance(result, list) and all(isinstance(x, str) for x in result):
        return "\n".join(result)
    if isinstance(result, dict) and all(isinstance(v, str) for v in result.values()):
        return "\n\n".join(f"== {k}\n{v}" for k, v in result.items())
    return json.dumps(result, indent=2, sort_keys=True, default=_plain)


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(
        prog="mqadmin", description="RocketMQ admin tool (rocketmq-trio)"
    )
    sub = root.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (help_text, setup, _) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.add_argument("-n", "--namesrvAddr", default=None, help="host:port;host:port")
        p.add_argument("--json", action="store_true", help="machine-readable output")
        setup(p)
        acl.add_credential_flags(p)
    return root


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    namesrv = args.namesrvAddr or os.environ.get("NAMESRV_ADDR")
    if not namesrv:
        print("mqadmin: no NameServer: pass -n host:port or set NAMESRV_ADDR", file=sys.stderr)
        return 1
    _, _, fn = COMMANDS[args.command]

    async def run() -> Any:
        async with AdminClient.open(namesrv, acl.credentials(args)) as admin:
            return await fn(admin, args)

    try:
        result = trio.run(run)
    except (MQClientError, RemotingError, OSError) as exc:
        print(f"mqadmin {args.command}: {exc}", file=sys.stderr)
        return 1
    except BaseExceptionGroup as group:  # raised inside the client's nurseries
        failure = _expected_failure(group)
        if failure is None:
            raise
        print(f"mqadmin {args.command}: {failure}", file=sys.stderr)
        return 1
    print(render(result, args.json))
    return 0
