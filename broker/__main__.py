"""``mqbroker -c broker.conf [-n "a:9876;b:9876"] [-p] [-m]``.

Prints ``READY broker port=N`` (and `` metricsPort=N`` when it serves /metrics) on stdout once
it serves (tests and ``mqcluster`` wait for it) and stops cleanly on SIGTERM or SIGINT.
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from acl.errors import AclConfigError
from broker.config import BrokerConfig, ConfigError, config_lines, listening_ports
from broker.config_update import start_config
from broker.controller import BrokerController
from broker.persist import ConfigPersistError
from broker.store.config import MessageStoreConfig
from broker.store.mapped_file import StoreError
from remoting import properties
from remoting.logs import LEVELS, setup_logging
from remoting.ports import ephemeral_conflicts
from remoting.runtime_config import RuntimeConfig
from remoting.startup import EXIT_CONFIG, EXIT_START, prepare_process, start_failure

if TYPE_CHECKING:
    from broker.election.elector import Elector

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
    parser.add_argument("--log-level", default="INFO", type=str.upper, choices=LEVELS)
    return parser.parse_args(argv)


def _metrics_port(controller: BrokerController) -> str:
    """`` metricsPort=N`` for the READY line when /metrics is served: the port bound, which
    metricsPromExporterPort=0 leaves to the kernel (the remoting port is reported the same way)."""
    port = controller.metrics_port
    return f" metricsPort={port}" if port is not None else ""


async def serve(
    controller: BrokerController, on_ready: Callable[[], None], elector: Elector | None = None
) -> None:
    async with trio.open_nursery() as nursery:
        with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            port = await nursery.start(controller.run)
            if elector is not None:
                await nursery.start(elector.run)
            print(f"READY broker port={port}{_metrics_port(controller)}", flush=True)
            on_ready()
            nursery.start_soon(_stop_on_signal, controller, signals)
            await controller.stopped.wait()
            nursery.cancel_scope.cancel()


async def _stop_on_signal(controller: BrokerController, signals: AsyncIterator[int]) -> None:
    async for signum in signals:
        log.info("signal %s: shutting down", signal.Signals(signum).name)
        controller.restart_reason = None  # asked to stop: not to come back in a new role
        controller.stop()
        break


def directories(config: BrokerConfig, store: MessageStoreConfig) -> list[tuple[str, Path]]:
    """What the broker writes in, by the key that names it."""
    found = [
        ("storePathRootDir", store.store_path_root_dir),
        ("storePathRootDir", store.config_dir),
    ]
    if store.store_path_commit_log is not None:
        found.append(("storePathCommitLog", store.commit_log_dir))
    if config.log_file is not None:
        found.append(("logFile", config.log_file.parent))
    return found


def prepare(config: BrokerConfig, store: MessageStoreConfig, level: str) -> str | None:
    """Directories created and proven writable, the log file opened; else the one line."""
    return prepare_process(
        directories(config, store),
        level,
        config.log_file,
        config.log_file_max_bytes,
        config.log_file_backups,
    )


def main(argv: list[str] | None = None) -> int:
    """Start-up ends in READY or in one line and an exit code (remoting/startup.py)."""
    args = parse_args(argv)
    setup_logging(args.log_level)
    try:
        props = properties.load(args.config) if args.config else {}
    except (OSError, properties.PropertiesError) as exc:
        print(f"mqbroker: cannot read {args.config}: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    if args.namesrv:
        props["namesrvAddr"] = args.namesrv
    config_file = Path(args.config).resolve() if args.config else None
    try:
        runtime, config, store_config = start_config(props, config_file)
    except ConfigError as exc:
        print(f"mqbroker: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    if args.printConfigItem or args.printImportantConfig:
        for line in config_lines(config, store_config):
            if args.printConfigItem or line.split("=", 1)[0] in IMPORTANT_KEYS:
                print(line)
        return 0
    problem = prepare(config, store_config, args.log_level)
    if problem is not None:
        print(f"mqbroker: {problem}", file=sys.stderr)
        return EXIT_CONFIG
    for advice in ephemeral_conflicts(listening_ports(config, store_config)):
        log.warning("%s", advice)
    ready = False

    def on_ready() -> None:
        nonlocal ready
        ready = True
        # What start-up built and keeps for the process's life (8,000 ConsumeQueues and their
        # mappings, the offset and topic tables, every module) leaves the collector's view:
        # a full collection no longer walks it, which at that size held the loop for seconds.
        gc.freeze()

    if config.enable_controller_mode:
        return controller_mode(argv, config, store_config, runtime)
    try:
        controller = BrokerController(config, store_config, runtime=runtime)
    except (AclConfigError, ConfigError) as exc:  # plain_acl.yml, TLS files: key and reason
        print(f"mqbroker: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    try:
        trio.run(serve, controller, on_ready)
    except BaseException as exc:
        return cannot_start(exc, ready)
    return 0


def cannot_start(exc: BaseException, ready: bool) -> int:
    """A store or config file that stops start-up is one line and EXIT_START; anything else, or
    anything after READY, is raised again."""
    failure = None if ready else start_failure(exc, (StoreError, ConfigPersistError))
    if failure is None:
        raise exc
    print(f"mqbroker: cannot start: {failure}", file=sys.stderr)
    return EXIT_START


def controller_mode(
    argv: list[str] | None,
    config: BrokerConfig,
    store_config: MessageStoreConfig,
    runtime: RuntimeConfig,
) -> int:
    """enableControllerMode=true: the role comes from etcd (broker/election/startup.py); a role
    change stops the broker cleanly and starts this program again in the same process (same
    pid, same stdout), so the store recovers and every service starts in its new role."""
    ready = False

    def on_ready() -> None:
        nonlocal ready
        ready = True

    async def run_one(controller: BrokerController, elector: Elector) -> None:
        await serve(controller, on_ready, elector)

    # Here, not at the top: the elector and its etcd client were ~7 % of every broker's
    # start-up CPU (-X importtime), and only controller mode uses them.
    from broker.election.startup import serve_elected

    try:
        restart = trio.run(serve_elected, config, store_config, runtime, run_one)
    except (AclConfigError, ConfigError) as exc:
        print(f"mqbroker: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except BaseException as exc:
        return cannot_start(exc, ready)
    if restart is None:
        return 0
    log.warning("restarting the broker in its new role: %s", restart)
    logging.shutdown()
    args = sys.argv[1:] if argv is None else argv
    os.execv(sys.executable, [sys.executable, "-m", "broker", *args])
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
