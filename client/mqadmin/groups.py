"""mqadmin: consumer and producer groups (progress, connections, offsets, diagnosis)."""

from __future__ import annotations

import argparse
import time
from typing import Any

from client.admin import AdminClient
from client.mqadmin.base import command, parse_time, targets, where
from remoting.body import SubscriptionGroupConfig
from remoting.serde import unstructure_body


def _group_setup(p: argparse.ArgumentParser) -> None:
    where(p)
    p.add_argument("-g", "--groupName", required=True)
    p.add_argument("-r", "--retryQueueNums", type=int, default=1)
    p.add_argument("-q", "--retryMaxTimes", type=int, default=16)
    p.add_argument("-i", "--brokerId", type=int, default=0)
    p.add_argument("-w", "--whichBrokerWhenConsumeSlowly", type=int, default=1)
    p.add_argument("-s", "--consumeEnable", choices=["true", "false"], default="true")
    p.add_argument("-d", "--consumeBroadcastEnable", choices=["true", "false"], default="true")


@command("updateSubGroup", "create or update a subscription group", _group_setup)
async def update_sub_group(admin: AdminClient, args: argparse.Namespace) -> Any:
    config = SubscriptionGroupConfig(
        group_name=args.groupName,
        consume_enable=args.consumeEnable == "true",
        consume_broadcast_enable=args.consumeBroadcastEnable == "true",
        retry_queue_nums=args.retryQueueNums,
        retry_max_times=args.retryMaxTimes,
        broker_id=args.brokerId,
        which_broker_when_consume_slowly=args.whichBrokerWhenConsumeSlowly,
    )
    addrs = await targets(admin, args)
    for addr in addrs:
        await admin.update_sub_group(addr, config)
    return {"updated": args.groupName, "brokers": addrs}


@command(
    "deleteSubGroup",
    "delete a subscription group",
    lambda p: (where(p), p.add_argument("-g", "--groupName", required=True)),
)
async def delete_sub_group(admin: AdminClient, args: argparse.Namespace) -> Any:
    addrs = await targets(admin, args)
    for addr in addrs:
        await admin.delete_sub_group(addr, args.groupName)
    return {"deleted": args.groupName, "brokers": addrs}


@command(
    "consumerProgress",
    "per-queue broker offset, consumer offset and lag of a group",
    lambda p: (p.add_argument("-g", "--groupName", required=True), p.add_argument("-t", "--topic")),
)
async def consumer_progress(admin: AdminClient, args: argparse.Namespace) -> Any:
    stats = await admin.consume_stats(args.groupName, args.topic)
    rows = [
        [
            mq.topic,
            mq.broker_name,
            mq.queue_id,
            w.broker_offset,
            w.consumer_offset,
            max(0, w.broker_offset - w.consumer_offset),
        ]
        for mq, w in sorted(stats.offset_table.items())
    ]
    total = sum(r[-1] for r in rows)
    return {
        "headers": [
            "#Topic",
            "#Broker Name",
            "#QID",
            "#Broker Offset",
            "#Consumer Offset",
            "#Diff",
        ],
        "rows": rows,
        "footer": f"Consume TPS: {stats.consume_tps:.2f}\nDiff Total: {total}",
    }


@command(
    "consumerConnection",
    "a group's online members",
    lambda p: p.add_argument("-g", "--consumerGroup", required=True),
)
async def consumer_connection(admin: AdminClient, args: argparse.Namespace) -> Any:
    return unstructure_body(await admin.consumer_connection(args.consumerGroup))


def _local_time(ms: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ms / 1000)) if ms else "N/A"


