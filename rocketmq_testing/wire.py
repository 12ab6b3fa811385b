"""What a test cluster asks its servers, through the wire as any client would (the admin
client, RocketMQ's tools' pull): topics, the messages a store holds, consumer offsets, slaves in
sync. Each is an ``async`` function over an ``AdminClient``; the synchronous cluster runs them
on its admin client's loop thread, the Trio cluster in the test's own loop.

Nothing here reads files under a running broker: what the store holds is what a pull returns."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable

import trio

from client.admin import AdminClient
from client.errors import MQBrokerError
from remoting import constants as K
from remoting import message as codec
from remoting.body import MessageQueue, SubscriptionGroupConfig, TopicConfig, TopicStatsTable
from remoting.codes import RequestCode, ResponseCode
from remoting.errors import RemotingError
from remoting.serde import decode_body

POLL_S = 0.05
# RocketMQ's tools read with this group (DefaultMQPullConsumer in mqadmin's commands).
READER_GROUP = K.TOOLS_CONSUMER_GROUP
PULL_BATCH = 32
FLAG_SUBSCRIPTION = 0x4  # no commit, no suspend: a reader that leaves no trace in offsets
MAX_QUEUES = 1024


async def wait_until(predicate: Callable[[], Awaitable[bool]], timeout_s: float, what: str) -> None:
    """Another process's state has no event to await: poll it, with a deadline."""
    with trio.move_on_after(timeout_s):
        while not await predicate():
            await trio.sleep(POLL_S)
        return
    raise TimeoutError(f"timed out after {timeout_s:g} s waiting for {what}")


async def create_topic(
    admin: AdminClient, cluster: str, topic: str, queues: int, order: bool, timeout_s: float
) -> None:
    """The topic on every master of ``cluster`` (RocketMQ's ``updateTopic -c``), routed by
    the NameServers before this returns. ``order``: global order per broker, as
    ``updateTopic -o true`` writes the NameServers' orderConf."""
    if not isinstance(queues, int) or isinstance(queues, bool) or not 1 <= queues <= MAX_QUEUES:
        raise ValueError(f"queues={queues!r}: a number of queues from 1 to {MAX_QUEUES}")
    config = TopicConfig(
        topic_name=topic, read_queue_nums=queues, write_queue_nums=queues, order=order
    )
    masters = await admin.masters(cluster)
    for addr in masters.values():
        await admin.create_topic(addr, config)
    if order:
        conf = ";".join(f"{name}:{queues}" for name in sorted(masters))
        await admin.put_order_conf(topic, conf, whole_cluster=True)

    async def routed() -> bool:
        route = await admin.instance.fetch_route(topic)
        if route is None:
            return False
        queues_by_broker = {q.broker_name: q.write_queue_nums for q in route.queue_datas}
        return all(queues_by_broker.get(name) == queues for name in masters)

    await wait_until(routed, timeout_s, f"the NameServers to route topic {topic}")


async def delete_topic(admin: AdminClient, cluster: str, topic: str) -> None:
    await admin.delete_topic(topic, cluster)


async def messages(
    admin: AdminClient, topic: str, readers: Iterable[tuple[str, str]]
) -> list[codec.MessageExt]:
    """Every message of ``topic`` the brokers hold, reading from one broker per brokerName
    (``readers``: (brokerName, address), its master or a slave while the master is down), in
    (broker, queue, queue offset) order."""
    out: list[codec.MessageExt] = []
    for broker_name, addr in readers:
        for mq, first, end in await _queue_spans(admin, topic, broker_name, addr):
            out += await _read_queue(admin, addr, mq, first, end)
    return out


async def _queue_spans(
    admin: AdminClient, topic: str, broker_name: str, addr: str
) -> list[tuple[MessageQueue, int, int | None]]:
    """(queue, first offset, end offset) of the topic on one broker. A slave learns topic
    configs every 10 s: until then its queues come from the route, read until they end."""
    response = await admin.instance.invoke(
        addr, admin.instance.request(RequestCode.GET_TOPIC_STATS_INFO, {"topic": topic}), 5
    )
    if response.code == ResponseCode.SUCCESS:
        table = decode_body(TopicStatsTable, response.body).offset_table
        return [(mq, table[mq].min_offset, table[mq].max_offset) for mq in sorted(table)]
    if response.code != ResponseCode.TOPIC_NOT_EXIST:
        raise MQBrokerError(response.code, response.remark, addr)
    route = await admin.instance.fetch_route(topic)
    queues = max(
        (
            q.read_queue_nums
            for q in (route.queue_datas if route else [])
            if q.broker_name == broker_name
        ),
        default=0,
    )
    return [
        (MessageQueue(topic=topic, broker_name=broker_name, queue_id=i), 0, None)
        for i in range(queues)
    ]


