"""How much detail the consumer figures get, so that a broker's scrape stays bounded however
many groups and topics it carries. Pure: counts in, a plan out; no clock, no I/O.

Three levels, coarsest wins:

- per queue (``rocketmq_consumer_queue_lag_*``), for groups consuming at most
  ``metricsPerQueueMaxQueues`` queues here, while those groups' per-queue series together stay
  within ``metricsPerQueueMaxSeries``;
- per group and topic (rocketmq-exporter's ``rocketmq_group_diff`` and kin, RocketMQ 5's
  ``rocketmq_consumer_lag_*``, the pull rates), while those series stay within
  ``metricsPerGroupTopicMaxSeries``;
- per group: the same families with ``topic=""`` (to Prometheus, no topic label), one series
  per group and kind of topic (ordinary, retry, DLQ): the lag summed over the group's topics,
  its age the oldest message's. A group's lag in messages and seconds stays right; which topic
  it lags on is what is given up (the console and ``mqadmin consumerProgress`` still say).

The families per (group, topic) pair: diff (or retrydiff / dlqdiff), consumer_offset,
latency_by_storetime, lag_messages and lag_latency; and for a pair pulled from since start,
the pull stats (consumer_tps, consumer_message_size, messages_out, throughput_out) and
send_back for a pair that sent messages back.
"""

from __future__ import annotations

import attrs

from broker.stats import GROUP_GET_NUMS, GROUP_GET_SIZE, SNDBCK_PUT_NUMS
from metrics.lag import NO_LAG, Lag
from remoting import constants as K

PAIR_FAMILIES = 5  # series every (group, topic) pair with offsets has
QUEUE_FAMILIES = 2  # queue_lag_messages, queue_lag_seconds
# stats item name -> the per (group, topic) series it becomes (a rate and a total, or a rate)
STATS_FAMILIES = {GROUP_GET_NUMS: 2, GROUP_GET_SIZE: 2, SNDBCK_PUT_NUMS: 1}

ORDINARY, RETRY, DLQ = "ordinary", "retry", "dlq"
AGGREGATED_TOPIC = ""  # the topic label of a per-group series: no topic, to Prometheus


def topic_kind(topic: str) -> str:
    if topic.startswith(K.RETRY_GROUP_TOPIC_PREFIX):
        return RETRY
    if topic.startswith(K.DLQ_GROUP_TOPIC_PREFIX):
        return DLQ
    return ORDINARY


@attrs.frozen
class Plan:
    per_queue: frozenset[str]  # groups whose lag is also exported per queue
    per_group: bool  # the consumer figures are per group, not per group and topic
    queue_series: int  # what per-queue detail would have cost (for the log line)
    pair_series: int  # what per group-topic detail would have cost


def plan(
    queue_counts: dict[str, int],
    pairs: int,
    stats_series: int,
    *,
    max_queues: int,
    max_queue_series: int,
    max_pair_series: int,
) -> Plan:
    """``queue_counts``: group -> queues it has offsets on here; ``pairs``: (group, topic)
    pairs with offsets; ``stats_series``: the pull-stats series per (group, topic)."""
    pair_series = PAIR_FAMILIES * pairs + stats_series
    small = {group: n for group, n in queue_counts.items() if n <= max_queues}
    queue_series = QUEUE_FAMILIES * sum(small.values())
    per_group = pair_series > max_pair_series
    per_queue = frozenset() if per_group or queue_series > max_queue_series else frozenset(small)
    return Plan(per_queue, per_group, queue_series, pair_series)


def stats_series(names: list[str]) -> int:
    """The per (group, topic) series the broker's stats items of these names become."""
    return sum(STATS_FAMILIES.get(name, 0) for name in names)


@attrs.define
class GroupTotals:
    """One group's figures over all its topics, by kind of topic."""

    lags: dict[str, Lag] = attrs.Factory(dict)
    committed: int = 0

    def add(self, topic: str, lag: Lag, committed: int) -> None:
        kind = topic_kind(topic)
        self.lags[kind] = self.lags.get(kind, NO_LAG).merge(lag)
        self.committed += committed

    def lag(self, *kinds: str) -> Lag | None:
        """The kinds' lag together; None when the group has no topic of these kinds."""
        found = [self.lags[kind] for kind in kinds if kind in self.lags]
        if not found:
            return None
        total = found[0]
        for lag in found[1:]:
            total = total.merge(lag)
        return total
