"""The shipped alert rules (deploy/monitoring/rules/) against a real Prometheus scraping a real
NameServer and broker: a consumer keeps up while a producer runs, then stops, and the lag alert
fires for its group; every rocketmq_* name the rules and the dashboard use is one the servers
export."""

from __future__ import annotations

import json
import re

import pytest
import trio

from client.consumer import ConsumeStatus, PushConsumer
from client.message import Message
from client.producer import Producer
from remoting.body import ConsumeFromWhere
from remoting.client import RemotingClient
from tests.conftest import REPO_ROOT
from tests.kits.brokerkit import broker_conf, start_broker, wait_for_route
from tests.kits.hakit import wait_until
from tests.kits.metricskit import namesrv_with_metrics, scrape_text
from tests.kits.promkit import (
    NEEDS_PROMETHEUS,
    RULES,
    running_prometheus,
    shortened_rules,
)

TOPIC, GROUP = "AlertTopic", "AlertGroup"
MONITORING = REPO_ROOT / "deploy" / "monitoring"
# The consumer commits every 5 s (persistConsumerOffsetInterval): while it runs its lag in time
# stays below that, well under the threshold; stopped, its lag passes it in 15 s.
LAG_THRESHOLD_S, FOR_S = 15, 2


def firing(alerts: list[dict], name: str) -> list[dict]:
    return [a for a in alerts if a["labels"]["alertname"] == name and a["state"] == "firing"]


# 25 s (a real Prometheus waiting for its rule's for: window): with make test-all; promtool's
# rule tests (tests/unit/test_monitoring_rules.py) and the names check run by default.
@pytest.mark.slow
@NEEDS_PROMETHEUS
async def test_lag_alert_fires_when_the_consumer_stops(processes, tmp_path) -> None:
    namesrv, conf, namesrv_metrics = namesrv_with_metrics(processes, tmp_path)
    broker_metrics = start_broker(processes, conf).metrics_port
    jobs = {
        "rocketmq-broker": [f"127.0.0.1:{broker_metrics}"],
        "rocketmq-namesrv": [f"127.0.0.1:{namesrv_metrics}"],
    }
    rules = shortened_rules(LAG_THRESHOLD_S, FOR_S)
    with running_prometheus(tmp_path / "prometheus", rules, jobs) as prometheus:
        await wait_until(lambda: trio.to_thread.run_sync(prometheus.ready), what="Prometheus")
        consumed = trio.Event()

        def listener(messages) -> ConsumeStatus:
            consumed.set()
            return ConsumeStatus.CONSUME_SUCCESS

        async with Producer.open(namesrv.addr, "AlertPG") as producer, trio.open_nursery() as n:
            await producer.send(Message(TOPIC, b"first"))
            async with RemotingClient.open() as client:
                await wait_for_route(client, namesrv.addr, TOPIC, bool)

            async def produce() -> None:
                while True:
                    await producer.send(Message(TOPIC, b"x"))
                    await trio.sleep(0.2)

            n.start_soon(produce)
            async with PushConsumer.open(
                namesrv.addr,
                GROUP,
                listener,
                {TOPIC: "*"},
                consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            ):
                await consumed.wait()
                selector = f'rocketmq_consumer_lag_latency{{consumer_group="{GROUP}"}}'

                async def scraped() -> bool:
                    return bool(await trio.to_thread.run_sync(prometheus.query, selector))

                await wait_until(scraped, what="the group's lag in Prometheus")
                alerts = await trio.to_thread.run_sync(prometheus.alerts)
                assert not firing(alerts, "RocketMQConsumerLagHigh"), alerts
            # The consumer is gone, the producer goes on: the oldest unconsumed message ages.

            async def lag_alert() -> bool:
                alerts = await trio.to_thread.run_sync(prometheus.alerts)
                return bool(firing(alerts, "RocketMQConsumerLagHigh"))

            await wait_until(lag_alert, timeout_s=90, what="RocketMQConsumerLagHigh to fire")
            n.cancel_scope.cancel()
        (alert,) = firing(
            await trio.to_thread.run_sync(prometheus.alerts), "RocketMQConsumerLagHigh"
        )
        assert alert["labels"]["consumer_group"] == GROUP
        assert alert["labels"]["topic"] == TOPIC
        assert float(alert["value"]) > LAG_THRESHOLD_S
        up = await trio.to_thread.run_sync(prometheus.query, "up")
        assert sorted(r["value"][1] for r in up) == ["1", "1"], up


def _names_used() -> set[str]:
    text = RULES.read_text() + (MONITORING / "grafana" / "rocketmq.json").read_text()
    names = set(re.findall(r"\b(rocketmq_[a-z0-9_]+|process_[a-z0-9_]+)", text))
    # histogram series of a family
    return {re.sub(r"_(bucket|sum|count)$", "", n) for n in names}


async def test_rules_and_dashboard_use_only_exported_names(processes, tmp_path) -> None:
    namesrv, master_conf, namesrv_metrics = namesrv_with_metrics(processes, tmp_path)
    broker_metrics = start_broker(processes, master_conf).metrics_port
    master_ha = next(
        line.split("=", 1)[1]
        for line in master_conf.read_text().splitlines()
        if line.startswith("haListenPort=")
    )
    slave_conf = broker_conf(
        tmp_path,
        namesrvAddr=namesrv.addr,
        brokerId=1,
        brokerRole="SLAVE",
        haMasterAddress=f"127.0.0.1:{master_ha}",
        metricsExporterType="PROM",
        metricsPromExporterPort=0,
    )
    slave_metrics = start_broker(processes, slave_conf, "slave").metrics_port
    async with Producer.open(namesrv.addr, "NamesPG") as producer:
        await producer.send(Message(TOPIC, b"x"))

    async def exported() -> set[str]:
        text = "".join(
            [await scrape_text(port) for port in (namesrv_metrics, broker_metrics, slave_metrics)]
        )
        families = set(re.findall(r"^# TYPE (\S+)", text, re.M))
        return families | {n.removesuffix("_total") for n in families}

    async def slave_reported() -> bool:
        return "rocketmq_ha_slave_in_sync" in await exported()

    await wait_until(slave_reported, what="the master to report its slave")
    missing = _names_used() - await exported()
    assert not missing, f"used by deploy/monitoring but not exported: {sorted(missing)}"
    json.loads((MONITORING / "grafana" / "rocketmq.json").read_text())
