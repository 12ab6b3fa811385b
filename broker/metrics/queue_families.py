"""The families whose series grow with topics and groups: per topic (rocketmq-exporter's
``rocketmq_producer_*``, RocketMQ 5's ``rocketmq_messages_in_total``), per group and topic
(``rocketmq_group_diff`` and kin, ``rocketmq_consumer_lag_messages`` and
``rocketmq_consumer_lag_latency``) and, for small groups, per queue (ours).

Cardinality is bounded by broker/metrics/cardinality.py's plan: per-queue lag for small groups
within ``metricsPerQueueMaxSeries``, per group and topic within
``metricsPerGroupTopicMaxSeries``, else per group (gauges and a log line say which);
docs/monitoring.md counts the series for 1,000 topics x 8 queues x 50 groups. The collection
runs in the background (metrics/snapshot.py) and yields to the event loop whenever it has
held it for ``SLICE_S``, so however large the broker, the loop is never held for long at once.

Broadcasting groups keep their offsets on the clients: the broker's figure for them would be
wrong, so they get none here (as rocketmq-exporter does); broker/metrics/client_probe.py asks
each client for its own progress, exported per client (rocketmq_consumer_client_lag_*).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

import trio

from broker.metrics.cardinality import AGGREGATED_TOPIC
from broker.metrics.group_lag import GroupLag
from broker.stats import (
    GROUP_GET_NUMS,
    GROUP_GET_SIZE,
    SNDBCK_PUT_NUMS,
    TOPIC_PUT_NUMS,
    TOPIC_PUT_SIZE,
)
from metrics.exposition import COUNTER, GAUGE, Family
from remoting import constants as K

if TYPE_CHECKING:
    from broker.controller import BrokerController
    from broker.metrics.client_probe import BroadcastProbe

log = logging.getLogger(__name__)

SLICE_S = 0.005  # the longest the walk holds the loop at once (give or take a pair)
CHECK_EVERY = 16  # pairs or topics between looks at the clock
T, G, CG = ("topic",), ("topic", "group"), ("topic", "consumer_group")


class QueueFamilies:
    def __init__(self, broker: BrokerController, probe: BroadcastProbe | None = None) -> None:
        self.broker = broker
        self.probe = probe
        name, cluster = broker.config.broker_name, broker.config.broker_cluster_name
        exporter = {"cluster": cluster, "broker": name}
        node = {"cluster": cluster, "node_type": "broker", "node_id": name}

        def fam(name: str, kind: str, help_text: str, labels: tuple[str, ...], const) -> Family:  # type: ignore[no-untyped-def]
            return Family(name, kind, help_text, labels, const)

        lag_labels = (*CG, "is_retry", "is_system")
        diff_labels = ("group", "topic", "countOfOnlineConsumers", "msgModel")
        self.producer_tps = fam(
            "rocketmq_producer_tps", GAUGE, "Messages stored per second, last minute", T, exporter
        )
        self.producer_size = fam(
            "rocketmq_producer_message_size",
            GAUGE,
            "Bytes stored per second, last minute",
            T,
            exporter,
        )
        self.producer_offset = fam(
            "rocketmq_producer_offset", GAUGE, "Sum of the topic's queue max offsets", T, exporter
        )
        self.retry_offset = fam(
            "rocketmq_topic_retry_offset",
            GAUGE,
            "Sum of the retry topic's queue max offsets",
            T,
            exporter,
        )
        self.dlq_offset = fam(
            "rocketmq_topic_dlq_offset",
            GAUGE,
            "Messages ever put in the group's dead-letter queue",
            ("group",),
            exporter,
        )
        self.messages_in = fam(
            "rocketmq_messages_in_total", COUNTER, "Messages stored since start", T, node
        )
        self.throughput_in = fam(
            "rocketmq_throughput_in_total", COUNTER, "Bytes stored since start", T, node
        )
        self.consumer_tps = fam(
            "rocketmq_consumer_tps", GAUGE, "Messages pulled per second, last minute", G, exporter
        )
        self.consumer_size = fam(
            "rocketmq_consumer_message_size",
            GAUGE,
            "Bytes pulled per second, last minute",
            G,
            exporter,
        )
        self.send_back = fam(
            "rocketmq_send_back_nums",
            GAUGE,
            "Messages sent back for retry, last minute",
            G,
            exporter,
        )
        self.messages_out = fam(
            "rocketmq_messages_out_total", COUNTER, "Messages pulled since start", CG, node
        )
        self.throughput_out = fam(
            "rocketmq_throughput_out_total", COUNTER, "Bytes pulled since start", CG, node
        )
        self.consumer_offset = fam(
            "rocketmq_consumer_offset", GAUGE, "Sum of the group's committed offsets", G, exporter
        )
        self.group_diff = fam(
            "rocketmq_group_diff",
            GAUGE,
            "Messages the group has not consumed",
            diff_labels,
            exporter,
        )
        self.group_retrydiff = fam(
            "rocketmq_group_retrydiff",
            GAUGE,
            "Messages of the group's retry topic not consumed",
            diff_labels,
            exporter,
        )
        self.group_dlqdiff = fam(
            "rocketmq_group_dlqdiff",
            GAUGE,
            "Messages of a DLQ topic the group has not consumed",
            diff_labels,
            exporter,
        )
        self.latency_by_storetime = fam(
            "rocketmq_group_get_latency_by_storetime",
            GAUGE,
            "Now minus the store time of the oldest unconsumed message (ms)",
            G,
            exporter,
        )
        self.lag_messages = fam(
            "rocketmq_consumer_lag_messages",
            GAUGE,
            "Messages the group has not consumed",
            lag_labels,
            node,
        )
        self.lag_latency = fam(
            "rocketmq_consumer_lag_latency",
            GAUGE,
            "Now minus the store time of the oldest unconsumed message (ms)",
            lag_labels,
            node,
        )
        self.queue_lag_messages = fam(
            "rocketmq_consumer_queue_lag_messages",
            GAUGE,
            "Messages of the queue the group has not consumed",
            (*CG, "queue_id"),
            node,
        )
        self.queue_lag_seconds = fam(
            "rocketmq_consumer_queue_lag_seconds",
            GAUGE,
            "Now minus the store time of the queue's oldest unconsumed message (s)",
            (*CG, "queue_id"),
            node,
        )
        client_labels = (*CG, "client_id")
        self.client_lag_messages = fam(
            "rocketmq_consumer_client_lag_messages",
            GAUGE,
            "Messages a client of a broadcasting group has not consumed (its own offsets)",
            client_labels,
            node,
        )
        self.client_lag_latency = fam(
            "rocketmq_consumer_client_lag_latency",
            GAUGE,
            "Age of the oldest message a client of a broadcasting group has not consumed (ms)",
            client_labels,
            node,
        )
        self.group_count = fam(
            "rocketmq_group_count",
            GAUGE,
            "Online consumers of the group",
            ("caddr", "localaddr", "group"),
            exporter,
        )
        self.queue_series_aggregated = fam(
            "rocketmq_metrics_queue_series_aggregated",
            GAUGE,
            "1: per-queue lag is not exported, the per-queue series would pass "
            "metricsPerQueueMaxSeries (or the figures are per group)",
            (),
            exporter,
        )
        self.group_topic_series_aggregated = fam(
            "rocketmq_metrics_group_topic_series_aggregated",
            GAUGE,
            '1: consumer figures are exported per group (topic=""), the per group and topic '
            "series would pass metricsPerGroupTopicMaxSeries",
            (),
            exporter,
        )
        self.families = [v for v in vars(self).values() if isinstance(v, Family)]
        self.lag = GroupLag(broker, self)

    async def collect(self, now_ms: int) -> list[Family]:
        await _in_slices(self._topics())
        await _in_slices(self.lag.walk(now_ms))
        await _in_slices(self._stats())
        self._online()
        self._broadcast_clients(now_ms)
        return self.families

    # ------------------------------------------------------------------ topics

    def _topics(self) -> Iterator[None]:
        store = self.broker.store
        for topic, config in list(self.broker.topics.table.items()):
            total = 0
            for queue_id in range(config.write_queue_nums):
                total += store.get_max_offset_in_queue(topic, queue_id)
            key = (topic,)
            if topic.startswith(K.RETRY_GROUP_TOPIC_PREFIX):
                self.retry_offset.add(key, total)
            elif topic.startswith(K.DLQ_GROUP_TOPIC_PREFIX):
                self.dlq_offset.add((topic[len(K.DLQ_GROUP_TOPIC_PREFIX) :],), total)
            else:
                self.producer_offset.add(key, total)
            yield

    def _stats(self) -> Iterator[None]:
        """Per-topic and per-group rates and totals, from the stats the broker keeps for
        VIEW_BROKER_STATS_DATA (only keys that saw traffic since start have an item). Per
        group (topic=""), the group's rates and totals summed, when the plan says so."""
        families = {
            TOPIC_PUT_NUMS: (self.producer_tps, self.messages_in),
            TOPIC_PUT_SIZE: (self.producer_size, self.throughput_in),
            GROUP_GET_NUMS: (self.consumer_tps, self.messages_out),
            GROUP_GET_SIZE: (self.consumer_size, self.throughput_out),
            SNDBCK_PUT_NUMS: (self.send_back, None),
        }
        per_group = self.lag.plan.per_group
        sums: dict[tuple[Family, tuple[str, ...]], float] = {}
        for done, ((name, key), item) in enumerate(list(self.broker.stats.items.items()), 1):
            pair = families.get(name)
            if pair is None:
                continue
            rate, total = pair
            if name in (TOPIC_PUT_NUMS, TOPIC_PUT_SIZE):
                labels: tuple[str, ...] = (key,)
            else:
                topic, _, group = key.partition("@")
                labels = (AGGREGATED_TOPIC if per_group else topic, group)
            minute = item.snapshot("minute")
            figures = ((rate, minute.sum if total is None else minute.tps), (total, item.value))
            for family, value in figures:
                if family is None:
                    continue
                if per_group and len(labels) == 2:
                    sums[family, labels] = sums.get((family, labels), 0) + value
                else:
                    family.add(labels, value)
            if done % 64 == 0:
                yield
        for (family, labels), value in sums.items():
            family.add(labels, value)

    # ------------------------------------------------------------------ groups

    def _online(self) -> None:
        local = self.broker.config.broker_addr
        for group, info in list(self.broker.clients.consumer_groups.items()):
            if not info.channels:
                continue
            addrs = ",".join(sorted(c.client_addr for c in info.channels.values()))
            self.group_count.add((addrs, local, group), len(info.channels))

    def _broadcast_clients(self, now_ms: int) -> None:
        if self.probe is None:
            return
        for (group, topic, client_id), lag in list(self.probe.lags.items()):
            key = (topic, group, client_id)
            self.client_lag_messages.add(key, lag.messages)
            self.client_lag_latency.add(key, lag.latency_ms(now_ms))


async def _in_slices(work: Iterator[None], slice_s: float = SLICE_S) -> None:
    """Runs ``work`` (one step a topic or pair), giving the loop back whenever a slice has
    held it for ``slice_s``: the walk's cost is spread, never a stall."""
    clock = time.perf_counter
    started = clock()
    for done, _ in enumerate(work, 1):
        if done % CHECK_EVERY == 0 and clock() - started >= slice_s:
            await trio.lowlevel.checkpoint()
            started = clock()
