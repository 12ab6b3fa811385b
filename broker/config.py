"""BrokerConfig and the ``broker.conf`` loader (STYLE.md §9, ARCHITECTURE.md "Contracts").

One ``broker.conf`` feeds two frozen classes, as in RocketMQ: BrokerConfig (identity, network,
features) and MessageStoreConfig (the store). Field ``x_y`` is key ``xY`` unless metadata
names the key. Unknown keys are warned about once; keys RocketMQ knows but we do not use are
accepted silently so operators' files carry over; a bad value stops start-up with the key,
the value and the reason.
"""

from __future__ import annotations

import enum
import logging
import os
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
from attrs.validators import ge, gt, le

from broker.store.config import BrokerRole, MessageStoreConfig

log = logging.getLogger(__name__)


class ConfigError(ValueError):
    """A broker.conf value that cannot be used; the message names key, value and reason."""


def _local_ip() -> str:
    # The address other hosts reach us on, as Java's RemotingUtil.getLocalAddress picks it;
    # on a box with no route out, loopback.
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("10.255.255.255", 1))
            return s.getsockname()[0]
    except OSError:
        return "127.0.0.1"


def _port(_: object, attribute: attrs.Attribute, value: int) -> None:
    if not 0 <= value <= 65535:
        raise ValueError(f"{attribute.name} must be a TCP port 0-65535, got {value}")


@attrs.frozen(kw_only=True)
class BrokerConfig:
    broker_cluster_name: str = "DefaultCluster"
    broker_name: str = attrs.field(factory=socket.gethostname)
    broker_id: int = attrs.field(default=0, validator=ge(0))
    broker_ip1: str = attrs.field(factory=_local_ip, metadata={"wire": "brokerIP1"})
    broker_ip2: str | None = attrs.field(default=None, metadata={"wire": "brokerIP2"})
    listen_port: int = attrs.field(default=10911, validator=_port)
    namesrv_addr: str | None = attrs.field(factory=lambda: os.environ.get("NAMESRV_ADDR"))
    broker_permission: int = attrs.field(default=6, validator=[ge(0), le(7)])
    default_topic_queue_nums: int = attrs.field(default=8, validator=[ge(1), le(1024)])
    auto_create_topic_enable: bool = True
    cluster_topic_enable: bool = True
    broker_topic_enable: bool = True
    auto_create_subscription_group: bool = True
    long_polling_enable: bool = True
    short_polling_time_mills: int = attrs.field(default=1000, validator=ge(0))
    notify_consumer_ids_changed_enable: bool = True
    slave_read_enable: bool = False
    flush_consumer_offset_interval: int = attrs.field(default=5000, validator=ge(100))
    register_name_server_period: int = attrs.field(default=30_000, validator=ge(1000))
    register_broker_timeout_mills: int = attrs.field(default=6000, validator=ge(1))
    # ClientHousekeepingService: a channel silent this long is dropped (Java: 120 s).
    channel_expired_timeout: int = attrs.field(default=120_000, validator=ge(1000))
    max_delay_time: int = attrs.field(default=40, validator=ge(0))
    reject_transaction_message: bool = False
    # Transaction check-back: a half message older than transactionTimeOut without commit or
    # rollback is checked with its producer every transactionCheckInterval, at most
    # transactionCheckMax times (then dropped to TRANS_CHECK_MAX_TIME_TOPIC).
    transaction_time_out: int = attrs.field(default=6000, validator=ge(0))
    transaction_check_max: int = attrs.field(default=15, validator=ge(1))
    transaction_check_interval: int = attrs.field(default=60_000, validator=ge(100))
    # How long an orderly consumer's queue lock lives without renewal. Java reads it from the
    # system property rocketmq.broker.rebalance.lockMaxLiveTime; this key is our spelling.
    rebalance_lock_max_live_time: int = attrs.field(default=60_000, validator=ge(1000))
    # SQL92 subscriptions are evaluated against message properties only when this is on, as
    # in RocketMQ; filterSupportRetry applies a group's SQL92 filter to its retry topic too.
    enable_property_filter: bool = False
    filter_support_retry: bool = False
    # Request-reply answers are pushed to the requester; this also stores them, as Java does.
    store_reply_message_enable: bool = True
    # A system topic for clients that trace their messages (enableMsgTrace), as Java's.
    trace_topic_enable: bool = False
    msg_trace_topic_name: str = "RMQ_SYS_TRACE_TOPIC"
    max_frame_bytes: int = attrs.field(default=16 * 1024 * 1024, validator=gt(1024))
    # Not a RocketMQ key: where ``mqbroker`` writes its log besides stderr.
    log_file: Path | None = attrs.field(default=None, converter=attrs.converters.optional(Path))
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
        "useTLS",
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


