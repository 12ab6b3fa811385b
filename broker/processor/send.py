"""SEND_MESSAGE, SEND_MESSAGE_V2, SEND_BATCH_MESSAGE (docs/spec/remoting.md §9.2).

The hot path: header decode, checks, one CommitLog append, the response. Under ASYNC_FLUSH
and ASYNC_MASTER the handler answers inline (no task); SYNC_FLUSH or SYNC_MASTER return an
awaitable that waits for the group commit / the slave's ack.
"""

from __future__ import annotations

import logging
import random
from typing import TYPE_CHECKING, Any

from broker.processor.send_batch_plain import plain_batch_reply, plain_batches
from broker.processor.send_plain import (
    QueueBounds,
    born_host,
    lone_front,
    plain_decoder_built,
    plain_send_reply,
    plain_sends,
    round_front,
)
from broker.processor.send_reply import stored_reply_frame
from broker.store.config import BrokerRole, FlushDiskType
from broker.store.slotted import Slotted
from broker.store.types import MessageExtBrokerInner, PutMessageResult, PutMessageStatus
from broker.timer.transform import TIMER_DELAY_MS, TIMER_DELAY_SEC, TIMER_DELIVER_MS
from broker.transaction import TransactionalMessageService
from remoting import constants as K
from remoting import message as codec
from remoting.codes import V3_4_9, RequestCode, ResponseCode, SerializeType
from remoting.command import RemotingCommand
from remoting.errors import RequestError
from remoting.headers import SendMessageRequestHeader
from remoting.message import MessageConst
from remoting.send_header import request_send_header
from remoting.wire_types import INT_MAX, INT_MIN, show

if TYPE_CHECKING:
    from broker.controller import BrokerController
    from remoting.connection import Connection, HandlerResult

log = logging.getLogger(__name__)

FAQ = "\nSee http://rocketmq.apache.org/docs/faq/ for further details."
_STATUS_CODES = {
    PutMessageStatus.PUT_OK: ResponseCode.SUCCESS,
    PutMessageStatus.FLUSH_DISK_TIMEOUT: ResponseCode.FLUSH_DISK_TIMEOUT,
    PutMessageStatus.FLUSH_SLAVE_TIMEOUT: ResponseCode.FLUSH_SLAVE_TIMEOUT,
    PutMessageStatus.SLAVE_NOT_AVAILABLE: ResponseCode.SLAVE_NOT_AVAILABLE,
}
# Statuses that still carry msgId/queueId/queueOffset: the message is stored.
_STORED = frozenset(_STATUS_CODES)
_PUT_OK = PutMessageStatus.PUT_OK
# Looked up by every send: an enum member read from its class costs ~70 ns in 3.11
_SEND_MESSAGE = int(RequestCode.SEND_MESSAGE)
_SEND_BATCH_MESSAGE = int(RequestCode.SEND_BATCH_MESSAGE)
_RETRY_PREFIX = K.RETRY_GROUP_TOPIC_PREFIX
_JSON = int(SerializeType.JSON)


def put_result_response(
    request: RemotingCommand, result: PutMessageResult, region: str = "DefaultRegion"
) -> RemotingCommand:
    """Java's handlePutMessageResult: the status to a response code and remark."""
    status = result.status
    # PUT_OK by identity first: an enum member's hash, for the set and the dict, is a
    # Python call
    if status is _PUT_OK or status in _STORED:
        append = result.append
        assert append is not None
        return request.make_response(
            ResponseCode.SUCCESS if status is _PUT_OK else _STATUS_CODES[status],
            None,
            {
                "msgId": append.msg_id,
                "queueId": str(result.queue_id),
                "queueOffset": str(append.queue_offset),
                "MSG_REGION": region,
                "TRACE_ON": "true",
            },
        )
    if status is PutMessageStatus.CREATE_MAPPED_FILE_FAILED:
        return request.error_response(
            ResponseCode.SYSTEM_ERROR, "create mapped file failed, server is busy or broken."
        )
    if status in (PutMessageStatus.MESSAGE_ILLEGAL, PutMessageStatus.PROPERTIES_SIZE_EXCEEDED):
        return request.error_response(
            ResponseCode.MESSAGE_ILLEGAL,
            f"the message is illegal, maybe msg body or properties length not matched: {result.remark}",
        )
    if status is PutMessageStatus.OS_PAGECACHE_BUSY:
        return request.error_response(
            ResponseCode.SYSTEM_ERROR,
            "[PC_SYNCHRONIZED]broker busy, start flow control for a while",
        )
    if status in (PutMessageStatus.SERVICE_NOT_AVAILABLE, PutMessageStatus.DISK_FULL):
        return request.error_response(
            ResponseCode.SERVICE_NOT_AVAILABLE,
            f"service not available now: {result.remark}",
        )
    return request.error_response(ResponseCode.SYSTEM_ERROR, f"UNKNOWN_ERROR {result.remark}")


