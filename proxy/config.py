"""ProxyConfig: ``rmq-proxy.json`` under RocketMQ's ProxyConfig key names and defaults. Every
value is checked here, once (remoting/settings.py's parsers and ranges); a bad one is refused
with its key, an unknown key is warned about (Java ignores them)."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

import attrs

from broker.store.delay_level import parse_delay_levels
from remoting.logs import DEFAULT_BACKUPS, DEFAULT_MAX_BYTES
from remoting.settings import (
    PORT,
    ConfigError,
    address_list,
    bad_value,
    build,
    java_int,
    java_long,
    read_fields,
)
from remoting.tls_config import TlsKeys

log = logging.getLogger(__name__)

__all__ = ["ConfigError", "ProxyConfig", "load_proxy_config"]

DAY_MS = 24 * 3600 * 1000


def _mode(_: object, attribute: attrs.Attribute, value: str) -> None:
    if value.upper() != "CLUSTER":
        raise ValueError(
            "only CLUSTER is served (a separate proxy before the brokers); LOCAL, the broker "
            "serving gRPC itself, is not implemented"
        )


def _required(_: object, attribute: attrs.Attribute, value: str | None) -> None:
    if not value:
        raise ValueError("must name the NameServers (host:port;host:port)")
    address_list(_, attribute, value)


def _delay_levels(_: object, attribute: attrs.Attribute, value: str) -> None:
    parse_delay_levels(value)  # ValueError names the bad entry


@attrs.frozen(kw_only=True)
class ProxyConfig(TlsKeys):  # tls.* keys, as for mqbroker and mqnamesrv (proxy/tls.py)
    rocketmq_cluster_name: str = attrs.field(
        default="DefaultCluster", metadata={"wire": "rocketMQClusterName"}
    )
    namesrv_addr: str | None = attrs.field(default=None, validator=_required)
    proxy_mode: str = attrs.field(default="CLUSTER", validator=_mode)
    grpc_server_port: int = attrs.field(default=8081, validator=PORT)
    grpc_server_host: str = "0.0.0.0"  # not a RocketMQ key: tests bind 127.0.0.1
    rocketmq_home: str = attrs.field(
        factory=lambda: os.environ.get("ROCKETMQ_HOME") or str(Path.home())
    )
    # ACL 1.0 (RocketMQ 5.1's keys): check SDK requests against ${rocketmqHome}/conf/plain_acl.yml
    # (plainAclFile, ours as the broker's), and sign our own with conf/tools.yml's account.
    enable_acl: bool = attrs.field(default=False, metadata={"wire": "enableACL"})
    enable_acl_rpc_hook_for_cluster_mode: bool = False
    plain_acl_file: str | None = None
    # SendMessage checks (ProxyConfig's names and defaults)
    max_message_size: int = attrs.field(default=4 * 1024 * 1024, validator=java_int(0))
    enable_message_body_empty_check: bool = True
    max_user_property_size: int = attrs.field(default=16 * 1024, validator=java_int(0))
    user_property_max_num: int = attrs.field(default=128, validator=java_int(0))
    max_message_group_size: int = attrs.field(default=64, validator=java_int(0))
    max_delay_time_mills: int = attrs.field(default=DAY_MS, validator=java_long(0))
    max_transaction_recovery_second: int = attrs.field(default=3600, validator=java_long(0))
    # A message's type (from its properties) against its topic's message.type attribute
    # (a topic without one is NORMAL): FIFO, DELAY and TRANSACTION need topics of that type
    # (mqadmin updateTopic -a +message.type=FIFO) or MIXED, as in RocketMQ 5.
    enable_topic_message_type_check: bool = True
    # ReceiveMessage with auto_renew (the SDKs' PushConsumer): the invisible time given
    default_invisible_time_mills: int = attrs.field(
        default=60_000, validator=java_long(10_000, 12 * 3600 * 1000)
    )
    enable_proxy_auto_renew: bool = True
    renew_schedule_period_millis: int = attrs.field(default=5_000, validator=java_long(100, DAY_MS))
    renew_ahead_time_millis: int = attrs.field(default=10_000, validator=java_long(0, DAY_MS))
    renew_max_time_millis: int = attrs.field(default=3 * 3600 * 1000, validator=java_long(0))
    max_renew_retry_times: int = attrs.field(default=3, validator=java_int(1, 1000))
    grpc_client_idle_time_mills: int = attrs.field(default=120_000, validator=java_long(1_000))
    invisible_time_millis_when_clear: int = attrs.field(
        default=1_000, validator=java_long(0, DAY_MS)
    )
    # A delivery time also as the nearest 4.x delay level above it (brokers without timers)
    use_delay_level: bool = False
    message_delay_level: str = attrs.field(
        default="1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h",
        validator=_delay_levels,
    )
    # What Telemetry hands producers (GrpcClientSettingsManager)
    grpc_client_producer_max_attempts: int = attrs.field(default=3, validator=java_int(1, 64))
    grpc_client_producer_backoff_initial_millis: int = attrs.field(
        default=10, validator=java_long(0, DAY_MS)
    )
    grpc_client_producer_backoff_max_millis: int = attrs.field(
        default=1000, validator=java_long(0, DAY_MS)
    )
    grpc_client_producer_backoff_multiplier: int = attrs.field(default=2, validator=java_int(1))
    # Remoting calls to brokers and NameServers
    request_timeout_mills: int = attrs.field(default=3000, validator=java_long(1, 600_000))
    # The largest gRPC request accepted, refused before it is decoded (RocketMQ's key; its
    # default is 130 MiB, ours is 16 MiB: what one call may make the proxy hold). Ours: the
    # calls served at once, long-polling receives included. Together they bound the request
    # bytes the proxy holds: at most their product.
    grpc_max_inbound_message_size: int = attrs.field(
        default=16 * 1024 * 1024, validator=java_int(1024)
    )
    grpc_max_concurrent_calls: int = attrs.field(default=1024, validator=java_int(1, 65536))

    @property
    def delay_levels_ms(self) -> list[int]:
        return parse_delay_levels(self.message_delay_level)

    log_file: Path | None = attrs.field(default=None, converter=attrs.converters.optional(Path))
    log_file_max_bytes: int = attrs.field(default=DEFAULT_MAX_BYTES, validator=java_long(0))
    log_file_backups: int = attrs.field(default=DEFAULT_BACKUPS, validator=java_int(0, 1000))


attrs.resolve_types(ProxyConfig)


def _text(key: str, value: Any) -> str:
    """A JSON value as the text Java's fastjson would bind to the field."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        return str(value)
    raise bad_value(key, json.dumps(value), "expected a string, a number or true/false")


def parse_proxy_config(raw: object, source: str = "rmq-proxy.json") -> ProxyConfig:
    """The config from a decoded JSON document; ConfigError names the first bad key."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: expected a JSON object of keys and values")
    texts = {str(key): _text(str(key), value) for key, value in raw.items()}
    values, unknown = read_fields([ProxyConfig], texts, frozenset())
    for key in unknown:
        log.warning("%s: unknown key %s ignored", source, key)
    fields = values[ProxyConfig]
    if "namesrv_addr" not in fields:
        raise ConfigError(f"{source}: namesrvAddr is missing: name the NameServers (host:port)")
    return build(ProxyConfig, fields)


def load_proxy_config(path: str | Path | None, overrides: dict[str, Any]) -> ProxyConfig:
    """The file's keys (none when ``path`` is None) under ``overrides`` (the command line)."""
    source = str(path) if path is not None else "rmq-proxy.json"
    raw: object = {}
    if path is not None:
        try:
            raw = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read {path}: {exc}") from None
        except (json.JSONDecodeError, RecursionError) as exc:
            raise ConfigError(f"{source}: not JSON: {exc}") from None
    if isinstance(raw, dict):
        raw = {**raw, **overrides}
    return parse_proxy_config(raw, source)
