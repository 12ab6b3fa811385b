"""BrokerController: builds every broker service and runs them in one Trio nursery, in order.

Start order: managers and the store are loaded (recovery first), then the store's services,
HA, the schedule service, the remoting servers (``listenPort`` and the VIP port
``listenPort - 2``), registration with every NameServer (broker/namesrv_registrar.py), the
periodic jobs (broker/housekeeping.py) and, on a slave, the config sync (broker/slave/).
What the broker tells clients unasked is broker/broker2client.py; GET_BROKER_RUNTIME_INFO's
table is broker/runtime_info.py.
Shutdown runs the other way: stop accepting, answer held pulls, unregister, persist, flush and
close. What the services do lives in their modules; this one only wires them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import trio

from acl.hook import AclHook
from broker.access import StoredTopics, broker_credentials, load_acl, warn_if_open
from broker.broker2client import Broker2Client
from broker.client_manager import ClientManager
from broker.config import BrokerConfig
from broker.ha.client import HAClient
from broker.ha.service import HAService
from broker.housekeeping import ClientHousekeepingService, ConfigPersistService
from broker.long_polling import PullRequestHoldService
from broker.namesrv_registrar import HaState, NamesrvRegistrar
from broker.offsets import ConsumerOffsetManager, DelayOffsetTable
from broker.persist import JsonConfigFile
from broker.pop.ack_processor import AckMessageProcessor
from broker.pop.notification import NotificationProcessor
from broker.pop.order_info import OrderInfoTable
from broker.pop.peek import PeekMessageProcessor
from broker.pop.polling import PopLongPollingService
from broker.pop.pop_processor import PopMessageProcessor
from broker.pop.revive import PopReviveService
from broker.processor.acl_admin import AclAdminProcessor
from broker.processor.admin import AdminBrokerProcessor
from broker.processor.call_consumer import ConsumerCallProcessor
from broker.processor.client import ClientManageProcessor
from broker.processor.controller_promise import ControllerPromiseProcessor
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
from broker.registration import BrokerOuterAPI
from broker.runtime_info import BrokerRuntimeInfo
from broker.schedule import ScheduleMessageService
from broker.slave.slave_synchronize import SlaveSynchronize
from broker.stats import BrokerStatsManager
from broker.store.config import BrokerRole, MessageStoreConfig
from broker.store.delay_level import parse_delay_levels
from broker.store.message_store import DefaultMessageStore
from broker.store.slotted import Slotted
from broker.store.types import PutMessageStatus
from broker.subscription_group import SubscriptionGroupManager
from broker.timer.service import TimerMessageService, TimerProgress
from broker.timer.transform import TIMER_TOPIC
from broker.tls import broker_tls
from broker.topic_config import TopicConfigManager
from broker.transaction import TransactionalMessageService
from remoting import constants as K
from remoting.client import RemotingClient
from remoting.codes import RequestCode
from remoting.runtime_config import RuntimeConfig
from remoting.server import RemotingServer, partial_frames_budget

log = logging.getLogger(__name__)


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class BrokerController(Slotted):
    # What the lone-send front reads at every send (broker/store/native/lone_send.c), read at
    # their offsets (broker/store/slotted.py); every other attribute is an ordinary one.
    __slots__ = ("config", "min_in_sync_slaves", "registrar", "stats", "store")

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
        self._build_config_managers()
        self.clients = ClientManager(
            clock=clock,
            expired_after_ms=config.channel_expired_timeout,
            on_group_changed=self.broker2client.notify_consumer_ids_changed,
        )
        self.locks = RebalanceLockManager(clock, config.rebalance_lock_max_live_time)
        self.store = DefaultMessageStore(
            store_config,
            store_host=(config.broker_ip1, config.listen_port),
            arrival_listener=self._on_arrival,
            arrivals_wanted=self._arrivals_wanted,
        )
        self.pull_hold = PullRequestHoldService(
            self.store.get_max_offset_in_queue, check_interval_s=self._hold_check_interval
        )
        self.pop_polling = PopLongPollingService(config.max_pop_polling_size)
        self.pop_revive = PopReviveService(self, clock=clock)
        self.pop_orders = OrderInfoTable()  # orderly pops' batches in flight (in memory)
        self.registrar = NamesrvRegistrar(config, store_config, self.topics, self.ha)
        self.timer_progress = TimerProgress(
            JsonConfigFile(store_config.config_dir / "timerProgress.json")
        )
        self.timer = TimerMessageService(self.store, store_config, self.timer_progress, clock=clock)
        self.persist = ConfigPersistService(
            config,
            (self.offsets, self.delay_offsets, self.topics, self.groups, self.timer_progress),
        )
        self.housekeeping = ClientHousekeepingService(self.clients, self.stats, clock)
        # Certificates load now: a bad one stops start-up (ConfigError naming the key).
        self.tls = broker_tls(config, is_slave=store_config.broker_role is BrokerRole.SLAVE)
        self._build_ha()
        self._declare_plain_idle()
        self.schedule = ScheduleMessageService(
            self.store,
            self.delay_offsets,
            parse_delay_levels(store_config.message_delay_level),
            clock=clock,
        )
        self.acl = load_acl(config)
        self.credentials = broker_credentials(config)
        self._build_servers()
        self.runtime_info = BrokerRuntimeInfo(  # GET_BROKER_RUNTIME_INFO
            store=self.store,
            store_config=store_config,
            pull_hold=self.pull_hold,
            pop_polling=self.pop_polling,
            ha=self.ha,
            ha_service=self.ha_service,
            ha_client=self.ha_client,
            boot_timestamp=clock(),
        )
        self._stop = trio.Event()
        self.stopped = trio.Event()  # run() has returned
        self.loaded = False
        # Auto-failover (broker/election/): why this process should start again in another
        # role, set once; the entry point restarts it after the clean stop.
        self.restart_reason: str | None = None
        self.elector: object | None = None  # broker/election/elector.py, in controller mode
        self.epoch = 0  # the controller's epoch this broker serves in (0: no controller)
        self.truncation: object | None = None  # what a returning member cut (election/)
        # Controller mode, SYNC_MASTER: slaves that must be connected for a send to be taken
        # (minInSyncReplicas - 1; 0: no such check, the 4.x behaviour).
        self.min_in_sync_slaves = 0
        self.port: int | None = None
        self.ha_port: int | None = None
        self.metrics_port: int | None = None

    # ------------------------------------------------------------------------ wiring

    def _build_config_managers(self) -> None:
        """The JSON-kept tables (topics, offsets, groups, delay offsets), in the store's config
        folder as RocketMQ keeps them."""
        config, config_dir = self.config, self.store_config.config_dir
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
            revive_queue_num=config.revive_queue_num,
        )
        self.offsets = ConsumerOffsetManager(JsonConfigFile(config_dir / "consumerOffset.json"))
        self.groups = SubscriptionGroupManager(
            JsonConfigFile(config_dir / "subscriptionGroup.json"),
            auto_create=config.auto_create_subscription_group,
        )
        self.delay_offsets = DelayOffsetTable(JsonConfigFile(config_dir / "delayOffset.json"))
        self.broker2client = Broker2Client(config, self.groups)

    def _build_ha(self) -> None:
        """A slave's HA client (it follows the master registration names), or a master's HA
        service (slaves connect to it; SYNC_MASTER sends wait on it)."""
        store_config = self.store_config
        self.ha_service: HAService | None = None
        self.ha_client: HAClient | None = None
        if store_config.broker_role is BrokerRole.SLAVE:
            self.ha_client = HAClient(
                self.store, store_config, self.ha, ssl_context=self.tls.ha_client
            )
            return
        self.ha_service = HAService(
            self.store,
            store_config,
            self.bind_host,
            store_config.ha_listen_port,
            tls=self.tls.ha_server,
        )
        self.store.put_listener = self.ha_service.notify_new_data

    def _build_servers(self) -> None:
        """The processors the two ports share, and the ports: ``listenPort`` and RocketMQ's VIP
        channel at ``listenPort - 2`` (clients with vipChannelEnabled dial it)."""
        config = self.config
        self.send_back = SendBackProcessor(self)
        self.send = SendMessageProcessor(self)  # replies reuse its checks
        self.pull_processor = PullMessageProcessor(self)  # pops reuse its filters
        self.transactions = TransactionalMessageService(self)
        # The main and VIP ports' connections hold partial frames against one limit.
        self._partial_frames = partial_frames_budget(config.server_partial_frames_max_bytes)
        self.server = self._server("broker", config.listen_port)
        self.vip_server = (
            self._server("broker-vip", config.listen_port - 2) if config.listen_port > 2 else None
        )

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
        server.register(RequestCode.PULL_MESSAGE, self.pull_processor.handle)
        PopMessageProcessor(self).register(server)
        NotificationProcessor(self).register(server)
        PeekMessageProcessor(self).register(server)
        AckMessageProcessor(self).register(server)
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
        ControllerPromiseProcessor(self).register(server)
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
        properties: dict[str, str] | bytes,
    ) -> None:
        if topic == K.SCHEDULE_TOPIC:
            self.schedule.notify_arrival(queue_id)
            return
        if topic == TIMER_TOPIC:
            self.timer.notify_arrival()
            return
        # Java's store calls the arrival listener only with longPollingEnable: short polling
        # answers a held pull at the hold's next check (every shortPollingTimeMills) or its
        # timeout, and a waiting pop or notification at its pollTime (5.x's
        # NotifyMessageArrivingListener wakes all three, so none is woken without it).
        if not self.config.long_polling_enable:
            return
        self.pull_hold.notify_message_arriving(topic, queue_id, max_offset, tags_code)
        if self.pop_polling.waiting:
            self.pop_polling.notify(topic)

    def _declare_plain_idle(self) -> None:
        """When the store's listeners have nothing to do, for its plain pass in one call
        (DefaultMessageStore.plain_idle): ``_arrivals_wanted``'s counters (no pull held, no
        pop waiting: nothing but the services' own topics, which the pass leaves to Python, is
        woken) and HA's ``notify_new_data``'s (no connection waiting for data)."""
        store = self.store
        counters: tuple[tuple[object, str], ...] = (
            (self.pull_hold, "held"),
            (self.pop_polling, "waiting"),
        )
        if self.ha_service is not None:
            counters += ((self.ha_service, "new_data_waiters"),)
        dispatcher = store.dispatcher
        store.plain_idle = (
            store.put_listener,
            dispatcher.arrival_listener,
            dispatcher.arrivals_wanted,
            counters,
        )

    def _arrivals_wanted(self) -> bool:
        """Whether ``_on_arrival`` would wake anything for a user topic now: a plain put asks
        once, instead of calling it for each queue it touched (the store still calls it for
        the schedule's and the timer's topics, dispatch.ALWAYS_HEARD)."""
        return self.config.long_polling_enable and bool(
            self.pull_hold.held or self.pop_polling.waiting
        )

    def _hold_check_interval(self) -> float:
        """PullRequestHoldService's wait between checks in Java: 5 s with long polling, else
        shortPollingTimeMills."""
        if self.config.long_polling_enable:
            return 5.0
        return max(1, self.config.short_polling_time_mills) / 1000

    def _on_connection_closed(self, connection: object) -> None:
        self.clients.channel_closed(connection)
        self.pull_hold.drop(connection)

    @property
    def is_slave(self) -> bool:
        return self.store_config.broker_role is BrokerRole.SLAVE

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

    # ------------------------------------------------------------------------ lifecycle

    def load(self) -> None:
        self.loaded = True
        self.topics.load()
        self.offsets.load()
        self.groups.load()
        self.delay_offsets.load()
        # a slave serves and persists the timer progress it copied, so it loads it too
        self.timer_progress.load()
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
        self.registrar.request()

    def stop(self) -> None:
        self._stop.set()

    def fence(self, reason: str) -> None:
        """Refuse every write from now on (a newer epoch exists, or our lease may be gone)."""
        if self.registrar.fenced is None:
            log.critical("%s", reason)
            self.registrar.fenced = reason

    def require_in_sync_replicas(self) -> None:
        """RocketMQ 5's minInSyncReplicas and inSyncReplicas on a SYNC_MASTER in controller
        mode: refuse sends while fewer replicas are connected, ack once that many hold it."""
        store_config = self.store_config
        if self.ha_service is None or store_config.broker_role is not BrokerRole.SYNC_MASTER:
            return
        replicas = max(store_config.in_sync_replicas, store_config.min_in_sync_replicas)
        self.ha_service.acks_needed = max(1, replicas - 1)
        self.min_in_sync_slaves = store_config.min_in_sync_replicas - 1

    def enough_in_sync_slaves(self) -> bool:
        assert self.ha_service is not None
        return self.ha_service.replica_count >= self.min_in_sync_slaves

    def restart(self, reason: str) -> None:
        """Stop cleanly, then start again: the role is decided anew at start-up. Not when a
        stop (a signal) came first: the operator's stop wins."""
        if self._stop.is_set() and self.restart_reason is None:
            return
        if self.restart_reason is None:
            log.warning("controller: restarting: %s", reason)
            self.restart_reason = reason
        self.stop()

    async def run(self, *, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        if not self.loaded:  # controller mode loads first, to find its term's start
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
                    await nursery.start(self.pop_revive.run)
                    await nursery.start(self.timer.run)
                await nursery.start(self.pull_hold.run)  # held pulls' timeouts
                self.port = await nursery.start(self.server.run)
                if self.vip_server is not None:
                    await nursery.start(self.vip_server.run)
                if self.config.metrics_enabled:
                    # Imported only when on: prometheus_client, h11 and the collectors were
                    # ~6 % of every broker's start-up CPU (-X importtime).
                    from broker.metrics.service import start_metrics

                    self.metrics_port = await start_metrics(self, nursery)
                client = self.open_client(nursery)
                outer = BrokerOuterAPI(client, self.config.namesrv_addrs)
                await nursery.start(self.registrar.run, outer)
                nursery.start_soon(self.persist.run)
                nursery.start_soon(self.housekeeping.run)
                if self.is_slave:
                    nursery.start_soon(self._slave_synchronize(client).run)
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
            self.persist.persist_sync()
            self.stopped.set()

    def open_client(self, nursery: trio.Nursery) -> RemotingClient:
        """A client to NameServers and peer brokers: this broker's TLS and signature."""
        signer = self.credentials.sign if self.credentials is not None else None
        return RemotingClient(nursery, before_request=signer, ssl_context=self.tls.client)

    def _slave_synchronize(self, client: RemotingClient) -> SlaveSynchronize:
        return SlaveSynchronize(
            ha=self.ha,
            broker_addr=self.config.broker_addr,
            topics=self.topics,
            offsets=self.offsets,
            delay_offsets=self.delay_offsets,
            groups=self.groups,
            timer_progress=self.timer_progress if self.store_config.timer_wheel_enable else None,
            client=client,
            interval_s=self.config.slave_synchronize_interval / 1000,
        )

    async def _shutdown(self, client: RemotingClient) -> None:
        log.info("broker shutting down")
        with trio.CancelScope(shield=True):
            await self.server.stop_accepting()
            if self.vip_server is not None:
                await self.vip_server.stop_accepting()
            self.pull_hold.wake_all()
            await trio.sleep(0)  # let woken pulls answer before connections close
            if self.restart_reason is None or not self.config.is_master:
                # A master leaving its role (auto-failover) does not unregister: the NameServer
                # removes by brokerId, as RocketMQ's does, so it would remove the route of the
                # member that now holds id 0. A slave's unregister is harmless (and the C++
                # client only finds the new master's route after it: tests/interop).
                await self.registrar.unregister_all()
            await client.aclose()
