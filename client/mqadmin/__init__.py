"""``mqadmin``: RocketMQ's admin command line, with Apache 4.9.8's command names, flag letters
and long names (the table: client/mqadmin/COMMANDS.md). Tables for people by default,
``--json`` for scripts, ``mqadmin help [COMMAND]``. Any error is one line on stderr and exit
status 1 (Apache's tool prints a stack trace and exits 0)."""

from __future__ import annotations

import argparse
import enum
import json
import os
import signal
import ssl
import sys
from pathlib import Path
from typing import Any

import attrs
import trio

from client.admin import AdminClient
from client.errors import MQClientError, sole_exception
from client.mqadmin import (  # noqa: F401  (importing them registers their commands)
    acl,
    brokers,
    cluster,
    controller,
    export,
    groups,
    message_query,
    messages,
    monitor,
    offsets,
    topics,
)
from client.mqadmin import args as A
from client.mqadmin import namesrv as _namesrv_commands  # noqa: F401
from client.mqadmin.base import COMMANDS, Shown, table
from deploy.cli import OneLineArgumentParser, fail, unexpected
from remoting.errors import RemotingConnectError, RemotingError, RemotingTimeoutError
from remoting.settings import ConfigError
from remoting.tls import client_context
from remoting.tls_config import TlsKeys, from_file

PROG = "mqadmin"
ENV_TLS_ENABLE = "ROCKETMQ_TLS_ENABLE"
ENV_TLS_CONFIG_FILE = "ROCKETMQ_TLS_CONFIG_FILE"
EXPECTED = (MQClientError, RemotingError, OSError)


def _plain(value: Any) -> Any:
    """JSON for what json cannot write: an enum as its RocketMQ name, anything else as text."""
    return value.value if isinstance(value, enum.Enum) else str(value)


def render(result: Any, as_json: bool) -> str:
    if isinstance(result, Shown):
        return render(result.data, True) if as_json else result.text
    if as_json:
        if isinstance(result, dict) and "headers" in result:
            result = result.get("json", {k: v for k, v in result.items() if k != "json"})
        return json.dumps(result, indent=2, sort_keys=True, default=_plain)
    if isinstance(result, str):
        return result
    if isinstance(result, dict) and "headers" in result:
        out = table(result["headers"], result["rows"])
        return out + ("\n\n" + result["footer"] if result.get("footer") else "")
    if isinstance(result, list) and all(isinstance(x, str) for x in result):
        return "\n".join(result)
    if isinstance(result, dict) and result and all(isinstance(v, str) for v in result.values()):
        return "\n\n".join(f"== {k}\n{v}" for k, v in result.items())
    return json.dumps(result, indent=2, sort_keys=True, default=_plain)


def parser(only: str | None = None) -> argparse.ArgumentParser:
    """Every command's flags, or only those of the command ``only``: a run parses one command,
    and building every command's subparser took more CPU than all the rest of argument parsing
    (5-8 % of each mqadmin run)."""
    root = OneLineArgumentParser(prog=PROG, description="RocketMQ admin tool (rocketmq-trio)")
    sub = root.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (help_text, setup, _) in COMMANDS.items():
        if only is not None and name != only:
            continue
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.add_argument(
            "-n", "--namesrvAddr", type=A.namesrv_list, help="host:port;host:port (or NAMESRV_ADDR)"
        )
        p.add_argument("--json", action="store_true", help="machine-readable output")
        setup(p)
        acl.add_credential_flags(p)
        add_tls_flags(p)
    return root


def add_tls_flags(p: argparse.ArgumentParser) -> None:
    """Java's mqadmin takes -Dtls.enable=true and -Dtls.config.file=... in JAVA_OPT."""
    p.add_argument(
        "--tls", action="store_true", help=f"connect with TLS (or {ENV_TLS_ENABLE}=true)"
    )
    p.add_argument(
        "--tls-config",
        metavar="FILE",
        help="connect with TLS, tls.client.* and tls.test.mode.enable from this properties file "
        f"(or {ENV_TLS_CONFIG_FILE}; default /etc/rocketmq/tls.properties if it exists)",
    )


def ssl_context(args: argparse.Namespace) -> ssl.SSLContext | None:
    """The TLS every connection uses, as RocketMQ's client takes it (remoting/tls.py)."""
    named = args.tls_config or os.environ.get(ENV_TLS_CONFIG_FILE, "").strip()
    enabled = args.tls or args.tls_config or os.environ.get(ENV_TLS_ENABLE, "").strip() == "true"
    if not enabled:
        return None
    try:
        return client_context(from_file(TlsKeys(tls_config_file=Path(named) if named else None)))
    except ConfigError as exc:
        raise MQClientError(str(exc)) from None


