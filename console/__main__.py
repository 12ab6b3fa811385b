"""``mqconsole -n host:port [--port 8080] [--host 127.0.0.1] [--read-only]``: the web console.
Prints ``READY console port=N`` once it serves and stops on SIGTERM or SIGINT. Start-up ends
in ``READY`` or in one line on stderr, never a traceback, as mqbroker's: a bad flag, NameServer
address or credentials file is exit status 2 (EXIT_CONFIG), a port it cannot listen on 3
(EXIT_START), and anything else (our bug) 1, its traceback shown only with
ROCKETMQ_TRIO_TRACEBACK=1 (deploy/cli.py).

It binds 127.0.0.1 unless told otherwise: the console has no login of its own and can change
the cluster (create and delete topics, reset offsets, resend messages), so who may reach it
is the operator's choice (``--host 0.0.0.0`` behind a proxy that authenticates, or
``--read-only``). It signs its requests with the account it is given when the cluster runs
ACL (``--access-key``/``--secret-key``, ``ROCKETMQ_ACCESS_KEY``/``ROCKETMQ_SECRET_KEY`` or
``${ROCKETMQ_HOME}/conf/tools.yml``, as mqadmin), and takes mqadmin's TLS flags.

Web stack (pinned in pyproject.toml): Starlette for routing and responses, Hypercorn's Trio
worker for HTTP (both run on this process's one Trio loop, beside the admin client), Jinja2
for the pages. Charts are inline SVG drawn here (console/charts.py): nothing from a CDN.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from functools import partial

import trio
from hypercorn.config import Config as HypercornConfig
from hypercorn.trio import serve as hypercorn_serve

from client.admin import AdminClient
from client.errors import MQClientError
from client.mqadmin import add_tls_flags, ssl_context
from client.mqadmin import args as A
from client.mqadmin.acl import add_credential_flags, credentials
from console.app import Console, build_app
from console.history import History
from console.sampler import run_sampler
from deploy.cli import OneLineArgumentParser, fail, unexpected
from remoting.logs import LEVELS, setup_logging
from remoting.startup import EXIT_CONFIG, EXIT_START, start_failure

PROG = "mqconsole"
DEFAULT_PORT = 8080  # rocketmq-dashboard's
log = logging.getLogger("console")

sample_seconds = A.int_range(1, 3600, "seconds between samples")
listen_port = A.int_range(0, 65535, "port, 0 for any free one")


def parser() -> argparse.ArgumentParser:
    p = OneLineArgumentParser(prog=PROG, description="RocketMQ web console (rocketmq-trio)")
    p.add_argument("-n", "--namesrvAddr", type=A.namesrv_list, help="host:port;host:port")
    p.add_argument("--port", type=listen_port, default=DEFAULT_PORT, help="listen port")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    p.add_argument("--read-only", action="store_true", help="show everything, change nothing")
    p.add_argument(
        "--sample-interval",
        type=sample_seconds,
        default=10,
        help="seconds between the samples the charts draw (10, the brokers' own period)",
    )
    p.add_argument("--log-level", default="INFO", type=str.upper, choices=LEVELS)
    add_credential_flags(p)
    add_tls_flags(p)
    return p


def _hypercorn(host: str, port: int) -> HypercornConfig:
    config = HypercornConfig()
    config.bind = [f"[{host}]:{port}" if ":" in host else f"{host}:{port}"]
    config.accesslog = None
    config.errorlog = logging.getLogger("console.http")
    config.graceful_timeout = 2.0
    return config


async def serve(args: argparse.Namespace, namesrv: str, ready: list[bool]) -> None:
    account = credentials(args)
    async with AdminClient.open(namesrv, account, ssl_context=ssl_context(args)) as admin:
        history = History()
        console = Console(
            admin=admin,
            history=history,
            namesrv=namesrv,
            read_only=args.read_only,
            account=account.access_key if account else None,
            sample_interval_s=args.sample_interval,
        )
        app = build_app(console)
        async with trio.open_nursery() as nursery:
            with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                binds = await nursery.start(
                    partial(hypercorn_serve, app, _hypercorn(args.host, args.port))
                )
                port = int(binds[0].rsplit(":", 1)[1])
                nursery.start_soon(run_sampler, admin, history, args.sample_interval)
                print(f"READY console port={port} url=http://{args.host}:{port}/", flush=True)
                ready.append(True)
                async for signum in signals:
                    log.info("signal %s: shutting down", signal.Signals(signum).name)
                    break
                nursery.cancel_scope.cancel()


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(sys.argv[1:] if argv is None else argv)
    setup_logging(args.log_level)
    namesrv = args.namesrvAddr or os.environ.get("NAMESRV_ADDR", "").strip()
    if not namesrv:
        fail(PROG, "no NameServer: pass -n host:port or set NAMESRV_ADDR")
        return EXIT_CONFIG
    try:
        namesrv = A.namesrv_list(namesrv)
    except argparse.ArgumentTypeError as exc:
        fail(PROG, f"NAMESRV_ADDR: {exc}")
        return EXIT_CONFIG
    ready: list[bool] = []
    try:
        trio.run(serve, args, namesrv, ready)
    except BaseException as exc:
        if ready or isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise  # after READY: a crash of the running console, as mqbroker's
        return _start_failed(exc)
    return 0


def _start_failed(exc: BaseException) -> int:
    """The one line (and exit status) for whatever ended start-up before READY."""
    failure = start_failure(exc, (MQClientError,))
    if isinstance(failure, MQClientError):  # credentials or TLS files that cannot be used
        fail(PROG, str(failure))
        return EXIT_CONFIG
    if failure is not None:
        fail(PROG, f"cannot start: {failure}")
        return EXIT_START
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]  # the error itself, not the nursery that carried it
    return unexpected(PROG, exc)


if __name__ == "__main__":
    sys.exit(main())
