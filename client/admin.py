"""Admin API (DefaultMQAdminExt): cluster and topic views, topic and group changes, consumer
progress, message lookups, HA status and ``diagnose_group``. ``mqadmin`` is its command line.
Group operations are in admin_groups.py, broker-wide and NameServer ones in admin_brokers.py,
message reads by time and resends in admin_messages.py."""

from __future__ import annotations

import json
import ssl
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio

from acl.credentials import SessionCredentials
from client.admin_brokers import BrokerAdmin
from client.admin_groups import GroupAdmin
from client.admin_messages import MessageAdmin
from client.errors import MQBrokerError, MQClientError
from client.instance import ClientConfig, MQClientInstance
from client.route import MASTER_ID, master_addr
from remoting import constants as K
from remoting import message as codec
from remoting.body import (
    BrokerStatsData,
    ClusterInfo,
    GroupList,
    KVTable,
    QueueTimeSpan,
    TopicConfig,
    TopicList,
    TopicRouteData,
    TopicStatsTable,
)
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from remoting.errors import RemotingError
from remoting.headers import CreateTopicRequestHeader
from remoting.serde import decode_body, encode_header_fields


class AdminClient(GroupAdmin, BrokerAdmin, MessageAdmin):
    def __init__(self, instance: MQClientInstance) -> None:
        self.instance = instance

    @classmethod
    @asynccontextmanager
    async def open(
        cls,
        namesrv_addr: str,
        credentials: SessionCredentials | None = None,
        *,
        ssl_context: ssl.SSLContext | None = None,
    ) -> AsyncIterator[AdminClient]:
        config = ClientConfig(namesrv_addr, credentials=credentials, ssl_context=ssl_context)
        async with MQClientInstance.open(config) as instance:
            yield cls(instance)

    # ------------------------------------------------------------------ plumbing

    async def _ok(self, addr: str, command: RemotingCommand, timeout_s: float = 5) -> Any:
        response = await self.instance.invoke(addr, command, timeout_s)
        if response.code != ResponseCode.SUCCESS:
            raise MQBrokerError(response.code, response.remark, addr)
        return response

    async def _ns(self, command: RemotingCommand) -> RemotingCommand:
        response = await self.instance.invoke_namesrv(command)
        if response.code != ResponseCode.SUCCESS:
            raise MQBrokerError(response.code, response.remark, "namesrv")
        return response

    def _req(self, code: int, fields: dict[str, str] | None = None, body: bytes = b""):
        return self.instance.request(code, fields, body)

    # ------------------------------------------------------------------ cluster and topics

    async def cluster_info(self) -> ClusterInfo:
        response = await self._ns(self._req(RequestCode.GET_BROKER_CLUSTER_INFO))
        return decode_body(ClusterInfo, response.body)

    async def masters(self, cluster: str | None = None) -> dict[str, str]:
        """brokerName -> master address, of one cluster or all."""
        info = await self.cluster_info()
        names = (
            info.cluster_addr_table.get(cluster, set()) if cluster else set(info.broker_addr_table)
        )
        if cluster and not names:
            raise MQClientError(f"cluster {cluster!r} not found")
        out = {}
        for name in sorted(names):
            addr = info.broker_addr_table[name].broker_addrs.get(MASTER_ID)
            if addr:
                out[name] = addr
        return out

    async def topic_list(self) -> list[str]:
        response = await self._ns(self._req(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER))
        return sorted(decode_body(TopicList, response.body).topic_list)

    async def topic_route(self, topic: str) -> TopicRouteData:
        route = await self.instance.fetch_route(topic)
        if route is None:
            raise MQClientError(f"No topic route info in name server for the topic: {topic}")
        return route

    async def create_topic(
        self, addr: str, config: TopicConfig, attributes: str | None = None
    ) -> None:
        """``attributes``: 5.x's change string, e.g. ``+message.type=FIFO``."""
        header = CreateTopicRequestHeader(
            topic=config.topic_name,
            default_topic=K.DEFAULT_TOPIC,
            read_queue_nums=config.read_queue_nums,
            write_queue_nums=config.write_queue_nums,
            perm=config.perm,
            topic_filter_type=config.topic_filter_type.value,
            topic_sys_flag=config.topic_sys_flag,
            order=config.order,
            attributes=attributes,
        )
        await self._ok(
            addr, self._req(RequestCode.UPDATE_AND_CREATE_TOPIC, encode_header_fields(header))
        )

    async def create_topic_in_cluster(self, cluster: str, config: TopicConfig) -> list[str]:
        masters = await self.masters(cluster)
        for addr in masters.values():
            await self.create_topic(addr, config)
        return sorted(masters.values())

    async def delete_topic(self, topic: str, cluster: str) -> list[str]:
        """Delete ``topic`` from every master of ``cluster``, then from every NameServer for
        that cluster (its other clusters keep it). A topic neither knows is an error: nothing
        is deleted. (Apache's tool reports success for any name.) Returns the masters."""
        masters = sorted((await self.masters(cluster)).values())
        if not masters:
            raise MQClientError(f"cluster {cluster!r} has no master online: nothing deleted")
        if not await self._topic_in_cluster(topic, cluster, masters):
            raise MQClientError(
                f"topic {topic!r} does not exist in cluster {cluster!r}: nothing deleted "
                "(topicList lists the topics, topicRoute shows where one lives)"
            )
        for addr in masters:
            await self._ok(addr, self._req(RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": topic}))
        fields = {"topic": topic, "clusterName": cluster}
        for ns in self.instance.config.namesrv_addrs:
            await self._ok(ns, self._req(RequestCode.DELETE_TOPIC_IN_NAMESRV, fields))
        return masters

    async def _topic_in_cluster(self, topic: str, cluster: str, masters: list[str]) -> bool:
        """The NameServers route ``topic`` to a broker of ``cluster``, or one of its masters
        has it (a broker that has not registered it yet)."""
        route = await self.instance.fetch_route(topic)
        if route is not None and any(d.cluster == cluster for d in route.broker_datas):
            return True
        for addr in masters:
            response = await self.instance.invoke(
                addr, self._req(RequestCode.GET_TOPIC_STATS_INFO, {"topic": topic}), 5
            )
            if response.code == ResponseCode.SUCCESS:
                return True
        return False

    async def topic_masters(self, topic: str) -> list[str]:
        """The master address of each broker serving ``topic``, by broker name."""
        route = await self.topic_route(topic)
        names = sorted(data.broker_name for data in route.broker_datas)
        return [addr for name in names if (addr := master_addr(route, name)) is not None]

    async def topic_stats(self, topic: str) -> TopicStatsTable:
        table = {}
        for addr in await self.topic_masters(topic):
            response = await self._ok(
                addr, self._req(RequestCode.GET_TOPIC_STATS_INFO, {"topic": topic})
            )
            table.update(decode_body(TopicStatsTable, response.body).offset_table)
        return TopicStatsTable(offset_table=table)

    # ------------------------------------------------------------------ brokers

    async def view_broker_stats(self, addr: str, name: str, key: str) -> BrokerStatsData | None:
        """VIEW_BROKER_STATS_DATA (TOPIC_PUT_NUMS of a topic, GROUP_GET_NUMS of topic@group,
        ...); None when the broker has no such counter (nothing counted yet)."""
        response = await self.instance.invoke(
            addr,
            self._req(RequestCode.VIEW_BROKER_STATS_DATA, {"statsName": name, "statsKey": key}),
            5,
        )
        if response.code != ResponseCode.SUCCESS:
            return None
        return decode_body(BrokerStatsData, response.body)

    async def topic_consumer_groups(self, topic: str) -> list[str]:
        """QUERY_TOPIC_CONSUME_BY_WHO over the topic's masters."""
        groups: set[str] = set()
        for addr in await self.topic_masters(topic):
            response = await self._ok(
                addr, self._req(RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, {"topic": topic})
            )
            groups |= set(decode_body(GroupList, response.body).group_list)
        return sorted(groups)

    async def runtime_info(self, addr: str) -> dict[str, str]:
        response = await self._ok(addr, self._req(RequestCode.GET_BROKER_RUNTIME_INFO))
        return decode_body(KVTable, response.body).table

    async def broker_config(self, addr: str) -> str:
        response = await self._ok(addr, self._req(RequestCode.GET_BROKER_CONFIG))
        return bytes(response.body).decode()

    async def ha_status(self, addr: str) -> dict[str, Any]:
        """Replication as a broker reports it: per slave on a master (ack offset, lagBytes,
        lagMillis, inSync; see broker/ha/service.py slaves()), the master followed on a slave."""
        info = await self.runtime_info(addr)
        status: dict[str, Any] = {"brokerRole": info.get("brokerRole", "")}
        status["commitLogMaxOffset"] = int(info.get("commitLogMaxOffset", "0"))
        if "haSlaves" in info:
            status["slaves"] = json.loads(info["haSlaves"])
        for key in ("masterAddr", "haMasterAddr", "haConnected", "haLastChunkMillisAgo"):
            if key in info:
                status[key] = info[key]
        for key in ("controllerEpoch", "syncStateSet"):  # controller mode (broker/election/)
            if key in info:
                status[key] = info[key]
        return status

    # ------------------------------------------------------------------ messages

    async def view_message(self, offset_msg_id: str) -> codec.MessageExt:
        try:
            stored = codec.decode_offset_msg_id(offset_msg_id)
        except ValueError as exc:
            raise MQClientError(str(exc)) from None
        response = await self._ok(
            stored.addr,
            self._req(RequestCode.VIEW_MESSAGE_BY_ID, {"offset": str(stored.phys_offset)}),
        )
        return codec.decode_message(response.body)

    async def query_by_key(
        self, topic: str, key: str, max_num: int = 64, begin: int = 0, end: int = 2**62
    ) -> list[codec.MessageExt]:
        route = await self.topic_route(topic)
        found: list[codec.MessageExt] = []
        fields = {
            "topic": topic,
            "key": key,
            "maxNum": str(max_num),
            "beginTimestamp": str(begin),
            "endTimestamp": str(end),
        }
        for data in sorted(route.broker_datas, key=lambda d: d.broker_name):
            addr = master_addr(route, data.broker_name) or next(iter(data.broker_addrs.values()))
            response = await self.instance.invoke(
                addr, self._req(RequestCode.QUERY_MESSAGE, fields), 10
            )
            if response.code == ResponseCode.SUCCESS and response.body:
                found += codec.decode_messages(response.body)
        return [m for m in found if key in codec.split_keys(m.keys) or m.msg_id == key]

    async def query_by_unique_key(self, topic: str, msg_id: str) -> list[codec.MessageExt]:
        return [m for m in await self.query_by_key(topic, msg_id) if m.msg_id == msg_id]

    # ------------------------------------------------------------------ diagnosis

    async def diagnose_group(self, group: str, topic: str) -> dict[str, Any]:
        """Why is a message not consumed? Route, members and their subscriptions, per-queue
        lag, retry and dead-letter depth, in one report."""
        report: dict[str, Any] = {"group": group, "topic": topic, "problems": []}
        problems: list[str] = report["problems"]
        try:
            route = await self.topic_route(topic)
            report["brokers"] = {
                d.broker_name: {str(k): v for k, v in d.broker_addrs.items()}
                for d in route.broker_datas
            }
            no_master = [
                d.broker_name for d in route.broker_datas if MASTER_ID not in d.broker_addrs
            ]
            if no_master:
                problems.append(f"brokers without a live master (no new messages): {no_master}")
            unreadable = [q.broker_name for q in route.queue_datas if not K.is_readable(q.perm)]
            if unreadable:
                problems.append(f"topic not readable on {unreadable}")
        except MQClientError as exc:
            problems.append(str(exc))
            return report
        try:
            connection = await self.consumer_connection(group)
            report["members"] = sorted(c.client_id for c in connection.connection_set)
            sub = connection.subscription_table.get(topic)
            report["subscription"] = sub.sub_string if sub else None
            if sub is None:
                problems.append(f"no member of {group} subscribes to {topic}")
            if connection.inconsistent_subscriptions:
                report["inconsistentSubscriptions"] = connection.inconsistent_subscriptions
                problems.append("members subscribe differently (messages may be filtered away)")
        except MQClientError:
            report["members"] = []
            problems.append(f"no consumer of {group} is online")
        await self._lag_report(group, topic, report)
        total_lag = report["totalLag"]
        if total_lag and not report.get("members"):
            problems.append(f"{total_lag} messages wait and nobody consumes them")
        report["retryDepth"] = await self._depth(K.retry_topic(group))
        report["dlqDepth"] = await self._depth(K.dlq_topic(group))
        if report["dlqDepth"]:
            problems.append(
                f"{report['dlqDepth']} messages are in {K.dlq_topic(group)} (failed too often)"
            )
        return report

    async def _lag_report(self, group: str, topic: str, report: dict[str, Any]) -> None:
        """Per-queue offsets and lag of ``group`` on ``topic``, and how long the oldest message
        it has not consumed has waited, into ``report``."""
        problems: list[str] = report["problems"]
        queues: list[dict[str, Any]] = []
        try:
            stats = await self.consume_stats(group, topic)
        except (MQClientError, RemotingError) as exc:
            problems.append(f"consume stats unavailable: {exc}")
            stats = None
        for mq, w in sorted(stats.offset_table.items()) if stats else []:
            if mq.topic == topic:
                queues.append({"broker": mq.broker_name, "queueId": mq.queue_id,
                               "brokerOffset": w.broker_offset, "consumerOffset": w.consumer_offset,
                               "lag": max(0, w.broker_offset - w.consumer_offset),
                               "lastConsumeTimestamp": w.last_timestamp})  # fmt: skip
        report["queues"] = queues
        report["totalLag"] = sum(q["lag"] for q in queues)
        if not report["totalLag"]:
            return
        try:
            spans = await self.consume_time_span(group, topic)
        except (MQClientError, RemotingError) as exc:
            problems.append(f"consume time span unavailable: {exc}")
            return
        lags = {(q["broker"], q["queueId"]): q["lag"] for q in queues}
        report["delaySeconds"] = oldest_wait_ms(spans, lags, now_ms()) / 1000

    async def _depth(self, topic: str) -> int:
        try:
            stats = await self.topic_stats(topic)
        except (MQClientError, MQBrokerError, RemotingError):
            return 0
        return sum(o.max_offset - o.min_offset for o in stats.offset_table.values())


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def oldest_wait_ms(spans: list[QueueTimeSpan], lags: dict[tuple[str, int], int], now: int) -> int:
    """How long the oldest message the group has not consumed has waited, over the queues
    where it lags. A span's delayTime is now minus the store time of the message at the group's
    offset; a group that never consumed a queue, or whose offset points at deleted messages,
    has none there and brokers (RocketMQ's too) count from time 0, so those queues count from
    their oldest message instead."""
    oldest = 0
    for span in spans:
        mq = span.message_queue
        if lags.get((mq.broker_name, mq.queue_id), 0) <= 0:
            continue
        wait = span.delay_time
        if span.min_time_stamp > 0:
            queue_age = now - span.min_time_stamp
            if wait <= 0 or wait > queue_age:
                wait = queue_age
        elif wait >= now - 1:  # counted from time 0, and no oldest message to go by
            wait = 0
        oldest = max(oldest, wait)
    return oldest


def run_admin(namesrv_addr: str, fn) -> Any:
    """Run ``await fn(admin)`` in a fresh Trio loop (the synchronous facade for scripts)."""

    async def main() -> Any:
        async with AdminClient.open(namesrv_addr) as admin:
            return await fn(admin)

    return trio.run(main)
