"""broker.conf: RocketMQ's key names and defaults; a bad value stops start-up naming the key,
the value and the reason; unknown keys are warned about once, keys RocketMQ knows but we do not
use are accepted silently."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest

from broker.config import ConfigError, config_lines, load_broker_config
from broker.store.config import BrokerRole, FlushDiskType
from tests.kits.clikit import echoed


def test_rocketmq_defaults() -> None:
    broker, store = load_broker_config({})
    assert (broker.broker_cluster_name, broker.broker_id, broker.listen_port) == (
        "DefaultCluster",
        0,
        10911,
    )
    assert store.flush_disk_type is FlushDiskType.ASYNC_FLUSH
    assert store.broker_role is BrokerRole.ASYNC_MASTER
    assert store.mapped_file_size_commit_log == 1 << 30
    assert (store.delete_when, store.file_reserved_time) == ("04", 72)
    assert not broker.enable_property_filter
    assert broker.rebalance_lock_max_live_time == 60_000


def test_values_are_converted_from_their_text() -> None:
    broker, store = load_broker_config(
        {
            "brokerName": "broker-b ",  # Java keeps trailing spaces; the loader strips them
            "brokerId": "0",
            "autoCreateTopicEnable": "false",
            "enablePropertyFilter": "true",
            "brokerRole": "SYNC_MASTER",
            "flushDiskType": "SYNC_FLUSH",
            "storePathRootDir": "/data/rmq",
            "rebalanceLockMaxLiveTime": "25000",
        }
    )
    assert broker.broker_name == "broker-b"
    assert not broker.auto_create_topic_enable and broker.enable_property_filter
    assert store.broker_role is BrokerRole.SYNC_MASTER
    assert store.flush_disk_type is FlushDiskType.SYNC_FLUSH
    assert store.store_path_root_dir == Path("/data/rmq")
    assert broker.rebalance_lock_max_live_time == 25_000


@pytest.mark.parametrize(
    ("key", "value", "reason"),
    [
        ("listenPort", "abc", "abc"),
        ("listenPort", "70000", "between 0 and 65535"),
        ("brokerRole", "BOSS", "BOSS"),
        ("flushDiskType", "SOMETIMES", "SOMETIMES"),
        ("autoCreateTopicEnable", "maybe", "maybe"),
        ("rebalanceLockMaxLiveTime", "10", "between 1000 and"),
        ("brokerId", "-1", "between 0 and"),
    ],
)
def test_a_bad_value_names_the_key_the_value_and_the_reason(key, value, reason) -> None:
    with pytest.raises(ConfigError) as caught:
        load_broker_config({key: value})
    assert key in str(caught.value) and value in str(caught.value)
    assert reason in str(caught.value)


# One of each class of bad value: syntax, Java bounds, the range a layout or the OS needs,
# enums, names that become directories, addresses, paths.
BAD_VALUES = [
    ("maxMessageSize", "99999999999999999999", "between 1 and 2147483647"),
    ("maxMessageSize", "2147483648", "between 1 and 2147483647"),
    ("maxMessageSize", "0", "between 1 and"),
    ("maxIndexNum", "1e6", "expected an integer"),
    ("maxIndexNum", "2147483648", "between 1 and 2147483647"),
    ("mappedFileSizeCommitLog", "2147483648", "between 4096 and 2147483647"),
    ("mappedFileSizeConsumeQueue", "1001", "multiple of 20"),
    ("flushIntervalCommitLog", "0", "between 1 and"),
    ("haListenPort", "65536", "between 0 and 65535"),
    ("haTransferBatchSize", "4294967296", "between 1 and 2147483647"),
    ("brokerPermission", "8", "between 0 and 7"),
    ("diskMaxUsedSpaceRatio", "100", "between 10 and 95"),
    ("diskSpaceWarningLevelRatio", "NaN", "finite"),
    ("flushDiskType", "sync_flush", "expected one of ASYNC_FLUSH, SYNC_FLUSH"),
    ("messageIndexEnable", "1", "true or false"),
    ("messageDelayLevel", "1x", "'1x'"),
    ("messageDelayLevel", "", "no levels"),
    ("messageDelayLevel", "1s \u0665s", "ASCII"),
    ("messageDelayLevel", "99999999999999999d", "at most"),
    ("deleteWhen", "24", "hours 00-23"),
    ("brokerName", "../../etc", "not . or .."),
    ("brokerName", ".", "not . or .."),
    ("brokerName", "a/b", "[%|a-zA-Z0-9_.-]"),
    ("brokerClusterName", "C" * 116, "at most 115 characters"),
    ("msgTraceTopicName", "a b", "illegal characters"),
    ("brokerIP1", "localhost", "IPv4 or IPv6 address"),
    ("brokerIP2", "10.0.0.300", "IPv4 or IPv6 address"),
    ("namesrvAddr", "127.0.0.1", "host:port"),
    ("namesrvAddr", "127.0.0.1:9876;127.0.0.1:98765", "port 1-65535"),
    ("haMasterAddress", "master:0", "port 1-65535"),
    ("storePathRootDir", "", "must not be empty"),
]


@pytest.mark.parametrize(("key", "value", "reason"), BAD_VALUES)
def test_every_class_of_bad_value_is_refused_naming_key_value_and_reason(
    key, value, reason
) -> None:
    with pytest.raises(ConfigError) as caught:
        load_broker_config({key: value})
    message = str(caught.value)
    assert message.startswith(f"bad value for {key}={value!r}: ") or (
        len(value) > 80 and message.startswith(f"bad value for {key}='{value[:80]}")
    ), message
    assert reason in message, message


def test_the_largest_message_must_fit_a_commit_log_file() -> None:
    # a record is the body plus up to 32 KiB of properties, a 127-byte topic and the header
    load_broker_config({"mappedFileSizeCommitLog": "1048576", "maxMessageSize": "1000000"})
    with pytest.raises(ConfigError) as refused:
        load_broker_config({"mappedFileSizeCommitLog": "1048576", "maxMessageSize": "1048576"})
    assert "maxMessageSize='1048576': a message that large cannot fit" in str(refused.value)


def test_an_index_file_must_stay_below_2_gib() -> None:
    load_broker_config({"maxHashSlotNum": "5000000", "maxIndexNum": "100000000"})  # 2.02e9 B
    with pytest.raises(ConfigError) as refused:
        load_broker_config({"maxHashSlotNum": "5000000", "maxIndexNum": "107000000"})
    assert "maxIndexNum='107000000': with maxHashSlotNum=5000000" in str(refused.value)


def test_store_directories_and_the_log_file_must_be_usable(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    for key, value, reason in [
        ("storePathRootDir", tmp_path / "file" / "store", "is not a directory"),
        ("storePathCommitLog", tmp_path / "file", "is not a directory"),
        ("logFile", tmp_path, "is a directory"),
        ("logFile", tmp_path / "file" / "broker.log", "is not a directory"),
    ]:
        with pytest.raises(ConfigError) as refused:
            load_broker_config({key: str(value)})
        assert echoed(key, str(value)) in str(refused.value) and reason in str(refused.value)


def test_roles_must_agree_with_the_broker_id() -> None:
    assert load_broker_config({"brokerId": "1"})[1].broker_role is BrokerRole.SLAVE
    with pytest.raises(ConfigError, match="brokerId 0 is a master"):
        load_broker_config({"brokerRole": "SLAVE"})
    with pytest.raises(ConfigError, match="a master must have brokerId 0"):
        load_broker_config({"brokerId": "2", "brokerRole": "ASYNC_MASTER"})


def test_ha_expiry_must_outlast_the_heartbeat() -> None:
    with pytest.raises(ConfigError, match="haHousekeepingInterval='5000': it must exceed"):
        load_broker_config({"haHousekeepingInterval": "5000"})
    _, store = load_broker_config(
        {"haHousekeepingInterval": "600", "haSendHeartbeatInterval": "100"}
    )
    assert (store.ha_send_heartbeat_interval, store.ha_housekeeping_interval) == (100, 600)


def test_unknown_keys_are_warned_about_known_unused_ones_are_not(caplog) -> None:
    with caplog.at_level(logging.WARNING, logger="broker.config"):
        load_broker_config({"sendMessageThreadPoolNums": "16", "brokerNmae": "typo"})
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1 and "brokerNmae" in warnings[0]
    assert "sendMessageThreadPoolNums" not in warnings[0]


@pytest.mark.parametrize(
    ("key", "reason"),
    [("enableDLegerCommitLog", "DLedger")],
)
def test_a_feature_we_lack_switched_on_is_refused_switched_off_accepted(key, reason) -> None:
    # Running in plaintext or unreplicated is not what such a config asks for.
    for on in ("true", "TRUE", " True"):
        with pytest.raises(ConfigError) as refused:
            load_broker_config({key: on})
        assert f"{key}={on!r}" in str(refused.value) and reason in str(refused.value)
    for off in ("false", "no", ""):  # anything but "true" is false to Java's parseBoolean
        load_broker_config({key: off})


def test_the_ha_port_is_always_listen_port_plus_one(caplog) -> None:
    with caplog.at_level(logging.WARNING, logger="broker.config"):
        _, store = load_broker_config({"listenPort": "20911", "haListenPort": "30000"})
    assert store.ha_listen_port == 20912
    assert "haListenPort=30000 ignored" in caplog.text


def test_print_config_lists_every_key_in_rocketmq_spelling() -> None:
    lines = dict(line.split("=", 1) for line in config_lines(*load_broker_config({})))
    assert lines["brokerClusterName"] == "DefaultCluster"
    assert lines["flushDiskType"] == "ASYNC_FLUSH"
    assert lines["enablePropertyFilter"] == "false"
    assert "mappedFileSizeCommitLog" in lines


def test_mqbroker_refuses_to_start_on_a_bad_value(tmp_path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text("brokerName=b\nlistenPort=ten\n")
    done = subprocess.run(
        [sys.executable, "-m", "broker", "-c", str(conf)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "listenPort='ten'" in done.stderr
