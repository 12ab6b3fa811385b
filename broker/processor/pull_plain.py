"""A plain PULL_MESSAGE in one pass (issue 27), beside the plain sends' (send_plain.py).

A pull whose JSON header the C scanned (``header_values``: PullMessageRequestHeader's values in
its field order) goes from those values to the checks, the store's read and, when it found
messages, the reply frame (``pull_reply.found_reply``: the pre-formatted header, the record
slices of the mapped CommitLog as buffers), with no header object, no response command, no
extFields dict and no encoder. The checks here only let a pull through: anything they would
refuse (the broker or topic not readable, no group config or a group to auto-create, consume
disabled, no topic, a queue out of range) goes to PullMessageProcessor.process, which decides
and answers as before. A TAG filter ("*" or tags) goes to the store's one call for a found
pull (broker/store/reads_found.py ``pull_found``: the read, the reply frame's head and the
store's and broker's stats, in C); whatever that call does not take (it counts nothing then)
goes to the store's general read. After that read, every status but FOUND goes to
``PullMessageProcessor.after_get`` (the code, the commit, the hold), so a read is done once.

tests/unit/broker/test_pull_plain.py holds the reply bytes and the side effects equal to the
reference's for every input it tries.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from broker.processor.message_filter import TAG_TYPES, tags_filter
from broker.processor.pull_reply import found_reply
from broker.store.config import BrokerRole
from broker.store.reads_found import pull_found
from broker.store.types import GetMessageStatus, TagsFilter
from remoting import constants as K
from remoting.codes import ResponseCode, SerializeType
from remoting.command import EncodedReply, RemotingCommand
from remoting.headers import PullMessageRequestHeader

if TYPE_CHECKING:
    from broker.processor.pull import PullMessageProcessor
    from remoting.connection import Connection

_PERM_READ = K.PERM_READ
_MASTER_ID = K.MASTER_ID
_SLAVE = BrokerRole.SLAVE
_FOUND = GetMessageStatus.FOUND
_JSON = int(SerializeType.JSON)
_COMMIT_OFFSET = 0x1  # pull.FLAG_COMMIT_OFFSET (not imported: pull.py imports this module)
_SUBSCRIPTION = 0x4  # pull.FLAG_SUBSCRIPTION
_TAG_TYPES = frozenset(TAG_TYPES)
_RETRY = K.RETRY_GROUP_TOPIC_PREFIX
_TagsFilter = TagsFilter
_SUCCESS = int(ResponseCode.SUCCESS)


def plain_pull(
    processor: PullMessageProcessor,
    connection: Connection,
    request: RemotingCommand,
    values: tuple[Any, ...],
) -> Any:
    """PullMessageProcessor.handle's answer for a request whose header was scanned."""
    (
        group, topic, queue_id, queue_offset, max_msg_nums, sys_flag, commit_offset,
        _suspend_timeout, sub_version, subscription, expression_type, _bname,
    ) = values  # fmt: skip
    broker = processor.broker
    config = broker.config
    group_config = broker.groups.table.get(group)
    topic_config = broker.topics.table.get(topic)
    if (
        group_config is None
        or topic_config is None
        or not config.broker_permission & _PERM_READ
        or not group_config.consume_enable
        or not topic_config.perm & _PERM_READ
        or not 0 <= queue_id < topic_config.read_queue_nums
    ):
        header = PullMessageRequestHeader(*values)
        return processor.process(connection, request, header, allow_suspend=True)
    if sys_flag & _SUBSCRIPTION and expression_type in _TAG_TYPES and not topic.startswith(_RETRY):
        try:  # message_filter's TAG case; a refusal is message_filter's to word
            message_filter = tags_filter(subscription)
        except ValueError:
            message_filter = processor.filter_of(
                sys_flag, group, topic, subscription, expression_type, sub_version, group_config
            )
    else:
        message_filter = processor.filter_of(
            sys_flag, group, topic, subscription, expression_type, sub_version, group_config
        )
    if type(message_filter) is _TagsFilter and request.serialize_type == _JSON:
        reply = _found_at_once(
            broker, config, request.opaque, group, topic, queue_id, queue_offset,
            max_msg_nums, message_filter.codes, group_config,
        )  # fmt: skip
        if reply is not None:
            if sys_flag & _COMMIT_OFFSET and commit_offset >= 0:
                _commit(processor, group, topic, queue_id, commit_offset)
            return reply
    result = broker.store.get_message(
        group, topic, queue_id, queue_offset, max_msg_nums, message_filter, runs=True
    )
    if result.status is not _FOUND or request.serialize_type != _JSON:
        header = PullMessageRequestHeader(*values)
        return processor.after_get(
            connection, request, header, message_filter, result, group_config, True
        )
    if sys_flag & _COMMIT_OFFSET and commit_offset >= 0:
        _commit(processor, group, topic, queue_id, commit_offset)
    return _found(processor, request.opaque, group, topic, result, group_config)


def _found_at_once(
    broker: Any,
    config: Any,
    opaque: int,
    group: str,
    topic: str,
    queue_id: int,
    queue_offset: int,
    max_msg_nums: int,
    codes: frozenset[int] | None,
    group_config: Any,
) -> EncodedReply | None:
    """A found pull's reply from one store call (reads_found.pull_found: the read, the frame
    head, the store's and the broker's stats); None when it is not that case (nothing
    counted): the general read then decides. The first found pull of a (topic, group) goes
    the general way, whose on_get makes the stats items this one counts in."""
    items = broker.stats.get_items.get((topic, group, config.broker_cluster_name))
    if items is None:
        return None
    if config.slave_read_enable:
        suggest, slow = group_config.broker_id, group_config.which_broker_when_consume_slowly
    else:
        suggest = slow = _MASTER_ID
    buffers = pull_found(
        broker.store, topic, queue_id, queue_offset, max_msg_nums, codes, opaque, suggest,
        slow, items,
    )  # fmt: skip
    return None if buffers is None else EncodedReply(_SUCCESS, buffers)


def _commit(
    processor: PullMessageProcessor, group: str, topic: str, queue_id: int, commit_offset: int
) -> None:
    """after_get's commit of the consumer's offset, on a master only."""
    broker = processor.broker
    if broker.store_config.broker_role is not _SLAVE:
        broker.offsets.commit(group, topic, queue_id, commit_offset)


def _found(
    processor: PullMessageProcessor,
    opaque: int,
    group: str,
    topic: str,
    result: Any,
    group_config: Any,
) -> EncodedReply:
    """_answer for FOUND: the suggested broker, the stats, the reply frame."""
    broker = processor.broker
    config = broker.config
    if not config.slave_read_enable:
        suggest = _MASTER_ID
    elif result.suggest_pulling_from_slave:
        suggest = group_config.which_broker_when_consume_slowly
    else:
        suggest = group_config.broker_id
    size = result.buffer_total_size
    broker.stats.on_get(topic, group, config.broker_cluster_name, result.message_count, size)
    return found_reply(
        opaque, suggest, result.next_begin_offset, result.min_queue_offset,
        result.max_queue_offset, result.buffers, size,
    )  # fmt: skip
