"""The pure parts of the plugin: layouts and broker_conf, the spawned process's command line,
where broker ports are looked for."""

from __future__ import annotations

import pytest

from remoting.ports import EphemeralRange
from rocketmq_testing import layouts, ports, spawn
from rocketmq_testing.layouts import LayoutError, plan


def test_layouts_come_from_deploy() -> None:
    single = plan("single")
    assert [(p.name, p.kind, p.role) for p in single] == [
        ("namesrv-1", "namesrv", "NAMESRV"),
        ("broker-a-m", "broker", "ASYNC_MASTER"),
    ]
    pair = plan("pair-sync")
    assert [(p.name, p.broker_id, p.role) for p in pair if p.kind == "broker"] == [
        ("broker-a-m", 0, "SYNC_MASTER"),
        ("broker-a-s", 1, "SLAVE"),
    ]
    full = plan("2m-2s-async")
    assert sum(p.kind == "namesrv" for p in full) == 2
    assert [p.broker_id for p in full if p.kind == "broker"] == [0, 0, 1, 1]  # masters first


def test_test_store_sizes_then_the_users_keys() -> None:
    (broker,) = [p for p in plan("single", {"mappedFileSizeCommitLog": 4096}) if p.kind == "broker"]
    assert broker.conf["mappedFileSizeCommitLog"] == "4096"
    assert broker.conf["maxIndexNum"] == layouts.TEST_STORE_CONF["maxIndexNum"]
    assert broker.conf["brokerClusterName"] == "DefaultCluster"  # deploy/'s own keys stay
    (broker,) = [p for p in plan("single", {"autoCreateTopicEnable": False}) if p.kind == "broker"]
    assert broker.conf["autoCreateTopicEnable"] == "false"  # Java's spelling


@pytest.mark.parametrize(
    ("conf", "message"),
    [
        ({"namesrvAddr": "x:1"}, "namesrvAddr: the test cluster chooses"),
        ({"brokerName": "b"}, "brokerName"),
        ({"flushDiskType": "SYNC_FLUSH\nlistenPort=1"}, "cannot be one line"),
        ({"bad key": "1"}, "cannot be one line"),
        ({"k=v": "1"}, "cannot be one line"),
    ],
)
def test_broker_conf_the_cluster_cannot_honour_is_refused(conf, message) -> None:
    with pytest.raises(LayoutError, match=message):
        plan("single", conf)


def test_unknown_layout_names_the_known_ones() -> None:
    with pytest.raises(LayoutError, match="unknown layout 'x': one of 2m-2s-async, 2m-2s-sync"):
        plan("x")


@pytest.mark.parametrize(
    ("line", "argv"),
    [
        ('["-c", "/x/broker.conf"]\n', ["-c", "/x/broker.conf"]),
        ("", None),  # the parent went away before it sent one
        ("not json\n", None),
        ('{"-c": 1}\n', None),
        ('["-c", 1]\n', None),
    ],
)
def test_spawned_process_reads_one_command_line(line, argv) -> None:
    assert spawn.read_argv(line) == argv


def test_broker_ports_lie_below_the_ephemeral_range(monkeypatch) -> None:
    monkeypatch.setattr(ports, "read_ephemeral_range", lambda: EphemeralRange(32768, 60999))
    assert ports.candidate_range() == (10000, 32764)
    low = ports.broker_listen_port()
    assert 10002 <= low <= 32766


def test_broker_ports_above_a_low_ephemeral_range(monkeypatch) -> None:
    monkeypatch.setattr(ports, "read_ephemeral_range", lambda: EphemeralRange(1024, 40000))
    assert ports.candidate_range() == (40001, 65531)


def test_broker_ports_avoid_the_clusters_other_blocks(monkeypatch) -> None:
    monkeypatch.setattr(ports, "candidate_range", lambda: (20000, 20004))
    taken = list(ports.block_of(20002))  # 20000..20003
    assert ports.broker_listen_port(avoid=taken) == 20006  # the only block clear of them
