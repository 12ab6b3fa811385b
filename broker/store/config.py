"""MessageStoreConfig: the store's settings under RocketMQ's own key names (STYLE.md §9,
spec/store-format.md). ``broker.conf`` is loaded into this class by the broker's config loader;
field ``x_y`` is key ``xY`` unless metadata says otherwise.
"""

from __future__ import annotations

import enum
from pathlib import Path

import attrs
from attrs.validators import ge, gt, le

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
        if not hour.strip().isdigit() or not 0 <= int(hour) <= 23:
            raise ValueError(f"deleteWhen must be ';'-separated hours 00-23, got {value!r}")


@attrs.frozen(kw_only=True)
class MessageStoreConfig:
    store_path_root_dir: Path = attrs.field(default=Path.home() / "store", converter=Path)
    # Default: <storePathRootDir>/commitlog (see commit_log_dir).
    store_path_commit_log: Path | None = attrs.field(
        default=None, converter=attrs.converters.optional(Path)
    )
    mapped_file_size_commit_log: int = attrs.field(default=GiB, validator=ge(4096))
    mapped_file_size_consume_queue: int = attrs.field(
        default=300_000 * CQ_STORE_UNIT_SIZE, validator=[ge(CQ_STORE_UNIT_SIZE), _multiple_of_unit]
    )
    flush_disk_type: FlushDiskType = FlushDiskType.ASYNC_FLUSH
    broker_role: BrokerRole = BrokerRole.ASYNC_MASTER
    flush_interval_commit_log: int = attrs.field(default=500, validator=ge(1))  # ms
    flush_commit_log_least_pages: int = attrs.field(default=4, validator=ge(0))
    flush_commit_log_thorough_interval: int = attrs.field(default=10_000, validator=ge(0))  # ms
    flush_interval_consume_queue: int = attrs.field(default=1000, validator=ge(1))  # ms
    flush_consume_queue_least_pages: int = attrs.field(default=2, validator=ge(0))
    flush_consume_queue_thorough_interval: int = attrs.field(default=60_000, validator=ge(0))
    sync_flush_timeout: int = attrs.field(default=5000, validator=ge(1))  # ms
    max_message_size: int = attrs.field(default=4 * MiB, validator=gt(0))
    check_crc_on_recover: bool = attrs.field(default=True, metadata={"wire": "checkCRCOnRecover"})
    message_index_enable: bool = True
    message_index_safe: bool = False
    max_hash_slot_num: int = attrs.field(default=5_000_000, validator=ge(1))
    max_index_num: int = attrs.field(default=5_000_000 * 4, validator=ge(1))
    max_msgs_num_batch: int = attrs.field(default=64, validator=ge(1))
    default_query_max_num: int = attrs.field(default=32, validator=ge(1))
    access_message_in_memory_max_ratio: int = attrs.field(default=40, validator=[ge(0), le(100)])
    max_transfer_bytes_on_message_in_memory: int = attrs.field(default=256 * 1024, validator=ge(1))
    max_transfer_count_on_message_in_memory: int = attrs.field(default=32, validator=ge(1))
    max_transfer_bytes_on_message_in_disk: int = attrs.field(default=64 * 1024, validator=ge(1))
    max_transfer_count_on_message_in_disk: int = attrs.field(default=8, validator=ge(1))
    offset_check_in_slave: bool = False
    delete_when: str = attrs.field(default="04", validator=_delete_when)
    file_reserved_time: int = attrs.field(default=72, validator=ge(0))  # hours
    disk_max_used_space_ratio: int = attrs.field(default=75, validator=[ge(10), le(95)])  # percent
    clean_resource_interval: int = attrs.field(default=10_000, validator=ge(1))  # ms
    delete_commit_log_files_interval: int = attrs.field(default=100, validator=ge(0))  # ms
    delete_consume_queue_files_interval: int = attrs.field(default=100, validator=ge(0))  # ms
    destroy_mapped_file_interval_forcibly: int = attrs.field(default=120_000, validator=ge(0))
    clean_file_forcibly_enable: bool = True
    # System properties in Java (rocketmq.broker.diskSpace*Ratio); config keys here.
    disk_space_warning_level_ratio: float = attrs.field(default=0.90, validator=[gt(0), le(1)])
    disk_space_clean_forcibly_ratio: float = attrs.field(default=0.85, validator=[gt(0), le(1)])
    message_delay_level: str = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
    ha_listen_port: int = attrs.field(default=10912, validator=[ge(0), le(65535)])
    ha_send_heartbeat_interval: int = attrs.field(default=5000, validator=ge(1))
    ha_housekeeping_interval: int = attrs.field(default=20_000, validator=ge(1))
    ha_transfer_batch_size: int = attrs.field(default=32 * 1024, validator=ge(1))
    ha_master_address: str | None = None
    ha_slave_fallbehind_max: int = attrs.field(default=256 * MiB, validator=ge(0))
    # Not a RocketMQ key: a reput pass yields to other tasks after this many records.
    reput_batch_records: int = attrs.field(default=4096, validator=ge(1))

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
