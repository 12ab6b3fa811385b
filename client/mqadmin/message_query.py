"""mqadmin: looking messages up (by offset id, key, unique key, queue offset; their trace;
raw ConsumeQueue units)."""

from __future__ import annotations

import argparse
import time
from typing import Any

from client import trace
from client.admin import AdminClient
from client.errors import MQClientError
from client.message import Message
from client.mqadmin import args as A
from client.mqadmin.base import Shown, command, flag, message_view, table_result
from client.producer import Producer
from remoting import constants as K
from remoting.message import MessageConst
from remoting.serde import unstructure_body


def _by_id_setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("-i", "--msgId", required=True, type=A.offset_msg_ids, help="id[,id...]")
    p.add_argument("-g", "--consumerGroup", type=A.group)
    p.add_argument("-d", "--clientId")
    p.add_argument("-s", "--sendMessage", type=A.java_bool, default=False, help="resend: true")
    p.add_argument("-u", "--unitName", help="accepted for Apache's scripts; no effect here")


@command(
    "queryMsgById",
    "messages by offsetMsgId; -g and -d: one consumer consumes each again; -s true: resend",
    _by_id_setup,
)
async def query_msg_by_id(admin: AdminClient, args: argparse.Namespace) -> Any:
    views = []
    for msg_id in args.msgId:
        msg = await admin.view_message(msg_id)
        view = message_view(msg)
        if args.consumerGroup and args.clientId:
            result = await admin.consume_message_directly(args.consumerGroup, args.clientId, msg_id)
            view["consumeMessageDirectly"] = unstructure_body(result)
        elif args.sendMessage:
            view["resent"] = await _resend(admin, msg)
        views.append(view)
    return views[0] if len(views) == 1 else views


async def _resend(admin: AdminClient, msg) -> dict[str, Any]:
    """Send a stored message again, as Apache's ReSendMsgById producer (it gets a new msgId)."""
    kept = {k: v for k, v in msg.properties.items() if k != MessageConst.UNIQ_KEY}
    producer = Producer(admin.instance, "ReSendMsgById")
    result = await producer.send(Message(msg.topic, msg.body, properties=kept))
    return {
        "sendStatus": result.status.name,
        "msgId": result.msg_id,
        "offsetMsgId": result.offset_msg_id,
        "queueId": result.message_queue.queue_id,
    }


@command(
    "queryMsgByKey",
    "messages by key",
    lambda p: (
        p.add_argument("-t", "--topic", required=True, type=A.topic),
        p.add_argument("-k", "--msgKey", required=True),
    ),
)
async def query_msg_by_key(admin: AdminClient, args: argparse.Namespace) -> Any:
    found = await admin.query_by_key(args.topic, args.msgKey)
    rows = [[m.msg_id, m.queue_id, m.queue_offset] for m in found]
    views = [message_view(m) for m in found]
    return table_result(["#Message ID", "#QID", "#Offset"], rows, data=views)


@command(
    "queryMsgByUniqueKey",
    "a message by its client msgId (UNIQ_KEY); -a: every copy; -g and -d: consume it again",
    lambda p: (
        p.add_argument("-i", "--msgId", required=True),
        p.add_argument("-g", "--consumerGroup", type=A.group),
        p.add_argument("-d", "--clientId"),
        p.add_argument("-t", "--topic", required=True, type=A.topic),
        flag(p, "-a", "showAll", "every stored copy (at most 32), not only the first"),
    ),
)
async def query_msg_by_unique_key(admin: AdminClient, args: argparse.Namespace) -> Any:
    found = sorted(
        await admin.query_by_unique_key(args.topic, args.msgId.strip()),
        key=lambda m: m.store_timestamp,
    )[:32]
    if not found:
        raise MQClientError(f"no message with msgId {args.msgId} in {args.topic}")
    if args.consumerGroup and args.clientId:
        result = await admin.consume_message_directly(
            args.consumerGroup, args.clientId, found[0].offset_msg_id
        )
        return unstructure_body(result)
    return [message_view(m) for m in (found if args.showAll else found[:1])]


