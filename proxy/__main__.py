"""``mqproxy -pc rmq-proxy.json [-n namesrvAddr]``: RocketMQ 5's Proxy in cluster mode. Prints
``READY proxy port=N`` once it serves gRPC and stops cleanly on SIGTERM or SIGINT. Start-up
ends in READY or in one line and an exit code (remoting/startup.py).

Two event loops, one job each: grpcio's asyncio server (the gRPC implementation the SDKs are
built and tested against, HTTP/2 flow control and keepalive included) in the main thread, and
our Trio remoting client in a thread of its own (proxy/bridge.py). purerpc, the Trio-native
option, is a small project several grpcio releases behind and without server-side flow-control
tuning; a bridge between two loops is the smaller risk.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from pathlib import Path
from typing import Any

import grpc
import trio

from acl.errors import AclConfigError
from acl.files import resolve_acl_file
from acl.service import PlainAclService
from client.instance import ClientConfig, MQClientInstance
from proxy.access import admission, tools_credentials
from proxy.apis import service_pb2_grpc
from proxy.bridge import TrioBridge
from proxy.cluster import ClusterClient
from proxy.config import ConfigError, ProxyConfig, load_proxy_config
from proxy.liveness import ClientLiveness
from proxy.malformed import MalformedRequests
from proxy.pop import PopClient
from proxy.renew import Renewer, RenewPolicy
from proxy.service import MessagingService
from proxy.tls import effective_keys, grpc_server_credentials, remoting_context
from remoting.logs import LEVELS, setup_logging
from remoting.startup import EXIT_CONFIG, EXIT_START, prepare_process

log = logging.getLogger("proxy")

START_TIMEOUT_S = 30.0
STOP_GRACE_S = 5.0


class Remoting:
    """What the Trio thread opens for the gRPC side: the client instance, ClusterClient, the
    pop calls and the receipt-handle renewer."""

    def __init__(
        self, config: ProxyConfig, ssl_context: Any = None, credentials: Any = None, acl: Any = None
    ) -> None:
        self.config = config
        self.ssl_context = ssl_context
        self.credentials = credentials
        self.acl = acl
        self.cluster: ClusterClient | None = None
        self.pops: PopClient | None = None
        self.renewer: Renewer | None = None
        self.liveness: ClientLiveness | None = None

    async def main(self, nursery: trio.Nursery, ready: Any) -> None:
        client_config = ClientConfig(
            self.config.namesrv_addr or "",
            instance_name=f"proxy-{os.getpid()}",
            request_timeout_ms=self.config.request_timeout_mills,
            ssl_context=self.ssl_context,
            credentials=self.credentials,
        )
        async with MQClientInstance.open(client_config) as instance:
            self.cluster = ClusterClient(instance, self.config.request_timeout_mills / 1000)
            self.pops = PopClient(self.cluster)
            self.renewer = Renewer(self.pops.change_invisible, renew_policy(self.config))
            await nursery.start(self.renewer.run)
            if self.acl is not None:
                await nursery.start(self.acl.run)  # plain_acl.yml reloads
            leave = [self.renewer.client_left, self.cluster.consumer_left]
            self.liveness = ClientLiveness(self.config.grpc_client_idle_time_mills, leave)
            await nursery.start(self.liveness.run)
            ready()
            await trio.sleep_forever()


def renew_policy(config: ProxyConfig) -> RenewPolicy:
    return RenewPolicy(
        period_ms=config.renew_schedule_period_millis,
        ahead_ms=config.renew_ahead_time_millis,
        max_ms=config.renew_max_time_millis,
        max_failures=config.max_renew_retry_times,
        when_clear_ms=config.invisible_time_millis_when_clear,
    )


def grpc_server(config: ProxyConfig, admit: Any = None) -> grpc.aio.Server:
    limit = config.grpc_max_inbound_message_size
    return grpc.aio.server(
        options=[
            ("grpc.max_receive_message_length", limit),
            ("grpc.max_send_message_length", limit),
            ("grpc.so_reuseport", 0),
        ],
        maximum_concurrent_rpcs=config.grpc_max_concurrent_calls,
        interceptors=[MalformedRequests(admit)],
    )


async def serve(
    config: ProxyConfig, bridge: TrioBridge, remoting: Remoting, credentials: Any
) -> int:
    server = grpc_server(config, admission(remoting.acl) if remoting.acl is not None else None)
    service_pb2_grpc.add_MessagingServiceServicer_to_server(
        MessagingService(config, bridge, remoting), server
    )
    address = f"{config.grpc_server_host}:{config.grpc_server_port}"
    try:
        if credentials is None:
            port = server.add_insecure_port(address)
        else:
            port = server.add_secure_port(address, credentials)
    except RuntimeError as exc:
        print(
            f"mqproxy: cannot start: grpcServerPort: cannot bind {address}: {exc}", file=sys.stderr
        )
        return EXIT_START
    await server.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    print(f"READY proxy port={port}{' tls' if credentials is not None else ''}", flush=True)
    log.info(
        "serving gRPC on %s:%d, NameServers %s", config.grpc_server_host, port, config.namesrv_addr
    )
    await stop.wait()
    log.info("signal: shutting down")
    await server.stop(STOP_GRACE_S)
    return 0


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="mqproxy", description="RocketMQ 5 gRPC proxy (cluster mode)"
    )
    parser.add_argument("-pc", "--proxyConfigPath", dest="config", help="rmq-proxy.json")
    parser.add_argument("-n", "--namesrvAddr", dest="namesrv", help="host:port;host:port")
    parser.add_argument("--grpc-port", type=int, help="override grpcServerPort (0: any free port)")
    parser.add_argument("--host", help="address to bind (default all interfaces)")
    parser.add_argument("--log-level", default="INFO", type=str.upper, choices=LEVELS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    setup_logging(args.log_level)
    overrides: dict[str, Any] = {}
    if args.namesrv:
        overrides["namesrvAddr"] = args.namesrv
    if args.grpc_port is not None:
        overrides["grpcServerPort"] = args.grpc_port
    if args.host:
        overrides["grpcServerHost"] = args.host
    try:
        config = load_proxy_config(args.config, overrides)
    except ConfigError as exc:
        print(f"mqproxy: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    logs = [("logFile", config.log_file.parent)] if config.log_file is not None else []
    problem = prepare_process(
        logs, args.log_level, config.log_file, config.log_file_max_bytes, config.log_file_backups
    )
    if problem is not None:
        print(f"mqproxy: {problem}", file=sys.stderr)
        return EXIT_CONFIG
    try:
        keys = effective_keys(config)
        tls_credentials = grpc_server_credentials(keys)
        ssl_context = remoting_context(keys)
        home = Path(config.rocketmq_home)
        credentials = None
        if config.enable_acl_rpc_hook_for_cluster_mode:
            credentials = tools_credentials(home)
        acl = None
        if config.enable_acl:
            acl = PlainAclService(home, resolve_acl_file(home, config.plain_acl_file))
            acl.load()
    except (ConfigError, AclConfigError) as exc:  # tls.* and ACL keys, the files they name
        print(f"mqproxy: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    remoting = Remoting(config, ssl_context, credentials, acl)
    bridge = TrioBridge(remoting.main)
    try:
        bridge.start(START_TIMEOUT_S)
    except Exception as exc:
        print(f"mqproxy: cannot start the remoting client: {exc}", file=sys.stderr)
        return EXIT_START
    try:
        return asyncio.run(serve(config, bridge, remoting, tls_credentials))
    finally:
        bridge.close()


if __name__ == "__main__":
    sys.exit(main())
