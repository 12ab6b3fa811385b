"""QueryRoute's queue split (RouteActivity), Telemetry's settings answer, and rmq-proxy.json."""

from __future__ import annotations

import json

import pytest

from proxy.__main__ import main
from proxy.apis import definition_pb2 as pb
from proxy.config import ConfigError, ProxyConfig, parse_proxy_config
from proxy.route import message_queues
from proxy.settings import merge_settings
from remoting.body import BrokerData, QueueData, TopicRouteData

P = pb.Permission
ENDPOINTS = pb.Endpoints(scheme=pb.AddressScheme.IPv4, addresses=[pb.Address(host="h", port=1)])


def qd(name: str, reads: int, writes: int, perm: int) -> QueueData:
    return QueueData(broker_name=name, read_queue_nums=reads, write_queue_nums=writes, perm=perm)


def route(*queues: QueueData, slave_only: str | None = None) -> TopicRouteData:
    brokers = [
        BrokerData(cluster="c", broker_name=q.broker_name, broker_addrs={0: "m:1"}) for q in queues
    ]
    if slave_only:
        brokers.append(BrokerData(cluster="c", broker_name=slave_only, broker_addrs={1: "s:1"}))
    return TopicRouteData(queue_datas=list(queues), broker_datas=brokers)


def test_queue_split_read_write_and_both() -> None:
    # perm 6 = read + write, 2 = write, 4 = read, 0 = neither
    topic_route = route(qd("a", 4, 2, 6), qd("b", 3, 2, 2), qd("c", 2, 1, 4), qd("d", 0, 0, 0))
    queues = message_queues(pb.Resource(name="T"), topic_route, ENDPOINTS)
    assert [(q.broker.name, q.id, q.permission) for q in queues] == [
        ("a", 0, P.READ),
        ("a", 1, P.READ),
        ("a", 2, P.READ_WRITE),
        ("a", 3, P.READ_WRITE),
        ("b", 0, P.WRITE),
        ("b", 1, P.WRITE),
        ("c", 0, P.READ),
        ("c", 1, P.READ),
        ("d", 0, P.NONE),
    ]
    assert all(q.broker.endpoints == ENDPOINTS and q.topic.name == "T" for q in queues)
    assert list(queues[0].accept_message_types) == [
        pb.MessageType.NORMAL,
        pb.MessageType.FIFO,
        pb.MessageType.DELAY,
        pb.MessageType.TRANSACTION,
    ]


def test_a_broker_without_master_gets_no_queues() -> None:
    assert message_queues(pb.Resource(name="T"), route(slave_only="x"), ENDPOINTS) == []


def test_producer_settings_carry_the_proxys_policy() -> None:
    config = ProxyConfig(namesrv_addr="127.0.0.1:9876", max_message_size=1000)
    reported = pb.Settings(
        client_type=pb.ClientType.PRODUCER,
        publishing=pb.Publishing(topics=[pb.Resource(name="T")], max_body_size=5),
    )
    merged = merge_settings(reported, config)
    assert merged.publishing.max_body_size == 1000
    assert [t.name for t in merged.publishing.topics] == ["T"]
    assert merged.backoff_policy.max_attempts == 3
    assert merged.backoff_policy.exponential_backoff.max.ToMilliseconds() == 1000
    assert not merged.metric.on


def test_config_keys_and_refusals(caplog) -> None:
    config = parse_proxy_config(
        {"namesrvAddr": "127.0.0.1:9876", "grpcServerPort": 9081, "proxyMode": "cluster", "x": 1}
    )
    assert (config.grpc_server_port, config.rocketmq_cluster_name) == (9081, "DefaultCluster")
    assert "unknown key x" in caplog.text
    assert ProxyConfig(namesrv_addr="a:1").grpc_server_port == 8081
    for bad, key in [
        ({"namesrvAddr": "a:1", "grpcServerPort": 65536}, "grpcServerPort"),
        ({"namesrvAddr": "a:1", "proxyMode": "LOCAL"}, "proxyMode"),
        ({"namesrvAddr": "nope"}, "namesrvAddr"),
        ({}, "namesrvAddr"),
        ({"namesrvAddr": "a:1", "maxMessageSize": {"x": 1}}, "maxMessageSize"),
        ({"namesrvAddr": "a:1", "messageDelayLevel": "1x"}, "messageDelayLevel"),
    ]:
        with pytest.raises(ConfigError, match=key):
            parse_proxy_config(bad)
    with pytest.raises(ConfigError, match="JSON object"):
        parse_proxy_config([1, 2])


def test_mqproxy_refuses_a_bad_file_in_one_line(tmp_path, capsys) -> None:
    conf = tmp_path / "rmq-proxy.json"
    conf.write_text(json.dumps({"namesrvAddr": "127.0.0.1:9876", "grpcServerPort": -1}))
    assert main(["-pc", str(conf)]) == 2
    conf.write_text("{not json")
    assert main(["-pc", str(conf)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 2 and "grpcServerPort" in lines[0] and "not JSON" in lines[1]
