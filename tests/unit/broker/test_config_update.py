"""UPDATE_BROKER_CONFIG's pure parts: validating changes as a start would, which keys apply
now and which at the next start; and a start's layering of the runtime file (brokerConfigPath)
over the -c file."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.config import ConfigError, load_broker_config
from broker.config_update import apply_live, plan_update, start_config
from remoting.settings import config_values

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


def start(tmp_path: Path, runtime_text: str | None = None, **keys: str):
    conf = tmp_path / "broker.conf"
    startup = {**BASE, "storePathRootDir": str(tmp_path / "store"), **keys}
    conf.write_text("".join(f"{k}={v}\n" for k, v in startup.items()))
    if runtime_text is not None:
        path = tmp_path / "store" / "config" / "broker.properties"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(runtime_text)
    return start_config(startup, conf)


def test_a_start_reads_the_runtime_file_over_the_start_up_file(tmp_path: Path) -> None:
    runtime, broker, store = start(
        tmp_path, "brokerPermission=4\nfileReservedTime=24\n", fileReservedTime="72"
    )
    assert (broker.broker_permission, store.file_reserved_time) == (4, 24)
    assert runtime.path == tmp_path / "store" / "config" / "broker.properties"
    assert runtime.layered_lines() == [
        "brokerPermission='4'",
        "fileReservedTime='24' (start-up: '72')",
    ]
    assert runtime.effective["fileReservedTime"] == "24"


def test_without_a_runtime_file_the_start_up_file_is_all(tmp_path: Path) -> None:
    runtime, broker, _ = start(tmp_path)
    assert runtime.overrides == {} and broker.broker_permission == 6
    assert broker.broker_config_path == runtime.path


def test_a_key_set_back_to_its_start_up_value_or_default_leaves_the_runtime_file(
    tmp_path: Path,
) -> None:
    runtime, _, _ = start(tmp_path, "brokerPermission=4\n", fileReservedTime="72")
    for changes, kept in [
        ({"fileReservedTime": "24"}, {"brokerPermission": "4", "fileReservedTime": "24"}),
        ({"fileReservedTime": "72"}, {"brokerPermission": "4"}),  # the -c file's value
        ({"brokerPermission": "6"}, {}),  # the default: the -c file does not set it
    ]:
        update = plan_update(runtime.effective, changes)
        runtime.overrides = runtime.overrides_after(
            changes, config_values(update.broker, update.store)
        )
        assert runtime.overrides == kept


@pytest.mark.parametrize(
    ("runtime_text", "message"),
    [
        ("brokerPermission=9\n", "(kept by updateBrokerConfig): bad value for brokerPermission"),
        ("bad=\\u12G4\n", "malformed \\uxxxx escape"),
    ],
)
def test_a_bad_runtime_file_stops_the_start_naming_it(tmp_path, runtime_text, message) -> None:
    with pytest.raises(ConfigError) as refused:
        start(tmp_path, runtime_text)
    assert message in str(refused.value) and "broker.properties" in str(refused.value)


def test_a_runtime_file_that_does_not_parse_gives_way_to_its_backup(tmp_path: Path) -> None:
    bak = tmp_path / "store" / "config" / "broker.properties.bak"
    bak.parent.mkdir(parents=True)
    bak.write_text("brokerPermission=2\n")
    _, broker, _ = start(tmp_path, "bad=\\u12G4\n")
    assert broker.broker_permission == 2


def test_the_runtime_file_may_not_be_the_start_up_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as refused:
        start(tmp_path, brokerConfigPath=str(tmp_path / "broker.conf"))
    assert "that is the -c file, which the broker never rewrites" in str(refused.value)


def test_black_listed_keys_in_the_runtime_file_are_ignored(tmp_path: Path) -> None:
    runtime, broker, _ = start(tmp_path, f"brokerConfigPath={tmp_path / 'x'}\nbrokerPermission=4\n")
    assert runtime.overrides == {"brokerPermission": "4"}
    assert broker.broker_config_path == runtime.path
