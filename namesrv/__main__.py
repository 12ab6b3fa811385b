"""``mqnamesrv [-c namesrv.conf] [-p]``: prints ``READY namesrv port=N`` once it serves and
stops cleanly on SIGTERM or SIGINT. Start-up ends in READY or in one line and an exit code
(remoting/startup.py)."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from collections.abc import Callable
from pathlib import Path

import trio

from acl.errors import AclConfigError
from namesrv.config import ConfigError, config_lines, load_namesrv_config
from namesrv.controller import NamesrvController
from remoting import log_format, properties
from remoting.ports import ephemeral_conflicts
from remoting.startup import EXIT_CONFIG, EXIT_START, prepare_directory, start_failure

log = logging.getLogger("namesrv")


async def serve(controller: NamesrvController, on_ready: Callable[[], None]) -> None:
    async with trio.open_nursery() as nursery:
        with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            port = await nursery.start(controller.run)
            print(f"READY namesrv port={port}", flush=True)
            on_ready()
            async for signum in signals:
                log.info("signal %s: shutting down", signal.Signals(signum).name)
                controller.stop()
                break


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mqnamesrv", description="RocketMQ name server (Trio)")
    parser.add_argument("-c", "--configFile", dest="config", help="namesrv.conf (properties)")
    parser.add_argument("-p", "--printConfigItem", action="store_true", help="print config")
    parser.add_argument("--listen-port", type=int, help="override listenPort (0: any free port)")
    parser.add_argument("--host", help="address to bind (default all interfaces)")
    parser.add_argument("--log-level", default="INFO")
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format=log_format.FORMAT)
    log_format.use_one_line_format()
    try:
        props = properties.load(args.config) if args.config else {}
    except (OSError, properties.PropertiesError) as exc:
        print(f"mqnamesrv: cannot read {args.config}: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    if args.listen_port is not None:
        props["listenPort"] = str(args.listen_port)
    if args.host:
        props["listenHost"] = args.host
    try:
        config = load_namesrv_config(props)
    except ConfigError as exc:
        print(f"mqnamesrv: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    if args.printConfigItem:
        print("\n".join(config_lines(config)))
        return 0
    problem = prepare_directory(config.kv_config_path.parent)
    if problem is not None:
        print(f"mqnamesrv: kvConfigPath is not usable: {problem}", file=sys.stderr)
        return EXIT_CONFIG
    for advice in ephemeral_conflicts([("listenPort", config.listen_port)]):
        log.warning("%s", advice)
    ready = False

    def on_ready() -> None:
        nonlocal ready
        ready = True

    try:
        controller = NamesrvController(
            config,
            properties=props,
            config_path=Path(args.config).resolve() if args.config else None,
        )
    except AclConfigError as exc:  # plain_acl.yml missing or bad: the line and the reason
        print(f"mqnamesrv: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    try:
        trio.run(serve, controller, on_ready)
    except BaseException as exc:
        failure = None if ready else start_failure(exc)
        if failure is None:
            raise
        print(f"mqnamesrv: cannot start: {failure}", file=sys.stderr)
        return EXIT_START
    return 0


if __name__ == "__main__":
    sys.exit(main())
