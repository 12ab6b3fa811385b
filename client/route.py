"""What a client derives from a TopicRouteData (pure): where it may send, where it reads,
which address serves a broker group."""

from __future__ import annotations

import random

import attrs

from remoting import constants as K
from remoting.body import MessageQueue, TopicRouteData

MASTER_ID = 0


@attrs.define
class TopicPublishInfo:
    """Writable queues on brokers that have a master, in route order (Java's order: brokers
    sorted by name, queue ids ascending)."""

    queues: list[MessageQueue]
    order_topic: bool = False
    # Java's ThreadLocalIndex starts at a random value: short-lived producers spread too.
    _next: int = attrs.Factory(lambda: random.randrange(1 << 16))

    def select(self, avoid_broker: str | None = None) -> MessageQueue:
        """Round-robin; on a retry, the next queue on another broker when there is one."""
        if not self.queues:
            raise LookupError("no writable queue")
        for _ in range(len(self.queues)):
            mq = self.queues[self._next % len(self.queues)]
            self._next += 1
            if avoid_broker is None or mq.broker_name != avoid_broker:
                return mq
        mq = self.queues[self._next % len(self.queues)]
        self._next += 1
        return mq


def publish_info(topic: str, route: TopicRouteData) -> TopicPublishInfo:
    masters = {b.broker_name for b in route.broker_datas if MASTER_ID in b.broker_addrs}
    queues = [
        MessageQueue(topic=topic, broker_name=qd.broker_name, queue_id=i)
        for qd in sorted(route.queue_datas, key=lambda q: q.broker_name)
        if K.is_writeable(qd.perm) and qd.broker_name in masters
        for i in range(qd.write_queue_nums)
    ]
    return TopicPublishInfo(queues, order_topic=bool(route.order_topic_conf))


def default_topic_publish_info(
    topic: str, default_route: TopicRouteData, queue_nums: int
) -> TopicPublishInfo:
    """Auto-creation: a new topic is sent through TBW102's brokers with at most ``queue_nums``
    queues each (Java's defaultTopicQueueNums = 4); the broker creates it on the first send."""
    capped = attrs.evolve(
        default_route,
        queue_datas=[
            attrs.evolve(qd, write_queue_nums=min(queue_nums, qd.write_queue_nums))
            for qd in default_route.queue_datas
        ],
    )
    return publish_info(topic, capped)


def subscribe_queues(topic: str, route: TopicRouteData) -> list[MessageQueue]:
    return sorted(
        MessageQueue(topic=topic, broker_name=qd.broker_name, queue_id=i)
        for qd in route.queue_datas
        if K.is_readable(qd.perm)
        for i in range(qd.read_queue_nums)
    )


def broker_addr(
    route: TopicRouteData, broker_name: str, broker_id: int = MASTER_ID, *, only_this: bool = False
) -> tuple[str, int] | None:
    """(address, id) for ``broker_id`` in the group, else (unless ``only_this``) a slave, as
    Java's findBrokerAddressInSubscribe: reading goes on when the master is gone."""
    for data in route.broker_datas:
        if data.broker_name != broker_name:
            continue
        addrs = {int(k): v for k, v in data.broker_addrs.items()}
        if broker_id in addrs:
            return addrs[broker_id], broker_id
        if only_this or not addrs:
            return None
        first = min(addrs)
        return addrs[first], first
    return None


def master_addr(route: TopicRouteData, broker_name: str) -> str | None:
    found = broker_addr(route, broker_name, MASTER_ID, only_this=True)
    return found[0] if found else None


def all_broker_addrs(route: TopicRouteData) -> set[str]:
    return {addr for data in route.broker_datas for addr in data.broker_addrs.values()}
