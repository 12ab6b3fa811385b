"""mqadmin: sending and reading messages (send, send round trips, print a topic or a queue)."""

from __future__ import annotations

import argparse
import time
from collections import Counter
from typing import Any

from client import trace
from client.admin import AdminClient
from client.errors import MQClientError
from client.message import Message, SendResult
from client.mqadmin import args as A
from client.mqadmin.base import Shown, command, message_view, table_result
from client.producer import Producer
from remoting import constants as K
from remoting.body import MessageQueue
from remoting.errors import RemotingError
from remoting.message import MessageExt, decode_offset_msg_id

SEND_HEADERS = ["#Broker Name", "#QID", "#Send Result", "#MsgId"]


def _send_setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("-t", "--topic", required=True, type=A.topic)
    p.add_argument("-p", "--body", required=True, help="the body, as UTF-8 text")
    p.add_argument("-k", "--key")
    p.add_argument("-c", "--tags")
    p.add_argument("-b", "--broker", help="brokerName: send to this broker (with -i)")
    p.add_argument("-i", "--qid", type=A.queue_id, help="queue id on the -b broker")
    p.add_argument("-m", "--msgTraceEnable", type=A.java_bool, default=False, help="true|false")


@command("sendMessage", "send one message", _send_setup)
async def send_message(admin: AdminClient, args: argparse.Namespace) -> Any:
    if args.qid is not None and not args.broker:
        raise MQClientError("-i (queue id) needs -b (the broker name that queue is on)")
    producer = Producer(admin.instance, K.DEFAULT_PRODUCER_GROUP)
    msg = Message(args.topic, args.body.encode(), tags=args.tags, keys=args.key)
    mq = None
    if args.broker:
        mq = MessageQueue(topic=args.topic, broker_name=args.broker, queue_id=args.qid or 0)
    started = time.monotonic()
    result = await producer.send(msg, mq)
    cost_ms = int((time.monotonic() - started) * 1000)
    out = {
        "brokerName": result.message_queue.broker_name,
        "queueId": result.message_queue.queue_id,
        "sendStatus": result.status.name,
        "msgId": result.msg_id,
        "offsetMsgId": result.offset_msg_id,
        "queueOffset": result.queue_offset,
    }
    if args.msgTraceEnable:
        out["trace"] = await _send_trace(producer, msg, result, cost_ms)
    row = [out["brokerName"], out["queueId"], out["sendStatus"], out["msgId"]]
    return table_result(SEND_HEADERS, [row], data=out)


async def _send_trace(producer: Producer, msg: Message, result: SendResult, cost_ms: int):
    """A ``Pub`` record in RMQ_SYS_TRACE_TOPIC, as Java's trace hook writes one after a send."""
    keys = msg.keys if isinstance(msg.keys, str) or msg.keys is None else " ".join(msg.keys)
    record = trace.encode_pub(
        timestamp=int(time.time() * 1000) - cost_ms,
        region=trace.DEFAULT_REGION,
        group=producer.group,
        topic=msg.topic,
        msg_id=result.msg_id,
        tags=msg.tags,
        keys=keys,
        store_host=decode_offset_msg_id(result.offset_msg_id).addr,
        body_length=len(msg.body),
        cost_ms=cost_ms,
        offset_msg_id=result.offset_msg_id,
        success=result.status.name == "SEND_OK",
    )
    trace_keys = [result.msg_id, *(keys.split() if keys else [])]
    sent = await producer.send(Message(K.TRACE_TOPIC, record.encode(), keys=trace_keys))
    return {"topic": K.TRACE_TOPIC, "msgId": sent.msg_id}


def _consume_setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("-t", "--topic", required=True, type=A.topic)
    p.add_argument("-b", "--brokerName")
    p.add_argument("-i", "--queueId", type=A.queue_id)
    p.add_argument("-o", "--offset", type=A.queue_offset, help="default: each queue's start")
    p.add_argument("-g", "--consumerGroup", type=A.group, default=K.TOOLS_CONSUMER_GROUP)
    p.add_argument("-s", "--beginTimestamp", type=A.timestamp, help="ms, now, or Java's format")
    p.add_argument("-e", "--endTimestamp", type=A.timestamp)
    p.add_argument("-c", "--MessageNumber", dest="count", type=A.count, default=128)


