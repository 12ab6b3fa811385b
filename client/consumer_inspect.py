"""What a push consumer answers when the broker forwards an operator's question to it:
GET_CONSUMER_RUNNING_INFO (``mqadmin consumerStatus``, the dashboard's consumer detail) and
CONSUME_MESSAGE_DIRECTLY (consume one stored message again, now, through the listener), as
Java's ClientRemotingProcessor does. A request for another group is refused as Java refuses it.
"""

from __future__ import annotations

import inspect
import time
from typing import TYPE_CHECKING, Any

import trio

from client.message import restore_retry_topic
from remoting import message as codec
from remoting.body import (
    CMResult,
    ConsumeMessageDirectlyResult,
    ConsumerRunningInfo,
    ProcessQueueInfo,
)
from remoting.codes import ResponseCode
from remoting.command import RemotingCommand
from remoting.serde import encode_body
from remoting.version import CURRENT_VERSION_DESC

if TYPE_CHECKING:
    from client.consumer import PushConsumer

# What the version in our requests (CURRENT_VERSION) names, as Java fills PROP_CLIENT_VERSION.
CLIENT_VERSION = CURRENT_VERSION_DESC


def _wrong_group(consumer: PushConsumer, request: RemotingCommand) -> RemotingCommand | None:
    group = request.ext("consumerGroup")
    if group == consumer.group:
        return None
    return request.error_response(
        ResponseCode.SYSTEM_ERROR, f"The Consumer Group <{group}> not exist in this consumer"
    )


def running_info(consumer: PushConsumer, connection: Any, request: RemotingCommand) -> Any:
    refused = _wrong_group(consumer, request)
    if refused is not None:
        return refused
    now_ms = time.time_ns() // 1_000_000
    now = trio.current_time()
    table = {}
    for mq, pq in consumer.queues.items():
        offsets = sorted(pq.msgs)
        table[mq] = ProcessQueueInfo(
            commit_offset=consumer.offsets.table.get(mq, -1),
            cached_msg_min_offset=offsets[0] if offsets else 0,
            cached_msg_max_offset=offsets[-1] if offsets else 0,
            cached_msg_count=len(offsets),
            cached_msg_size_in_mi_b=pq.size_bytes >> 20,
            locked=pq.locked,
            last_lock_timestamp=int(now_ms - (now - pq.lock_time) * 1000) if pq.lock_time else 0,
            droped=pq.dropped,
            last_pull_timestamp=pq.last_pull_ms,
            last_consume_timestamp=pq.last_consume_ms,
        )
    properties = {
        "PROP_NAMESERVER_ADDR": consumer.instance.config.namesrv_addr,
        "PROP_CONSUME_TYPE": "CONSUME_PASSIVELY",
        "PROP_CONSUME_ORDERLY": str(consumer.orderly).lower(),
        "PROP_THREADPOOL_CORE_SIZE": str(consumer.threads),
        "PROP_CLIENT_VERSION": CLIENT_VERSION,
        "PROP_CONSUMER_START_TIMESTAMP": str(consumer.started_ms),
        "consumerGroup": consumer.group,
        "messageModel": consumer.model.value,
        "consumeFromWhere": consumer.from_where.value,
        "maxReconsumeTimes": str(consumer.max_reconsume_times),
    }
    info = ConsumerRunningInfo(
        properties=properties,
        subscription_set=list(consumer.subscriptions.values()),
        mq_table=table,
    )
    return request.make_response(body=encode_body(info))


async def consume_directly(
    consumer: PushConsumer, connection: Any, request: RemotingCommand
) -> RemotingCommand:
    """Hand the stored message in the body to the listener once; the result says how it went.
    Nothing is committed or sent back: the message's queue and offset are left as they are."""
    refused = _wrong_group(consumer, request)
    if refused is not None:
        return refused
    try:
        msg = codec.decode_message(request.body)
    except codec.MessageDecodeError as exc:
        return request.error_response(ResponseCode.SYSTEM_ERROR, f"bad message body: {exc}")
    restore_retry_topic(msg, consumer.group)
    started = time.monotonic()
    try:
        status = consumer.listener([msg])
        if inspect.isawaitable(status):
            status = await status
    except Exception as exc:  # the listener's failure is the answer, not ours
        result, remark = CMResult.CR_THROW_EXCEPTION, f"{type(exc).__name__}: {exc}"
    else:
        result = _RESULTS.get(getattr(status, "value", None), CMResult.CR_RETURN_NULL)
        remark = (
            None if result is not CMResult.CR_RETURN_NULL else f"the listener returned {status!r}"
        )
    body = ConsumeMessageDirectlyResult(
        order=consumer.orderly,
        auto_commit=True,
        consume_result=result,
        remark=remark,
        spent_time_mills=int((time.monotonic() - started) * 1000),
    )
    return request.make_response(body=encode_body(body))


# ConsumeStatus by name (client.consumer imports this module).
_RESULTS = {
    "CONSUME_SUCCESS": CMResult.CR_SUCCESS,
    "SUCCESS": CMResult.CR_SUCCESS,
    "RECONSUME_LATER": CMResult.CR_LATER,
    "SUSPEND_CURRENT_QUEUE_A_MOMENT": CMResult.CR_LATER,
}
