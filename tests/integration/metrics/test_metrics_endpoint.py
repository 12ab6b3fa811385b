"""The Prometheus endpoint of real ``mqbroker`` and ``mqnamesrv`` processes: RocketMQ 5's keys
switch it on, the figures match what was sent and consumed (lag in messages and in time, per
group and topic and per queue), the text passes Prometheus' own lint, and bad requests do not
disturb it."""

from __future__ import annotations

import socket
import subprocess
import time

from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from tests.harness import python_module
from tests.kits.brokerkit import (
    broker_conf,
    call,
    send_request,
    start_broker,
)
from tests.kits.hakit import wait_until
from tests.kits.metricskit import (
    fetch,
    namesrv_with_metrics,
    parse,
    promtool_check,
    scrape,
    scrape_text,
    value,
)

TOPIC, GROUP = "MetricsTopic", "MetricsGroup"


def commit(queue_id: int, offset: int) -> RemotingCommand:
    fields = {
        "consumerGroup": GROUP,
        "topic": TOPIC,
        "queueId": str(queue_id),
        "commitOffset": str(offset),
    }
    return RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, fields)


async def test_broker_metrics_follow_sends_and_commits(processes, tmp_path) -> None:
    _, conf, namesrv_metrics = namesrv_with_metrics(processes, tmp_path)
    broker = start_broker(processes, conf)
    broker_metrics = broker.metrics_port
    async with RemotingClient.open() as client:
        sent_from = int(time.time() * 1000)
        for queue_id, count in ((0, 5), (1, 3)):
            for n in range(count):
                request = send_request(TOPIC, b"m%d" % n, queue_id=queue_id)
                assert (await call(client, broker.addr, request)).code == ResponseCode.SUCCESS
        sent_to = int(time.time() * 1000)
        # The group consumed 2 of queue 0 and all of queue 1: 3 messages behind, the oldest of
        # them the third message of queue 0.
        for queue_id, offset in ((0, 2), (1, 3)):
            assert (await call(client, broker.addr, commit(queue_id, offset))).code == 0
        scraped_from = int(time.time() * 1000)
        text = await scrape_text(broker_metrics)
        scraped_to = int(time.time() * 1000)
    samples = parse(text)
    assert value(samples, "rocketmq_producer_offset", topic=TOPIC, broker="broker-a") == 8
    assert value(samples, "rocketmq_messages_in_total", topic=TOPIC) == 8
    assert value(samples, "rocketmq_group_diff", group=GROUP, topic=TOPIC, msgModel="1") == 3
    assert value(samples, "rocketmq_consumer_lag_messages", consumer_group=GROUP, topic=TOPIC) == 3
    assert value(samples, "rocketmq_consumer_offset", group=GROUP, topic=TOPIC) == 5
    latency = value(samples, "rocketmq_consumer_lag_latency", consumer_group=GROUP, topic=TOPIC)
    assert latency is not None and scraped_from - sent_to <= latency <= scraped_to - sent_from
    queue0 = {"consumer_group": GROUP, "topic": TOPIC, "queue_id": "0"}
    queue1 = {**queue0, "queue_id": "1"}
    assert value(samples, "rocketmq_consumer_queue_lag_messages", **queue0) == 3
    assert value(samples, "rocketmq_consumer_queue_lag_messages", **queue1) == 0
    assert value(samples, "rocketmq_consumer_queue_lag_seconds", **queue1) == 0
    assert value(samples, "rocketmq_consumer_queue_lag_seconds", **queue0) * 1000 == latency
    assert value(samples, "rocketmq_metrics_queue_series_aggregated") == 0
    assert value(samples, "rocketmq_metrics_snapshot_age_seconds") >= 0
    assert value(samples, "rocketmq_brokeruntime_msg_put_total_today_now") == 8
    assert value(samples, "rocketmq_put_latency_seconds_count") == 8
    assert value(samples, "rocketmq_store_writable") == 1
    assert value(samples, "process_resident_memory_bytes") > 0
    lint = promtool_check(text)
    assert not lint, lint

    namesrv_samples = parse(await scrape_text(namesrv_metrics))
    assert value(namesrv_samples, "rocketmq_namesrv_cluster_brokers", cluster="TestCluster") == 1
    registered = value(namesrv_samples, "rocketmq_namesrv_requests_total", code="REGISTER_BROKER")
    assert registered >= 1
    assert broker.alive()


async def test_endpoint_answers_only_metrics_and_survives_garbage(processes, tmp_path) -> None:
    conf = broker_conf(
        tmp_path,
        metricsExporterType="PROM",
        metricsPromExporterPort=0,
        metricsPerQueueMaxSeries=1,
        metricsPerGroupTopicMaxSeries=4,
    )
    broker = start_broker(processes, conf)
    port = broker.metrics_port
    assert fetch(port, "/")[0] == 404
    garbage = b"\x16\x03\x01\x00\xa5" + b"\xff" * 300 + b"\r\n\r\n"
    for payload in (garbage, b"GET /metrics HTTP/1.1\r\nHost: x\r\n" + b"X: y\r\n" * 5000):
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(payload)
            sock.shutdown(socket.SHUT_WR)
            answer = sock.recv(4096)
            assert not answer.startswith(b"HTTP/1.1 200")
    status, text = fetch(port)
    assert status == 200 and "rocketmq_brokeruntime_commitlog_maxoffset" in text
    # one queue's lag would be two per-queue series, over metricsPerQueueMaxSeries=1, and the
    # one (group, topic) pair five, over metricsPerGroupTopicMaxSeries=4: the group's lag is
    # exported per group (topic=""), and the gauges say so
    async with RemotingClient.open() as client:
        assert (await call(client, broker.addr, send_request(TOPIC, b"m"))).code == 0
        assert (await call(client, broker.addr, commit(0, 0))).code == 0

    async def aggregated() -> bool:
        samples = await scrape(port)
        return value(samples, "rocketmq_metrics_queue_series_aggregated") == 1

    await wait_until(aggregated, what="the per-queue series to be aggregated")
    samples = await scrape(port)
    assert value(samples, "rocketmq_metrics_group_topic_series_aggregated") == 1
    assert (
        value(samples, "rocketmq_consumer_lag_messages", consumer_group=GROUP, topic=TOPIC) is None
    )
    assert value(samples, "rocketmq_consumer_lag_messages", consumer_group=GROUP, topic="") == 1
    assert not any(name.startswith("rocketmq_consumer_queue_lag") for name, _ in samples)
    assert broker.alive()


def test_unsupported_exporter_type_is_refused_at_start(tmp_path) -> None:
    conf = broker_conf(tmp_path, metricsExporterType="OTLP_GRPC")
    done = subprocess.run(
        python_module("broker", "-c", str(conf)), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert "metricsExporterType='OTLP_GRPC'" in done.stderr
