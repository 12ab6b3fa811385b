"""TopicConfigManager: the broker's topics, persisted to ``config/topics.json``.

The table is touched only on the event loop. Every change bumps the DataVersion, which is
what the NameServer compares to decide whether a registration carries news.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

import attrs

from broker.persist import ConfigPersistError, JsonConfigFile
from broker.pop.ck_info import revive_topic
from broker.timer.transform import TIMER_TOPIC
from remoting import constants as K
from remoting.body import DataVersion, TopicConfig, TopicConfigSerializeWrapper
from remoting.serde import encode_body, structure_body

log = logging.getLogger(__name__)

RW = K.PERM_READ | K.PERM_WRITE


class TopicConfigManager:
    def __init__(
        self,
        file: JsonConfigFile,
        *,
        cluster_name: str,
        broker_name: str,
        default_queue_nums: int = 8,
        auto_create_topic_enable: bool = True,
        cluster_topic_enable: bool = True,
        broker_topic_enable: bool = True,
        trace_topic: str | None = None,
        on_change: Callable[[], None] = lambda: None,
        revive_queue_num: int = 8,
    ) -> None:
        self.file = file
        self.revive_queue_num = revive_queue_num
        self.auto_create_topic_enable = auto_create_topic_enable
        self.data_version = DataVersion()
        self.table: dict[str, TopicConfig] = {}
        # Called after a change that the NameServers must learn about (RocketMQ registers
        # again at once when a topic is created by a send).
        self.on_change = on_change
        self.loaded = False  # no persisting of the built-in topics before load()
        self._system_topics(
            cluster_name, broker_name, default_queue_nums, cluster_topic_enable, broker_topic_enable
        )
        if trace_topic:
            # where clients with message tracing on send their traces (traceTopicEnable)
            self.table[trace_topic] = TopicConfig(
                topic_name=trace_topic, read_queue_nums=1, write_queue_nums=1, perm=RW
            )
        # Java's systemTopicList: what the broker creates itself
        self.system_topics = frozenset(self.table)

    def _system_topics(
        self,
        cluster_name: str,
        broker_name: str,
        default_queue_nums: int,
        cluster_topic_enable: bool,
        broker_topic_enable: bool,
    ) -> None:
        def put(name: str, queues: int, perm: int = RW) -> None:
            self.table[name] = TopicConfig(
                topic_name=name, read_queue_nums=queues, write_queue_nums=queues, perm=perm
            )

        put(K.SELF_TEST_TOPIC, 1)
        if self.auto_create_topic_enable:
            put(K.DEFAULT_TOPIC, default_queue_nums, K.PERM_INHERIT | RW)
        put(K.BENCHMARK_TOPIC, 1024)
        put(cluster_name, 16, K.PERM_INHERIT | (RW if cluster_topic_enable else 0))
        put(broker_name, 1, K.PERM_INHERIT | (RW if broker_topic_enable else 0))
        put(K.OFFSET_MOVED_EVENT, 1)
        put(K.SCHEDULE_TOPIC, 18)
        put(K.reply_topic(cluster_name), 1)  # where request-reply answers are kept
        # 5.x: pop checkpoints and acks (broker/pop/revive.py), parked timers (broker/timer/)
        put(revive_topic(cluster_name), self.revive_queue_num)
        put(TIMER_TOPIC, 1)

    # ------------------------------------------------------------------------ persistence

    def encode(self, pretty: bool = True) -> str:
        wrapper = TopicConfigSerializeWrapper(
            topic_config_table=dict(self.table), data_version=self.data_version
        )
        return encode_body(wrapper, pretty=pretty).decode()

    def load(self) -> None:
        self.loaded = True
        data = self.file.load()
        if data is None:
            return
        wrapper = structure_body(TopicConfigSerializeWrapper, data)
        self.table.update(wrapper.topic_config_table)
        self.data_version = wrapper.data_version

    async def persist(self) -> None:
        await self.file.persist(self.encode())

    def persist_sync(self) -> None:
        self.file.persist_sync(self.encode())

    # ------------------------------------------------------------------------ changes

    def _changed(self, undo: Callable[[], None]) -> None:
        """Persist before the change is acted on: a topic auto-created by a send must
        survive a kill -9 together with the acknowledged message (Java persists here too).
        Topic changes are rare, so the short blocking write is accepted on the loop. A change
        that cannot be written is undone and refused (ConfigPersistError)."""
        previous = self.data_version
        self.data_version = previous.next_version()
        if self.loaded:
            try:
                self.file.persist_change(self.encode())
            except ConfigPersistError:
                undo()
                self.data_version = previous
                raise
        self.on_change()

    def _put_back(self, previous: dict[str, TopicConfig | None]) -> None:
        for name, config in previous.items():
            if config is None:
                self.table.pop(name, None)
            else:
                self.table[name] = config

    @staticmethod
    def from_queues(topic: str, count: int) -> TopicConfig | None:
        """The config a store's queues imply for a topic the config lacks (None: no queues)."""
        if count <= 0:
            return None
        return TopicConfig(topic_name=topic, read_queue_nums=count, write_queue_nums=count)

    def get(self, topic: str) -> TopicConfig | None:
        return self.table.get(topic)

    def update(self, config: TopicConfig) -> None:
        name = config.topic_name
        old = self.table.get(name)
        if old == config:
            return
        self.table[name] = config
        self._changed(lambda: self._put_back({name: old}))
        log.info("topic config %s: %s -> %s", name, old, config)

    def delete(self, topics: Iterable[str]) -> list[str]:
        gone = {t: self.table.pop(t) for t in topics if t in self.table}
        if gone:
            self._changed(lambda: self._put_back(dict(gone)))
            log.info("deleted topics %s", list(gone))
        return list(gone)

    def create_in_send(
        self, topic: str, default_topic: str, client_queue_nums: int, sys_flag: int = 0
    ) -> TopicConfig | None:
        """Auto-create ``topic`` from ``default_topic`` (normally TBW102) as Java's
        createTopicInSendMessageMethod does: only when the default topic's perm inherits."""
        existing = self.table.get(topic)
        if existing is not None:
            return existing
        default = self.table.get(default_topic)
        if default is None:
            log.warning("create topic %s: default topic %s does not exist", topic, default_topic)
            return None
        perm = default.perm
        if default_topic == K.DEFAULT_TOPIC and not self.auto_create_topic_enable:
            perm = RW
        if not K.is_inherited(perm):
            log.warning("create topic %s: default topic %s perm %d", topic, default_topic, perm)
            return None
        queues = max(1, min(client_queue_nums, default.write_queue_nums))
        config = TopicConfig(
            topic_name=topic,
            read_queue_nums=queues,
            write_queue_nums=queues,
            perm=perm & ~K.PERM_INHERIT,
            topic_sys_flag=sys_flag,
        )
        log.info("auto-created topic %s from %s", topic, default_topic)
        self.update(config)
        return config

    def create_in_send_back(
        self, topic: str, queue_nums: int, perm: int = RW, sys_flag: int = 0
    ) -> TopicConfig:
        existing = self.table.get(topic)
        if existing is not None:
            return existing
        config = TopicConfig(
            topic_name=topic,
            read_queue_nums=queue_nums,
            write_queue_nums=queue_nums,
            perm=perm,
            topic_sys_flag=sys_flag,
        )
        self.update(config)
        return config

    def wrapper(self) -> TopicConfigSerializeWrapper:
        return TopicConfigSerializeWrapper(
            topic_config_table=dict(self.table), data_version=self.data_version
        )

    def with_permission(self, broker_permission: int) -> TopicConfigSerializeWrapper:
        """The registration body: a broker without write permission advertises every topic
        read-only, as Java does when brokerPermission lacks PERM_WRITE."""
        wrapper = self.wrapper()
        if K.is_writeable(broker_permission) and K.is_readable(broker_permission):
            return wrapper
        table = {
            name: attrs.evolve(config, perm=config.perm & broker_permission)
            for name, config in wrapper.topic_config_table.items()
        }
        return TopicConfigSerializeWrapper(topic_config_table=table, data_version=self.data_version)
