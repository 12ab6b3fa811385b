"""The NameServer's own metrics (ours: RocketMQ's NameServer exports none): its route table
(clusters, broker names, live brokers and how long since each registered, topics) and the
requests it served by code. Served by metrics/exporter.py when ``metricsExporterType=PROM``.

Requests are counted by wrapping each processor once at start (one dict increment a request);
codes without a processor are not counted (the NameServer does not answer them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from namesrv.route_info import RouteInfoManager
from remoting.codes import RequestCode


class RequestCounter:
    def __init__(self) -> None:
        self.counts: dict[int, int] = {}

    def wrap(self, handlers: dict[int, Any]) -> dict[int, Any]:
        return {code: self._counted(code, handler) for code, handler in handlers.items()}

    def _counted(self, code: int, handler: Callable[..., Any]) -> Callable[..., Any]:
        counts = self.counts
        counts[code] = 0

        def counted(connection: Any, request: Any) -> Any:
            counts[code] += 1
            return handler(connection, request)

        return counted


def _code_name(code: int) -> str:
    try:
        return RequestCode(code).name
    except ValueError:
        return str(code)


class NamesrvFamilies(Collector):
    def __init__(
        self, routes: RouteInfoManager, requests: RequestCounter, clock: Callable[[], int]
    ) -> None:
        self.routes = routes
        self.requests = requests
        self.clock = clock

    def collect(self) -> Iterator[Metric]:
        routes = self.routes
        yield GaugeMetricFamily(
            "rocketmq_namesrv_topics", "Topics with a route", value=len(routes.topic_queue_table)
        )
        yield GaugeMetricFamily(
            "rocketmq_namesrv_broker_names",
            "Broker names (master/slave sets) with a route",
            value=len(routes.broker_addr_table),
        )
        clusters = GaugeMetricFamily(
            "rocketmq_namesrv_cluster_brokers",
            "Live broker processes by cluster",
            labels=("cluster",),
        )
        live = GaugeMetricFamily(
            "rocketmq_namesrv_broker_last_register_age_seconds",
            "Time since each live broker last registered (it expires past 120 s)",
            labels=("cluster", "broker", "brokerId", "addr"),
        )
        per_cluster: dict[str, int] = dict.fromkeys(routes.cluster_addr_table, 0)
        now = self.clock()
        for data in routes.broker_addr_table.values():
            for broker_id, addr in data.broker_addrs.items():
                info = routes.broker_live_table.get(addr)
                if info is None:
                    continue
                per_cluster[data.cluster] = per_cluster.get(data.cluster, 0) + 1
                live.add_metric(
                    [data.cluster, data.broker_name, str(broker_id), addr],
                    max(0, now - info.last_update) / 1000,
                )
        for cluster, count in sorted(per_cluster.items()):
            clusters.add_metric([cluster], count)
        yield clusters
        yield live
        served = CounterMetricFamily(
            "rocketmq_namesrv_requests", "Requests served, by request code", labels=("code",)
        )
        for code, count in sorted(self.requests.counts.items()):
            served.add_metric([_code_name(code)], count)
        yield served