async def _read_queue(
    admin: AdminClient, addr: str, mq: MessageQueue, queue_offset: int, end: int | None
) -> list[codec.MessageExt]:
    """The queue's messages from ``queue_offset`` to ``end`` (None: until the queue ends)."""
    out: list[codec.MessageExt] = []
    while end is None or queue_offset < end:
        response = await _pull(admin, addr, mq, queue_offset)
        if response.code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST:
            # autoCreateSubscriptionGroup=false: the reader's group, as an operator adds it
            await admin.update_sub_group(addr, SubscriptionGroupConfig(group_name=READER_GROUP))
            continue
        next_offset = int(response.ext("nextBeginOffset") or queue_offset)
        if response.code == ResponseCode.SUCCESS:
            out += codec.decode_messages(response.body)
        elif response.code not in (
            ResponseCode.PULL_NOT_FOUND,
            ResponseCode.PULL_RETRY_IMMEDIATELY,
            ResponseCode.PULL_OFFSET_MOVED,
        ):
            raise MQBrokerError(response.code, response.remark, addr)
        if next_offset <= queue_offset:
            break  # nothing more there (expired, or behind a hole): what was read is all
        queue_offset = next_offset
    return out


async def _pull(admin: AdminClient, addr: str, mq: MessageQueue, queue_offset: int):
    fields = {
        "consumerGroup": READER_GROUP,
        "topic": mq.topic,
        "queueId": str(mq.queue_id),
        "queueOffset": str(queue_offset),
        "maxMsgNums": str(PULL_BATCH),
        "sysFlag": str(FLAG_SUBSCRIPTION),
        "commitOffset": "0",
        "suspendTimeoutMillis": "0",
        "subscription": "*",
        "subVersion": "0",
        "expressionType": "TAG",
    }
    return await admin.instance.invoke(
        addr, admin.instance.request(RequestCode.PULL_MESSAGE, fields), 10
    )


async def consumer_offsets(admin: AdminClient, group: str) -> dict[MessageQueue, int]:
    """The group's committed offset on every queue it consumes (its retry topic included),
    as ``consumerProgress`` shows them."""
    stats = await admin.consume_stats(group)
    return {mq: wrapper.consumer_offset for mq, wrapper in stats.offset_table.items()}


async def wait_consumed(admin: AdminClient, group: str, topic: str, timeout_s: float) -> None:
    """Until ``group``'s committed offsets reach the end of every queue of ``topic``. Clients
    commit every few seconds (Java and C++: every 5 s), so this can take that long."""
    lag: dict[MessageQueue, int] = {}

    async def caught_up() -> bool:
        try:
            stats = await admin.consume_stats(group, topic)
        except (MQBrokerError, RemotingError, OSError):
            return False  # no offsets yet, or a broker restarting
        lag.clear()
        lag.update(
            {
                mq: w.broker_offset - w.consumer_offset
                for mq, w in stats.offset_table.items()
                if mq.topic == topic and w.consumer_offset < w.broker_offset
            }
        )
        return any(mq.topic == topic for mq in stats.offset_table) and not lag

    try:
        await wait_until(caught_up, timeout_s, f"group {group} to consume {topic}")
    except TimeoutError as exc:
        behind = ", ".join(f"{mq.broker_name}/{mq.queue_id}: {n}" for mq, n in sorted(lag.items()))
        raise TimeoutError(f"{exc} (messages behind: {behind or 'no offsets committed'})") from None


async def runtime_info(admin: AdminClient, addr: str) -> dict[str, str]:
    return await admin.runtime_info(addr)


async def wait_slaves_in_sync(
    admin: AdminClient, pairs: Iterable[tuple[str, str]], timeout_s: float
) -> None:
    """Until each (master, slave) address pair has its slave connected and caught up."""
    for master, slave in pairs:

        async def in_sync(master: str = master, slave: str = slave) -> bool:
            try:
                m = await admin.runtime_info(master)
                s = await admin.runtime_info(slave)
            except (MQBrokerError, RemotingError, OSError):
                return False
            return s.get("haConnected") == "true" and int(s["commitLogMaxOffset"]) >= int(
                m["commitLogMaxOffset"]
            )

        await wait_until(in_sync, timeout_s, f"slave {slave} to connect to {master}")
