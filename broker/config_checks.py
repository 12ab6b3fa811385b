"""Rules of ``broker.conf`` that involve more than one key, or the filesystem: checked by the
loader after each key passed its own range, at start-up and for UPDATE_BROKER_CONFIG alike.

Each rule returns the refusal (a ConfigError naming the key, its value and why) or None.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from broker.store.index_file import index_file_size
from broker.store.layout import MAX_PROPERTIES_BYTES, MAX_TOPIC_BYTES
from remoting.record import END_FILE_MIN_BLANK_LENGTH, record_size
from remoting.settings import INT_MAX, ConfigError, bad_value, directory_problem, file_problem

if TYPE_CHECKING:
    from broker.config import BrokerConfig
    from broker.store.config import MessageStoreConfig

# The most a record adds to its body: the longest topic and properties, IPv6 hosts.
MAX_RECORD_OVERHEAD = record_size(
    0, MAX_TOPIC_BYTES, MAX_PROPERTIES_BYTES, born_v6=True, store_v6=True
)

Rule = Callable[["BrokerConfig", "MessageStoreConfig"], "ConfigError | None"]


def ha_expiry_outlasts_heartbeat(_: BrokerConfig, store: MessageStoreConfig) -> ConfigError | None:
    if store.ha_housekeeping_interval > store.ha_send_heartbeat_interval:
        return None
    return bad_value(
        "haHousekeepingInterval",
        store.ha_housekeeping_interval,
        f"it must exceed haSendHeartbeatInterval={store.ha_send_heartbeat_interval}, or an idle "
        "HA link expires between two heartbeats",
    )


def largest_message_fits_a_segment(
    _: BrokerConfig, store: MessageStoreConfig
) -> ConfigError | None:
    room = store.mapped_file_size_commit_log - MAX_RECORD_OVERHEAD - END_FILE_MIN_BLANK_LENGTH
    if store.max_message_size <= room:
        return None
    return bad_value(
        "maxMessageSize",
        store.max_message_size,
        f"a message that large cannot fit in a CommitLog file of mappedFileSizeCommitLog="
        f"{store.mapped_file_size_commit_log} bytes (at most {room})",
    )


def index_file_fits_an_int(_: BrokerConfig, store: MessageStoreConfig) -> ConfigError | None:
    size = index_file_size(store.max_hash_slot_num, store.max_index_num)
    if size <= INT_MAX:
        return None
    return bad_value(
        "maxIndexNum",
        store.max_index_num,
        f"with maxHashSlotNum={store.max_hash_slot_num} an index file would be {size} bytes; "
        f"40 + 4 x maxHashSlotNum + 20 x maxIndexNum must be at most {INT_MAX}",
    )


def _paths(
    broker: BrokerConfig, store: MessageStoreConfig
) -> Iterator[tuple[str, object, str | None]]:
    yield (
        "storePathRootDir",
        store.store_path_root_dir,
        directory_problem(store.store_path_root_dir),
    )
    if store.store_path_commit_log is not None:
        path = store.store_path_commit_log
        yield "storePathCommitLog", path, directory_problem(path)
    if broker.log_file is not None:
        yield "logFile", broker.log_file, file_problem(broker.log_file)
    if broker.broker_config_path is not None:
        path = broker.broker_config_path
        yield "brokerConfigPath", path, file_problem(path)


def paths_are_usable(broker: BrokerConfig, store: MessageStoreConfig) -> ConfigError | None:
    for key, path, problem in _paths(broker, store):
        if problem is not None:
            return bad_value(key, path, problem)
    return None


def controller_mode_is_complete(broker: BrokerConfig, _: MessageStoreConfig) -> ConfigError | None:
    if not broker.enable_controller_mode:
        return None
    if not broker.etcd_endpoints:
        return bad_value(
            "controllerEtcdEndpoints",
            broker.controller_etcd_endpoints or "",
            "enableControllerMode=true needs etcd: http://127.0.0.1:2379[,http://host:port...]",
        )
    if broker.broker_id < 1:
        return bad_value(
            "brokerId",
            broker.broker_id,
            "with enableControllerMode=true it is the member's own id in its group: 1 or more, "
            "unique (the elected master registers as 0)",
        )
    return None


RULES: tuple[Rule, ...] = (
    controller_mode_is_complete,
    ha_expiry_outlasts_heartbeat,
    largest_message_fits_a_segment,
    index_file_fits_an_int,
    paths_are_usable,
)


def check(broker: BrokerConfig, store: MessageStoreConfig) -> None:
    for rule in RULES:
        refusal = rule(broker, store)
        if refusal is not None:
            raise refusal
