"""BrokerController: builds and owns every broker service in one Trio nursery.

Start order: managers and the store are loaded (recovery first), then the store's services,
the schedule service, the remoting servers (``listenPort`` and the VIP port
``listenPort - 2``), registration with every NameServer and the periodic jobs. Shutdown runs
the other way: stop accepting, answer held pulls, unregister, persist, flush and close.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import Callable

import attrs
import trio

from acl.hook import AclHook
from broker.access import StoredTopics, broker_credentials, load_acl, warn_if_open
from broker.client_manager import ClientManager
from broker.config import BrokerConfig
from broker.ha.client import HAClient
from broker.ha.service import HAService
from broker.ha.slave_sync import SlaveSynchronize
from broker.long_polling import PullRequestHoldService
from broker.metrics.service import start_metrics
from broker.offsets import ConsumerOffsetManager, DelayOffsetTable
from broker.persist import JsonConfigFile
from broker.processor.acl_admin import AclAdminProcessor
from broker.processor.admin import AdminBrokerProcessor
from broker.processor.call_consumer import ConsumerCallProcessor
from broker.processor.client import ClientManageProcessor
from broker.processor.maintenance import MaintenanceProcessor
from broker.processor.pull import PullMessageProcessor
from broker.processor.query import QueryProcessor
from broker.processor.query_cq import QueryConsumeQueueProcessor
from broker.processor.reply import ReplyMessageProcessor
from broker.processor.reset_offset import ResetOffsetProcessor
from broker.processor.send import SendMessageProcessor
from broker.processor.send_back import SendBackProcessor
from broker.processor.update_config import UpdateBrokerConfigProcessor
from broker.rebalance_lock import RebalanceLockManager
from broker.registration import BrokerIdentity, BrokerOuterAPI, RegisterResult
from broker.schedule import ScheduleMessageService
from broker.stats import BrokerStatsManager
from broker.store.config import BrokerRole, MessageStoreConfig
from broker.store.delay_level import parse_delay_levels
from broker.store.message_store import DefaultMessageStore
from broker.store.types import PutMessageStatus
from broker.subscription_group import SubscriptionGroupManager
from broker.tls import broker_tls
from broker.topic_config import TopicConfigManager
from broker.transaction import TransactionalMessageService
from remoting import constants as K
from remoting.client import RemotingClient
from remoting.codes import CURRENT_VERSION, RequestCode
from remoting.command import RemotingCommand
from remoting.runtime_config import RuntimeConfig
from remoting.server import RemotingServer, partial_frames_budget
from remoting.version import CURRENT_VERSION_DESC

log = logging.getLogger(__name__)

UNREGISTER_TIMEOUT_S = 3.0
HOUSEKEEPING_INTERVAL_S = 10.0


def now_ms() -> int:
    return time.time_ns() // 1_000_000


@attrs.define
class HaState:
    """What registration learned for the HA side (a slave's master), see broker/ha."""

    master_addr: str | None = None
    ha_master_addr: str | None = None
    changed: trio.Event = attrs.Factory(trio.Event)


class BrokerController:
    def __init__(
        self,
        config: BrokerConfig,
        store_config: MessageStoreConfig,
        *,
        clock: Callable[[], int] = now_ms,
        runtime: RuntimeConfig | None = None,
    ) -> None:
        self.config = config
        self.store_config = store_config
        # What broker.conf (and -n) said and what UPDATE_BROKER_CONFIG changed since, kept in
        # brokerConfigPath (broker/config_update.py).
        self.runtime = runtime or RuntimeConfig(
            config.broker_config_path or store_config.config_dir / "broker.properties", {}
        )
        self.config_lock = trio.Lock()  # one UPDATE_BROKER_CONFIG at a time
        self.clock = clock
        self.stats = BrokerStatsManager(clock)  # per topic and group (VIEW_BROKER_STATS_DATA)
        self.ha = HaState(ha_master_addr=store_config.ha_master_address)
        config_dir = store_config.config_dir
        self.topics = TopicConfigManager(
            JsonConfigFile(config_dir / "topics.json"),
            cluster_name=config.broker_cluster_name,
            broker_name=config.broker_name,
            default_queue_nums=config.default_topic_queue_nums,
            auto_create_topic_enable=config.auto_create_topic_enable,
            cluster_topic_enable=config.cluster_topic_enable,
            broker_topic_enable=config.broker_topic_enable,
            trace_topic=config.msg_trace_topic_name if config.trace_topic_enable else None,
            on_change=self.request_registration,
        )
        self.offsets = ConsumerOffsetManager(JsonConfigFile(config_dir / "consumerOffset.json"))
        self.groups = SubscriptionGroupManager(
            JsonConfigFile(config_dir / "subscriptionGroup.json"),
            auto_create=config.auto_create_subscription_group,
        )
        self.delay_offsets = DelayOffsetTable(JsonConfigFile(config_dir / "delayOffset.json"))
        self.clients = ClientManager(
            clock=clock,
            expired_after_ms=config.channel_expired_timeout,
            on_group_changed=self.notify_consumer_ids_changed,
        )
        self.locks = RebalanceLockManager(clock, config.rebalance_lock_max_live_time)
        self.store = DefaultMessageStore(
            store_config,
            store_host=(config.broker_ip1, config.listen_port),
            arrival_listener=self._on_arrival,
        )
        self.pull_hold = PullRequestHoldService(self.store.get_max_offset_in_queue)
        # Certificates load now: a bad one stops start-up (ConfigError naming the key).
        self.tls = broker_tls(config, is_slave=store_config.broker_role is BrokerRole.SLAVE)
        self.ha_service: HAService | None = None
        self.ha_client: HAClient | None = None
        if store_config.broker_role is BrokerRole.SLAVE:
            self.ha_client = HAClient(
                self.store, store_config, self.ha, ssl_context=self.tls.ha_client
            )
        else:
            self.ha_service = HAService(
                self.store,
                store_config,
                self.config.broker_ip1 if self.config.broker_ip1 == "127.0.0.1" else "",
                store_config.ha_listen_port,
                tls=self.tls.ha_server,
            )
            self.store.put_listener = self.ha_service.notify_new_data
        self.schedule = ScheduleMessageService(
            self.store,
            self.delay_offsets,
            parse_delay_levels(store_config.message_delay_level),
            clock=clock,
        )
        self.acl = load_acl(config)
        self.credentials = broker_credentials(config)
        self.send_back = SendBackProcessor(self)
        self.send = SendMessageProcessor(self)  # replies reuse its checks
        self.transactions = TransactionalMessageService(self)
        # The main and VIP ports' connections hold partial frames against one limit.
        self._partial_frames = partial_frames_budget(config.server_partial_frames_max_bytes)
        self.server = self._server("broker", config.listen_port)
        # RocketMQ's VIP channel: clients with vipChannelEnabled dial listenPort - 2.
        self.vip_server = (
            self._server("broker-vip", config.listen_port - 2) if config.listen_port > 2 else None
        )
        self._register_now = trio.Event()
        self._stop = trio.Event()
        self.outer: BrokerOuterAPI | None = None
        self.boot_timestamp = clock()
        self.port: int | None = None
        self.ha_port: int | None = None
        self.metrics_port: int | None = None
        # Set when a NameServer refuses us as master after our slave was promoted: split-brain
        # writes are refused (the remark says how to rejoin).
        self.fenced: str | None = None

    # ------------------------------------------------------------------------ wiring

    def _server(self, name: str, port: int) -> RemotingServer:
        server = RemotingServer(
            self.bind_host,
            port,
            name=name,
            max_frame_bytes=self.config.max_frame_bytes,
            budget=self._partial_frames,
            max_in_flight_bytes=self.config.server_channel_max_in_flight_bytes,
            on_connection_closed=self._on_connection_closed,
            authorize=(
                AclHook(self.acl, StoredTopics(self.store)) if self.acl is not None else None
            ),
            tls=self.tls.server,
        )
        self.send.register(server)
        ReplyMessageProcessor(self).register(server)
        server.register(RequestCode.PULL_MESSAGE, PullMessageProcessor(self).handle)
        QueryProcessor(self).register(server)
        ClientManageProcessor(self).register(server)
        AdminBrokerProcessor(self).register(server)
        ResetOffsetProcessor(self).register(server)
        ConsumerCallProcessor(self).register(server)
        UpdateBrokerConfigProcessor(self).register(server)
        QueryConsumeQueueProcessor(self).register(server)
        MaintenanceProcessor(self).register(server)
        server.register(RequestCode.END_TRANSACTION, self.transactions.end_transaction)
        AclAdminProcessor(self).register(server)
        return server

    @property
    def bind_host(self) -> str:
        return self.config.broker_ip1 if self.config.broker_ip1 == "127.0.0.1" else ""

    def _on_arrival(
        self,
        topic: str,
        queue_id: int,
        max_offset: int,
        tags_code: int,
        store_ts: int,
        properties: dict[str, str],
    ) -> None:
        if topic == K.SCHEDULE_TOPIC:
            self.schedule.notify_arrival(queue_id)
            return
        self.pull_hold.notify_message_arriving(topic, queue_id, max_offset, tags_code)

    def _on_connection_closed(self, connection: object) -> None:
        self.clients.channel_closed(connection)

    def notify_consumer_ids_changed(self, group: str, channels: list[object]) -> None:
        if not self.config.notify_consumer_ids_changed_enable:
            return
        config = self.groups.table.get(group)
        if config is not None and not config.notify_consumer_ids_changed_enable:
            return
        for channel in channels:
            request = RemotingCommand.request(
                RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, {"consumerGroup": group}, oneway=True
            )
            channel.send_nowait(request)  # type: ignore[attr-defined]

    @property
    def is_slave(self) -> bool:
        return self.store_config.broker_role is BrokerRole.SLAVE

    def identity(self) -> BrokerIdentity:
        return BrokerIdentity(
            cluster_name=self.config.broker_cluster_name,
            broker_name=self.config.broker_name,
            broker_addr=self.config.broker_addr,
            broker_id=self.config.broker_id,
            ha_server_addr=self.config.ha_server_addr(self.store_config.ha_listen_port),
        )

    async def wait_replicated(self, end_offset: int) -> PutMessageStatus:
        """SYNC_MASTER: PUT_OK once a slave acked ``end_offset``. Without the HA service a
        SYNC_MASTER has no slave, which Java answers with SLAVE_NOT_AVAILABLE."""
        if self.ha_service is None:
            return PutMessageStatus.SLAVE_NOT_AVAILABLE
        return await self.ha_service.wait_replicated(
            end_offset, self.store_config.sync_flush_timeout / 1000
        )

    def delete_topics(self, topics: set[str]) -> None:
        self.topics.delete(topics)
        self.offsets.remove_topics(topics)
        self.store.delete_topics(topics)

    def runtime_info(self) -> dict[str, str]:
        info = self.store.runtime_info()
        info.update(
            {
                # The RocketMQ release whose protocol we speak (the version every reply carries,
                # which Java clients gate features on), not a release of rocketmq-trio.
                "brokerVersionDesc": CURRENT_VERSION_DESC,
                "brokerVersion": str(CURRENT_VERSION),
                "bootTimestamp": str(self.boot_timestamp),
                "brokerRole": self.store_config.broker_role.name,
                "msgPutTotalTodayNow": str(self.store.stats.put_message_times_total),
                "msgGetTotalTodayNow": str(self.store.stats.get_message_transferred_msg_count),
                "pullHeldCount": str(self.pull_hold.held),
            }
        )
        info.update(self.ha_runtime_info())
        return info

    def ha_runtime_info(self) -> dict[str, str]:
        """Replication status (ours; RocketMQ 4.x shows none): per-slave acked offset and lag
        on a master, the master it follows on a slave."""
        if self.ha_service is not None:
            service = self.ha_service
            return {
                "haConnectionCount": str(service.connection_count),
                "haPush2SlaveMaxOffset": str(service.push2slave_max_offset),
                "haSlaveDisconnects": str(service.disconnects),
                "haSlaves": json.dumps(service.slaves(), separators=(",", ":")),
            }
        if self.ha_client is not None:
            status = self.ha_client.status()
            return {
                "masterAddr": self.ha.master_addr or "",
                "haMasterAddr": str(status["haMasterAddr"]),
                "haConnected": str(status["connected"]).lower(),
                "haDisconnects": str(status["disconnects"]),
                "haLastChunkMillisAgo": str(status["lastChunkMillisAgo"]),
            }
        return {}

    # ------------------------------------------------------------------------ lifecycle

    def load(self) -> None:
        self.topics.load()
        self.offsets.load()
        self.groups.load()
        self.delay_offsets.load()
        report = self.store.load()
        log.info("store loaded: %s", report)
        if not self.is_slave:
            self._recover_topics_from_store()

    def _recover_topics_from_store(self) -> None:
        """Topics the store holds queues for but the topic config lacks: a slave promoted to
        master before its 10 s config sync brought a new topic, or a lost topics.json. Without
        this, their messages would be unreachable and new sends would skip this broker."""
        for topic in sorted(self.store.consume_queues.topics() - set(self.topics.table)):
            config = self.topics.from_queues(topic, self.store.queue_count(topic))
            if config is not None:
                log.warning("topic %s found in the store but not in the config: recreated", topic)
                self.topics.update(config)

    def request_registration(self) -> None:
        self._register_now.set()

    def stop(self) -> None:
        self._stop.set()

    async def run(self, *, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        self.load()
        warn_if_open(self.config, self.acl is not None, self.bind_host)
        try:
            async with trio.open_nursery() as nursery:
                if self.acl is not None:
                    await nursery.start(self.acl.run)
                await nursery.start(self.store.run)
                if self.ha_service is not None:
                    self.ha_port = await nursery.start(self.ha_service.run)
                if self.ha_client is not None:
                    await nursery.start(self.ha_client.run)
                if not self.is_slave:
                    await nursery.start(self.schedule.run)
                self.port = await nursery.start(self.server.run)
                if self.vip_server is not None:
                    await nursery.start(self.vip_server.run)
                self.metrics_port = await start_metrics(self, nursery)
                signer = self.credentials.sign if self.credentials is not None else None
                client = RemotingClient(nursery, before_request=signer, ssl_context=self.tls.client)
                self.outer = BrokerOuterAPI(client, self.config.namesrv_addrs)
                await self.register_all()
                nursery.start_soon(self._registration_loop)
                nursery.start_soon(self._persist_loop)
                nursery.start_soon(self._housekeeping_loop)
                if self.is_slave:
                    nursery.start_soon(SlaveSynchronize(self, client).run)
                else:
                    nursery.start_soon(self.transactions.run)
                log.info(
                    "broker %s (id %d, %s) serving on port %d",
                    self.config.broker_name,
                    self.config.broker_id,
                    self.store_config.broker_role.name,
                    self.port,
                )
                task_status.started(self.port)
                await self._stop.wait()
                await self._shutdown(client)
                nursery.cancel_scope.cancel()
        finally:
            self.persist_sync()

    async def _shutdown(self, client: RemotingClient) -> None:
        log.info("broker shutting down")
        with trio.CancelScope(shield=True):
            await self.server.stop_accepting()
            if self.vip_server is not None:
                await self.vip_server.stop_accepting()
            self.pull_hold.wake_all()
            await trio.sleep(0)  # let woken pulls answer before connections close
            if self.outer is not None:
                with trio.move_on_after(UNREGISTER_TIMEOUT_S + 1):
                    await self.outer.unregister_all(self.identity(), UNREGISTER_TIMEOUT_S)
            await client.aclose()

    def persist_sync(self) -> None:
        for manager in (self.topics, self.offsets, self.groups, self.delay_offsets):
            try:
                manager.persist_sync()
            except OSError as exc:  # the file logged when its writes started failing
                log.error("%s not saved at shutdown: %s", manager.file.what, exc)

    async def _persist_loop(self) -> None:
        """Offsets live in memory and land here; a failed write (full disk) is logged once by
        its file and retried every period until it succeeds."""
        while True:
            await trio.sleep(self.config.flush_consumer_offset_interval / 1000)
            for manager in (self.offsets, self.delay_offsets, self.topics, self.groups):
                with contextlib.suppress(OSError):
                    await manager.persist()

    async def _housekeeping_loop(self) -> None:
        while True:
            await trio.sleep(HOUSEKEEPING_INTERVAL_S)
            self.stats.sample(self.clock())
            for channel in self.clients.scan_expired():
                close = getattr(channel, "close_soon", None)
                if close is not None:
                    close("client channel expired")

    # ------------------------------------------------------------------------ registration

    async def register_all(self) -> None:
        # Reset first: a broker without NameServers used to return with the event still set and
        # spin this loop (a third of its CPU) after the first topic change.
        self._register_now = trio.Event()
        if self.outer is None or not self.outer.namesrv_addrs:
            return
        results = await self.outer.register_all(
            self.identity(),
            self.topics.with_permission(self.config.broker_permission),
            self.config.register_broker_timeout_mills / 1000,
        )
        for result in results:
            self._apply(result)

    def _apply(self, result: RegisterResult) -> None:
        if result.fenced:
            if self.fenced is None:
                log.critical("%s: refusing every write from now on", result.fenced)
            self.fenced = result.fenced
            return
        if self.is_slave and result.master_addr and result.master_addr != self.ha.master_addr:
            log.info(
                "master of %s is %s (HA %s)",
                self.config.broker_name,
                result.master_addr,
                result.ha_server_addr,
            )
            self.ha.master_addr = result.master_addr
            if result.ha_server_addr and not self.store_config.ha_master_address:
                self.ha.ha_master_addr = result.ha_server_addr
            self.ha.changed.set()
            self.ha.changed = trio.Event()
        if result.order_topics is not None:
            for name, config in list(self.topics.table.items()):
                order = name in result.order_topics
                if config.order != order:
                    self.topics.table[name] = attrs.evolve(config, order=order)

    async def _registration_loop(self) -> None:
        period = min(max(self.config.register_name_server_period, 10_000), 60_000) / 1000
        while True:
            with trio.move_on_after(period):
                await self._register_now.wait()
            await self.register_all()
