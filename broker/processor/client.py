"""Client management and consumer offsets: HEART_BEAT, UNREGISTER_CLIENT,
CHECK_CLIENT_CONFIG, GET_CONSUMER_LIST_BY_GROUP, QUERY/UPDATE_CONSUMER_OFFSET,
LOCK/UNLOCK_BATCH_MQ (docs/spec/remoting.md §9.4, §9.6-9.10)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from broker.client_manager import ClientChannelInfo
from broker.processor.message_filter import TAG_TYPES, expression_problem
from broker.processor.pull_reply import success_reply
from remoting import constants as K
from remoting import names
from remoting.body import (
    CheckClientRequestBody,
    ConsumerData,
    GetConsumerListByGroupResponseBody,
    HeartbeatData,
    LockBatchRequestBody,
    LockBatchResponseBody,
)
from remoting.codes import RequestCode, ResponseCode, SerializeType
from remoting.command import EncodedReply, RemotingCommand
from remoting.errors import RequestError
from remoting.header_codec import request_decoder
from remoting.headers import (
    GetConsumerListByGroupRequestHeader,
    QueryConsumerOffsetRequestHeader,
    UnregisterClientRequestHeader,
    UpdateConsumerOffsetRequestHeader,
)
from remoting.serde import check_body, decode_body, decode_header, encode_body

if TYPE_CHECKING:
    from broker.controller import BrokerController
    from remoting.connection import Connection

log = logging.getLogger(__name__)

RW = K.PERM_READ | K.PERM_WRITE
_JSON = int(SerializeType.JSON)
# A consumer commits each queue's offset every few seconds (Java's persistConsumerOffset
# interval, 5 s): its header is scanned from the JSON bytes as PULL_MESSAGE's is
_decode_update_offset = request_decoder(
    UpdateConsumerOffsetRequestHeader, RequestCode.UPDATE_CONSUMER_OFFSET
)


class ClientManageProcessor:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker
        self._reported: set[tuple[str, str, str]] = set()

    def register(self, server: Any) -> None:
        for code, handler in (
            (RequestCode.HEART_BEAT, self.heartbeat),
            (RequestCode.UNREGISTER_CLIENT, self.unregister_client),
            (RequestCode.CHECK_CLIENT_CONFIG, self.check_client_config),
            (RequestCode.GET_CONSUMER_LIST_BY_GROUP, self.consumer_list),
            (RequestCode.QUERY_CONSUMER_OFFSET, self.query_offset),
            (RequestCode.UPDATE_CONSUMER_OFFSET, self.update_offset),
            (RequestCode.LOCK_BATCH_MQ, self.lock_batch),
            (RequestCode.UNLOCK_BATCH_MQ, self.unlock_batch),
        ):
            server.register(code, handler)

    def heartbeat(self, connection: Connection, request: RemotingCommand) -> RemotingCommand:
        data = decode_body(HeartbeatData, request.body)
        broker = self.broker
        info = ClientChannelInfo(
            channel=connection,
            client_id=data.client_id,
            language=request.language,
            version=request.version,
            last_update=broker.clock(),
        )
        for consumer in data.consumer_data_set:
            _check_consumer(consumer)
        connection.attributes["client_id"] = data.client_id
        for consumer in data.consumer_data_set:
            group_config = broker.groups.find(consumer.group_name)
            if group_config is not None:
                broker.topics.create_in_send_back(
                    K.retry_topic(consumer.group_name), group_config.retry_queue_nums, perm=RW
                )
            self._check_expressions(consumer)
            broker.clients.register_consumer(info, consumer)
        for producer in data.producer_data_set:
            broker.clients.register_producer(producer.group_name, info)
        return request.make_response()

    def _check_expressions(self, consumer: Any) -> None:
        """A SQL92 subscription that does not compile: Java answers the heartbeat with success
        and its pulls find no filter data; say why in the log, once per expression."""
        if not self.broker.config.enable_property_filter:
            return
        for sub in consumer.subscription_data_set:
            if sub.expression_type in TAG_TYPES:
                continue
            problem = expression_problem(sub.sub_string, sub.expression_type)
            key = (consumer.group_name, sub.topic, sub.sub_string)
            if problem and key not in self._reported:
                self._reported.add(key)
                log.error(
                    "consumer group %s subscribes to %s with a %s expression its pulls will be "
                    "refused for: %s",
                    consumer.group_name,
                    sub.topic,
                    sub.expression_type,
                    problem,
                )

    def unregister_client(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        header = decode_header(UnregisterClientRequestHeader, request.ext_fields)
        clients = self.broker.clients
        if header.producer_group:
            clients.unregister_producer(header.producer_group, connection)
        if header.consumer_group:
            clients.unregister_consumer(header.consumer_group, connection)
        return request.make_response()

    def check_client_config(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        """What a Java consumer asks every broker at start about a non-tag subscription:
        refused here, its start fails with our remark."""
        body = decode_body(CheckClientRequestBody, request.body)
        sub = body.subscription_data
        if sub is None or sub.expression_type in TAG_TYPES:
            return request.make_response()
        if not self.broker.config.enable_property_filter:
            return request.error_response(
                ResponseCode.SYSTEM_ERROR,
                f"The broker does not support consumer to filter message by {sub.expression_type}",
            )
        problem = expression_problem(sub.sub_string, sub.expression_type)
        if problem:
            return request.error_response(ResponseCode.SUBSCRIPTION_PARSE_FAILED, problem)
        return request.make_response()

    def consumer_list(self, connection: Connection, request: RemotingCommand) -> RemotingCommand:
        header = decode_header(GetConsumerListByGroupRequestHeader, request.ext_fields)
        group = self.broker.clients.consumer_groups.get(header.consumer_group)
        ids = group.client_ids() if group is not None else []
        if not ids:
            return request.error_response(
                ResponseCode.SYSTEM_ERROR, f"no consumer for this group, {header.consumer_group}"
            )
        body = encode_body(GetConsumerListByGroupResponseBody(consumer_id_list=ids))
        return request.make_response(body=body)

    def query_offset(self, connection: Connection, request: RemotingCommand) -> RemotingCommand:
        header = decode_header(QueryConsumerOffsetRequestHeader, request.ext_fields)
        broker = self.broker
        offset = broker.offsets.query(header.consumer_group, header.topic, header.queue_id)
        if offset < 0:
            # Java's rule for a group that never committed: if the queue still starts at 0
            # and that message is in memory, start from 0 (a new group sees old messages).
            min_offset = broker.store.get_min_offset_in_queue(header.topic, header.queue_id)
            if min_offset > 0 or broker.store.check_in_disk_by_consume_offset(
                header.topic, header.queue_id, 0
            ):
                return request.error_response(
                    ResponseCode.QUERY_NOT_FOUND,
                    "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first",
                )
            offset = 0
        return request.make_response(ext_fields={"offset": str(offset)})

    def update_offset(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand | EncodedReply:
        header = _decode_update_offset(request)
        self.broker.offsets.commit(
            header.consumer_group, header.topic, header.queue_id, header.commit_offset
        )
        if request.serialize_type == _JSON:
            return success_reply(request.opaque)  # make_response's bytes, encoded once
        return request.make_response()

    def lock_batch(self, connection: Connection, request: RemotingCommand) -> RemotingCommand:
        body = _lock_body(request)
        locked = self.broker.locks.try_lock_batch(body.consumer_group, body.mq_set, body.client_id)
        return request.make_response(body=encode_body(LockBatchResponseBody(lock_ok_mq_set=locked)))

    def unlock_batch(self, connection: Connection, request: RemotingCommand) -> RemotingCommand:
        body = _lock_body(request)
        self.broker.locks.unlock_batch(body.consumer_group, body.mq_set, body.client_id)
        return request.make_response()


def _check_consumer(consumer: ConsumerData) -> None:
    """A heartbeat's consumer before anything of it is kept: its group names a retry topic
    (a directory of the store) and every subscription names a topic."""
    check_body(consumer)
    for sub in consumer.subscription_data_set:
        check_body(sub)
    problem = names.topic_problem(K.retry_topic(consumer.group_name))
    if problem is not None:
        raise RequestError(
            ResponseCode.SYSTEM_ERROR, f"group {consumer.group_name} has no retry topic: {problem}"
        )


def _lock_body(request: RemotingCommand) -> LockBatchRequestBody:
    body = decode_body(LockBatchRequestBody, request.body)
    check_body(body)
    for mq in body.mq_set:
        check_body(mq)
    return body


def require(condition: bool, code: int, remark: str) -> None:
    if not condition:
        raise RequestError(code, remark)
