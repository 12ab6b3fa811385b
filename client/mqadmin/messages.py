"""mqadmin: sending, reading and looking up messages."""

from __future__ import annotations

import argparse
from typing import Any

from client.admin import AdminClient
from client.errors import MQClientError
from client.message import Message
from client.mqadmin.base import command, message_view, parse_time
from client.producer import Producer
from remoting.serde import unstructure_body


@command(
    "queryMsgById",
    "a message by its offsetMsgId; with -g and -d, one consumer consumes it again now",
    lambda p: (
        p.add_argument("-i", "--msgId", required=True),
        p.add_argument("-g", "--consumerGroup"),
        p.add_argument("-d", "--clientId"),
    ),
)
async def query_msg_by_id(admin: AdminClient, args: argparse.Namespace) -> Any:
    view = message_view(await admin.view_message(args.msgId))
    if args.consumerGroup and args.clientId:
        result = await admin.consume_message_directly(args.consumerGroup, args.clientId, args.msgId)
        view["consumeMessageDirectly"] = unstructure_body(result)
    return view


@command(
    "queryMsgByKey",
    "messages by key",
    lambda p: (
        p.add_argument("-t", "--topic", required=True),
        p.add_argument("-k", "--msgKey", required=True),
    ),
)
async def query_msg_by_key(admin: AdminClient, args: argparse.Namespace) -> Any:
    return [message_view(m) for m in await admin.query_by_key(args.topic, args.msgKey)]


@command(
    "queryMsgByUniqueKey",
    "a message by its client msgId (UNIQ_KEY)",
    lambda p: (
        p.add_argument("-t", "--topic", required=True),
        p.add_argument("-i", "--msgId", required=True),
    ),
)
async def query_msg_by_unique_key(admin: AdminClient, args: argparse.Namespace) -> Any:
    return [message_view(m) for m in await admin.query_by_unique_key(args.topic, args.msgId)]


def _send_setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-p", "--body", required=True)
    p.add_argument("-k", "--key")
    p.add_argument("-c", "--tags")


@command("sendMessage", "send one message", _send_setup)
async def send_message(admin: AdminClient, args: argparse.Namespace) -> Any:
    producer = Producer(admin.instance, "TOOLS_PRODUCER")
    result = await producer.send(
        Message(args.topic, args.body.encode(), tags=args.tags, keys=args.key)
    )
    return {
        "brokerName": result.message_queue.broker_name,
        "queueId": result.message_queue.queue_id,
        "sendStatus": result.status.name,
        "msgId": result.msg_id,
        "offsetMsgId": result.offset_msg_id,
        "queueOffset": result.queue_offset,
    }


def _consume_setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-b", "--brokerName")
    p.add_argument("-i", "--queueId", type=int)
    p.add_argument("-o", "--offset", type=int, default=0)
    p.add_argument("-c", "--messageCount", type=int, default=128)
    p.add_argument("-g", "--consumerGroup", default="TOOLS_CONSUMER")


@command("consumeMessage", "print messages of a topic (pulls; commits nothing)", _consume_setup)
async def consume_message(admin: AdminClient, args: argparse.Namespace) -> Any:
    from client.puller import Puller, PullTarget
    from client.route import subscribe_queues
    from remoting.body import SubscriptionData

    route = await admin.topic_route(args.topic)
    puller = Puller(admin.instance, args.consumerGroup)
    out: list[dict[str, Any]] = []
    for mq in subscribe_queues(args.topic, route):
        if args.brokerName not in (None, mq.broker_name) or args.queueId not in (None, mq.queue_id):
            continue
        target = PullTarget(mq, SubscriptionData(topic=args.topic), commit=False)
        offset = args.offset
        while len(out) < args.messageCount:
            _, msgs, next_offset = await puller.pull_once(target, offset, suspend_ms=0)
            out += [message_view(m) for m in msgs]
            if not msgs or next_offset <= offset:
                break
            offset = next_offset
    return out[: args.messageCount]


def _offset_setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-b", "--brokerName", required=True)
    p.add_argument("-i", "--queueId", type=int, required=True)
    p.add_argument("-o", "--offset", type=int, required=True)


@command("queryMsgByOffset", "the message at a queue offset", _offset_setup)
async def query_msg_by_offset(admin: AdminClient, args: argparse.Namespace) -> Any:
    from client.puller import Puller, PullTarget
    from remoting.body import MessageQueue, SubscriptionData

    mq = MessageQueue(topic=args.topic, broker_name=args.brokerName, queue_id=args.queueId)
    puller = Puller(admin.instance, "TOOLS_CONSUMER", batch=1)
    target = PullTarget(mq, SubscriptionData(topic=args.topic), commit=False)
    _, msgs, _ = await puller.pull_once(target, args.offset, suspend_ms=0)
    if not msgs or msgs[0].queue_offset != args.offset:
        raise MQClientError(f"no message at offset {args.offset} of {mq}")
    return message_view(msgs[0])


def _print_setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("-t", "--topic", required=True)
    p.add_argument(
        "-b", "--beginTimestamp", default="0", help="ms, now, or yyyy-MM-dd#HH:mm:ss:SSS"
    )
    p.add_argument("-e", "--endTimestamp", default="now")
    p.add_argument("-s", "--subExpression", default="*")
    p.add_argument("-d", "--printBody", choices=["true", "false"], default="true")


@command("printMsg", "messages of a topic stored in a time range", _print_setup)
async def print_msg(admin: AdminClient, args: argparse.Namespace) -> Any:
    from client.consumer import subscription
    from client.puller import Puller, PullTarget
    from client.route import subscribe_queues

    begin, end = parse_time(args.beginTimestamp), parse_time(args.endTimestamp)
    route = await admin.topic_route(args.topic)
    puller = Puller(admin.instance, "TOOLS_CONSUMER")
    sub = subscription(args.topic, args.subExpression)
    out: list[dict[str, Any]] = []
    for mq in subscribe_queues(args.topic, route):
        offset = await puller.search_offset(mq, begin)
        target = PullTarget(mq, sub, commit=False)
        while True:
            _, msgs, next_offset = await puller.pull_once(target, offset, suspend_ms=0)
            kept = [m for m in msgs if begin <= m.store_timestamp <= end]
            for m in kept:
                view = message_view(m)
                if args.printBody == "false":
                    view.pop("body")
                out.append(view)
            if next_offset <= offset or (msgs and msgs[-1].store_timestamp > end):
                break
            offset = next_offset
    return out


@command(
    "queryCq",
    "the raw units of a ConsumeQueue (with -g, whether each passes the group's subscription)",
    lambda p: (
        p.add_argument("-t", "--topic", required=True),
        p.add_argument("-q", "--queue", type=int, required=True),
        p.add_argument("-i", "--index", type=int, required=True),
        p.add_argument("-c", "--count", type=int, default=10),
        p.add_argument("-b", "--broker", help="broker address (default: the topic's first)"),
        p.add_argument("-g", "--consumer", help="consumer group"),
    ),
)
async def query_cq(admin: AdminClient, args: argparse.Namespace) -> Any:
    body = await admin.query_consume_queue(
        args.topic, args.queue, args.index, args.count, addr=args.broker, group=args.consumer
    )
    return unstructure_body(body)