def usage() -> str:
    width = max(len(name) for name in COMMANDS)
    lines = [
        f"usage: {PROG} COMMAND [-n host:port;host:port] [--json] [flags]",
        "",
        f"The {PROG} commands are:",
        *(f"   {name.ljust(width)}  {COMMANDS[name][0]}" for name in sorted(COMMANDS)),
        "",
        f"See '{PROG} help <command>' for a command's flags.",
    ]
    return "\n".join(lines)


def _help(argv: list[str]) -> int:
    """``mqadmin``, ``mqadmin help`` and ``mqadmin help COMMAND`` (as Apache's tool)."""
    if len(argv) <= 1:
        print(usage())
        return 0
    if argv[1] not in COMMANDS:
        return fail(PROG, f"no command {argv[1]!r} ({PROG} help lists them)")
    parser(argv[1]).parse_args([argv[1], "--help"])
    return 0


def _namesrv(args: argparse.Namespace) -> str | None:
    if args.namesrvAddr:
        return args.namesrvAddr
    from_env = os.environ.get("NAMESRV_ADDR", "")
    if not from_env.strip():
        return None
    try:
        return A.namesrv_list(from_env)
    except argparse.ArgumentTypeError as exc:
        raise MQClientError(f"NAMESRV_ADDR: {exc}") from None


def explain(exc: BaseException, tls: bool = False) -> str:
    """The error, with what to check when a server did not answer."""
    if isinstance(exc, RemotingConnectError) and "TLS handshake failed" in str(exc):
        return f"{exc}: does the server take TLS (tls.server.mode), and do the certificates match?"
    if isinstance(exc, RemotingConnectError) and " closed: " in str(exc):
        if tls:
            return f"{exc}: does the server want a client certificate (tls.client.certPath)?"
        return f"{exc}: does the server take only TLS (tls.server.mode=enforcing)? Then pass --tls"
    if isinstance(exc, RemotingConnectError) and " failed: " in str(exc):
        return f"{exc}: is the broker (or NameServer) running there, and is that its address?"
    if isinstance(exc, RemotingTimeoutError):
        return f"{exc}: the server is up but did not answer in time (overloaded, or hung?)"
    return str(exc)


@attrs.define
class Emitter:
    """``args.emit``: prints one round of a repeating command, counting the rounds."""

    as_json: bool
    count: int = 0

    def __call__(self, result: Any) -> None:
        self.count += 1  # before the print: a Ctrl-C may follow it at once
        print(render(result, self.as_json), flush=True)


_INTERRUPTED = object()


async def _until_interrupted(command: Any) -> Any:
    """Run a command until it returns or Ctrl-C arrives, which cancels it at a checkpoint.

    Trio's default turns SIGINT into a KeyboardInterrupt raised wherever the code happens to
    be, mid-write or mid-close included; a repeating command (-i) is meant to be ended that
    way, so the signal becomes a cancellation instead and the client closes in order.
    """
    outcome: list[Any] = []
    with trio.open_signal_receiver(signal.SIGINT) as signals:
        async with trio.open_nursery() as nursery:

            async def watch() -> None:
                async for _ in signals:
                    outcome.append(_INTERRUPTED)
                    nursery.cancel_scope.cancel()
                    return

            nursery.start_soon(watch)
            result = await command
            outcome.append(result)
            nursery.cancel_scope.cancel()
    return outcome[0] if outcome else _INTERRUPTED


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] == "help":
        return _help(argv)
    if argv[0] not in COMMANDS and not argv[0].startswith("-"):
        return fail(PROG, f"no command {argv[0]!r} ({PROG} help lists them)")
    args = parser(argv[0] if argv[0] in COMMANDS else None).parse_args(argv)
    prog = f"{PROG} {args.command}"
    args.emit = Emitter(args.json)
    _, _, fn = COMMANDS[args.command]

    tls_used = False

    async def run() -> Any:
        nonlocal tls_used
        context = ssl_context(args)
        tls_used = context is not None
        namesrv = _namesrv(args)
        if namesrv is None:
            raise MQClientError("no NameServer: pass -n host:port or set NAMESRV_ADDR")
        async with AdminClient.open(namesrv, acl.credentials(args), ssl_context=context) as admin:
            return await _until_interrupted(fn(admin, args))

    try:
        result = trio.run(run)
        if result is _INTERRUPTED:
            raise KeyboardInterrupt
    except KeyboardInterrupt:
        # Ctrl-C is how a repeating command (-i, startMonitoring) is meant to end.
        if args.emit.count:
            return 0
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except EXPECTED as exc:
        return fail(prog, explain(exc, tls_used))
    except BaseExceptionGroup as group:  # raised inside the client's nurseries
        failure = sole_exception(group)
        if isinstance(failure, EXPECTED):
            return fail(prog, explain(failure, tls_used))
        return unexpected(prog, failure or group)
    except Exception as exc:
        return unexpected(prog, exc)
    if result is not None:
        print(render(result, args.json))
    return 0


__all__ = ["main", "parser", "render"]
