"""NamesrvConfig: ``namesrv.conf`` under RocketMQ's key names (NamesrvConfig and the
NettyServerConfig's ``listenPort``). Field ``x_y`` is key ``xY``."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path

import attrs
from attrs.validators import ge, le

log = logging.getLogger(__name__)


class ConfigError(ValueError):
    """A namesrv.conf value that cannot be used: the message names key, value and reason."""


def _home() -> Path:
    return Path(os.environ.get("ROCKETMQ_HOME") or Path.home())


@attrs.frozen(kw_only=True)
class NamesrvConfig:
    listen_port: int = attrs.field(default=9876, validator=[ge(0), le(65535)])
    listen_host: str = "0.0.0.0"  # not a RocketMQ key: tests and `make run` bind loopback
    rocketmq_home: str = attrs.field(factory=lambda: str(_home()))
    kv_config_path: Path = attrs.field(
        factory=lambda: Path.home() / "namesrv" / "kvConfig.json", converter=Path
    )
    config_store_path: Path = attrs.field(
        factory=lambda: Path.home() / "namesrv" / "namesrv.properties", converter=Path
    )
    order_message_enable: bool = False
    # Not RocketMQ keys (Java hard-codes them): shortened in tests.
    broker_channel_expired_time: int = attrs.field(default=120_000, validator=ge(1))
    scan_not_active_broker_interval: int = attrs.field(default=10_000, validator=ge(1))
    server_channel_max_idle_time_seconds: int = attrs.field(default=120, validator=ge(1))
    # Ours (RocketMQ's NameServer has no ACL): with aclEnable=true its write requests need a
    # signed admin account from ${rocketmqHome}/conf/plain_acl.yml (or plainAclFile).
    acl_enable: bool = False
    plain_acl_file: str | None = None


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


def wire_key(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)


def load_namesrv_config(properties: Mapping[str, str]) -> NamesrvConfig:
    attrs.resolve_types(NamesrvConfig)
    fields = {wire_key(a.name): a for a in attrs.fields(NamesrvConfig)}
    values: dict[str, object] = {}
    unknown = []
    for key, raw in properties.items():
        attribute = fields.get(key)
        if attribute is None:
            if key not in IGNORED_KEYS:
                unknown.append(key)
            continue
        text = raw.strip()
        try:
            if attribute.type is bool:
                if text.lower() not in ("true", "false"):
                    raise ValueError("expected true or false")
                values[attribute.name] = text.lower() == "true"
            elif attribute.type is int:
                values[attribute.name] = int(text)
            else:
                values[attribute.name] = text
        except ValueError as exc:
            raise ConfigError(f"bad value for {key}={raw!r}: {exc}") from None
    if unknown:
        log.warning("namesrv.conf: unknown keys ignored: %s", ", ".join(sorted(unknown)))
    for name, value in values.items():
        # one field at a time, so a refusal names the key an operator wrote
        try:
            NamesrvConfig(**{name: value})
        except (ValueError, TypeError) as exc:
            key = wire_key(name)
            raise ConfigError(f"bad value for {key}={properties[key]!r}: {exc}") from None
    return NamesrvConfig(**values)


def config_lines(config: NamesrvConfig) -> list[str]:
    out = []
    for attribute in attrs.fields(NamesrvConfig):
        value = getattr(config, attribute.name)
        out.append(
            f"{wire_key(attribute.name)}={str(value).lower() if isinstance(value, bool) else value}"
        )
    return out