def _check_delay_level(delay: str) -> None:
    """DELAY is read with Integer.parseInt by Java's store, whose NumberFormatException the
    producer gets as SYSTEM_ERROR; the store clamps a level past the last one."""
    try:
        level = int(delay)
    except ValueError:
        level = None
    if level is None or not INT_MIN <= level <= INT_MAX:
        raise RequestError(
            ResponseCode.SYSTEM_ERROR, f"bad property DELAY={show(delay)}: not a Java int"
        )


class SendMessageProcessor(Slotted):
    # What the lone-send front reads at every send (send_plain.lone_front), at their offsets
    __slots__ = ("broker", "plain_mode", "queue_bounds")

    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker
        store_config = broker.store_config
        self.sync_flush = store_config.flush_disk_type is FlushDiskType.SYNC_FLUSH
        self.sync_master = store_config.broker_role is BrokerRole.SYNC_MASTER
        self.queue_bounds = QueueBounds(broker.topics.table)  # the plain pass's queue check
        # The plain pass's fixed conditions (send_plain.py): the native header decoder, and an
        # answer that waits for no flush and no slave (both fixed at start)
        self.plain_mode = plain_decoder_built() and not self.sync_flush and not self.sync_master

    def register(self, server: Any) -> None:
        for code in (
            RequestCode.SEND_MESSAGE,
            RequestCode.SEND_MESSAGE_V2,
            RequestCode.SEND_BATCH_MESSAGE,
        ):
            server.register(code, self.handle)
            server.register_group(code, self.handle_group)
        server.register_round(*round_front(server, self))  # a round of plain sends in C
        front = lone_front(server, self, SendMessageProcessor.handle)
        if front is not None:  # a lone plain send answered in C (send_plain.py)
            server.register_front(front)
        server.register(RequestCode.CONSUMER_SEND_MSG_BACK, self.broker.send_back.handle)

    # ------------------------------------------------------------------------ checks

    def header(self, request: RemotingCommand) -> SendMessageRequestHeader:
        return request_send_header(request)

    def check(self, header: SendMessageRequestHeader, connection: Connection) -> Any:
        """Java's msgCheck: broker and topic permissions, auto-creation, the queue id (the
        header decoder checked the topic's name). Returns the TopicConfig or raises
        RequestError."""
        broker = self.broker
        if not broker.config.broker_permission & K.PERM_WRITE:
            raise RequestError(
                ResponseCode.NO_PERMISSION,
                f"the broker[{broker.config.broker_ip1}] sending message is forbidden",
            )
        fenced = broker.registrar.fenced
        if fenced is not None:
            raise RequestError(ResponseCode.NO_PERMISSION, fenced)
        if broker.min_in_sync_slaves and not broker.enough_in_sync_slaves():
            # RocketMQ 5's IN_SYNC_REPLICAS_NOT_ENOUGH: refused before it is stored
            raise RequestError(ResponseCode.SYSTEM_ERROR, "in-sync replicas not enough")
        topic = header.topic  # a valid name: the header decoder checked it
        if topic in K.NOT_ALLOWED_SEND_TOPICS:
            raise RequestError(
                ResponseCode.NO_PERMISSION, f"Sending message to topic[{topic}] is forbidden."
            )
        topics = broker.topics
        config = topics.table.get(topic)
        if config is None:
            sys_flag = K.TOPIC_SYS_FLAG_UNIT if header.unit_mode else 0
            if topic.startswith(K.RETRY_GROUP_TOPIC_PREFIX):
                config = topics.create_in_send_back(topic, 1, sys_flag=sys_flag)
            else:
                config = topics.create_in_send(
                    topic, header.default_topic, header.default_topic_queue_nums, sys_flag
                )
            if config is None:
                raise RequestError(
                    ResponseCode.TOPIC_NOT_EXIST,
                    f"topic[{topic}] not exist, apply first please!{FAQ}",
                )
        if not config.perm & K.PERM_WRITE:
            raise RequestError(
                ResponseCode.NO_PERMISSION,
                f"the topic[{topic}] sending message is forbidden",
            )
        queue_id = header.queue_id
        if queue_id >= config.write_queue_nums and queue_id >= config.read_queue_nums:
            raise RequestError(
                ResponseCode.SYSTEM_ERROR,
                f"request queueId[{header.queue_id}] is illegal, {config} Producer: {connection.peer}",
            )
        return config

    # ------------------------------------------------------------------------ handling

    def inner_message(
        self,
        connection: Connection,
        request: RemotingCommand,
        header: SendMessageRequestHeader,
        properties: dict[str, str],
    ) -> MessageExtBrokerInner:
        """The message to store, after Java's msgCheck; a negative queue id picks a random
        writable queue of the topic."""
        config = self.check(header, connection)
        delay = properties.get(MessageConst.DELAY)
        if delay is not None:
            _check_delay_level(delay)
        queue_id = header.queue_id
        if queue_id < 0:
            queue_id = random.randrange(config.write_queue_nums)
        # Positional (every send builds one; keywords cost twice as much): topic, queue_id,
        # body, properties, flag, sys_flag, born_timestamp, born_host, reconsume_times
        return MessageExtBrokerInner(
            header.topic, queue_id, request.body, properties, header.flag, header.sys_flag,
            header.born_timestamp, born_host(connection), header.reconsume_times or 0,
        )  # fmt: skip

    def handle(self, connection: Connection, request: RemotingCommand) -> Any:
        if request.code == _SEND_BATCH_MESSAGE:
            reply = plain_batch_reply(self, connection, request)
        else:
            reply = plain_send_reply(self, connection, request)
        if reply is not None:
            return reply
        return self.reference_one(connection, request)

    def reference_one(self, connection: Connection, request: RemotingCommand) -> Any:
        """A send the plain pass did not take: Java's checks and one put."""
        msg, batch, wait = self.prepare(connection, request)
        return self._store_one(request, msg, batch, wait)

    def _store_one(
        self, request: RemotingCommand, msg: MessageExtBrokerInner, batch: bool, wait: str
    ) -> Any:
        store = self.broker.store
        result = store.put_messages(msg) if batch else store.put_message(msg)
        if result.ok:
            append = result.append
            self.broker.stats.on_put(
                msg.topic,
                self.broker.config.broker_cluster_name,
                append.msg_num,
                append.wrote_bytes,
            )
        return self.answer(request, msg, result, wait)

    def handle_group(
        self,
        connection: Connection,
        requests: list[RemotingCommand],
        connections: list[Connection] | None = None,
    ) -> list[HandlerResult | bytes | Exception]:
        """Requests one read brought in, or one selector round from several connections
        (``connections[i]`` sent ``requests[i]``; remoting/server.py): plain sends in one
        pass (send_plain.py), any other group as ``reference_group``."""
        results = plain_sends(self, connection, requests, connections)
        if results is not None:
            return results
        if all(request.code == _SEND_BATCH_MESSAGE for request in requests):
            return plain_batches(self, connection, requests, connections)
        return self.reference_group(connection, requests, connections)

    def reference_group(
        self,
        connection: Connection,
        requests: list[RemotingCommand],
        connections: list[Connection] | None = None,
    ) -> list[HandlerResult | bytes | Exception]:
        """The reference of ``handle_group``: each request checked as ``handle`` does, their
        single messages stored in one pass (``put_message_group``), answered in order. A
        request that fails its checks gets its own error; a batch in between is stored on its
        own, after the messages before it, so the log keeps the requests' order."""
        results: list[HandlerResult | bytes | Exception] = [None] * len(requests)
        pending: list[tuple[int, MessageExtBrokerInner, str]] = []
        for index, request in enumerate(requests):
            if connections is not None:
                connection = connections[index]
            try:
                msg, batch, wait = self.prepare(connection, request)
            except Exception as exc:  # answered as handle's raise is (Connection)
                results[index] = exc
                continue
            if not batch:
                pending.append((index, msg, wait))
                continue
            self._put_group(requests, pending, results)
            try:
                results[index] = self._store_one(request, msg, True, wait)
            except Exception as exc:
                results[index] = exc
        self._put_group(requests, pending, results)
        return results

    def _put_group(
        self,
        requests: list[RemotingCommand],
        pending: list[tuple[int, MessageExtBrokerInner, str]],
        results: list[HandlerResult | bytes | Exception],
    ) -> None:
        if not pending:
            return
        stored = self.broker.store.put_message_group([msg for _, msg, _ in pending])
        # Topic stats once per topic of the group, not per message.
        per_topic: dict[str, list[int]] = {}
        # Answered now (not after a flush or a slave): a stored message's reply is its frame.
        durable = self.sync_flush or self.sync_master
        for (index, msg, wait), result in zip(pending, stored, strict=True):
            if result.status is _PUT_OK:
                append = result.append
                totals = per_topic.get(msg.topic)
                if totals is None:
                    totals = per_topic[msg.topic] = [0, 0]
                totals[0] += 1
                totals[1] += append.wrote_bytes
                request = requests[index]
                if not durable and request.serialize_type == _JSON:
                    results[index] = stored_reply_frame(
                        request.opaque, append.msg_id, msg.queue_id, append.queue_offset
                    )
                    continue
            results[index] = self.answer(requests[index], msg, result, wait)
        self.broker.stats.on_puts(per_topic, self.broker.config.broker_cluster_name)
        pending.clear()

    def prepare(
        self, connection: Connection, request: RemotingCommand
    ) -> tuple[MessageExtBrokerInner, bool, str]:
        """Header, properties and Java's checks: the message to store, whether it is a batch,
        and its WAIT property. Raises RequestError."""
        header = self.header(request)
        properties = codec.string_to_properties(header.properties)
        # As Java's broker since 4.7: a replier builds its answer's topic from it.
        properties[MessageConst.CLUSTER] = self.broker.config.broker_cluster_name
        batch = request.code == _SEND_BATCH_MESSAGE and header.batch
        # WAIT only tells this broker whether to answer before the message is durable; as
        # Java 4.9's, it is not stored with a single message (9 bytes each).
        wait = (
            properties.get(MessageConst.WAIT, "true")
            if batch
            else (properties.pop(MessageConst.WAIT, "true"))
        )
        msg = self.inner_message(connection, request, header, properties)
        # 5.x timer message: parked until due (is_timer's test inlined: every send pays it);
        # a transaction's half is parked at its commit (broker/transaction.py)
        if (
            not batch
            and (
                TIMER_DELIVER_MS in properties
                or TIMER_DELAY_SEC in properties
                or TIMER_DELAY_MS in properties
            )
            and properties.get(MessageConst.TRAN_MSG) != "true"
        ):
            self.broker.timer.park(msg)
        if header.topic.startswith(_RETRY_PREFIX):
            if batch:
                raise RequestError(
                    ResponseCode.MESSAGE_ILLEGAL, "batch request does not support retry group"
                )
            self.route_retry(msg, header, request.version)
        if msg.sys_flag & codec.TRANSACTION_ROLLBACK_TYPE == codec.TRANSACTION_PREPARED_TYPE and (
            self.broker.config.reject_transaction_message
        ):
            raise RequestError(
                ResponseCode.NO_PERMISSION,
                f"the broker[{self.broker.config.broker_ip1}] sending transaction message is forbidden",
            )
        if properties.get(MessageConst.TRAN_MSG) == "true" and not batch:
            if self.broker.config.reject_transaction_message:
                raise RequestError(
                    ResponseCode.NO_PERMISSION,
                    f"the broker[{self.broker.config.broker_ip1}] sending transaction message is forbidden",
                )
            TransactionalMessageService.prepare(msg)
        return msg, bool(batch), wait

    def answer(
        self,
        request: RemotingCommand,
        msg: MessageExtBrokerInner,
        result: PutMessageResult,
        wait: str,
    ) -> Any:
        """The response now, or under SYNC_FLUSH / SYNC_MASTER an awaitable of it."""
        result.queue_id = msg.queue_id
        if result.ok and (self.sync_flush or self.sync_master) and wait != "false":
            return self.await_durable(request, result)
        return put_result_response(request, result)

    async def await_durable(
        self, request: RemotingCommand, result: PutMessageResult
    ) -> RemotingCommand:
        end = result.append.end_offset
        if self.sync_flush:
            status = await self.broker.store.wait_flushed(end)
            if status is not PutMessageStatus.PUT_OK:
                result.status = status
        if self.sync_master and result.status is PutMessageStatus.PUT_OK:
            result.status = await self.broker.wait_replicated(end)
        return put_result_response(request, result)

    def route_retry(
        self, msg: MessageExtBrokerInner, header: SendMessageRequestHeader, version: int
    ) -> None:
        """A message sent straight to ``%RETRY%group`` that has used up its retries goes to
        the group's dead-letter queue (Java's handleRetryAndDLQ)."""
        group = header.topic[len(K.RETRY_GROUP_TOPIC_PREFIX) :]
        group_config = self.broker.groups.find(group)
        if group_config is None:
            raise RequestError(
                ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                f"subscription group not exist, {group}{FAQ}",
            )
        max_times = group_config.retry_max_times
        if version >= V3_4_9 and header.max_reconsume_times is not None:
            max_times = header.max_reconsume_times
        if msg.reconsume_times >= max_times:
            dlq = K.dlq_topic(group)
            self.broker.topics.create_in_send_back(dlq, 1, perm=K.PERM_READ | K.PERM_WRITE)
            msg.topic, msg.queue_id = dlq, 0
