"""MessageStoreConfig: the store's settings under RocketMQ's own key names (docs/STYLE.md §9,
docs/spec/store-format.md). ``broker.conf`` is loaded into this class by the broker's config loader;
field ``x_y`` is key ``xY`` unless metadata says otherwise. Tools that work on a stopped store
(ops/spark's ``mqreconcile apply``) read only the store's keys, with ``store_config``.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from pathlib import Path

import attrs

from broker.store.delay_level import parse_delay_levels
from remoting.settings import (
    INT_MAX,
    PORT,
    Range,
    build,
    java_int,
    optional_address,
    read_fields,
)

MiB = 1024 * 1024
GiB = 1024 * MiB
CQ_STORE_UNIT_SIZE = 20


class FlushDiskType(enum.Enum):
    ASYNC_FLUSH = "ASYNC_FLUSH"
    SYNC_FLUSH = "SYNC_FLUSH"


class BrokerRole(enum.Enum):
    ASYNC_MASTER = "ASYNC_MASTER"
    SYNC_MASTER = "SYNC_MASTER"
    SLAVE = "SLAVE"


def _multiple_of_unit(_: object, attribute: attrs.Attribute, value: int) -> None:
    if value % CQ_STORE_UNIT_SIZE:
        raise ValueError(
            f"{attribute.name} must be a multiple of {CQ_STORE_UNIT_SIZE}, got {value}"
        )


def _delete_when(_: object, attribute: attrs.Attribute, value: str) -> None:
    for hour in value.split(";"):
        hour = hour.strip()
        if not (hour.isascii() and hour.isdigit() and len(hour) <= 2 and int(hour) <= 23):
            raise ValueError(f"deleteWhen must be ';'-separated hours 00-23, got {value!r}")


# A level's due time (store time + span, ms) is a ConsumeQueue tags code, an int64; and each
# level is a delivery task and a queue of SCHEDULE_TOPIC_XXXX.
MAX_DELAY_LEVELS = 1000
MAX_DELAY_SPAN_MS = 2**62


def _delay_levels(_: object, attribute: attrs.Attribute, value: str) -> None:
    if not value.isascii():  # int() would take other scripts' digits
        raise ValueError("expected ASCII entries like 1s 5m 2h 1d")
    levels = parse_delay_levels(value)  # ValueError names the bad entry
    if len(levels) > MAX_DELAY_LEVELS:
        raise ValueError(f"{len(levels)} levels; at most {MAX_DELAY_LEVELS}")
    if max(levels) > MAX_DELAY_SPAN_MS:
        raise ValueError(f"a level of {max(levels)} ms; at most {MAX_DELAY_SPAN_MS} ms")


# ConsumeQueue files hold whole 20-byte units; a Java int caps every file size.
_CQ_FILE = [Range(CQ_STORE_UNIT_SIZE, INT_MAX - INT_MAX % CQ_STORE_UNIT_SIZE), _multiple_of_unit]


@attrs.frozen(kw_only=True)
class MessageStoreConfig:
    store_path_root_dir: Path = attrs.field(default=Path.home() / "store", converter=Path)
    # Default: <storePathRootDir>/commitlog (see commit_log_dir).
    store_path_commit_log: Path | None = attrs.field(
        default=None, converter=attrs.converters.optional(Path)
    )
    # Java ints. The message-size rule between maxMessageSize and this is in the loader.
    mapped_file_size_commit_log: int = attrs.field(default=GiB, validator=java_int(4096))
    mapped_file_size_consume_queue: int = attrs.field(
        default=300_000 * CQ_STORE_UNIT_SIZE, validator=_CQ_FILE
    )
    flush_disk_type: FlushDiskType = FlushDiskType.ASYNC_FLUSH
    broker_role: BrokerRole = BrokerRole.ASYNC_MASTER
    flush_interval_commit_log: int = attrs.field(default=500, validator=java_int(1))  # ms
    flush_commit_log_least_pages: int = attrs.field(default=4, validator=java_int())
    flush_commit_log_thorough_interval: int = attrs.field(default=10_000, validator=java_int())
    flush_interval_consume_queue: int = attrs.field(default=1000, validator=java_int(1))  # ms
    flush_consume_queue_least_pages: int = attrs.field(default=2, validator=java_int())
    flush_consume_queue_thorough_interval: int = attrs.field(default=60_000, validator=java_int())
    sync_flush_timeout: int = attrs.field(default=5000, validator=java_int(1))  # ms
    max_message_size: int = attrs.field(default=4 * MiB, validator=java_int(1))  # body bytes
    check_crc_on_recover: bool = attrs.field(default=True, metadata={"wire": "checkCRCOnRecover"})
    # 5.x timer messages (broker/timer/): on, the wheel's precision (ms) and the horizon (s)
    timer_wheel_enable: bool = True
    timer_precision_ms: int = attrs.field(default=1000, validator=java_int(1, 3_600_000))
    timer_max_delay_sec: int = attrs.field(default=3 * 24 * 3600, validator=java_int(1))
    message_index_enable: bool = True
    message_index_safe: bool = False
    # Slots and entries are int32 in the index file; its size rule is in the loader.
    max_hash_slot_num: int = attrs.field(default=5_000_000, validator=java_int(1))
    max_index_num: int = attrs.field(default=5_000_000 * 4, validator=java_int(1))
    max_msgs_num_batch: int = attrs.field(default=64, validator=java_int(1))
    default_query_max_num: int = attrs.field(default=32, validator=java_int(1))
    access_message_in_memory_max_ratio: int = attrs.field(default=40, validator=java_int(0, 100))
    max_transfer_bytes_on_message_in_memory: int = attrs.field(
        default=256 * 1024, validator=java_int(1)
    )
    max_transfer_count_on_message_in_memory: int = attrs.field(default=32, validator=java_int(1))
    max_transfer_bytes_on_message_in_disk: int = attrs.field(
        default=64 * 1024, validator=java_int(1)
    )
    max_transfer_count_on_message_in_disk: int = attrs.field(default=8, validator=java_int(1))
    offset_check_in_slave: bool = False
    delete_when: str = attrs.field(default="04", validator=_delete_when)
    file_reserved_time: int = attrs.field(default=72, validator=java_int())  # hours
    disk_max_used_space_ratio: int = attrs.field(default=75, validator=java_int(10, 95))  # %
    clean_resource_interval: int = attrs.field(default=10_000, validator=java_int(1))  # ms
    delete_commit_log_files_interval: int = attrs.field(default=100, validator=java_int())  # ms
    delete_consume_queue_files_interval: int = attrs.field(default=100, validator=java_int())
    destroy_mapped_file_interval_forcibly: int = attrs.field(default=120_000, validator=java_int())
    clean_file_forcibly_enable: bool = True
    # System properties in Java (rocketmq.broker.diskSpace*Ratio); config keys here.
    disk_space_warning_level_ratio: float = attrs.field(default=0.90, validator=Range(0.01, 1.0))
    disk_space_clean_forcibly_ratio: float = attrs.field(default=0.85, validator=Range(0.01, 1.0))
    message_delay_level: str = attrs.field(
        default="1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h",
        validator=_delay_levels,
    )
    ha_listen_port: int = attrs.field(default=10912, validator=PORT)
    ha_send_heartbeat_interval: int = attrs.field(default=5000, validator=java_int(1))
    ha_housekeeping_interval: int = attrs.field(default=20_000, validator=java_int(1))
    # a transfer header's size field is an int32
    ha_transfer_batch_size: int = attrs.field(default=32 * 1024, validator=java_int(1))
    ha_master_address: str | None = attrs.field(default=None, validator=optional_address)
    ha_slave_fallbehind_max: int = attrs.field(default=256 * MiB, validator=java_int())
    # RocketMQ 5 (controller mode, SYNC_MASTER): replicas, the master counted, that must hold
    # a message before it is acknowledged (the larger of the two), and below
    # minInSyncReplicas connected replicas a send is refused before it is stored.
    in_sync_replicas: int = attrs.field(default=1, validator=java_int(1, 64))
    min_in_sync_replicas: int = attrs.field(default=1, validator=java_int(1, 64))
    # Not a RocketMQ key: a reput pass yields to other tasks after this many records.
    reput_batch_records: int = attrs.field(default=4096, validator=java_int(1))

    @property
    def commit_log_dir(self) -> Path:
        return self.store_path_commit_log or self.store_path_root_dir / "commitlog"

    @property
    def consume_queue_dir(self) -> Path:
        return self.store_path_root_dir / "consumequeue"

    @property
    def index_dir(self) -> Path:
        return self.store_path_root_dir / "index"

    @property
    def checkpoint_path(self) -> Path:
        return self.store_path_root_dir / "checkpoint"

    @property
    def abort_path(self) -> Path:
        return self.store_path_root_dir / "abort"

    @property
    def lock_path(self) -> Path:
        return self.store_path_root_dir / "lock"

    @property
    def config_dir(self) -> Path:
        return self.store_path_root_dir / "config"


def store_config(properties: Mapping[str, str]) -> MessageStoreConfig:
    """The store's keys of a ``broker.conf``, each checked as the broker checks it at start-up
    (remoting/settings.py); the broker's own keys are not the store's business and are skipped.
    ConfigError names the first bad key. The rules between keys (broker/config_checks.py) are
    the broker's: a tool reading a stopped store needs the layout, not a runnable broker."""
    attrs.resolve_types(MessageStoreConfig)
    values, _ = read_fields((MessageStoreConfig,), properties, frozenset())
    return build(MessageStoreConfig, values[MessageStoreConfig])
