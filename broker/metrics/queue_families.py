"""The families whose series grow with topics and groups: per topic (rocketmq-exporter's
``rocketmq_producer_*``, RocketMQ 5's ``rocketmq_messages_in_total``), per group and topic
(``rocketmq_group_diff`` and kin, ``rocketmq_consumer_lag_messages`` and
``rocketmq_consumer_lag_latency``) and, for small groups, per queue (ours).

Cardinality: one series per topic and family, one per (group, topic) committed on here and
family, and per-queue lag only for a group consuming at most ``metricsPerQueueMaxQueues``
queues here, and for none when all groups' per-queue series together would pass
``metricsPerQueueMaxSeries`` (a gauge and a log line say so); docs/monitoring.md counts them
for 1,000 topics x 8 queues x 50 groups. The collection runs in the background
(metrics/snapshot.py) and yields to the event loop whenever it has held it for
``SLICE_S``, so however large the broker, the loop is never held for long at once.

Broadcasting groups keep their offsets on the clients: the broker's figure for them would be
wrong, so they get none here (as rocketmq-exporter does); broker/metrics/client_probe.py asks
each client for its own progress, exported per client (rocketmq_consumer_client_lag_*).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from functools import partial
from typing import TYPE_CHECKING

import trio

from broker.stats import (
    GROUP_GET_NUMS,
    GROUP_GET_SIZE,
    SNDBCK_PUT_NUMS,
    TOPIC_PUT_NUMS,
    TOPIC_PUT_SIZE,
)
from metrics.exposition import COUNTER, GAUGE, Family
from metrics.lag import NO_LAG, Lag, queue_lag, total_lag
from remoting import constants as K
from remoting.body import MessageModel

if TYPE_CHECKING:
    from broker.controller import BrokerController
    from broker.metrics.client_probe import BroadcastProbe
    from broker.store.consume_queue import ConsumeQueue

log = logging.getLogger(__name__)

SLICE_S = 0.005  # the longest the walk holds the loop at once (give or take a pair)
CHECK_EVERY = 16  # pairs or topics between looks at the clock
SYSTEM_GROUP_PREFIX = "CID_RMQ_SYS_"
# rocketmq-exporter's msgModel label: MessageModel.ordinal() (BROADCASTING 0, CLUSTERING 1)
MSG_MODEL_CLUSTERING = "1"
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
            "metricsPerQueueMaxSeries (each group keeps its per-topic figures)",
            (),
            exporter,
        )
        self.families = [v for v in vars(self).values() if isinstance(v, Family)]
        self.aggregated = False
        # (topic, queue id, queue offset) -> store time (ms), see _store_time_at
        self._store_times: dict[tuple[str, int, int], int] = {}
        self._store_times_seen: dict[tuple[str, int, int], int] = {}

    async def collect(self, now_ms: int) -> list[Family]:
        self._store_times, self._store_times_seen = self._store_times_seen, {}
        await _in_slices(self._topics())
        await _in_slices(self._groups(now_ms))
        self._stats()
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

    def _stats(self) -> None:
        """Per-topic and per-group rates and totals, from the stats the broker keeps for
        VIEW_BROKER_STATS_DATA (only keys that saw traffic since start have an item)."""
        families = {
            TOPIC_PUT_NUMS: (self.producer_tps, self.messages_in),
            TOPIC_PUT_SIZE: (self.producer_size, self.throughput_in),
            GROUP_GET_NUMS: (self.consumer_tps, self.messages_out),
            GROUP_GET_SIZE: (self.consumer_size, self.throughput_out),
        }
        for (name, key), item in list(self.broker.stats.items.items()):
            if name == SNDBCK_PUT_NUMS:
                self.send_back.add(tuple(key.split("@", 1)), item.snapshot("minute").sum)
                continue
            pair = families.get(name)
            if pair is None:
                continue
            rate, total = pair
            labels = (
                (key,) if name in (TOPIC_PUT_NUMS, TOPIC_PUT_SIZE) else tuple(key.split("@", 1))
            )
            rate.add(labels, item.snapshot("minute").tps)
            total.add(labels, item.value)

    # ------------------------------------------------------------------ groups

    def _groups(self, now_ms: int) -> Iterator[None]:
        broker = self.broker
        online = broker.clients.consumer_groups
        by_group: dict[str, list[tuple[str, dict[int, int]]]] = {}
        queue_counts: dict[str, int] = {}
        for done, (key, offsets) in enumerate(list(broker.offsets.table.items()), 1):
            topic, _, group = key.partition("@")
            by_group.setdefault(group, []).append((topic, offsets))
            queue_counts[group] = queue_counts.get(group, 0) + len(offsets)
            if done % 64 == 0:
                yield  # 50,000 pairs are ~50 ms of grouping: in slices too
        per_queue_groups = self._per_queue_groups(queue_counts)
        for group, topics in by_group.items():
            info = online.get(group)
            if info is not None and info.message_model is MessageModel.BROADCASTING:
                continue
            members = str(len(info.channels)) if info is not None else "0"
            per_queue = group in per_queue_groups
            for topic, offsets in topics:
                self._group_topic(group, topic, offsets, members, per_queue, now_ms)
                yield

    def _per_queue_groups(self, queue_counts: dict[str, int]) -> set[str]:
        """The groups whose lag is exported per queue (``queue_counts``: group -> queues it
        has offsets on here): those consuming at most metricsPerQueueMaxQueues queues, unless
        their series together would pass metricsPerQueueMaxSeries (then none: rocketmq-exporter
        has no per-queue series at all, its lag is per group and topic)."""
        config = self.broker.config
        limit, max_series = config.metrics_per_queue_max_queues, config.metrics_per_queue_max_series
        small = {group: n for group, n in queue_counts.items() if n <= limit}
        series = 2 * sum(small.values())  # queue_lag_messages and queue_lag_seconds
        aggregated = series > max_series
        if aggregated != self.aggregated:
            self.aggregated = aggregated
            if aggregated:
                log.warning(
                    "metrics: %d per-queue series would pass metricsPerQueueMaxSeries=%d: "
                    "consumer lag is exported per group and topic only",
                    series,
                    max_series,
                )
            else:
                log.info("metrics: consumer lag is exported per queue again (%d series)", series)
        self.queue_series_aggregated.add((), int(aggregated))
        return set() if aggregated else set(small)

    def _group_topic(
        self,
        group: str,
        topic: str,
        offsets: dict[int, int],
        members: str,
        per_queue: bool,
        now_ms: int,
    ) -> None:
        find = self.broker.store.consume_queues.find
        behind: list[Lag] = []
        committed = 0
        for queue_id, offset in list(offsets.items()):
            if offset > 0:
                committed += offset
            queue = find(topic, queue_id)
            if queue is None:
                lag = NO_LAG
            else:
                lag = queue_lag(
                    offset,
                    queue.min_queue_offset,
                    queue.max_queue_offset,
                    partial(self._store_time_at, topic, queue_id, queue),
                )
            if lag.messages:
                behind.append(lag)
            if per_queue:
                labels = (topic, group, str(queue_id))
                self.queue_lag_messages.add(labels, lag.messages)
                self.queue_lag_seconds.add(labels, lag.latency_ms(now_ms) / 1000)
        self._group_totals(group, topic, total_lag(behind), committed, members, now_ms)

    def _store_time_at(self, topic: str, queue_id: int, queue: ConsumeQueue, at: int) -> int:
        """The store time of a queue's unit, from the last scrape when it was read then: a
        group that has not moved costs a dict lookup, not a ConsumeQueue and a CommitLog read.
        Only the times this scrape used are kept for the next (the cache stays bounded by the
        queues lagging)."""
        key = (topic, queue_id, at)
        store_ms = self._store_times.get(key)
        if store_ms is None:
            unit = queue.unit(at)
            store_ms = self.broker.store.commit_log.store_timestamp_at(unit[0]) if unit else -1
        if store_ms > 0:
            self._store_times_seen[key] = store_ms
        return store_ms

    def _group_totals(
        self, group: str, topic: str, total: Lag, committed: int, members: str, now_ms: int
    ) -> None:
        diff_key = (group, topic, members, MSG_MODEL_CLUSTERING)
        if topic.startswith(K.RETRY_GROUP_TOPIC_PREFIX):
            self.group_retrydiff.add(diff_key, total.messages)
        elif topic.startswith(K.DLQ_GROUP_TOPIC_PREFIX):
            self.group_dlqdiff.add(diff_key, total.messages)
        else:
            self.group_diff.add(diff_key, total.messages)
        latency = total.latency_ms(now_ms)
        pair = (topic, group)
        self.consumer_offset.add(pair, committed)
        self.latency_by_storetime.add(pair, latency)
        is_retry = "true" if topic.startswith(K.RETRY_GROUP_TOPIC_PREFIX) else "false"
        is_system = "true" if group.startswith(SYSTEM_GROUP_PREFIX) else "false"
        lag_key = (topic, group, is_retry, is_system)
        self.lag_messages.add(lag_key, total.messages)
        self.lag_latency.add(lag_key, latency)

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
