"""The proxy's remoting side (runs in the Trio thread): routes from the NameServers, sends to
the master of the chosen queue, END_TRANSACTION for halves, and the producer groups the proxy
heartbeats for the SDKs behind it. It is our 4.x client's MQClientInstance underneath, as
RocketMQ's Proxy sits on its own remoting client."""

from __future__ import annotations

import collections
import logging
import time
from collections.abc import Callable
from typing import Any

import attrs

from client.instance import MQClientInstance
from client.route import TopicPublishInfo, master_addr, publish_info
from proxy.apis import definition_pb2 as pb
from proxy.errors import ProxyError
from proxy.produce import SendPlan, fifo_queue_index
from remoting import constants as K
from remoting import message as codec
from remoting.body import ConsumerData, MessageQueue, ProducerData, TopicConfig, TopicRouteData
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from remoting.errors import RemotingError
from remoting.header_codec import decode_header
from remoting.headers import (
    CheckTransactionStateRequestHeader,
    GetTopicConfigRequestHeader,
    SendMessageRequestHeaderV2,
)
from remoting.serde import decode_body, encode_header_fields

log = logging.getLogger(__name__)

# SendMessage results the proxy answers with other than OK (convertToSendMessageResponse)
_STORE_CODES = {
    ResponseCode.FLUSH_DISK_TIMEOUT: pb.Code.MASTER_PERSISTENCE_TIMEOUT,
    ResponseCode.FLUSH_SLAVE_TIMEOUT: pb.Code.SLAVE_PERSISTENCE_TIMEOUT,
    ResponseCode.SLAVE_NOT_AVAILABLE: pb.Code.HA_NOT_AVAILABLE,
}
# Broker answers and the Code an SDK gets (ResponseBuilder's mapping plus the send checks)
_REFUSALS = {
    ResponseCode.TOPIC_NOT_EXIST: pb.Code.TOPIC_NOT_FOUND,
    ResponseCode.SYSTEM_BUSY: pb.Code.TOO_MANY_REQUESTS,
    ResponseCode.MESSAGE_ILLEGAL: pb.Code.BAD_REQUEST,
    ResponseCode.NO_PERMISSION: pb.Code.FORBIDDEN,
}
# 5.x topic message types (TopicMessageType) and the attribute naming one
TOPIC_MESSAGE_TYPES = frozenset({"NORMAL", "FIFO", "DELAY", "TRANSACTION", "MIXED"})
MESSAGE_TYPE_ATTRIBUTE = "message.type"
TOPIC_TYPE_TTL_S = 30.0
MAX_CACHED_TOPICS = 100_000
MAX_TRANSACTIONS = 100_000  # halves awaiting EndTransaction that the proxy remembers
TRANSACTION_KEEP_S = 3600.0
# Producer groups the proxy heartbeats (one per topic SDKs publish to): a bound on what
# clients naming topics can make it hold and send every 30 s.
MAX_PRODUCER_GROUPS = 10_000


@attrs.frozen
class SendOutcome:
    code: int
    message: str
    message_id: str = ""
    transaction_id: str = ""
    queue_offset: int = 0


@attrs.frozen
class HalfMessage:
    """What END_TRANSACTION needs of a half the proxy sent (TransactionData)."""

    broker_name: str
    producer_group: str
    tran_state_table_offset: int
    commit_log_offset: int
    message_id: str
    remembered_at: float
    broker_addr: str | None = None  # a half the broker asked about: answer where it asked


def check_message_type(topic_type: str, message_type: str) -> None:
    """DefaultTopicMessageTypeValidator."""
    if message_type == "UNSPECIFIED" or (message_type != topic_type and topic_type != "MIXED"):
        raise ProxyError(
            pb.Code.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE,
            f"TopicMessageType validate failed, the expected type is {topic_type}, "
            f"but actual type is {message_type}",
        )


