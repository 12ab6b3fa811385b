"""PULL_MESSAGE (docs/spec/remoting.md §9.3): Java's PullMessageProcessor rules.

The response body is the stored records, never re-encoded nor copied: slices of the mapped
CommitLog written one after another (``Gather``). Nothing to return
and the client allowed suspension: the pull is held by the PullRequestHoldService (a record,
no task: the handler returns None and the connection counts it in flight) and run again and
answered from its wake, when a message arrives or the suspend timeout passes.

A request whose header the C scanned takes the plain pass (pull_plain.py): the same rules from
the scan's values, ``process`` and ``after_get`` deciding everything but a found pull.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import trio

from broker.filter import FilterSyntaxError
from broker.processor.message_filter import (
    SQL92,
    TAG_TYPES,
    ExpressionMessageFilter,
    RetryMessageFilter,
    is_retry_topic,
    tags_filter,
)
from broker.processor.pull_held import HeldPullRequest
from broker.processor.pull_plain import plain_pull
from broker.processor.pull_reply import found_reply
from broker.store.config import BrokerRole
from broker.store.types import GetMessageResult, GetMessageStatus
from remoting import constants as K
from remoting.body import MessageModel, TopicConfig
from remoting.codes import RequestCode, ResponseCode, SerializeType
from remoting.command import EncodedReply, Gather, RemotingCommand
from remoting.errors import RequestError
from remoting.header_codec import request_decoder
from remoting.headers import PullMessageRequestHeader

if TYPE_CHECKING:
    from broker.controller import BrokerController
    from remoting.connection import Connection

log = logging.getLogger(__name__)

FLAG_COMMIT_OFFSET = 0x1
FLAG_SUSPEND = 0x2
FLAG_SUBSCRIPTION = 0x4

# The header's plain form in C (scanned from the JSON header's bytes, or from its extFields),
# anything else judged by remoting.header_codec.decode_header
_decode_header = request_decoder(PullMessageRequestHeader, RequestCode.PULL_MESSAGE)

S = GetMessageStatus
# Bound once: an IntEnum member read from its class costs ~70 ns, and this runs per pull.
_SUCCESS = int(ResponseCode.SUCCESS)
_NOT_FOUND = int(ResponseCode.PULL_NOT_FOUND)
_OFFSET_MOVED = int(ResponseCode.PULL_OFFSET_MOVED)
_RETRY_IMMEDIATELY = int(ResponseCode.PULL_RETRY_IMMEDIATELY)
_SLAVE = BrokerRole.SLAVE
_FOUND = GetMessageStatus.FOUND
_JSON = int(SerializeType.JSON)
# None: PULL_NOT_FOUND for a pull from queue offset 0, else PULL_OFFSET_MOVED
_CODES: dict[GetMessageStatus, int | None] = {
    S.FOUND: _SUCCESS,
    S.MESSAGE_WAS_REMOVING: _RETRY_IMMEDIATELY,
    S.NO_MATCHED_MESSAGE: _RETRY_IMMEDIATELY,
    S.OFFSET_FOUND_NULL: _NOT_FOUND,
    S.OFFSET_OVERFLOW_BADLY: _OFFSET_MOVED,
    S.OFFSET_OVERFLOW_ONE: _NOT_FOUND,
    S.OFFSET_TOO_SMALL: _OFFSET_MOVED,
    S.NO_MATCHED_LOGIC_QUEUE: None,
    S.NO_MESSAGE_IN_QUEUE: None,
}


class PullMessageProcessor:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker

    def handle(self, connection: Connection, request: RemotingCommand) -> Any:
        values = request.header_values
        if values is not None:  # scanned: the plain pass (pull_plain.py)
            return plain_pull(self, connection, request, values)
        header = _decode_header(request)
        return self.process(connection, request, header, allow_suspend=True)

    def _filter(self, header: PullMessageRequestHeader, group_config: Any) -> Any:
        return self.filter_of(
            header.sys_flag,
            header.consumer_group,
            header.topic,
            header.subscription,
            header.expression_type,
            header.sub_version,
            group_config,
        )

    def filter_of(
        self,
        sys_flag: int,
        consumer_group: str,
        topic: str,
        subscription: str | None,
        expression_type: str | None,
        sub_version: int,
        group_config: Any,
    ) -> Any:
        """The subscription of this pull (from the request, or the group's heartbeat) as a
        filter; the checks and their order are PullMessageProcessor's. The header's fields
        one by one: the plain pass (pull_plain.py) has them as the scan's values."""
        if sys_flag & FLAG_SUBSCRIPTION:
            return self.message_filter(
                consumer_group,
                topic,
                subscription,
                expression_type,
                ResponseCode.SUBSCRIPTION_PARSE_FAILED,
                "parse the consumer's subscription failed",
            )
        group = self.broker.clients.consumer_groups.get(consumer_group)
        if group is None:
            raise RequestError(
                ResponseCode.SUBSCRIPTION_NOT_EXIST, "the consumer's group info not exist"
            )
        if not group_config.consume_broadcast_enable and (
            group.message_model is MessageModel.BROADCASTING
        ):
            raise RequestError(
                ResponseCode.NO_PERMISSION,
                f"the consumer group[{consumer_group}] can not consume by broadcast way",
            )
        sub = group.subscriptions.get(topic)
        if sub is None:
            raise RequestError(
                ResponseCode.SUBSCRIPTION_NOT_EXIST, "the consumer's subscription not exist"
            )
        if sub.sub_version < sub_version:
            raise RequestError(
                ResponseCode.SUBSCRIPTION_NOT_LATEST, "the consumer's subscription not latest"
            )
        return self.message_filter(
            consumer_group,
            topic,
            sub.sub_string,
            sub.expression_type,
            ResponseCode.FILTER_DATA_NOT_EXIST,
            "The broker's consumer filter data is not exist!Your expression may be wrong!",
        )

    def message_filter(
        self,
        group: str,
        topic: str,
        expression: str | None,
        expression_type: str | None,
        refusal: int,
        remark: str,
    ) -> Any:
        config = self.broker.config
        if expression_type in TAG_TYPES:
            try:
                tags = tags_filter(expression)
            except ValueError as exc:
                raise RequestError(ResponseCode.SUBSCRIPTION_PARSE_FAILED, str(exc)) from None
            if config.filter_support_retry and is_retry_topic(topic):
                return RetryMessageFilter(tags, self._sql_expression_of(group))
            return tags
        if not config.enable_property_filter:
            raise RequestError(
                ResponseCode.SYSTEM_ERROR,
                f"The broker does not support consumer to filter message by {expression_type}",
            )
        if expression_type != SQL92:
            raise RequestError(refusal, f"{remark} (unknown expression type {expression_type})")
        try:
            return ExpressionMessageFilter(expression or "")
        except FilterSyntaxError as exc:
            raise RequestError(refusal, f"{remark} ({exc})") from None

    def _sql_expression_of(self, group: str) -> Any:
        def expression_of(topic: str) -> str | None:
            members = self.broker.clients.consumer_groups.get(group)
            sub = members.subscriptions.get(topic) if members is not None else None
            if sub is None or sub.expression_type != SQL92:
                return None
            return sub.sub_string

        return expression_of

    def _replicated_topic(self, topic: str) -> TopicConfig | None:
        """A slave holds messages of a topic its config sync has not brought yet (created on
        the master less than 10 s before it died): serve them rather than answer
        TOPIC_NOT_EXIST as RocketMQ would; the queues are those the replica has."""
        if not self.broker.is_slave:
            return None
        return self.broker.topics.from_queues(topic, self.broker.store.queue_count(topic))

    def _checks(self, header: PullMessageRequestHeader) -> tuple[Any, Any]:
        broker = self.broker
        if not K.is_readable(broker.config.broker_permission):
            raise RequestError(
                ResponseCode.NO_PERMISSION,
                f"the broker[{broker.config.broker_ip1}] pulling message is forbidden",
            )
        group_config = broker.groups.find(header.consumer_group)
        if group_config is None:
            raise RequestError(
                ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                f"subscription group [{header.consumer_group}] does not exist",
            )
        if not group_config.consume_enable:
            raise RequestError(
                ResponseCode.NO_PERMISSION,
                f"subscription group no permission, {header.consumer_group}",
            )
        topic_config = broker.topics.get(header.topic) or self._replicated_topic(header.topic)
        if topic_config is None:
            raise RequestError(
                ResponseCode.TOPIC_NOT_EXIST,
                f"topic[{header.topic}] not exist, apply first please!",
            )
        if not K.is_readable(topic_config.perm):
            raise RequestError(
                ResponseCode.NO_PERMISSION,
                f"the topic[{header.topic}] pulling message is forbidden",
            )
        if not 0 <= header.queue_id < topic_config.read_queue_nums:
            raise RequestError(
                ResponseCode.SYSTEM_ERROR,
                f"queueId[{header.queue_id}] is illegal, topic:[{header.topic}] "
                f"topicConfig.readQueueNums:[{topic_config.read_queue_nums}] consumer:[{header.consumer_group}]",
            )
        return group_config, topic_config

    def process(
        self,
        connection: Connection,
        request: RemotingCommand,
        header: PullMessageRequestHeader,
        *,
        allow_suspend: bool,
    ) -> Any:
        broker = self.broker
        group_config, _ = self._checks(header)
        message_filter = self._filter(header, group_config)
        queue_offset = header.queue_offset
        result = broker.store.get_message(
            header.consumer_group,
            header.topic,
            header.queue_id,
            queue_offset,
            header.max_msg_nums,
            message_filter,
            runs=True,  # the body is written as it is: adjacent records in one slice
        )
        return self.after_get(
            connection, request, header, message_filter, result, group_config, allow_suspend
        )

    def after_get(
        self,
        connection: Connection,
        request: RemotingCommand,
        header: PullMessageRequestHeader,
        message_filter: Any,
        result: GetMessageResult,
        group_config: Any,
        allow_suspend: bool,
    ) -> Any:
        """What follows the store's read: the code, the offset commit, the hold or the
        reply (the plain pass, pull_plain.py, comes here for every status but FOUND)."""
        broker = self.broker
        queue_offset = header.queue_offset
        status = result.status
        # FOUND first: an Enum's hash is a Python call, the table is for the other statuses
        code = _SUCCESS if status is _FOUND else _CODES[status]
        if code is None:
            code = _OFFSET_MOVED if queue_offset != 0 else _NOT_FOUND
        store_config = broker.store_config
        slave = store_config.broker_role is _SLAVE
        next_offset = result.next_begin_offset
        if code == _OFFSET_MOVED and slave and not store_config.offset_check_in_slave:
            code, next_offset = _RETRY_IMMEDIATELY, queue_offset
        # Java sets PULL_RETRY_IMMEDIATELY here for a slave without slaveReadEnable, then
        # overwrites it with the status's code: a slave serves its messages either way and only
        # the suggestion to go back to the master (brokerId 0) remains (docs/spec/ha.md §7).
        # commitOffset is range-checked only (a client with no offset in memory may send -1
        # with the commit bit clear). Java's broker would store a negative one sent with the bit
        # set, rewinding the group to "never committed"; no Java client sends that: ignored.
        sys_flag = header.sys_flag
        if (
            allow_suspend
            and sys_flag & FLAG_COMMIT_OFFSET
            and header.commit_offset >= 0
            and not slave
        ):
            broker.offsets.commit(
                header.consumer_group, header.topic, header.queue_id, header.commit_offset
            )
        if code == _NOT_FOUND and allow_suspend and sys_flag & FLAG_SUSPEND:
            timeout_ms = header.suspend_timeout_millis
            if not broker.config.long_polling_enable:
                timeout_ms = broker.config.short_polling_time_mills
            return self._suspended(connection, request, header, message_filter, timeout_ms)
        return self._answer(request, header, result, code, next_offset, group_config)

    def _answer(
        self,
        request: RemotingCommand,
        header: PullMessageRequestHeader,
        result: GetMessageResult,
        code: int,
        next_offset: int,
        group_config: Any,
    ) -> RemotingCommand | EncodedReply:
        """The reply to a pull answered now; a found one counts in the broker's stats. The
        remark is the status's name, FOUND included, as Java's PullMessageProcessor sets it."""
        broker = self.broker
        config = broker.config
        if not config.slave_read_enable:
            suggest = K.MASTER_ID
        elif result.suggest_pulling_from_slave:
            suggest = group_config.which_broker_when_consume_slowly
        else:
            suggest = group_config.broker_id
        if code != _SUCCESS:
            ext = self._ext(suggest, next_offset, result)
            return request.make_response(code, result.status.name, ext)
        count, size = result.message_count, result.buffer_total_size
        broker.stats.on_get(header.topic, header.consumer_group, config.broker_cluster_name,
                            count, size)  # fmt: skip
        # The records as stored, written from the mapping: no copy.
        if request.serialize_type == _JSON:
            return found_reply(
                request.opaque, suggest, next_offset, result.min_queue_offset,
                result.max_queue_offset, result.buffers, size,
            )  # fmt: skip
        body = Gather(result.buffers, size)
        ext = self._ext(suggest, next_offset, result)
        return request.make_response(code, result.status.name, ext, body)

    @staticmethod
    def _ext(suggest: int, next_offset: int, result: GetMessageResult) -> dict[str, str]:
        """PullMessageResponseHeader's fields (broker/processor/pull_reply.py formats the same
        for a found pull with a JSON header)."""
        return {
            "suggestWhichBrokerId": str(suggest),
            "nextBeginOffset": str(next_offset),
            "minOffset": str(result.min_queue_offset),
            "maxOffset": str(result.max_queue_offset),
        }

    def _suspended(
        self,
        connection: Connection,
        request: RemotingCommand,
        header: PullMessageRequestHeader,
        message_filter: Any,
        timeout_ms: int,
    ) -> RemotingCommand | EncodedReply | None:
        """Hold the pull (None: answered later, from its wake) or, when the queue has grown
        since the read, answer it now."""
        held = HeldPullRequest(self, connection, request, header, message_filter)
        held.deadline = trio.current_time() + max(0, timeout_ms) / 1000
        hold = self.broker.pull_hold
        if hold.max_offset(header.topic, header.queue_id) <= header.queue_offset:
            held.suspend()
            connection.defer(request)
            return None
        response = held.run()
        if response is None:
            connection.defer(request)
        return response
