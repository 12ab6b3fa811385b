"""The checks POP_MESSAGE and NOTIFICATION share, in 5.x PopMessageProcessor's order: the
broker readable, the topic there and readable, the queue id in range, the group there and
allowed to consume. Each refusal is a RequestError with Java's code and remark."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from remoting import constants as K
from remoting.codes import ResponseCode
from remoting.errors import RequestError

if TYPE_CHECKING:
    from broker.controller import BrokerController


def pop_checks(broker: BrokerController, group: str, topic: str, queue_id: int) -> Any:
    if not K.is_readable(broker.config.broker_permission):
        raise RequestError(
            ResponseCode.NO_PERMISSION,
            f"the broker[{broker.config.broker_ip1}] pop message is forbidden",
        )
    topic_config = broker.topics.get(topic)
    if topic_config is None:
        raise RequestError(
            ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist, apply first please!"
        )
    if not K.is_readable(topic_config.perm):
        raise RequestError(
            ResponseCode.NO_PERMISSION, f"the topic[{topic}] peeking message is forbidden"
        )
    if queue_id >= topic_config.read_queue_nums:
        raise RequestError(
            ResponseCode.SYSTEM_ERROR,
            f"queueId[{queue_id}] is illegal, topic:[{topic}] "
            f"topicConfig.readQueueNums:[{topic_config.read_queue_nums}]",
        )
    group_config = broker.groups.find(group)
    if group_config is None:
        raise RequestError(
            ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
            f"subscription group [{group}] does not exist",
        )
    if not group_config.consume_enable:
        raise RequestError(ResponseCode.NO_PERMISSION, f"subscription group no permission, {group}")
    return topic_config
