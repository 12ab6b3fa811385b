"""``mqbroker -c broker.conf [-n "a:9876;b:9876"] [-p] [-m]``.

Prints ``READY broker port=N`` on stdout once it serves (tests and ``mqcluster`` wait for it)
and stops cleanly on SIGTERM or SIGINT.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from pathlib import Path

import trio

from acl.errors import AclConfigError
from broker.config import ConfigError, config_lines, listening_ports, load_broker_config
from broker.controller import BrokerController
from broker.store.mapped_file import StoreError
from remoting import properties
from remoting.ports import ephemeral_conflicts

log = logging.getLogger("broker")

# The keys `mqbroker -m` prints: what an operator checks first.
IMPORTANT_KEYS = (
    "brokerClusterName",
    "brokerName",
    "brokerId",
    "brokerRole",
    "flushDiskType",
    "namesrvAddr",
    "listenPort",
    "haListenPort",
    "brokerIP1",
    "storePathRootDir",
    "storePathCommitLog",
    "autoCreateTopicEnable",
)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="mqbroker", description="RocketMQ broker (Trio)")
    parser.add_argument("-c", "--configFile", dest="config", help="broker.conf (properties)")
    parser.add_argument("-n", "--namesrvAddr", dest="namesrv", help='"host:port;host:port"')
    parser.add_argument("-p", "--printConfigItem", action="store_true", help="print all config")
    parser.add_argument(
        "-m", "--printImportantConfig", action="store_true", help="print important config"
    )
    parser.add_argument("--log-level", default="INFO")
    return parser.parse_args(argv)


def setup_logging(level: str, log_file: object = None) -> None:
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if log_file is not None:
        handlers.append(logging.FileHandler(str(log_file)))
    logging.basicConfig(
        level=level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        handlers=handlers,
    )


async def serve(controller: BrokerController) -> None:
    async with trio.open_nursery() as nursery:
        with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            port = await nursery.start(controller.run)
            print(f"READY broker port={port}", flush=True)
            async for signum in signals:
                log.info("signal %s: shutting down", signal.Signals(signum).name)
                controller.stop()
                break


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    setup_logging(args.log_level)
    try:
        props = properties.load(args.config) if args.config else {}
    except (OSError, properties.PropertiesError) as exc:
        print(f"mqbroker: cannot read {args.config}: {exc}", file=sys.stderr)
        return 2
    if args.namesrv:
        props["namesrvAddr"] = args.namesrv
    try:
        config, store_config = load_broker_config(props)
    except ConfigError as exc:
        print(f"mqbroker: {exc}", file=sys.stderr)
        return 2
    if args.printConfigItem or args.printImportantConfig:
        for line in config_lines(config, store_config):
            if args.printConfigItem or line.split("=", 1)[0] in IMPORTANT_KEYS:
                print(line)
        return 0
    if config.log_file is not None:
        setup_logging(args.log_level, config.log_file)
    for advice in ephemeral_conflicts(listening_ports(config, store_config)):
        log.warning("%s", advice)
    try:
        controller = BrokerController(
            config,
            store_config,
            properties=props,
            config_path=Path(args.config).resolve() if args.config else None,
        )
        trio.run(serve, controller)
    except StoreError as exc:
        print(f"mqbroker: {exc}", file=sys.stderr)
        return 3
    except AclConfigError as exc:
        print(f"mqbroker: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
