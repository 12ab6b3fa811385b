"""RouteInfoManager: the NameServer's five tables as pure state (docs/spec/namesrv.md §2-§5).

No I/O and no locks: the tables are only touched from the event loop, and time comes from an
injected clock, so expiry is tested by moving the clock. A registration remembers the
connection it came over, so a closed connection removes exactly that broker.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable

import attrs

from remoting import constants as K
from remoting.body import (
    BrokerData,
    ClusterInfo,
    DataVersion,
    QueueData,
    TopicConfigSerializeWrapper,
    TopicRouteData,
)

log = logging.getLogger(__name__)

BROKER_CHANNEL_EXPIRED_MS = 120_000


@attrs.define
class BrokerLiveInfo:
    last_update: int
    data_version: DataVersion
    channel: Hashable | None
    ha_server_addr: str


@attrs.frozen
class RegisterBrokerResult:
    master_addr: str | None = None
    ha_server_addr: str | None = None


@attrs.frozen
class BrokerRegistration:
    cluster_name: str
    broker_addr: str
    broker_name: str
    broker_id: int
    ha_server_addr: str
    topics: TopicConfigSerializeWrapper | None
    filter_servers: list[str] | None = None
    channel: Hashable | None = None


class RouteInfoManager:
    def __init__(
        self, clock: Callable[[], int], expired_ms: int = BROKER_CHANNEL_EXPIRED_MS
    ) -> None:
        self.clock = clock
        self.expired_ms = expired_ms
        self.topic_queue_table: dict[str, dict[str, QueueData]] = {}
        self.broker_addr_table: dict[str, BrokerData] = {}
        self.cluster_addr_table: dict[str, set[str]] = {}
        self.broker_live_table: dict[str, BrokerLiveInfo] = {}
        self.filter_server_table: dict[str, list[str]] = {}
        # Bumped on every change: the processor caches encoded route replies by it.
        self.generation = 0

    # ------------------------------------------------------------------------ register

    def register_broker(self, reg: BrokerRegistration) -> RegisterBrokerResult:
        self.generation += 1
        self.cluster_addr_table.setdefault(reg.cluster_name, set()).add(reg.broker_name)
        broker_data = self.broker_addr_table.get(reg.broker_name)
        register_first = broker_data is None
        if broker_data is None:
            broker_data = BrokerData(cluster=reg.cluster_name, broker_name=reg.broker_name)
            self.broker_addr_table[reg.broker_name] = broker_data
        addrs = broker_data.broker_addrs
        # One address owns one id: a slave promoted to master re-registers with id 0.
        for broker_id in [
            i for i, a in addrs.items() if a == reg.broker_addr and i != reg.broker_id
        ]:
            del addrs[broker_id]
        old = addrs.get(reg.broker_id)
        if old is not None and old != reg.broker_addr and self._older_state(old, reg):
            # RocketMQ 5: a broker of an older controller epoch (stateVersion) does not
            # replace the live one holding that id; it is ignored and not kept alive.
            log.warning(
                "registration of %s as %s id=%d ignored: %s holds it at a newer stateVersion",
                reg.broker_addr,
                reg.broker_name,
                reg.broker_id,
                old,
            )
            self.broker_live_table.pop(reg.broker_addr, None)
            return RegisterBrokerResult()
        addrs[reg.broker_id] = reg.broker_addr
        register_first = register_first or old is None
        if reg.topics is not None and reg.broker_id == K.MASTER_ID:
            live = self.broker_live_table.get(reg.broker_addr)
            if register_first or live is None or live.data_version != reg.topics.data_version:
                for config in reg.topics.topic_config_table.values():
                    self.topic_queue_table.setdefault(config.topic_name, {})[reg.broker_name] = (
                        QueueData(
                            broker_name=reg.broker_name,
                            read_queue_nums=config.read_queue_nums,
                            write_queue_nums=config.write_queue_nums,
                            perm=config.perm,
                            topic_sys_flag=config.topic_sys_flag,
                        )
                    )
        data_version = reg.topics.data_version if reg.topics is not None else DataVersion()
        previous = self.broker_live_table.get(reg.broker_addr)
        self.broker_live_table[reg.broker_addr] = BrokerLiveInfo(
            self.clock(), data_version, reg.channel, reg.ha_server_addr
        )
        if previous is None:
            log.info(
                "new broker registered: %s %s id=%d",
                reg.broker_name,
                reg.broker_addr,
                reg.broker_id,
            )
        if reg.filter_servers is not None:
            if reg.filter_servers:
                self.filter_server_table[reg.broker_addr] = list(reg.filter_servers)
            else:
                self.filter_server_table.pop(reg.broker_addr, None)
        if reg.broker_id != K.MASTER_ID:
            master_addr = addrs.get(K.MASTER_ID)
            master_live = self.broker_live_table.get(master_addr) if master_addr else None
            if master_live is not None:
                return RegisterBrokerResult(master_addr, master_live.ha_server_addr)
        return RegisterBrokerResult()

    def _older_state(self, holder: str, reg: BrokerRegistration) -> bool:
        live = self.broker_live_table.get(holder)
        if live is None or reg.topics is None:
            return False
        return (live.data_version.state_version or 0) > (reg.topics.data_version.state_version or 0)

    def is_broker_topic_config_changed(self, broker_addr: str, version: DataVersion) -> bool:
        live = self.broker_live_table.get(broker_addr)
        return live is None or live.data_version != version

    def touch(self, broker_addr: str) -> None:
        live = self.broker_live_table.get(broker_addr)
        if live is not None:
            live.last_update = self.clock()

    # ------------------------------------------------------------------------ removal

    def unregister_broker(
        self, cluster_name: str, broker_addr: str, broker_name: str, broker_id: int
    ) -> None:
        self.generation += 1
        self.broker_live_table.pop(broker_addr, None)
        self.filter_server_table.pop(broker_addr, None)
        broker_data = self.broker_addr_table.get(broker_name)
        if broker_data is None:
            return
        broker_data.broker_addrs.pop(broker_id, None)
        if not broker_data.broker_addrs:
            self._remove_broker_name(broker_name, cluster_name)
        log.info("broker unregistered: %s %s id=%d", broker_name, broker_addr, broker_id)

    def _remove_broker_name(self, broker_name: str, cluster_name: str | None) -> None:
        self.broker_addr_table.pop(broker_name, None)
        for cluster, names in list(self.cluster_addr_table.items()):
            if cluster_name is not None and cluster != cluster_name:
                continue
            if broker_name in names:
                names.discard(broker_name)
                if not names:
                    del self.cluster_addr_table[cluster]
                break
        for topic, queues in list(self.topic_queue_table.items()):
            if queues.pop(broker_name, None) is not None and not queues:
                del self.topic_queue_table[topic]

    def _destroy_addr(self, broker_addr: str) -> None:
        self.generation += 1
        self.broker_live_table.pop(broker_addr, None)
        self.filter_server_table.pop(broker_addr, None)
        for broker_name, broker_data in list(self.broker_addr_table.items()):
            ids = [i for i, a in broker_data.broker_addrs.items() if a == broker_addr]
            if not ids:
                continue
            for broker_id in ids:
                del broker_data.broker_addrs[broker_id]
            if not broker_data.broker_addrs:
                self._remove_broker_name(broker_name, None)
            break  # only the first BrokerData holding the address, as Java does

    def on_channel_destroy(self, channel: Hashable) -> str | None:
        """A broker's connection closed: drop the broker registered over it."""
        for addr, live in self.broker_live_table.items():
            if live.channel is channel or live.channel == channel:
                log.info("broker %s connection closed: removing its routes", addr)
                self._destroy_addr(addr)
                return addr
        return None

    def scan_not_active_broker(self) -> list[tuple[str, Hashable | None]]:
        """Expire brokers silent for longer than the expiry; returns (addr, channel) of each
        so the caller can close the connections."""
        now = self.clock()
        expired = [
            (addr, live.channel)
            for addr, live in self.broker_live_table.items()
            if live.last_update + self.expired_ms < now
        ]
        for addr, _ in expired:
            log.warning("broker %s expired: no registration for %d ms", addr, self.expired_ms)
            self._destroy_addr(addr)
        return expired

    # ------------------------------------------------------------------------ queries

    def pickup_topic_route_data(self, topic: str) -> TopicRouteData | None:
        queues = self.topic_queue_table.get(topic)
        if not queues:
            return None
        broker_datas = []
        filters: dict[str, list[str]] = {}
        for broker_name in queues:
            data = self.broker_addr_table.get(broker_name)
            if data is None:
                continue
            broker_datas.append(
                BrokerData(
                    cluster=data.cluster,
                    broker_name=data.broker_name,
                    broker_addrs=dict(data.broker_addrs),
                )
            )
            for addr in data.broker_addrs.values():
                if addr in self.filter_server_table:
                    filters[addr] = list(self.filter_server_table[addr])
        if not broker_datas:
            return None
        return TopicRouteData(
            queue_datas=list(queues.values()),
            broker_datas=broker_datas,
            filter_server_table=filters,
        )

    def cluster_info(self) -> ClusterInfo:
        return ClusterInfo(
            broker_addr_table=dict(self.broker_addr_table),
            cluster_addr_table={k: set(v) for k, v in self.cluster_addr_table.items()},
        )

    def all_topics(self) -> list[str]:
        return list(self.topic_queue_table)

    def topics_by_cluster(self, cluster: str) -> list[str]:
        names = self.cluster_addr_table.get(cluster, set())
        return [t for t, q in self.topic_queue_table.items() if names & q.keys()]

    def system_topics(self) -> tuple[list[str], str | None]:
        topics = list(self.cluster_addr_table)
        for names in self.cluster_addr_table.values():
            topics.extend(names)
        addr = None
        for data in self.broker_addr_table.values():
            if data.broker_addrs:
                addr = next(iter(data.broker_addrs.values()))
                break
        return topics, addr

    def topics_with_flag(self, *, unit: bool | None, unit_sub: bool | None) -> list[str]:
        out = []
        for topic, queues in self.topic_queue_table.items():
            flags = [q.topic_sys_flag for q in queues.values()]
            if not flags:
                continue
            flag = flags[0]
            if unit is not None and bool(flag & K.TOPIC_SYS_FLAG_UNIT) != unit:
                continue
            if unit_sub is not None and bool(flag & K.TOPIC_SYS_FLAG_UNIT_SUB) != unit_sub:
                continue
            out.append(topic)
        return out

    def delete_topic(self, topic: str, cluster: str | None = None) -> None:
        self.generation += 1
        if not cluster:
            self.topic_queue_table.pop(topic, None)
            return
        queues = self.topic_queue_table.get(topic)
        if queues is None:
            return
        for name in self.cluster_addr_table.get(cluster, set()):
            queues.pop(name, None)
        if not queues:
            del self.topic_queue_table[topic]

    def set_write_perm(self, broker_name: str, *, wipe: bool) -> int:
        """WIPE_WRITE_PERM_OF_BROKER / ADD_WRITE_PERM_OF_BROKER: returns the topic count."""
        self.generation += 1
        count = 0
        for queues in self.topic_queue_table.values():
            data = queues.get(broker_name)
            if data is None:
                continue
            perm = data.perm & ~K.PERM_WRITE if wipe else K.PERM_READ | K.PERM_WRITE
            queues[broker_name] = attrs.evolve(data, perm=perm)
            count += 1
        return count