def _offset_setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("-t", "--topic", required=True, type=A.topic)
    p.add_argument("-b", "--brokerName", required=True)
    p.add_argument("-i", "--queueId", type=A.queue_id, required=True)
    p.add_argument("-o", "--offset", type=A.queue_offset, required=True)


@command("queryMsgByOffset", "the message at a queue offset", _offset_setup)
async def query_msg_by_offset(admin: AdminClient, args: argparse.Namespace) -> Any:
    from client.puller import Puller, PullTarget
    from remoting.body import MessageQueue, SubscriptionData

    mq = MessageQueue(topic=args.topic, broker_name=args.brokerName, queue_id=args.queueId)
    puller = Puller(admin.instance, K.TOOLS_CONSUMER_GROUP, batch=1)
    target = PullTarget(mq, SubscriptionData(topic=args.topic), commit=False)
    _, msgs, _ = await puller.pull_once(target, args.offset, suspend_ms=0)
    if not msgs or msgs[0].queue_offset != args.offset:
        raise MQClientError(f"no message at offset {args.offset} of {mq}")
    return message_view(msgs[0])


TRACE_HEADERS = ["#Type", "#Group", "#ClientHost", "#Time", "#CostTimes", "#Status"]


def _trace_text(views: list[dict[str, Any]]) -> str:
    """Apache's layout: the send first, then one block per consumer group."""

    def line(kind: str, v: dict[str, Any]) -> str:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(v["timestamp"] / 1000))
        return (
            f"{kind:<10} {v['group']:<20} {v['clientHost']:<20} {stamp:<20} "
            f"{str(v['costTime']) + 'ms':<10} {v['status']:<10}"
        ).rstrip()

    out = []
    for v in views:
        if v["type"] == "Pub":
            out += [
                f"{'#Type':<10} {'#ProducerGroup':<20} {'#ClientHost':<20} {'#SendTime':<20} "
                f"{'#CostTimes':<10} #Status",
                line("Pub", v),
                "",
            ]
    groups = sorted({v["group"] for v in views if v["type"] == "SubAfter"})
    for group in groups:
        out.append(
            f"{'#Type':<10} {'#ConsumerGroup':<20} {'#ClientHost':<20} "
            f"{'#ConsumerTime':<20} {'#CostTimes':<10} #Status"
        )
        out += [line("Sub", v) for v in views if v["type"] == "SubAfter" and v["group"] == group]
        out.append("")
    return "\n".join(out).rstrip()


@command(
    "queryMsgTraceById",
    "a message's trace: who sent it and who consumed it (RMQ_SYS_TRACE_TOPIC records)",
    lambda p: (
        p.add_argument("-i", "--msgId", required=True, help="the client msgId (UNIQ_KEY)"),
        p.add_argument("-t", "--traceTopic", type=A.topic, default=K.TRACE_TOPIC),
    ),
)
async def query_msg_trace_by_id(admin: AdminClient, args: argparse.Namespace) -> Any:
    msg_id = args.msgId.strip()
    records = await admin.query_by_key(args.traceTopic, msg_id, max_num=64)
    views = [
        view
        for m in records
        for view in trace.decode(m.body.decode("utf-8", "replace"), msg_id, m.born_host)
    ]
    if not views:
        raise MQClientError(f"no trace of msgId {msg_id} in {args.traceTopic}")
    views.sort(key=lambda v: (v["type"] != "Pub", v["timestamp"]))
    return Shown(_trace_text(views), views)


@command(
    "queryCq",
    "the raw units of a ConsumeQueue (with -g, whether each passes the group's subscription)",
    lambda p: (
        p.add_argument("-t", "--topic", required=True, type=A.topic),
        p.add_argument("-q", "--queue", type=A.queue_id, required=True),
        p.add_argument("-i", "--index", type=A.queue_offset, required=True),
        p.add_argument("-c", "--count", type=A.count, default=10),
        p.add_argument("-b", "--broker", type=A.address, help="default: the topic's first"),
        p.add_argument("-g", "--consumer", type=A.group, help="consumer group"),
    ),
)
async def query_cq(admin: AdminClient, args: argparse.Namespace) -> Any:
    body = await admin.query_consume_queue(
        args.topic, args.queue, args.index, args.count, addr=args.broker, group=args.consumer
    )
    return unstructure_body(body)