@command("consumeMessage", "print messages of a topic (pulls; commits nothing)", _consume_setup)
async def consume_message(admin: AdminClient, args: argparse.Namespace) -> Any:
    from client.puller import Puller, PullTarget
    from client.route import subscribe_queues
    from remoting.body import SubscriptionData

    route = await admin.topic_route(args.topic)
    puller = Puller(admin.instance, args.consumerGroup)
    begin = args.beginTimestamp or 0
    end = args.endTimestamp if args.endTimestamp is not None else 2**62
    out: list[dict[str, Any]] = []
    for mq in subscribe_queues(args.topic, route):
        if args.brokerName not in (None, mq.broker_name) or args.queueId not in (None, mq.queue_id):
            continue
        target = PullTarget(mq, SubscriptionData(topic=args.topic), commit=False)
        offset = args.offset or 0
        if args.beginTimestamp is not None and args.offset is None:
            offset = await puller.search_offset(mq, args.beginTimestamp)
        while len(out) < args.count:
            _, msgs, next_offset = await puller.pull_once(target, offset, suspend_ms=0)
            out += [message_view(m) for m in msgs if begin <= m.store_timestamp <= end]
            if not msgs or next_offset <= offset or msgs[-1].store_timestamp > end:
                break
            offset = next_offset
    return out[: args.count]


def _summary(m: MessageExt) -> str:
    return (
        f"MessageExt [topic={m.topic}, queueId={m.queue_id}, queueOffset={m.queue_offset}, "
        f"storeTimestamp={m.store_timestamp}, bornHost={m.born_host}, storeHost={m.store_host}, "
        f"commitLogOffset={m.commit_log_offset}, reconsumeTimes={m.reconsume_times}, "
        f"properties={m.properties}]"
    )


def _print_line(m: MessageExt, charset: str, body: bool) -> str:
    shown = m.body.decode(charset, "replace") if body else "NOT PRINT BODY"
    return f"MSGID: {m.msg_id} {_summary(m)} BODY: {shown}"


async def _read_queue(admin, mq, sub_expression: str, begin: int | None, end: int | None):
    """The messages of ``mq`` stored in [begin, end] (both optional): from the offset found for
    ``begin`` to the queue's end, stopping at the first message stored after ``end``."""
    from client.consumer import subscription
    from client.puller import Puller, PullTarget

    puller = Puller(admin.instance, K.TOOLS_CONSUMER_GROUP)
    offset = await puller.search_offset(mq, begin) if begin else await puller.min_offset(mq)
    stop = await puller.max_offset(mq)
    last = end if end is not None else 2**62
    target = PullTarget(mq, subscription(mq.topic, sub_expression), commit=False)
    found: list[MessageExt] = []
    while offset < stop:
        _, msgs, next_offset = await puller.pull_once(target, offset, suspend_ms=0)
        found += [m for m in msgs if begin is None or begin <= m.store_timestamp <= last]
        if next_offset <= offset or (msgs and msgs[-1].store_timestamp > last):
            break
        offset = next_offset
    return [m for m in found if m.store_timestamp <= last]


def _print_setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("-t", "--topic", required=True, type=A.topic)
    p.add_argument("-c", "--charsetName", type=A.charset, default="utf-8")
    p.add_argument("-s", "--subExpression", default="*", help="e.g. TagA || TagB")
    p.add_argument("-b", "--beginTimestamp", type=A.timestamp, help="ms, now, or Java's format")
    p.add_argument("-e", "--endTimestamp", type=A.timestamp)
    p.add_argument("-d", "--printBody", type=A.java_bool, default=True, help="true|false")


