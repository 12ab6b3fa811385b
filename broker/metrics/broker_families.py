"""The broker-wide families, a few dozen series whatever the topics and groups: runtime figures
under rocketmq-exporter's ``rocketmq_brokeruntime_*`` names and labels, RocketMQ 5's storage
and count gauges, and ours for HA, the disk and the store's health. Rendered by
prometheus_client (metrics/process.py registers this collector beside ``process_*``).

Every figure is read from what the broker keeps anyway (store stats, the CommitLog's offsets,
the HA connections, one statvfs of the CommitLog's disk); nothing here is counted per message.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import psutil
from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from broker.store.layout import PUT_BUCKET_BOUNDS_MS
from remoting.codes import CURRENT_VERSION
from remoting.version import CURRENT_VERSION_DESC

if TYPE_CHECKING:
    from broker.controller import BrokerController

RUNTIME_LABELS = ("cluster", "brokerIP", "brokerHost", "des", "boottime", "broker_version")
NODE_LABELS = ("cluster", "node_type", "node_id")
BROKER_LABELS = ("cluster", "brokerIP", "broker")


class BrokerFamilies(Collector):
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker
        config = broker.config
        self.runtime_values = [
            config.broker_cluster_name,
            config.broker_addr,
            "",
            CURRENT_VERSION_DESC,
            str(broker.runtime_info.boot_timestamp),
            str(CURRENT_VERSION),
        ]
        self.node_values = [config.broker_cluster_name, "broker", config.broker_name]
        self.broker_values = [config.broker_cluster_name, config.broker_addr, config.broker_name]

    def _runtime(self, name: str, help_text: str, value: float) -> GaugeMetricFamily:
        family = GaugeMetricFamily(
            f"rocketmq_brokeruntime_{name}", help_text, labels=RUNTIME_LABELS
        )
        family.add_metric(self.runtime_values, value)
        return family

    def _node(self, name: str, help_text: str, value: float, unit: str = "") -> GaugeMetricFamily:
        family = GaugeMetricFamily(name, help_text, labels=NODE_LABELS, unit=unit)
        family.add_metric(self.node_values, value)
        return family

    def _ours(self, name: str, help_text: str, value: float) -> GaugeMetricFamily:
        family = GaugeMetricFamily(name, help_text, labels=NODE_LABELS)
        family.add_metric(self.node_values, value)
        return family

    def collect(self) -> Iterator[Metric]:
        yield from self._runtime_families()
        yield from self._store_families()
        yield from self._disk_families()
        yield from self._ha_families()
        yield from self._count_families()

    def _runtime_families(self) -> Iterator[Metric]:
        broker, stats = self.broker, self.broker.store.stats
        puts = stats.put_message_times_total
        yield self._runtime("msg_put_total_today_now", "Messages stored since start", puts)
        yield self._runtime(
            "msg_gettotal_today_now",
            "Messages pulled since start",
            stats.get_message_transferred_msg_count,
        )
        yield self._runtime("putmessage_times_total", "Put requests since start", puts)
        yield self._runtime(
            "put_message_size_total", "Bytes stored since start", stats.put_message_size_total
        )
        yield self._runtime(
            "put_message_average_size",
            "Average stored message size (bytes)",
            stats.put_message_size_total / puts if puts else 0.0,
        )
        yield self._runtime(
            "putmessage_entire_time_max",
            "Longest put since start (ms)",
            stats.put_time_max_ns // 1_000_000,
        )
        yield self._runtime(
            "getmessage_entire_time_max",
            "Longest read of a pull since start (ms)",
            stats.get_time_max_ns // 1_000_000,
        )
        # Java: how long the put lock has been held. Puts here never wait while appending.
        yield self._runtime("pagecache_lock_time_mills", "Time the current put holds (ms)", 0)
        yield self._runtime(
            "dispatch_behind_bytes",
            "CommitLog bytes not yet in a ConsumeQueue (reput lag)",
            broker.store.dispatch_behind_bytes,
        )
        yield self._runtime(
            "commitlog_maxoffset", "CommitLog max physical offset", broker.store.max_phys_offset
        )
        yield self._runtime(
            "commitlog_minoffset", "CommitLog min physical offset", broker.store.min_phys_offset
        )
        yield self._runtime(
            "remain_howmanydata_toflush",
            "CommitLog bytes not yet flushed (flush lag)",
            broker.store.commit_log.queue.dirty_bytes(),
        )
        put_tps = stats.put_tps()
        yield self._runtime("put_tps10", "Messages stored per second", put_tps)
        histogram = HistogramMetricFamily(
            "rocketmq_put_latency_seconds",
            "Time to store one put request (a message or a batch), since start",
            labels=NODE_LABELS,
        )
        cumulative, buckets = 0, []
        for bound, count in zip(PUT_BUCKET_BOUNDS_MS, stats.put_distribution, strict=False):
            cumulative += count
            buckets.append((str(max(bound, 1) / 1000), cumulative))
        buckets.append(("+Inf", cumulative + stats.put_distribution[-1]))
        histogram.add_metric(self.node_values, buckets, stats.put_time_sum_ns / 1e9)
        yield histogram
        tps = GaugeMetricFamily(
            "rocketmq_broker_tps", "Messages stored per second, last minute", labels=BROKER_LABELS
        )
        tps.add_metric(self.broker_values, self._broker_tps())
        yield tps

    def _broker_tps(self) -> float:
        from broker.stats import BROKER_PUT_NUMS

        item = self.broker.stats.get(BROKER_PUT_NUMS, self.broker.config.broker_cluster_name)
        return item.snapshot("minute").tps if item is not None else 0.0

    def _store_families(self) -> Iterator[Metric]:
        store = self.broker.store
        yield self._node(
            "rocketmq_storage_dispatch_behind_bytes",
            "CommitLog bytes not yet dispatched",
            store.dispatch_behind_bytes,
            "",
        )
        yield self._node(
            "rocketmq_storage_flush_behind_bytes",
            "CommitLog bytes not yet flushed",
            store.commit_log.queue.dirty_bytes(),
        )
        yield self._ours(
            "rocketmq_store_writable",
            "1 while the store takes writes (no disk trouble, not full), else 0",
            int(store.health.writable and not store.disk_full and not store.is_slave),
        )
        trouble = GaugeMetricFamily(
            "rocketmq_store_disk_trouble",
            "1 per store area the disk currently refuses (docs: broker/store/health.py)",
            labels=(*NODE_LABELS, "area"),
        )
        for area in store.health.problems:
            trouble.add_metric([*self.node_values, area], 1)
        yield trouble

    def _disk_families(self) -> Iterator[Metric]:
        config = self.broker.store_config
        try:
            usage = psutil.disk_usage(str(config.commit_log_dir))
        except OSError:
            return
        capacity = usage.used + usage.free  # what a non-root writer can use, as df shows it
        ratio = usage.used / capacity if capacity else 0.0
        yield self._runtime("commitlog_disk_ratio", "Used ratio of the CommitLog's disk", ratio)
        yield self._runtime(
            "commitlogdir_capacity_total", "Size of the CommitLog's disk (bytes)", capacity
        )
        yield self._runtime(
            "commitlogdir_capacity_free", "Free bytes on the CommitLog's disk", usage.free
        )
        refuse_at = config.disk_space_warning_level_ratio
        yield self._ours(
            "rocketmq_store_disk_bytes_until_refusal",
            "Bytes that can still be written before sends are refused (diskSpaceWarningLevelRatio)",
            max(0, int(refuse_at * capacity) - usage.used),
        )
        yield self._ours(
            "rocketmq_store_disk_warning_ratio",
            "diskSpaceWarningLevelRatio: past it sends are refused",
            refuse_at,
        )
        yield self._ours(
            "rocketmq_store_disk_clean_forcibly_ratio",
            "diskSpaceCleanForciblyRatio: past it files are deleted before their time",
            config.disk_space_clean_forcibly_ratio,
        )

    def _ha_families(self) -> Iterator[Metric]:
        broker = self.broker
        if broker.ha_service is not None:
            labels = (*NODE_LABELS, "slave")
            lag_bytes = GaugeMetricFamily(
                "rocketmq_ha_slave_lag_bytes", "CommitLog bytes the slave lacks", labels=labels
            )
            lag_s = GaugeMetricFamily(
                "rocketmq_ha_slave_lag_seconds",
                "How long ago the master last had nothing the slave lacks",
                labels=labels,
            )
            in_sync = GaugeMetricFamily(
                "rocketmq_ha_slave_in_sync",
                "1 while the slave trails by less than haSlaveFallbehindMax bytes",
                labels=labels,
            )
            diff = GaugeMetricFamily(
                "rocketmq_broker_commitlog_diff",
                "Master minus slave CommitLog max offset",
                labels=BROKER_LABELS,
            )
            slaves = broker.ha_service.slaves()
            for slave in slaves:
                values = [*self.node_values, str(slave["addr"])]
                lag_bytes.add_metric(values, slave["lagBytes"])
                lag_s.add_metric(values, int(slave["lagMillis"]) / 1000)
                in_sync.add_metric(values, int(bool(slave["inSync"])))
                diff.add_metric(
                    [self.broker_values[0], str(slave["addr"]), self.broker_values[2]],
                    slave["lagBytes"],
                )
            yield from (lag_bytes, lag_s, in_sync, diff)
            yield self._ours("rocketmq_ha_slaves", "Slaves connected to this master", len(slaves))
        if broker.ha_client is not None:
            status = broker.ha_client.status()
            yield self._ours(
                "rocketmq_ha_master_connected",
                "1 while this slave is connected to its master",
                int(bool(status["connected"])),
            )
            ago = int(status["lastChunkMillisAgo"])  # type: ignore[call-overload]
            yield self._ours(
                "rocketmq_ha_last_chunk_age_seconds",
                "Time since the master last sent data (-1: never)",
                ago / 1000 if ago >= 0 else -1,
            )

    def _count_families(self) -> Iterator[Metric]:
        broker = self.broker
        yield self._node("rocketmq_topic_number", "Topics on this broker", len(broker.topics.table))
        yield self._node(
            "rocketmq_consumer_group_number",
            "Subscription groups on this broker",
            len(broker.groups.table),
        )
        yield self._node(
            "rocketmq_broker_permission", "brokerPermission", broker.config.broker_permission
        )
        yield self._ours(
            "rocketmq_broker_role",
            "0: ASYNC_MASTER, 1: SYNC_MASTER, 2: SLAVE",
            list(type(broker.store_config.broker_role)).index(broker.store_config.broker_role),
        )
        yield self._ours("rocketmq_pull_held", "Long-polling pulls held", broker.pull_hold.held)
