"""BrokerConfig and the ``broker.conf`` loader (docs/STYLE.md §9, docs/ARCHITECTURE.md "Contracts").

One ``broker.conf`` feeds two frozen classes, as in RocketMQ: BrokerConfig (identity, network,
features) and MessageStoreConfig (the store). Field ``x_y`` is key ``xY`` unless metadata
names the key. Unknown keys are warned about once; keys RocketMQ knows but we do not use are
accepted silently so operators' files carry over; a bad value stops start-up with the key,
the value and the reason.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from broker.election.config import ControllerKeys
from broker.store.config import BrokerRole, MessageStoreConfig
from metrics.config import MetricsKeys
from remoting import constants as K
from remoting.logs import DEFAULT_BACKUPS, DEFAULT_MAX_BYTES
from remoting.names import TOPIC_MAX_LENGTH
from remoting.settings import (
    PORT,
    ConfigError,
    address_list,
    build,
    config_text,
    ip_address,
    java_int,
    java_long,
    node_name,
    read_fields,
    topic_name,
    wire_key,
)
from remoting.tls_config import SECRET_TLS_FIELDS, TlsKeys, tls_keys_last

log = logging.getLogger(__name__)


def _local_ip() -> str:
    # The address other hosts reach us on, as Java's RemotingUtil.getLocalAddress picks it;
    # on a box with no route out, loopback.
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("10.255.255.255", 1))
            return s.getsockname()[0]
    except OSError:
        return "127.0.0.1"


def _cluster_name(_: object, attribute: attrs.Attribute, value: str) -> None:
    node_name(_, attribute, value)
    room = TOPIC_MAX_LENGTH - len(K.reply_topic(""))
    if len(value) > room:  # the cluster's reply topic is a topic too
        raise ValueError(f"must be at most {room} characters: {K.reply_topic(value)!r} is a topic")


# Every key: its type, and a validator bounding it (remoting/settings.py). Times are ms unless
# the comment says otherwise.
@attrs.frozen(kw_only=True)
class BrokerConfig(TlsKeys, MetricsKeys, ControllerKeys):  # tls.*, metrics*, controller* first
    broker_cluster_name: str = attrs.field(default="DefaultCluster", validator=_cluster_name)
    broker_name: str = attrs.field(factory=socket.gethostname, validator=node_name)
    broker_id: int = attrs.field(default=0, validator=java_long())
    # brokerIP1 is stored in every message (its store host) and must be an address literal.
    broker_ip1: str = attrs.field(
        factory=_local_ip, validator=ip_address, metadata={"wire": "brokerIP1"}
    )
    broker_ip2: str | None = attrs.field(
        default=None, validator=ip_address, metadata={"wire": "brokerIP2"}
    )
    listen_port: int = attrs.field(default=10911, validator=PORT)
    namesrv_addr: str | None = attrs.field(
        factory=lambda: os.environ.get("NAMESRV_ADDR"), validator=address_list
    )
    broker_permission: int = attrs.field(default=6, validator=java_int(0, 7))
    default_topic_queue_nums: int = attrs.field(default=8, validator=java_int(1, 1024))
    auto_create_topic_enable: bool = True
    cluster_topic_enable: bool = True
    broker_topic_enable: bool = True
    auto_create_subscription_group: bool = True
    long_polling_enable: bool = True
    short_polling_time_mills: int = attrs.field(default=1000, validator=java_long())
    notify_consumer_ids_changed_enable: bool = True
    slave_read_enable: bool = False
    flush_consumer_offset_interval: int = attrs.field(default=5000, validator=java_int(100))
    register_name_server_period: int = attrs.field(default=30_000, validator=java_int(1000))
    # Ours (Java fixes it at 10 s): how often a slave copies its master's topic configs,
    # consumer offsets, delay offsets and subscription groups, ms. Shorter narrows what a
    # promoted slave has not yet copied; each round reads four tables from the master.
    slave_synchronize_interval: int = attrs.field(default=10_000, validator=java_int(100))
    register_broker_timeout_mills: int = attrs.field(default=6000, validator=java_int(1))
    # ClientHousekeepingService: a channel silent this long is dropped (Java: 120 s).
    channel_expired_timeout: int = attrs.field(default=120_000, validator=java_long(1000))
    max_delay_time: int = attrs.field(default=40, validator=java_int())
    reject_transaction_message: bool = False
    # Transaction check-back: a half message older than transactionTimeOut without commit or
    # rollback is checked with its producer every transactionCheckInterval, at most
    # transactionCheckMax times (then dropped to TRANS_CHECK_MAX_TIME_TOPIC).
    transaction_time_out: int = attrs.field(default=6000, validator=java_long())
    transaction_check_max: int = attrs.field(default=15, validator=java_int(1))
    transaction_check_interval: int = attrs.field(default=60_000, validator=java_long(100))
    # How long an orderly consumer's queue lock lives without renewal. Java reads it from the
    # system property rocketmq.broker.rebalance.lockMaxLiveTime; this key is our spelling.
    rebalance_lock_max_live_time: int = attrs.field(default=60_000, validator=java_long(1000))
    # SQL92 subscriptions are evaluated against message properties only when this is on, as
    # in RocketMQ; filterSupportRetry applies a group's SQL92 filter to its retry topic too.
    enable_property_filter: bool = False
    filter_support_retry: bool = False
    # Request-reply answers are pushed to the requester; this also stores them, as Java does.
    store_reply_message_enable: bool = True
    # A system topic for clients that trace their messages (enableMsgTrace), as Java's.
    trace_topic_enable: bool = False
    msg_trace_topic_name: str = attrs.field(default="RMQ_SYS_TRACE_TOPIC", validator=topic_name)
    # a frame's length is an int32 on the wire
    max_frame_bytes: int = attrs.field(default=16 * 1024 * 1024, validator=java_int(1025))
    # Not RocketMQ keys (Netty's buffers have no such bound): what all connections may hold
    # in partial frames together, and the request bytes one connection may have in flight.
    server_partial_frames_max_bytes: int = attrs.field(
        default=256 * 1024 * 1024, validator=java_long(1 << 20, 1 << 40)
    )
    server_channel_max_in_flight_bytes: int = attrs.field(
        default=64 * 1024 * 1024, validator=java_long(1 << 20, 1 << 40)
    )
    # Not RocketMQ keys (remoting/logs.py): the log file, rotated past logFileMaxBytes (0:
    # never) keeping logFileBackups old files; with it stderr gets warnings and errors only.
    log_file: Path | None = attrs.field(default=None, converter=attrs.converters.optional(Path))
    log_file_max_bytes: int = attrs.field(default=DEFAULT_MAX_BYTES, validator=java_long(0))
    log_file_backups: int = attrs.field(default=DEFAULT_BACKUPS, validator=java_int(1, 1000))
    # Where updateBrokerConfig keeps its changes, read over the -c file at every start
    # (broker/config_update.py). Java's brokerConfigPath is not a key: it is the -c file.
    # Default (None): <storePathRootDir>/config/broker.properties, Java's default spot.
    broker_config_path: Path | None = attrs.field(
        default=None, converter=attrs.converters.optional(Path)
    )
    # Keys UPDATE_BROKER_CONFIG refuses, ';'-separated (Java's key and default).
    config_black_list: str = "configBlackList;brokerConfigPath"
    # ACL (acl/): RocketMQ's aclEnable reads the accounts from ${rocketmqHome}/conf/plain_acl.yml
    # and conf/acl/*.yml; plainAclFile (ours) names another file, relative to rocketmqHome.
    acl_enable: bool = False
    rocketmq_home: str = attrs.field(
        factory=lambda: os.environ.get("ROCKETMQ_HOME") or str(Path.home())
    )
    plain_acl_file: str | None = None
    # Ours (RocketMQ's broker signs nothing): the account this broker signs its own requests
    # with, to NameServers with ACL on and, as a slave, to its master.
    access_key: str | None = None
    secret_key: str | None = attrs.field(default=None, repr=False)
    # TLS on this broker's own connections (NameServers, a slave's sync from its master), as
    # RocketMQ's NettyClientConfig.useTLS; unset: tls.enable, else tls.server.mode=enforcing.
    use_tls: bool | None = attrs.field(default=None, metadata={"wire": "useTLS"})
    # Ours (RocketMQ's HA has no TLS): a master's HA port speaks only TLS (its certificate is
    # tls.server.*'s, client certificates as tls.server.need.client.auth says), and a slave
    # dials its master's HA port with TLS (tls.client.*). Set it on both.
    ha_use_tls: bool = attrs.field(default=False, metadata={"wire": "haUseTLS"})
    # Ours (RocketMQ 5 exports lag per group and topic only): a group's lag is also exported
    # per queue while it consumes at most this many queues on this broker (0: never).
    metrics_per_queue_max_queues: int = attrs.field(default=64, validator=java_int(0, 100_000))
    # Ours: when the per-queue series of all groups together would pass this many, none are
    # exported (each group keeps its per-topic figures) and rocketmq_metrics_queue_series_
    # aggregated says so: a broker's scrape stays bounded however many groups it carries.
    metrics_per_queue_max_series: int = attrs.field(
        default=20_000, validator=java_int(0, 10_000_000)
    )
    # Ours: when the per group and topic consumer series (lag, offsets, pull rates) would
    # pass this many, they are exported per group instead (topic="", summed over the group's
    # topics; the oldest message's age), and rocketmq_metrics_group_topic_series_aggregated
    # says so: at 1,000 topics x 50 groups a scrape would otherwise carry 250,000 series.
    metrics_per_group_topic_max_series: int = attrs.field(
        default=30_000, validator=java_int(0, 10_000_000)
    )
    # Ours: how often the clients of broadcasting groups are asked for their own offsets
    # (broker/metrics/client_probe.py), ms.
    metrics_broadcast_probe_interval: int = attrs.field(
        default=15_000, validator=java_int(100, 3_600_000)
    )

    # 5.x pop (broker/pop/): the revive log's queues, and how many pops may wait at once
    # (more are answered POLLING_FULL)
    revive_queue_num: int = attrs.field(default=8, validator=java_int(1, 1024))
    max_pop_polling_size: int = attrs.field(default=100_000, validator=java_int(0))
    # a new pop group of a queue whose first message is still in memory starts at it, not
    # at the queue's last message (5.x's default): what was sent before the first receive
    init_pop_offset_by_check_msg_in_mem: bool = True

    @property
    def is_master(self) -> bool:
        return self.broker_id == 0

    @property
    def broker_addr(self) -> str:
        return f"{self.broker_ip1}:{self.listen_port}"

    @property
    def namesrv_addrs(self) -> list[str]:
        return [a.strip() for a in (self.namesrv_addr or "").split(";") if a.strip()]

    def ha_server_addr(self, ha_listen_port: int) -> str:
        return f"{self.broker_ip2 or self.broker_ip1}:{ha_listen_port}"


# Keys of RocketMQ's BrokerConfig/NettyServerConfig/MessageStoreConfig that change nothing
# here (thread pools, Netty tuning, features we do not ship): accepted without a warning, except
# those of REFUSED_WHEN_ON switched on.
IGNORED_KEYS = frozenset(
    [
        "regionId",
        "sendMessageThreadPoolNums",
        "pullMessageThreadPoolNums",
        "queryMessageThreadPoolNums",
        "adminBrokerThreadPoolNums",
        "clientManageThreadPoolNums",
        "consumerManageThreadPoolNums",
        "heartbeatThreadPoolNums",
        "endTransactionThreadPoolNums",
        "sendThreadPoolQueueCapacity",
        "pullThreadPoolQueueCapacity",
        "queryThreadPoolQueueCapacity",
        "clientManagerThreadPoolQueueCapacity",
        "consumerManagerThreadPoolQueueCapacity",
        "heartbeatThreadPoolQueueCapacity",
        "endTransactionPoolQueueCapacity",
        "useReentrantLockWhenPutMessage",
        "serverWorkerThreads",
        "serverCallbackExecutorThreads",
        "serverSelectorThreads",
        "serverOnewaySemaphoreValue",
        "serverAsyncSemaphoreValue",
        "serverChannelMaxIdleTimeSeconds",
        "serverSocketSndBufSize",
        "serverSocketRcvBufSize",
        "serverPooledByteBufAllocatorEnable",
        "useEpollNativeSelector",
        "clientWorkerThreads",
        "clientCallbackExecutorThreads",
        "clientOnewaySemaphoreValue",
        "clientAsyncSemaphoreValue",
        "connectTimeoutMillis",
        "channelNotActiveInterval",
        "clientChannelMaxIdleTimeSeconds",
        "clientSocketSndBufSize",
        "clientSocketRcvBufSize",
        "clientPooledByteBufAllocatorEnable",
        "clientCloseSocketIfTimeout",
        "fetchNamesrvAddrByAddressServer",
        "transferMsgByHeap",
        "highSpeedMode",
        "commercialEnable",
        "commercialTimerCount",
        "commercialTransCount",
        "commercialBigCount",
        "commercialBaseCount",
        "putMsgIndexHightWater",
        "disableConsumeIfConsumerReadSlowly",
        "consumerFallbehindThreshold",
        "brokerFastFailureEnable",
        "waitTimeMillsInSendQueue",
        "waitTimeMillsInPullQueue",
        "waitTimeMillsInHeartbeatQueue",
        "waitTimeMillsInTransactionQueue",
        "startAcceptSendRequestTimeStamp",
        "traceOn",
        "enableCalcFilterBitMap",
        "expectConsumerNumUseFilter",
        "maxErrorRateOfBloomFilter",
        "filterDataCleanTimeSpan",
        "compressedRegister",
        "forceRegister",
        "autoDeleteUnusedStats",
        "filterServerNums",
        "accessMessageInMemoryMaxRatio",
        "transientStorePoolEnable",
        "transientStorePoolSize",
        "fastFailIfNoBufferInStorePool",
        "commitIntervalCommitLog",
        "commitCommitLogLeastPages",
        "commitCommitLogThoroughInterval",
        "warmMapedFileEnable",
        "flushLeastPagesWhenWarmMapedFile",
        "osPageCacheBusyTimeOutMills",
        "defaultQueryMaxNum",
        "duplicationEnable",
        "diskFallRecorded",
        "enableConsumeQueueExt",
        "mappedFileSizeConsumeQueueExt",
        "bitMapLengthConsumeQueueExt",
        "mapedFileSizeConsumeQueue",
        "mapedFileSizeCommitLog",
        "enableDLegerCommitLog",
        "dLegerGroup",
        "dLegerPeers",
        "dLegerSelfId",
        "isEnableBatchPush",
        "enableScheduleMessageStats",
        "storeCheckpoint",
        "abortFile",
        "storePathIndex",
        "storePathConsumeQueue",
        "namesrvAddrFetchURL",
    ]
)


# RocketMQ features this broker does not have, where running without one is not what the
# operator asked for: switched on (Java's Boolean.parseBoolean: "true" in any case), the broker
# refuses to start rather than run open or unreplicated. Switched off they are ignored.
REFUSED_WHEN_ON = {
    "enableDLegerCommitLog": (
        "DLedger replication is not implemented by this broker; use a master/slave pair "
        "(brokerId, brokerRole=ASYNC_MASTER/SYNC_MASTER/SLAVE) instead"
    ),
}


def _refuse_missing_features(properties: Mapping[str, str]) -> None:
    for key, reason in REFUSED_WHEN_ON.items():
        text = properties.get(key)
        if text is not None and text.strip().lower() == "true":
            raise ConfigError(f"bad value for {key}={text!r}: {reason}")


def resolve_types() -> None:
    attrs.resolve_types(BrokerConfig)
    attrs.resolve_types(MessageStoreConfig)


def load_broker_config(
    properties: Mapping[str, str], *, warn: bool = True
) -> tuple[BrokerConfig, MessageStoreConfig]:
    """Split ``broker.conf`` properties into the two configs, converting and validating:
    each key against its type and range, then the rules between keys (broker/config_checks.py).
    The one validation of start-up and UPDATE_BROKER_CONFIG."""
    from broker import config_checks  # it needs this module's classes

    resolve_types()
    _refuse_missing_features(properties)
    values, unknown = read_fields((BrokerConfig, MessageStoreConfig), properties, IGNORED_KEYS)
    if unknown and warn:
        log.warning("broker.conf: unknown keys ignored: %s", ", ".join(sorted(unknown)))
    broker = build(BrokerConfig, values[BrokerConfig])
    store_values = values[MessageStoreConfig]
    _role_from_id(broker, store_values, properties)
    if broker.listen_port > 0:
        # RocketMQ always overwrites haListenPort with listenPort + 1 at start-up.
        configured = store_values.get("ha_listen_port")
        if configured is not None and configured != broker.listen_port + 1 and warn:
            log.warning(
                "haListenPort=%s ignored: the HA port is always listenPort + 1 = %d",
                configured,
                broker.listen_port + 1,
            )
        store_values["ha_listen_port"] = broker.listen_port + 1
    store = build(MessageStoreConfig, store_values)
    if broker.broker_config_path is None:
        broker = attrs.evolve(broker, broker_config_path=store.config_dir / "broker.properties")
    config_checks.check(broker, store)
    return broker, store


def _role_from_id(
    broker: BrokerConfig, store_values: dict[str, Any], properties: Mapping[str, str]
) -> None:
    if broker.enable_controller_mode:
        # etcd gives the role (broker/election/); brokerRole names the kind of master.
        if store_values.get("broker_role") is BrokerRole.SLAVE:
            raise ConfigError(
                "bad value for brokerRole='SLAVE': with enableControllerMode=true the role "
                "comes from the election; brokerRole says ASYNC_MASTER or SYNC_MASTER when elected"
            )
        return
    if broker.broker_id != 0 and "brokerRole" not in properties:
        store_values["broker_role"] = BrokerRole.SLAVE
    if broker.broker_id == 0 and store_values.get("broker_role") is BrokerRole.SLAVE:
        raise ConfigError("bad value for brokerRole='SLAVE': brokerId 0 is a master's id")
    if broker.broker_id != 0 and store_values.get("broker_role", BrokerRole.SLAVE) is not (
        BrokerRole.SLAVE
    ):
        raise ConfigError(
            f"bad value for brokerId={broker.broker_id}: a master must have brokerId 0"
        )


def listening_ports(broker: BrokerConfig, store: MessageStoreConfig) -> list[tuple[str, int]]:
    """What a broker binds, named as an operator would look for it (0: any free port)."""
    ports = [("listenPort", broker.listen_port), ("haListenPort", store.ha_listen_port)]
    if broker.listen_port > 2:
        ports.append(("the VIP port (listenPort - 2)", broker.listen_port - 2))
    return ports


SECRET_FIELDS = frozenset({"secret_key", *SECRET_TLS_FIELDS})
SECRET_KEYS = frozenset(wire_key(a) for a in attrs.fields(BrokerConfig) if a.name in SECRET_FIELDS)


def config_lines(broker: BrokerConfig, store: MessageStoreConfig) -> list[str]:
    """``key=value`` lines for ``mqbroker -p`` (every key) in RocketMQ's spelling."""
    return [
        f"{wire_key(attribute)}={_shown(attribute, getattr(obj, attribute.name))}"
        for obj in (broker, store)
        for attribute in tls_keys_last(type(obj))
    ]


def _shown(attribute: attrs.Attribute, value: object) -> str:
    if attribute.name in SECRET_FIELDS and value:
        return "******"  # -p and GET_BROKER_CONFIG show that one is set, never it
    return config_text(value)