def wire_key(attribute: attrs.Attribute) -> str:
    if "wire" in attribute.metadata:
        return attribute.metadata["wire"]
    head, *rest = attribute.name.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


_BOOLS = {"true": True, "false": False}


def _convert(attribute: attrs.Attribute, text: str) -> Any:
    kind = attribute.type
    if isinstance(kind, str):  # postponed annotations: resolve the few shapes we use
        kind = {"int": int, "bool": bool, "float": float, "str": str}.get(kind, kind)
    if kind is bool:
        try:
            return _BOOLS[text.strip().lower()]
        except KeyError:
            raise ValueError("expected true or false") from None
    if kind is int:
        return int(text.strip())
    if kind is float:
        return float(text.strip())
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        try:
            return kind[text.strip()]
        except KeyError:
            names = ", ".join(m.name for m in kind)
            raise ValueError(f"expected one of {names}") from None
    return text.strip()


def keyed_fields(cls: type) -> dict[str, attrs.Attribute]:
    return {wire_key(a): a for a in attrs.fields(cls)}


def _build(cls: type, values: dict[str, Any], sources: Mapping[str, str]) -> Any:
    try:
        return cls(**values)
    except (ValueError, TypeError) as exc:
        # attrs validators name the attribute; translate it back to the operator's key.
        text = str(exc)
        for key, attribute in keyed_fields(cls).items():
            if attribute.name in text or key in text:
                raise ConfigError(f"bad value for {key}={sources.get(key, '')!r}: {text}") from None
        raise ConfigError(f"bad broker config: {text}") from None


# RocketMQ features this broker does not have, where running without one is not what the
# operator asked for: switched on (Java's Boolean.parseBoolean: "true" in any case), the broker
# refuses to start rather than run open or unreplicated. Switched off they are ignored.
REFUSED_WHEN_ON = {
    "useTLS": (
        "TLS is not implemented by this broker: its connections to name servers and its "
        "ports would be plaintext"
    ),
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
    """Split ``broker.conf`` properties into the two configs, converting and validating."""
    resolve_types()
    _refuse_missing_features(properties)
    targets = {
        BrokerConfig: keyed_fields(BrokerConfig),
        MessageStoreConfig: keyed_fields(MessageStoreConfig),
    }
    values: dict[type, dict[str, Any]] = {BrokerConfig: {}, MessageStoreConfig: {}}
    unknown = []
    for key, text in properties.items():
        for cls, keyed in targets.items():
            attribute = keyed.get(key)
            if attribute is None:
                continue
            try:
                values[cls][attribute.name] = _convert(attribute, text)
            except ValueError as exc:
                raise ConfigError(f"bad value for {key}={text!r}: {exc}") from None
            break
        else:
            if key not in IGNORED_KEYS:
                unknown.append(key)
    if unknown and warn:
        log.warning("broker.conf: unknown keys ignored: %s", ", ".join(sorted(unknown)))
    broker = _build(BrokerConfig, values[BrokerConfig], properties)
    store_values = values[MessageStoreConfig]
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
    store = _build(MessageStoreConfig, store_values, properties)
    if store.ha_housekeeping_interval <= store.ha_send_heartbeat_interval:
        raise ConfigError(
            f"bad value for haHousekeepingInterval={store.ha_housekeeping_interval}: it must "
            f"exceed haSendHeartbeatInterval={store.ha_send_heartbeat_interval}, or an idle "
            "HA link expires between two heartbeats"
        )
    return broker, store


def listening_ports(broker: BrokerConfig, store: MessageStoreConfig) -> list[tuple[str, int]]:
    """What a broker binds, named as an operator would look for it (0: any free port)."""
    ports = [("listenPort", broker.listen_port), ("haListenPort", store.ha_listen_port)]
    if broker.listen_port > 2:
        ports.append(("the VIP port (listenPort - 2)", broker.listen_port - 2))
    return ports


SECRET_FIELDS = frozenset({"secret_key"})


def config_lines(broker: BrokerConfig, store: MessageStoreConfig) -> list[str]:
    """``key=value`` lines for ``mqbroker -p`` (every key) in RocketMQ's spelling."""
    lines = []
    for obj in (broker, store):
        for attribute in attrs.fields(type(obj)):
            value = getattr(obj, attribute.name)
            if isinstance(value, enum.Enum):
                value = value.name
            elif isinstance(value, bool):
                value = str(value).lower()
            elif value is None:
                value = ""
            elif attribute.name in SECRET_FIELDS:
                value = "******"  # -p and GET_BROKER_CONFIG show that one is set, never it
            lines.append(f"{wire_key(attribute)}={value}")
    return lines