class ConsumerGroup:
    """A 5.x consumer group the proxy heartbeats to the brokers for its clients (CONSUME_POP),
    so mqadmin's consumerConnection / consumerProgress and the console see it."""

    def __init__(self, data: ConsumerData) -> None:
        self.data = data
        self.clients: set[str] = set()

    def heartbeat_data(self) -> ConsumerData:
        return self.data

    def topics(self) -> set[str]:
        return {s.topic for s in self.data.subscription_data_set}


class ProducerGroup:
    """A producer group the proxy heartbeats for (a Member of the client instance): the
    broker's transaction check-back looks for a live producer of the half's PGROUP."""

    def __init__(self, group: str) -> None:
        self.group = group

    def heartbeat_data(self) -> ProducerData:
        return ProducerData(group_name=self.group)

    def topics(self) -> set[str]:
        return {self.group}


class ClusterClient:
    def __init__(self, instance: MQClientInstance, request_timeout_s: float) -> None:
        self.instance = instance
        self.timeout_s = request_timeout_s
        self._publish: dict[str, TopicPublishInfo] = {}
        self._groups: dict[str, ProducerGroup] = {}
        self._types: dict[str, tuple[str, float]] = {}
        self._consumers: dict[str, ConsumerGroup] = {}
        self._halves: collections.OrderedDict[tuple[str, str], HalfMessage] = (
            collections.OrderedDict()
        )
        instance.route_listeners.append(lambda topic, _: self._publish.pop(topic, None))

    # ------------------------------------------------------------------ routes

    async def route(self, topic: str) -> TopicRouteData:
        route = await self.instance.route(topic)
        if route is None:
            raise ProxyError(pb.Code.TOPIC_NOT_FOUND, f"topic {topic} not found")
        return route

    async def topic_message_type(self, topic: str) -> str:
        """The topic's ``message.type`` attribute as its broker keeps it (GET_TOPIC_CONFIG):
        NORMAL when it has none, as 5.x's TopicConfig; UNSPECIFIED when no broker answers
        (ClusterMetadataService). Cached for TOPIC_TYPE_TTL_S."""
        now = time.monotonic()
        cached = self._types.get(topic)
        if cached is not None and cached[1] > now:
            return cached[0]
        kind = await self._fetch_message_type(topic)
        self._types[topic] = (kind, now + TOPIC_TYPE_TTL_S)
        while len(self._types) > MAX_CACHED_TOPICS:
            self._types.pop(next(iter(self._types)))
        return kind

    async def _fetch_message_type(self, topic: str) -> str:
        route = await self.route(topic)
        for data in sorted(route.broker_datas, key=lambda d: d.broker_name):
            addr = master_addr(route, data.broker_name)
            if addr is None:
                continue
            header = encode_header_fields(GetTopicConfigRequestHeader(topic=topic))
            request = self.instance.request(RequestCode.GET_TOPIC_CONFIG, header)
            try:
                response = await self.instance.invoke(addr, request, self.timeout_s)
                if response.code != ResponseCode.SUCCESS:
                    continue
                config = decode_body(TopicConfig, response.body)
            except (RemotingError, OSError, ValueError) as exc:
                log.info("topic config of %s from %s: %r", topic, addr, exc)
                continue
            kind = (config.attributes or {}).get(MESSAGE_TYPE_ATTRIBUTE, "NORMAL")
            return kind if kind in TOPIC_MESSAGE_TYPES else "UNSPECIFIED"
        return "UNSPECIFIED"

    async def _publish_info(self, topic: str) -> TopicPublishInfo:
        info = self._publish.get(topic)
        if info is None:
            info = publish_info(topic, await self.route(topic))
            self._publish[topic] = info
        if not info.queues:
            raise ProxyError(pb.Code.FORBIDDEN, "no writable queue")
        return info

    async def select_queue(self, plan: SendPlan) -> MessageQueue:
        info = await self._publish_info(plan.topic)
        if plan.sharding_key:
            return info.queues[fifo_queue_index(plan.sharding_key, len(info.queues))]
        return info.select()

    # ------------------------------------------------------------------ producers

    async def add_producer_groups(self, groups: list[str]) -> None:
        """Producer groups to heartbeat from now on; a new one is announced to the brokers at
        once (a transaction check-back looks for a producer of the half's group)."""
        new = [group for group in groups if self._add_producer_group(group)]
        if new:
            await self.instance.send_heartbeat()

    async def consumer_joined(self, client: str, data: ConsumerData) -> None:
        """A consumer's settings: its group is heartbeated (at once when new or changed)."""
        member = self._consumers.get(data.group_name)
        if member is None:
            if len(self._consumers) >= MAX_PRODUCER_GROUPS:
                return
            member = self._consumers[data.group_name] = ConsumerGroup(data)
            self.instance.members.append(member)
        elif member.data != data:
            member.data = data
        else:
            member.clients.add(client)
            return
        member.clients.add(client)
        await self.instance.send_heartbeat()

    async def consumer_left(self, client: str) -> None:
        """A client gone: a group none of whose clients is left is unregistered."""
        for group, member in list(self._consumers.items()):
            member.clients.discard(client)
            if not member.clients:
                del self._consumers[group]
                self.instance.members.remove(member)
                await self.instance.unregister(None, group)

    def _add_producer_group(self, group: str) -> bool:
        if group in self._groups:
            return False
        if len(self._groups) >= MAX_PRODUCER_GROUPS:
            log.warning("producer group %s not heartbeated: %d already", group, MAX_PRODUCER_GROUPS)
            return False
        member = ProducerGroup(group)
        self._groups[group] = member
        self.instance.members.append(member)
        return True

    # ------------------------------------------------------------------ send

    def _request(self, plan: SendPlan, mq: MessageQueue):
        message = plan.messages[0]
        code = RequestCode.SEND_MESSAGE_V2
        if len(plan.messages) == 1:
            body, batch = message.body, False
            properties = codec.properties_to_string(message.properties)
        else:
            body = codec.encode_batch_body(
                [(0, m.body, codec.properties_to_string(m.properties)) for m in plan.messages]
            )
            code, batch = RequestCode.SEND_BATCH_MESSAGE, True
            properties = codec.properties_to_string({"WAIT": "true"})
        header = SendMessageRequestHeaderV2(
            a=plan.producer_group,
            b=plan.topic,
            c=K.DEFAULT_TOPIC,
            d=4,
            e=mq.queue_id,
            f=plan.sys_flag,
            g=message.born_timestamp_ms,
            h=0,
            i=properties,
            j=0,
            k=False,
            m=batch,
        )
        return self.instance.request(code, encode_header_fields(header), body)

    async def send(self, plan: SendPlan, check_type: bool = False) -> SendOutcome:
        if check_type:  # ProducerProcessor: the message's type against its topic's
            check_message_type(await self.topic_message_type(plan.topic), plan.message_type)
        if plan.transactional:
            await self.add_producer_groups([plan.producer_group])
        mq = await self.select_queue(plan)
        route = await self.route(plan.topic)
        addr = master_addr(route, mq.broker_name)
        if addr is None:
            raise ProxyError(pb.Code.FORBIDDEN, f"broker {mq.broker_name} has no master")
        response = await self.instance.invoke(addr, self._request(plan, mq), self.timeout_s)
        ids = ",".join(m.message_id for m in plan.messages)
        if response.code in _STORE_CODES:
            return SendOutcome(
                _STORE_CODES[response.code], f"send message failed, code={response.code}"
            )
        if response.code != ResponseCode.SUCCESS:
            self._publish.pop(plan.topic, None)
            code = _REFUSALS.get(response.code, pb.Code.INTERNAL_SERVER_ERROR)
            return SendOutcome(code, response.remark or f"broker answered {response.code}")
        queue_offset = int(response.ext("queueOffset") or 0)
        transaction_id = response.ext("transactionId") or ""
        if plan.transactional:
            transaction_id = transaction_id or plan.messages[0].message_id
            self._remember_half(plan, mq, response.ext("msgId") or "", queue_offset, transaction_id)
        return SendOutcome(pb.Code.OK, "OK", ids, transaction_id, queue_offset)

    # ------------------------------------------------------------------ transactions

    def _remember_half(
        self, plan: SendPlan, mq: MessageQueue, offset_msg_id: str, queue_offset: int, tid: str
    ) -> None:
        try:
            phys = codec.decode_offset_msg_id(offset_msg_id.split(",")[0]).phys_offset
        except ValueError:
            log.warning("half %s: unreadable offset msgId %r", tid, offset_msg_id)
            return
        now = time.monotonic()
        key = (plan.producer_group, tid)
        self._halves[key] = HalfMessage(
            mq.broker_name,
            plan.producer_group,
            queue_offset,
            phys,
            plan.messages[0].message_id,
            now,
        )
        while self._halves and (
            len(self._halves) > MAX_TRANSACTIONS
            or next(iter(self._halves.values())).remembered_at < now - TRANSACTION_KEEP_S
        ):
            self._halves.popitem(last=False)

    def remember_checked_half(self, half: HalfMessage, transaction_id: str) -> None:
        """A half the broker asked about (check-back): the SDK's answer may come later."""
        self._halves[(half.producer_group, transaction_id)] = half
        while len(self._halves) > MAX_TRANSACTIONS:
            self._halves.popitem(last=False)

    def on_transaction_check(self, forward: Callable[[str, codec.MessageExt, str], None]) -> None:
        """Broker check-backs (CHECK_TRANSACTION_STATE) of halves sent through the proxy are
        remembered and handed to ``forward(producer_group, message, transaction_id)``, which
        asks a producer of that group over its Telemetry stream (the SDK's
        RecoverOrphanedTransactionCommand)."""

        async def check(connection: Any, request: RemotingCommand) -> None:
            try:
                msg = codec.decode_message(request.body)
                header = decode_header(CheckTransactionStateRequestHeader, request.ext_fields)
            except Exception as exc:  # a broker's bad frame: nothing to ask about
                log.warning("transaction check from %s unreadable: %r", connection.peer, exc)
                return
            group = msg.properties.get(codec.MessageConst.PGROUP, "")
            tid = header.transaction_id or msg.properties.get("__transactionId__") or msg.msg_id
            half = HalfMessage(
                broker_name="",
                producer_group=group,
                tran_state_table_offset=header.tran_state_table_offset,
                commit_log_offset=header.commit_log_offset,
                message_id=header.msg_id or msg.msg_id,
                remembered_at=time.monotonic(),
                broker_addr=connection.peer,
            )
            self.remember_checked_half(half, tid)
            forward(group, msg, tid)

        self.instance.register_server_request(RequestCode.CHECK_TRANSACTION_STATE, check)

    async def end_transaction(
        self, producer_group: str, transaction_id: str, message_id: str, commit: bool, checked: bool
    ) -> None:
        half = self._halves.pop((producer_group, transaction_id), None)
        if half is None:
            raise ProxyError(
                pb.Code.INVALID_TRANSACTION_ID,
                f"transaction {transaction_id} of {producer_group} is unknown here",
            )
        if message_id and message_id != half.message_id:
            raise ProxyError(
                pb.Code.INVALID_TRANSACTION_ID, "message id does not match the transaction"
            )
        addr = half.broker_addr or self.instance.find_master(half.broker_name)
        if addr is None:
            route = await self.instance.route(producer_group)
            addr = master_addr(route, half.broker_name) if route is not None else None
        if addr is None:
            raise ProxyError(pb.Code.FORBIDDEN, f"broker {half.broker_name} has no master")
        state = codec.TRANSACTION_COMMIT_TYPE if commit else codec.TRANSACTION_ROLLBACK_TYPE
        fields = {
            "producerGroup": producer_group,
            "tranStateTableOffset": str(half.tran_state_table_offset),
            "commitLogOffset": str(half.commit_log_offset),
            "commitOrRollback": str(state),
            "fromTransactionCheck": "true" if checked else "false",
            "msgId": half.message_id,
            "transactionId": transaction_id,
        }
        request = self.instance.request(RequestCode.END_TRANSACTION, fields, oneway=True)
        await self.instance.invoke_oneway(addr, request)
