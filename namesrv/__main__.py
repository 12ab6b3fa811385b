"""``mqnamesrv [-c namesrv.conf] [-p]``: prints ``READY namesrv port=N`` (and `` metricsPort=N``
when it serves /metrics) once it serves and
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
from namesrv.config import ConfigError, NamesrvConfig, config_lines
from namesrv.config_update import start_config
from namesrv.controller import NamesrvController
from remoting import properties
from remoting.logs import LEVELS, setup_logging
from remoting.ports import ephemeral_conflicts
from remoting.startup import EXIT_CONFIG, EXIT_START, prepare_process, start_failure

log = logging.getLogger("namesrv")


def _metrics_port(controller: NamesrvController) -> str:
    """`` metricsPort=N`` for the READY line when /metrics is served: the port bound, which
    metricsPromExporterPort=0 leaves to the kernel (the remoting port is reported the same way)."""
    port = controller.metrics_port
    return f" metricsPort={port}" if port is not None else ""


async def serve(controller: NamesrvController, on_ready: Callable[[], None]) -> None:
    async with trio.open_nursery() as nursery:
        with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            port = await nursery.start(controller.run)
            print(f"READY namesrv port={port}{_metrics_port(controller)}", flush=True)
            on_ready()
            async for signum in signals:
                log.info("signal %s: shutting down", signal.Signals(signum).name)
                controller.stop()
                break


def prepare(config: NamesrvConfig, level: str) -> str | None:
    """Directories created and proven writable, the log file opened; else the one line."""
    found = [("kvConfigPath", config.kv_config_path.parent)]
    if config.log_file is not None:
        found.append(("logFile", config.log_file.parent))
    return prepare_process(
        found, level, config.log_file, config.log_file_max_bytes, config.log_file_backups
    )


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="mqnamesrv", description="RocketMQ name server (Trio)")
    parser.add_argument("-c", "--configFile", dest="config", help="namesrv.conf (properties)")
    parser.add_argument("-p", "--printConfigItem", action="store_true", help="print config")
    parser.add_argument("--listen-port", type=int, help="override listenPort (0: any free port)")
    parser.add_argument("--host", help="address to bind (default all interfaces)")
    parser.add_argument("--log-level", default="INFO", type=str.upper, choices=LEVELS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    setup_logging(args.log_level)
    try:
        props = properties.load(args.config) if args.config else {}
    except (OSError, properties.PropertiesError) as exc:
        print(f"mqnamesrv: cannot read {args.config}: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    if args.listen_port is not None:
        props["listenPort"] = str(args.listen_port)
    if args.host:
        props["listenHost"] = args.host
    config_file = Path(args.config).resolve() if args.config else None
    try:
        runtime, config = start_config(props, config_file)
    except ConfigError as exc:
        print(f"mqnamesrv: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    if args.printConfigItem:
        print("\n".join(config_lines(config)))
        return 0
    problem = prepare(config, args.log_level)
    if problem is not None:
        print(f"mqnamesrv: {problem}", file=sys.stderr)
        return EXIT_CONFIG
    for advice in ephemeral_conflicts([("listenPort", config.listen_port)]):
        log.warning("%s", advice)
    ready = False

    def on_ready() -> None:
        nonlocal ready
        ready = True

    try:
        controller = NamesrvController(config, runtime=runtime)
    except (AclConfigError, ConfigError) as exc:  # plain_acl.yml, TLS files: key and reason
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
