"""UPDATE_BROKER_CONFIG's pure parts: validating changes as a start would, which keys apply
now and which at the next start, and rewriting the -c file without losing the operator's
comments and layout."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.config import ConfigError, load_broker_config
from broker.config_update import apply_live, plan_update
from remoting.properties import rewrite

BASE = {"brokerName": "broker-a", "brokerIP1": "127.0.0.1", "listenPort": "10911"}


def test_changes_are_sorted_into_now_and_next_start() -> None:
    update = plan_update(
        BASE, {"brokerPermission": "4", "fileReservedTime": "24", "listenPort": "20911"}
    )
    assert update.live == ["brokerPermission", "fileReservedTime"]
    assert update.at_restart == ["listenPort"]
    assert update.broker.broker_permission == 4 and update.store.file_reserved_time == 24
    assert update.properties["listenPort"] == "20911"


def test_only_the_live_keys_change_the_running_objects_in_place() -> None:
    broker, store = load_broker_config(BASE, warn=False)
    update = plan_update(BASE, {"brokerPermission": "4", "listenPort": "20911", "deleteWhen": "02"})
    apply_live(update, broker, store)
    assert broker.broker_permission == 4 and store.delete_when == "02"
    assert broker.listen_port == 10911  # a port is only taken at start


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"brokerPermission": "9"}, "brokerPermission"),
        ({"fileReservedTime": "soon"}, "fileReservedTime='soon'"),
        ({"flushDiskType": "SOMETIMES"}, "expected one of"),
        ({"aclEnable": "maybe"}, "aclEnable"),
        (
            {"brokerPermision": "4", "noSuchKey": "1"},
            "unknown broker config key(s): brokerPermision, noSuchKey",
        ),
    ],
)
def test_a_bad_change_is_refused_naming_the_key(changes, message) -> None:
    with pytest.raises(ConfigError) as refused:
        plan_update(BASE, changes)
    assert message in str(refused.value)


def test_keys_rocketmq_knows_but_we_do_not_use_are_accepted_and_do_nothing() -> None:
    update = plan_update(BASE, {"traceOn": "false"})
    assert update.live == [] and update.at_restart == []


def test_the_file_keeps_its_comments_and_order(tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text(
        "# broker-a of the east pair\n"
        "brokerName=broker-a\n"
        "brokerPermission = 6\n"
        "! fileReservedTime was 72 until the disk grew\n"
        "fileReservedTime : 48\n"
        "messageDelayLevel=1s 5s \\\n"
        "   10s\n"
        "deleteWhen=04\n"
    )
    rewrite(
        conf,
        {
            "brokerPermission": "4",
            "fileReservedTime": "24",
            "messageDelayLevel": "1s 2s",
            "new": "x",
        },
    )
    assert conf.read_text().splitlines() == [
        "# broker-a of the east pair",
        "brokerName=broker-a",
        "brokerPermission=4",
        "! fileReservedTime was 72 until the disk grew",
        "fileReservedTime=24",
        "messageDelayLevel=1s 2s",
        "deleteWhen=04",
        "new=x",
    ]
    assert (tmp_path / "broker.conf.bak").read_text().startswith("# broker-a of the east pair")
