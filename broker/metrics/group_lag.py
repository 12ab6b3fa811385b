"""Consumer lag from the offset table: the walk over every (group, topic) pair a snapshot
makes, at the detail broker/metrics/cardinality.py's plan allows (per queue, per group and
topic, or per group), into the families of broker/metrics/queue_families.py. Lag itself is
metrics/lag.py's. Store times are read once per lagging queue and kept while the group's
offset there does not move."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING

from broker.metrics.cardinality import (
    AGGREGATED_TOPIC,
    DLQ,
    ORDINARY,
    RETRY,
    GroupTotals,
    Plan,
    plan,
    stats_series,
)
from metrics.lag import Lag, latency_ms, queue_behind
from remoting import constants as K
from remoting.body import MessageModel

if TYPE_CHECKING:
    from broker.controller import BrokerController
    from broker.metrics.queue_families import QueueFamilies
    from broker.store.consume_queue import ConsumeQueue

log = logging.getLogger(__name__)

SYSTEM_GROUP_PREFIX = "CID_RMQ_SYS_"
# rocketmq-exporter's msgModel label: MessageModel.ordinal() (BROADCASTING 0, CLUSTERING 1)
MSG_MODEL_CLUSTERING = "1"


class GroupLag:
    def __init__(self, broker: BrokerController, families: QueueFamilies) -> None:
        self.broker = broker
        self.f = families
        self.plan = Plan(frozenset(), False, 0, 0)
        # (topic, queue id, queue offset) -> store time (ms), see _store_time_at
        self._store_times: dict[tuple[str, int, int], int] = {}
        self._store_times_seen: dict[tuple[str, int, int], int] = {}

    def walk(self, now_ms: int) -> Iterator[None]:
        self._store_times, self._store_times_seen = self._store_times_seen, {}
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
        pairs = sum(len(topics) for topics in by_group.values())
        self._plan(queue_counts, pairs, [name for name, _ in list(broker.stats.items)])
        per_group = self.plan.per_group
        for group, topics in by_group.items():
            info = online.get(group)
            if info is not None and info.message_model is MessageModel.BROADCASTING:
                continue
            members = str(len(info.channels)) if info is not None else "0"
            per_queue = group in self.plan.per_queue
            totals = GroupTotals() if per_group else None
            for topic, offsets in topics:
                self._group_topic(group, topic, offsets, members, per_queue, now_ms, totals)
                yield
            if totals is not None:
                self._group_aggregate(group, totals, members, now_ms)

    def _plan(self, queue_counts: dict[str, int], pairs: int, stats_names: list[str]) -> None:
        """How much detail this snapshot gives (broker/metrics/cardinality.py); a change of
        level is logged once and the two gauges say where it stands."""
        config = self.broker.config
        new = plan(
            queue_counts,
            pairs,
            stats_series(stats_names),
            max_queues=config.metrics_per_queue_max_queues,
            max_queue_series=config.metrics_per_queue_max_series,
            max_pair_series=config.metrics_per_group_topic_max_series,
        )
        old, self.plan = self.plan, new
        if new.per_group != old.per_group:
            if new.per_group:
                log.warning(
                    "metrics: %d per group and topic series would pass "
                    "metricsPerGroupTopicMaxSeries=%d: consumer figures are exported per group",
                    new.pair_series,
                    config.metrics_per_group_topic_max_series,
                )
            else:
                log.info("metrics: consumer figures are per group and topic again")
        queues_aggregated = new.queue_series > config.metrics_per_queue_max_series
        if queues_aggregated != (old.queue_series > config.metrics_per_queue_max_series):
            if queues_aggregated:
                log.warning(
                    "metrics: %d per-queue series would pass metricsPerQueueMaxSeries=%d: "
                    "consumer lag is not exported per queue",
                    new.queue_series,
                    config.metrics_per_queue_max_series,
                )
            else:
                log.info("metrics: consumer lag is exported per queue again")
        self.f.queue_series_aggregated.add((), int(queues_aggregated or new.per_group))
        self.f.group_topic_series_aggregated.add((), int(new.per_group))

    def _group_topic(
        self,
        group: str,
        topic: str,
        offsets: dict[int, int],
        members: str,
        per_queue: bool,
        now_ms: int,
        totals: GroupTotals | None,
    ) -> None:
        # the hot loop of a snapshot (400,000 queues at the scale): no object made
        # per queue but the per-queue series' labels
        find = self.broker.store.consume_queues.find
        store_time_at = self._store_time_at
        messages = committed = 0
        oldest_ms = 0  # the oldest store time of a lagging queue (0: none readable)
        for queue_id, offset in offsets.items():  # nothing else runs during this call
            if offset > 0:
                committed += offset
            queue = find(topic, queue_id)
            if queue is None:
                behind, store_ms = 0, 0
            else:
                behind, at = queue_behind(offset, queue.min_queue_offset, queue.max_queue_offset)
                store_ms = store_time_at(topic, queue_id, queue, at) if at >= 0 else 0
                if behind:
                    messages += behind
                    if store_ms > 0 and (oldest_ms == 0 or store_ms < oldest_ms):
                        oldest_ms = store_ms
            if per_queue:
                labels = (topic, group, str(queue_id))
                self.f.queue_lag_messages.add(labels, behind)
                self.f.queue_lag_seconds.add(labels, latency_ms(behind, store_ms, now_ms) / 1000)
        total = Lag(messages, oldest_ms)
        if totals is not None:
            totals.add(topic, total, committed)
        else:
            self._group_totals(group, topic, total, committed, members, now_ms)

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
            self.f.group_retrydiff.add(diff_key, total.messages)
        elif topic.startswith(K.DLQ_GROUP_TOPIC_PREFIX):
            self.f.group_dlqdiff.add(diff_key, total.messages)
        else:
            self.f.group_diff.add(diff_key, total.messages)
        latency = total.latency_ms(now_ms)
        pair = (topic, group)
        self.f.consumer_offset.add(pair, committed)
        self.f.latency_by_storetime.add(pair, latency)
        is_retry = "true" if topic.startswith(K.RETRY_GROUP_TOPIC_PREFIX) else "false"
        is_system = "true" if group.startswith(SYSTEM_GROUP_PREFIX) else "false"
        lag_key = (topic, group, is_retry, is_system)
        self.f.lag_messages.add(lag_key, total.messages)
        self.f.lag_latency.add(lag_key, latency)

    def _group_aggregate(self, group: str, totals: GroupTotals, members: str, now_ms: int) -> None:
        """One group's per-group series (topic=""): a diff per kind of topic, RocketMQ 5's
        lag split by is_retry (as per topic), the offsets summed and the oldest age."""
        diff_key = (group, AGGREGATED_TOPIC, members, MSG_MODEL_CLUSTERING)
        diffs = (
            (ORDINARY, self.f.group_diff),
            (RETRY, self.f.group_retrydiff),
            (DLQ, self.f.group_dlqdiff),
        )
        for kind, family in diffs:
            if kind in totals.lags:
                family.add(diff_key, totals.lags[kind].messages)
        is_system = "true" if group.startswith(SYSTEM_GROUP_PREFIX) else "false"
        for is_retry, kinds in (("false", (ORDINARY, DLQ)), ("true", (RETRY,))):
            lag = totals.lag(*kinds)
            if lag is not None:
                lag_key = (AGGREGATED_TOPIC, group, is_retry, is_system)
                self.f.lag_messages.add(lag_key, lag.messages)
                self.f.lag_latency.add(lag_key, lag.latency_ms(now_ms))
        everything = totals.lag(ORDINARY, RETRY, DLQ)
        pair = (AGGREGATED_TOPIC, group)
        self.f.consumer_offset.add(pair, totals.committed)
        self.f.latency_by_storetime.add(pair, everything.latency_ms(now_ms) if everything else 0)