@command(
    "brokerConsumeStats",
    "every consumer group's offsets and lag on a broker",
    lambda p: (
        p.add_argument("-b", "--brokerAddr", required=True),
        p.add_argument("-l", "--level", type=int, default=0, help="only queues lagging more"),
        p.add_argument("-o", "--order", choices=["true", "false"], default="false"),
    ),
)
async def broker_consume_stats(admin: AdminClient, args: argparse.Namespace) -> Any:
    stats = await admin.broker_consume_stats(args.brokerAddr, order_only=args.order == "true")
    queues = [
        (group, mq, w)
        for entry in stats.consume_stats_list
        for group, per_topic in sorted(entry.items())
        for topic_stats in per_topic
        for mq, w in sorted(topic_stats.offset_table.items())
    ]
    rows = [
        [mq.topic, group, mq.broker_name, mq.queue_id, w.broker_offset, w.consumer_offset,
         w.broker_offset - w.consumer_offset, _local_time(w.last_timestamp)]
        for group, mq, w in queues
        if w.broker_offset - w.consumer_offset >= args.level
    ]  # fmt: skip
    headers = ["#Topic", "#Group", "#Broker Name", "#QID", "#Broker Offset",
               "#Consumer Offset", "#Diff", "#LastTime"]  # fmt: skip
    return {"headers": headers, "rows": rows, "footer": f"Diff Total: {stats.total_diff}"}


@command(
    "cloneGroupOffset",
    "a new consumer group starts where another one is on a topic",
    lambda p: (
        p.add_argument("-s", "--srcGroup", required=True),
        p.add_argument("-d", "--destGroup", required=True),
        p.add_argument("-t", "--topic", required=True),
        p.add_argument("-o", "--offline", choices=["true", "false"], default="false"),
    ),
)
async def clone_group_offset(admin: AdminClient, args: argparse.Namespace) -> Any:
    brokers = await admin.clone_group_offset(
        args.srcGroup, args.destGroup, args.topic, offline=args.offline == "true"
    )
    return {
        "cloned": f"{args.srcGroup} -> {args.destGroup}",
        "topic": args.topic,
        "brokers": brokers,
    }


@command(
    "consumerStatus",
    "what each member of a group holds: queues, cached messages, offsets, subscriptions",
    lambda p: (
        p.add_argument("-g", "--consumerGroup", required=True),
        p.add_argument("-i", "--clientId", help="one member (default: every member)"),
        p.add_argument("-s", "--jstack", action="store_true", help="ask for a thread dump"),
    ),
)
async def consumer_status(admin: AdminClient, args: argparse.Namespace) -> Any:
    if args.clientId:
        clients = [args.clientId]
    else:
        connection = await admin.consumer_connection(args.consumerGroup)
        clients = sorted(c.client_id for c in connection.connection_set)
    out = {}
    for client in clients:
        info = await admin.consumer_running_info(args.consumerGroup, client, jstack=args.jstack)
        view = unstructure_body(info)
        # queue by queue, as rows (a MessageQueue is no JSON object key)
        view["mqTable"] = [
            {"topic": mq.topic, "brokerName": mq.broker_name, "queueId": mq.queue_id, **queue}
            for mq, queue in zip(
                info.mq_table, (unstructure_body(q) for q in info.mq_table.values()), strict=True
            )
        ]
        out[client] = view
    return out


@command(
    "producerConnection",
    "a producer group's connections",
    lambda p: (
        p.add_argument("-g", "--producerGroup", required=True),
        p.add_argument("-t", "--topic", required=True),
    ),
)
async def producer_connection(admin: AdminClient, args: argparse.Namespace) -> Any:
    return await admin.producer_connection(args.producerGroup, args.topic)


@command(
    "diagnoseGroup",
    "why is this message not consumed? route, members, lag, retries and DLQ in one report",
    lambda p: (
        p.add_argument("-g", "--groupName", required=True),
        p.add_argument("-t", "--topic", required=True),
    ),
)
async def diagnose_group(admin: AdminClient, args: argparse.Namespace) -> Any:
    return await admin.diagnose_group(args.groupName, args.topic)


def _reset_setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("-g", "--group", required=True)
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-s", "--timestamp", required=True, help="ms, now, or yyyy-MM-dd#HH:mm:ss:SSS")
    p.add_argument("-f", "--force", choices=["true", "false"], default="true")


@command("resetOffsetByTime", "move a group's offsets on a topic to a point in time", _reset_setup)
async def reset_offset_by_time(admin: AdminClient, args: argparse.Namespace) -> Any:
    table = await admin.reset_offset_by_time(
        args.group, args.topic, parse_time(args.timestamp), force=args.force == "true"
    )
    rows = [[mq.broker_name, mq.queue_id, offset] for mq, offset in sorted(table.items())]
    return {"headers": ["#brokerName", "#queueId", "#offset"], "rows": rows}
