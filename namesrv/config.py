"""NamesrvConfig: ``namesrv.conf`` under RocketMQ's key names (NamesrvConfig and the
NettyServerConfig's ``listenPort``). Field ``x_y`` is key ``xY``. Every key has a type and a
range (remoting/settings.py), checked the same way at start-up and by UPDATE_NAMESRV_CONFIG."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path

import attrs

from metrics.config import MetricsKeys
from remoting.logs import DEFAULT_BACKUPS, DEFAULT_MAX_BYTES
from remoting.settings import (
    PORT,
    ConfigError,
    bad_value,
    build,
    config_text,
    file_problem,
    java_int,
    java_long,
    read_fields,
    wire_key,
)
from remoting.tls_config import SECRET_TLS_FIELDS, TlsKeys, tls_keys_last

log = logging.getLogger(__name__)

__all__ = ["ConfigError", "NamesrvConfig", "config_lines", "load_namesrv_config"]


def _home() -> Path:
    return Path(os.environ.get("ROCKETMQ_HOME") or Path.home())


def _host(_: object, attribute: attrs.Attribute, value: str) -> None:
    # an address or a host name to bind; whether it resolves is found out by the bind
    if not value or any(c.isspace() or c in "/\\;" for c in value):
        raise ValueError("must be an IP address or a host name")


@attrs.frozen(kw_only=True)
class NamesrvConfig(TlsKeys, MetricsKeys):  # tls.* and metrics* keys come first
    listen_port: int = attrs.field(default=9876, validator=PORT)
    listen_host: str = attrs.field(default="0.0.0.0", validator=_host)  # not a RocketMQ key
    rocketmq_home: str = attrs.field(factory=lambda: str(_home()))
    kv_config_path: Path = attrs.field(
        factory=lambda: Path.home() / "namesrv" / "kvConfig.json", converter=Path
    )
    # Where updateNamesrvConfig keeps its changes, read over the -c file at every start
    # (namesrv/config_update.py). Default (None): namesrv.properties beside kvConfigPath, which
    # is Java's default ~/namesrv/namesrv.properties when kvConfigPath is left at its default.
    config_store_path: Path | None = attrs.field(
        default=None, converter=attrs.converters.optional(Path)
    )
    order_message_enable: bool = False
    # Keys UPDATE_NAMESRV_CONFIG refuses to change, ';'-separated (Java's, with its defaults).
    config_black_list: str = "configBlackList;configStorePath;kvConfigPath"
    # Not RocketMQ keys (Java hard-codes them): shortened in tests.
    broker_channel_expired_time: int = attrs.field(default=120_000, validator=java_long(1))
    scan_not_active_broker_interval: int = attrs.field(default=10_000, validator=java_long(1))
    server_channel_max_idle_time_seconds: int = attrs.field(default=120, validator=java_int(1))
    # Not RocketMQ keys: Java's frame limit is the com.rocketmq.remoting.frameMaxLength
    # property; what all connections may hold in partial frames together; the request bytes
    # one connection may have in flight.
    max_frame_bytes: int = attrs.field(default=16 * 1024 * 1024, validator=java_int(1025))
    server_partial_frames_max_bytes: int = attrs.field(
        default=256 * 1024 * 1024, validator=java_long(1 << 20, 1 << 40)
    )
    server_channel_max_in_flight_bytes: int = attrs.field(
        default=64 * 1024 * 1024, validator=java_long(1 << 20, 1 << 40)
    )
    # Ours (RocketMQ's NameServer has no ACL): with aclEnable=true its write requests need a
    # signed admin account from ${rocketmqHome}/conf/plain_acl.yml (or plainAclFile).
    acl_enable: bool = False
    plain_acl_file: str | None = None
    # Not RocketMQ keys (remoting/logs.py): the log file, rotated past logFileMaxBytes (0:
    # never) keeping logFileBackups old files; with it stderr gets warnings and errors only.
    log_file: Path | None = attrs.field(default=None, converter=attrs.converters.optional(Path))
    log_file_max_bytes: int = attrs.field(default=DEFAULT_MAX_BYTES, validator=java_long(0))
    log_file_backups: int = attrs.field(default=DEFAULT_BACKUPS, validator=java_int(1, 1000))


IGNORED_KEYS = frozenset(
    [
        "productEnvName",
        "clusterTest",
        "serverWorkerThreads",
        "serverCallbackExecutorThreads",
        "serverSelectorThreads",
        "serverOnewaySemaphoreValue",
        "serverAsyncSemaphoreValue",
        "serverSocketSndBufSize",
        "serverSocketRcvBufSize",
        "serverPooledByteBufAllocatorEnable",
        "useEpollNativeSelector",
        "defaultThreadPoolNums",
        "clientRequestThreadPoolNums",
    ]
)


def load_namesrv_config(properties: Mapping[str, str], *, warn: bool = True) -> NamesrvConfig:
    """Convert and validate: each key against its type and range, then the file it names.
    The one validation of start-up and UPDATE_NAMESRV_CONFIG."""
    attrs.resolve_types(NamesrvConfig)
    values, unknown = read_fields((NamesrvConfig,), properties, IGNORED_KEYS)
    if unknown and warn:
        log.warning("namesrv.conf: unknown keys ignored: %s", ", ".join(sorted(unknown)))
    config = build(NamesrvConfig, values[NamesrvConfig])
    if config.config_store_path is None:
        config = attrs.evolve(config, config_store_path=runtime_config_path(config))
    for key, path in (
        ("kvConfigPath", config.kv_config_path),
        ("configStorePath", config.config_store_path),
        ("logFile", config.log_file),
    ):
        problem = None if path is None else file_problem(path)
        if problem is not None:
            raise bad_value(key, path, problem)
    return config


def runtime_config_path(config: NamesrvConfig) -> Path:
    return config.config_store_path or config.kv_config_path.parent / "namesrv.properties"


def config_lines(config: NamesrvConfig) -> list[str]:
    return [
        f"{wire_key(a)}={_shown(a, getattr(config, a.name))}" for a in tls_keys_last(NamesrvConfig)
    ]


SECRET_KEYS = frozenset(
    wire_key(a) for a in attrs.fields(NamesrvConfig) if a.name in SECRET_TLS_FIELDS
)


def _shown(attribute: attrs.Attribute, value: object) -> str:
    if attribute.name in SECRET_TLS_FIELDS and value:
        return "******"  # -p and GET_NAMESRV_CONFIG show that one is set, never it
    return config_text(value)
