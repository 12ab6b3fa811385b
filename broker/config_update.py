"""UPDATE_BROKER_CONFIG (``mqadmin updateBrokerConfig -k key -v value``): broker.conf keys
changed on a running broker, and the runtime file that keeps them across restarts.

As in RocketMQ the new values are validated, take effect in the running broker where it reads
them as it works (brokerPermission, autoCreateTopicEnable, fileReservedTime, deleteWhen, disk
ratios, flush intervals, maxMessageSize, ...), and keys on the black list (``configBlackList``,
``brokerConfigPath``, ``rocketmqHome`` and what ``configBlackList`` adds) are refused with
NO_PERMISSION. Unlike RocketMQ, which ignores unknown keys and unparsable values silently and
swaps identity and network settings under a running broker, an unknown key or a bad value is
refused with the reason, and keys fixed at start (identity, ports, paths, file sizes, role,
flush type) are stored for the next start and reported as such, not half-applied.

Where the changes are kept (remoting/runtime_config.py): in ``brokerConfigPath`` (default
``<storePathRootDir>/config/broker.properties``), never in the ``-c`` file, and every start
reads that file over the ``-c`` file.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import attrs
import trio

from broker.config import IGNORED_KEYS, SECRET_KEYS, BrokerConfig, ConfigError, load_broker_config
from broker.store.config import MessageStoreConfig
from remoting.runtime_config import (
    RuntimeConfig,
    RuntimeConfigError,
    black_list,
    load_overrides,
    refuse_black_listed,
    write_overrides,
)
from remoting.settings import config_values, keyed_fields
from remoting.tls_config import tls_key_names

if TYPE_CHECKING:
    from broker.controller import BrokerController

log = logging.getLogger(__name__)

# What the broker sets up once at start from these keys.
RESTART_KEYS = frozenset(
    {
        "brokerClusterName",
        "brokerName",
        "brokerId",
        "brokerIP1",
        "brokerIP2",
        "listenPort",
        "haListenPort",
        "namesrvAddr",
        "clusterTopicEnable",
        "brokerTopicEnable",
        "maxFrameBytes",
        "logFile",
        "logFileMaxBytes",
        "logFileBackups",
        "storePathRootDir",
        "storePathCommitLog",
        "mappedFileSizeCommitLog",
        "mappedFileSizeConsumeQueue",
        "maxHashSlotNum",
        "maxIndexNum",
        "brokerRole",
        "flushDiskType",
        "messageDelayLevel",
        "haMasterAddress",
        "traceTopicEnable",
        "msgTraceTopicName",
        # the ACL check and this broker's own signing are set up at start
        "aclEnable",
        "plainAclFile",
        "accessKey",
        "secretKey",
        # TLS certificates and modes are loaded at start (broker/tls.py)
        "useTLS",
        "haUseTLS",
        *tls_key_names(),
    }
)


@attrs.frozen
class ConfigUpdate:
    properties: dict[str, str]  # the broker's properties with the changes
    broker: BrokerConfig
    store: MessageStoreConfig
    live: list[str]  # changed keys that take effect now
    at_restart: list[str]  # changed keys stored for the next start


def plan_update(properties: Mapping[str, str], changes: Mapping[str, str]) -> ConfigUpdate:
    """Validate ``changes`` against the running broker's ``properties`` exactly as a start
    with them would (ConfigError naming key, value and reason otherwise)."""
    known = set(keyed_fields(BrokerConfig)) | set(keyed_fields(MessageStoreConfig))
    unknown = sorted(key for key in changes if key not in known and key not in IGNORED_KEYS)
    if unknown:
        raise ConfigError(f"unknown broker config key(s): {', '.join(unknown)}")
    merged = {**properties, **changes}
    broker, store = load_broker_config(merged, warn=False)
    live = sorted(key for key in changes if key in known and key not in RESTART_KEYS)
    at_restart = sorted(key for key in changes if key in RESTART_KEYS)
    return ConfigUpdate(merged, broker, store, live, at_restart)


def apply_live(update: ConfigUpdate, broker: BrokerConfig, store: MessageStoreConfig) -> None:
    """Copy the live keys' new values into the running config objects in place: every service
    holds these two objects and reads them when it acts. The one place a config changes after
    start."""
    for running, new in ((broker, update.broker), (store, update.store)):
        keyed = keyed_fields(type(running))
        for key in update.live:
            attribute = keyed.get(key)
            if attribute is not None:
                object.__setattr__(running, attribute.name, getattr(new, attribute.name))


# Java's AdminBrokerProcessor adds these to configBlackList whatever it says.
ALWAYS_BLACK_LISTED = frozenset({"configBlackList", "brokerConfigPath", "rocketmqHome"})


def start_config(
    startup: dict[str, str], config_file: Path | None
) -> tuple[RuntimeConfig, BrokerConfig, MessageStoreConfig]:
    """The configs a start uses: the start-up file's (and command line's) keys with the runtime
    file's over them, validated as one. ConfigError (one line, naming the file) otherwise."""
    broker, store = load_broker_config(startup)
    path = broker.broker_config_path
    assert path is not None  # the loader fills in the default
    if config_file is not None and path.resolve() == config_file.resolve():
        raise ConfigError(
            f"bad value for brokerConfigPath={str(path)!r}: that is the -c file, which the "
            "broker never rewrites; name another file (or leave it out: "
            "<storePathRootDir>/config/broker.properties)"
        )
    try:
        overrides = load_overrides(path)
    except RuntimeConfigError as exc:
        raise ConfigError(f"brokerConfigPath: {exc}") from None
    listed = black_list(broker.config_black_list, ALWAYS_BLACK_LISTED)
    for key in sorted(set(overrides) & listed):
        log.warning("%s: %s ignored: the key is on the black list", path, key)
        del overrides[key]
    runtime = RuntimeConfig(path, dict(startup), overrides, config_values(broker, store))
    if not overrides:
        return runtime, broker, store
    try:
        broker, store = load_broker_config(runtime.effective, warn=False)
    except ConfigError as exc:
        raise ConfigError(f"{path} (kept by updateBrokerConfig): {exc}") from None
    broker = attrs.evolve(broker, broker_config_path=path)  # where the file was read
    lines = runtime.layered_lines(SECRET_KEYS)
    log.info("runtime changes read from %s over the start-up file: %s", path, ", ".join(lines))
    return runtime, broker, store


async def update_running_broker(
    broker: BrokerController, changes: Mapping[str, str]
) -> ConfigUpdate:
    """Validate, persist to the runtime file, apply what can change now. One update at a time:
    each is validated against, and written over, what the previous one left, so concurrent
    updates all land; nothing is applied unless it was written."""
    refuse_black_listed(changes, black_list(broker.config.config_black_list, ALWAYS_BLACK_LISTED))
    async with broker.config_lock:
        runtime = broker.runtime
        update = plan_update(runtime.effective, changes)
        overrides = runtime.overrides_after(changes, config_values(update.broker, update.store))
        await trio.to_thread.run_sync(
            write_overrides, runtime.path, overrides, "mqadmin updateBrokerConfig"
        )
        runtime.overrides = overrides
        apply_live(update, broker.config, broker.store_config)
    broker.topics.auto_create_topic_enable = broker.config.auto_create_topic_enable
    if "brokerPermission" in update.live:
        # the NameServers learn the new permission now, as Java's registerBrokerAll(force)
        broker.topics.data_version = broker.topics.data_version.next_version()
        broker.request_registration()
    log.info("config updated: now %s; at the next start %s", update.live, update.at_restart)
    return update
