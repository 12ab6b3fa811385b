"""NamesrvController: the remoting server and the broker expiry scan in one nursery."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from namesrv.config import NamesrvConfig, runtime_config_path
from namesrv.config_update import NamesrvConfigUpdater
from namesrv.kv_config import KVConfigManager
from namesrv.processor import NamesrvProcessor
from namesrv.route_info import RouteInfoManager
from remoting.connection import Connection
from remoting.runtime_config import RuntimeConfig
from remoting.server import RemotingServer, no_reply
from remoting.tls import tls_server
from remoting.tls_config import tls_keys

if TYPE_CHECKING:
    from acl.hook import AclHook
    from acl.service import PlainAclService
    from metrics.exporter import PrometheusExporter

log = logging.getLogger(__name__)


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class NamesrvController:
    def __init__(
        self,
        config: NamesrvConfig,
        *,
        clock: Callable[[], int] = now_ms,
        runtime: RuntimeConfig | None = None,
    ) -> None:
        self.config = config
        self.routes = RouteInfoManager(clock, config.broker_channel_expired_time)
        self.kv = KVConfigManager(config.kv_config_path)
        # UPDATE_NAMESRV_CONFIG validates changes against what namesrv.conf (and the command
        # line) said with the earlier changes over it, and keeps them in configStorePath.
        runtime = runtime or RuntimeConfig(runtime_config_path(config), {})
        updater = NamesrvConfigUpdater(config, runtime)
        self.processor = NamesrvProcessor(config, self.routes, self.kv, updater)
        handlers = self.processor.handlers()
        self.metrics: PrometheusExporter | None = None
        self.metrics_port: int | None = None  # the bound one (metricsPromExporterPort=0: any)
        if config.metrics_enabled:
            # Imported only when on (also the ACL's below): prometheus_client, h11 and PyYAML
            # were a fifth of every NameServer's start-up CPU, and most run without them.
            from metrics.exporter import PrometheusExporter
            from namesrv.metrics import NamesrvFamilies, RequestCounter

            requests = RequestCounter()
            handlers = requests.wrap(handlers)
            self.metrics = PrometheusExporter(
                config.metrics_prom_exporter_host or config.listen_host,
                config.metrics_prom_exporter_port,
                NamesrvFamilies(self.routes, requests, clock),
            )
        self.acl: PlainAclService | None = None
        authorize: AclHook | None = None
        if config.acl_enable:  # loaded now: a bad file stops start-up (AclConfigError)
            from acl.files import resolve_acl_file
            from acl.hook import AclHook
            from acl.service import PlainAclService

            home = Path(config.rocketmq_home)
            self.acl = PlainAclService(home, resolve_acl_file(home, config.plain_acl_file))
            self.acl.load()
            authorize = AclHook(self.acl)
        self.server = RemotingServer(
            config.listen_host,
            config.listen_port,
            name="namesrv",
            processors=handlers,
            default_processor=no_reply,
            idle_timeout_s=config.server_channel_max_idle_time_seconds,
            max_frame_bytes=config.max_frame_bytes,
            max_partial_frames_bytes=config.server_partial_frames_max_bytes,
            max_in_flight_bytes=config.server_channel_max_in_flight_bytes,
            on_connection_closed=self._on_connection_closed,
            authorize=authorize,
            # certificates load now: a bad one stops start-up (ConfigError naming the key)
            tls=tls_server(tls_keys(config)),
        )
        self._stop = trio.Event()

    def _on_connection_closed(self, connection: Connection) -> None:
        self.routes.on_channel_destroy(connection)

    def stop(self) -> None:
        self._stop.set()

    async def run(self, *, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        self.kv.load()
        self.warn_if_open()
        async with trio.open_nursery() as nursery:
            if self.acl is not None:
                await nursery.start(self.acl.run)
            port = await nursery.start(self.server.run)
            if self.metrics is not None:
                self.metrics_port = await nursery.start(self.metrics.run)
            nursery.start_soon(self._scan_loop)
            log.info("name server serving on %s:%d", self.config.listen_host, port)
            task_status.started(port)
            await self._stop.wait()
            await self.server.stop_accepting()
            nursery.cancel_scope.cancel()

    def warn_if_open(self) -> None:
        if self.acl is None and self.config.listen_host not in ("127.0.0.1", "::1", "localhost"):
            log.warning(
                "aclEnable=false and the name server listens on %s: anyone who can reach port "
                "%d can register a broker (hijacking its topics' routes), wipe a broker's write "
                "permission, delete topics and change KV config. Turn on ACL (aclEnable=true, "
                "conf/plain_acl.yml) or limit who can reach the port.",
                self.config.listen_host or "every interface",
                self.config.listen_port,
            )

    async def _scan_loop(self) -> None:
        while True:
            await trio.sleep(self.config.scan_not_active_broker_interval / 1000)
            for _, channel in self.routes.scan_not_active_broker():
                if isinstance(channel, Connection):
                    channel.close_soon("broker expired")