@command("printMsg", "messages of a topic stored in a time range", _print_setup)
async def print_msg(admin: AdminClient, args: argparse.Namespace) -> Any:
    from client.route import subscribe_queues

    route = await admin.topic_route(args.topic)
    found: list[MessageExt] = []
    for mq in subscribe_queues(args.topic, route):
        found += await _read_queue(
            admin, mq, args.subExpression, args.beginTimestamp, args.endTimestamp
        )
    views = [message_view(m, args.charsetName, body=args.printBody) for m in found]
    text = "\n".join(_print_line(m, args.charsetName, args.printBody) for m in found)
    return Shown(text, views)


def _by_queue_setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("-t", "--topic", required=True, type=A.topic)
    p.add_argument("-a", "--brokerName", required=True)
    p.add_argument("-i", "--queueId", required=True, type=A.queue_id)
    p.add_argument("-c", "--charsetName", type=A.charset, default="utf-8")
    p.add_argument("-s", "--subExpression", default="*", help="e.g. TagA || TagB")
    p.add_argument("-b", "--beginTimestamp", type=A.timestamp, help="ms, now, or Java's format")
    p.add_argument("-e", "--endTimestamp", type=A.timestamp)
    p.add_argument("-p", "--printMsg", type=A.java_bool, default=False, help="true|false")
    p.add_argument("-d", "--printBody", type=A.java_bool, default=False, help="true|false")
    p.add_argument("-f", "--calculate", type=A.java_bool, default=False, help="count by tag")


@command(
    "printMsgByQueue",
    "one queue's messages in a time range, or their count by tag",
    _by_queue_setup,
)
async def print_msg_by_queue(admin: AdminClient, args: argparse.Namespace) -> Any:
    mq = MessageQueue(topic=args.topic, broker_name=args.brokerName, queue_id=args.queueId)
    found = await _read_queue(admin, mq, args.subExpression, args.beginTimestamp, args.endTimestamp)
    data: dict[str, Any] = {"queue": str(mq), "count": len(found)}
    lines = []
    if args.printMsg:
        data["messages"] = [message_view(m, args.charsetName, body=args.printBody) for m in found]
        lines += [_print_line(m, args.charsetName, args.printBody) for m in found]
    if args.calculate:
        tags = Counter(m.tags or "" for m in found)
        data["tags"] = dict(tags.most_common())
        lines += [f"Tag: {tag:<30} Count: {n}" for tag, n in tags.most_common()]
    if not lines:
        lines.append(f"{len(found)} messages in {mq} (-p true prints them, -f true counts tags)")
    return Shown("\n".join(lines), data)


RT_HEADERS = ["#Broker Name", "#QID", "#Send Result", "#RT"]


@command(
    "checkMsgSendRT",
    "send round trips to a topic, queue after queue",
    lambda p: (
        p.add_argument("-t", "--topic", required=True, type=A.topic),
        p.add_argument("-a", "--amount", type=A.count, default=100),
        p.add_argument("-s", "--size", type=A.message_size, default=128),
    ),
)
async def check_msg_send_rt(admin: AdminClient, args: argparse.Namespace) -> Any:
    producer = Producer(admin.instance, str(int(time.time() * 1000)))
    queues = (await producer.publish_info(args.topic)).queues
    if not queues:
        raise MQClientError(f"topic {args.topic!r} has no writable queue")
    rows, total_ms = [], 0.0
    for i in range(args.amount):
        mq = queues[i % len(queues)]
        started = time.perf_counter()
        try:
            await producer.send(Message(args.topic, b"a" * args.size), mq)
            ok = True
        except (MQClientError, RemotingError, OSError):
            ok = False
        elapsed = (time.perf_counter() - started) * 1000
        if i:  # the first send pays for connecting, as in Apache's figure
            total_ms += elapsed
        rows.append([mq.broker_name, mq.queue_id, "true" if ok else "false", f"{elapsed:.2f}"])
    average = total_ms / (args.amount - 1) if args.amount > 1 else float(rows[0][3])
    return table_result(RT_HEADERS, rows, f"Avg RT: {average:.2f}")
