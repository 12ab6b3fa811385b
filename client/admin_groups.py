"""AdminClient's consumer- and producer-group operations (a mixin): subscription groups,
consume stats and lag, members and what they hold, offsets reset or cloned, a broker's
config changed."""

from __future__ import annotations

from client.errors import MQBrokerError, MQClientError
from client.route import all_broker_addrs, master_addr
from remoting import constants as K
from remoting import message as codec
from remoting.body import (
    ConsumeMessageDirectlyResult,
    ConsumerConnection,
    ConsumerRunningInfo,
    ConsumeStats,
    ConsumeStatsList,
    QueryConsumeQueueResponseBody,
    QueryConsumeTimeSpanBody,
    QueueTimeSpan,
    SubscriptionGroupConfig,
)
from remoting.codes import RequestCode
from remoting.command import RemotingCommand
from remoting.errors import RemotingError
from remoting.serde import decode_body, encode_body


class GroupAdmin:
    """Mixed into AdminClient, whose plumbing (_ok, _req, instance, topic_route) it uses."""

    async def update_sub_group(self, addr: str, config: SubscriptionGroupConfig) -> None:
        await self._ok(
            addr,
            self._req(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=encode_body(config)),
        )

    async def delete_sub_group(self, addr: str, group: str, *, remove_offset: bool = False) -> None:
        fields = {"groupName": group, "removeOffset": "true" if remove_offset else "false"}
        await self._ok(addr, self._req(RequestCode.DELETE_SUBSCRIPTIONGROUP, fields))

    async def consume_stats(self, group: str, topic: str | None = None) -> ConsumeStats:
        """Per-queue broker and consumer offsets, over every master of the group's topics."""
        addrs: set[str] = set()
        for t in {topic or "", K.retry_topic(group)} - {""}:
            route = await self.instance.fetch_route(t)
            if route is not None:
                addrs |= {master_addr(route, d.broker_name) or "" for d in route.broker_datas} - {
                    ""
                }
        table, tps = {}, 0.0
        fields = {"consumerGroup": group, **({"topic": topic} if topic else {})}
        for addr in sorted(addrs):
            response = await self._ok(addr, self._req(RequestCode.GET_CONSUME_STATS, fields))
            stats = decode_body(ConsumeStats, response.body)
            table.update(stats.offset_table)
            tps += stats.consume_tps
        return ConsumeStats(offset_table=table, consume_tps=tps)

    async def broker_consume_stats(
        self, addr: str, *, order_only: bool = False, timeout_s: float = 50
    ) -> ConsumeStatsList:
        """GET_BROKER_CONSUME_STATS: every group's offsets and lag on one broker."""
        fields = {"isOrder": "true" if order_only else "false"}
        response = await self._ok(
            addr, self._req(RequestCode.GET_BROKER_CONSUME_STATS, fields), timeout_s
        )
        return decode_body(ConsumeStatsList, response.body)

    async def query_consume_queue(
        self,
        topic: str,
        queue_id: int,
        index: int,
        count: int,
        *,
        addr: str | None = None,
        group: str | None = None,
    ) -> QueryConsumeQueueResponseBody:
        """QUERY_CONSUME_QUEUE on ``addr`` (default: the topic's first master)."""
        if addr is None:
            masters = await self.topic_masters(topic)
            if not masters:
                raise MQClientError(f"no master serves {topic}")
            addr = masters[0]
        fields = {
            "topic": topic,
            "queueId": str(queue_id),
            "index": str(index),
            "count": str(count),
        }
        if group:
            fields["consumerGroup"] = group
        response = await self._ok(addr, self._req(RequestCode.QUERY_CONSUME_QUEUE, fields))
        return decode_body(QueryConsumeQueueResponseBody, response.body)

    async def consume_time_span(self, group: str, topic: str) -> list[QueueTimeSpan]:
        """QUERY_CONSUME_TIME_SPAN on every master of ``topic``: per queue, how far ``group``
        is behind in time."""
        spans: list[QueueTimeSpan] = []
        fields = {"topic": topic, "group": group}
        for addr in await self.topic_masters(topic):
            response = await self._ok(addr, self._req(RequestCode.QUERY_CONSUME_TIME_SPAN, fields))
            spans.extend(decode_body(QueryConsumeTimeSpanBody, response.body).consume_time_span_set)
        return spans

    async def consumer_connection(self, group: str, addr: str | None = None) -> ConsumerConnection:
        """The group's members as a broker sees them: ``addr``, or the first broker of the
        group's retry topic that answers."""
        code, fields = RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": group}
        if addr is not None:
            response = await self._ok(addr, self._req(code, fields))
        else:
            response = await self._via_group_broker(group, code, fields)
        return decode_body(ConsumerConnection, response.body)

    async def consumer_running_info(
        self, group: str, client_id: str, *, jstack: bool = False, addr: str | None = None
    ) -> ConsumerRunningInfo:
        """A consumer's own view (queues held, offsets, subscriptions), asked through a broker
        it heartbeats to: GET_CONSUMER_RUNNING_INFO, which the broker forwards to it."""
        fields = {
            "consumerGroup": group,
            "clientId": client_id,
            "jstackEnable": "true" if jstack else "false",
        }
        code = RequestCode.GET_CONSUMER_RUNNING_INFO
        if addr is not None:
            response = await self._ok(addr, self._req(code, fields))
        else:
            response = await self._via_group_broker(group, code, fields)
        return decode_body(ConsumerRunningInfo, response.body)

    async def consume_message_directly(
        self, group: str, client_id: str, offset_msg_id: str
    ) -> ConsumeMessageDirectlyResult:
        """Have one consumer run its listener on a stored message now (the broker holding it
        forwards the record): nothing is committed or re-queued."""
        stored = codec.decode_offset_msg_id(offset_msg_id)
        fields = {"consumerGroup": group, "clientId": client_id, "msgId": offset_msg_id}
        response = await self._ok(
            stored.addr, self._req(RequestCode.CONSUME_MESSAGE_DIRECTLY, fields)
        )
        return decode_body(ConsumeMessageDirectlyResult, response.body)

    async def _via_group_broker(
        self, group: str, code: int, fields: dict[str, str]
    ) -> RemotingCommand:
        """The first broker of the group's retry topic that answers (each knows its members)."""
        route = await self.instance.fetch_route(K.retry_topic(group))
        if route is None:
            raise MQClientError(f"the consumer group {group} is not online")
        last: Exception | None = None
        for addr in sorted(all_broker_addrs(route)):
            try:
                return await self._ok(addr, self._req(code, fields))
            except (MQBrokerError, RemotingError, OSError) as exc:
                last = exc
        if isinstance(last, MQBrokerError):
            raise last  # a broker's own answer (say, that member is not online) says it best
        raise MQClientError(f"no broker answered for the consumer group {group}: {last}")

    async def clone_group_offset(
        self, source: str, dest: str, topic: str, *, offline: bool = False
    ) -> list[str]:
        """CLONE_GROUP_OFFSET on every master of ``topic``: ``dest`` starts where ``source``
        is. Returns the brokers asked."""
        fields = {
            "srcGroup": source,
            "destGroup": dest,
            "topic": topic,
            "offline": "true" if offline else "false",
        }
        masters = await self.topic_masters(topic)
        for addr in masters:
            await self._ok(addr, self._req(RequestCode.CLONE_GROUP_OFFSET, fields))
        return masters

    async def reset_offset_by_time(
        self, group: str, topic: str, timestamp_ms: int, *, force: bool = True, cpp: bool = False
    ) -> dict:
        """INVOKE_BROKER_TO_RESET_OFFSET on every master of ``topic``: queue -> new offset
        (``timestamp_ms`` -1: each queue's end). ``cpp`` marks the request as from C++, which
        is how Apache's tool asks a broker to notify C++ consumers in their own format."""
        from remoting.body import ResetOffsetBody

        fields = {
            "topic": topic,
            "group": group,
            "timestamp": str(timestamp_ms),
            "isForce": "true" if force else "false",
        }
        table = {}
        for addr in await self.topic_masters(topic):
            request = self._req(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, fields)
            if cpp:
                request.language = "CPP"
            response = await self._ok(addr, request)
            table.update(decode_body(ResetOffsetBody, response.body).offset_table)
        return table

    async def producer_connection(self, group: str, topic: str) -> dict[str, list]:
        from remoting.body import ProducerConnection

        out: dict[str, list] = {}
        for addr in await self.topic_masters(topic):
            response = await self._ok(
                addr, self._req(RequestCode.GET_PRODUCER_CONNECTION_LIST, {"producerGroup": group})
            )
            body = decode_body(ProducerConnection, response.body)
            out[addr] = [c.client_id for c in body.connection_set]
        return out

    async def update_broker_config(self, addr: str, values: dict[str, str]) -> str | None:
        """UPDATE_BROKER_CONFIG; the broker's remark says what applies now and what at its
        next start."""
        body = "".join(f"{k}={v}\n" for k, v in values.items()).encode()
        response = await self._ok(addr, self._req(RequestCode.UPDATE_BROKER_CONFIG, body=body))
        return response.remark
