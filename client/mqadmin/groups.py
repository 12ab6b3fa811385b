"""mqadmin: consumer and producer groups (config, progress, connections, status, diagnosis)."""

from __future__ import annotations

import argparse
import time
from typing import Any

from client.admin import AdminClient
from client.errors import MQClientError
from client.mqadmin import args as A
from client.mqadmin.base import Shown, command, flag, table, table_result, targets, where
from client.route import MASTER_ID
from remoting import constants as K
from remoting.body import ConsumeType, SubscriptionGroupConfig
from remoting.serde import unstructure_body
from remoting.version import version_desc


def _group_setup(p: argparse.ArgumentParser) -> None:
    where(p)
    p.add_argument("-g", "--groupName", required=True, type=A.group)
    p.add_argument("-s", "--consumeEnable", type=A.java_bool, default=True)
    p.add_argument("-m", "--consumeFromMinEnable", type=A.java_bool, default=True)
    p.add_argument("-d", "--consumeBroadcastEnable", type=A.java_bool, default=True)
    p.add_argument("-o", "--consumeMessageOrderly", type=A.java_bool, default=False)
    p.add_argument("-q", "--retryQueueNums", type=A.queue_nums, default=1)
    p.add_argument("-r", "--retryMaxTimes", type=A.retry_max_times, default=16)
    p.add_argument("-i", "--brokerId", type=A.broker_id, default=0)
    p.add_argument("-w", "--whichBrokerWhenConsumeSlowly", type=A.broker_id, default=1)
    p.add_argument("-a", "--notifyConsumerIdsChanged", type=A.java_bool, default=True)


@command("updateSubGroup", "create or update a subscription group", _group_setup)
async def update_sub_group(admin: AdminClient, args: argparse.Namespace) -> Any:
    config = SubscriptionGroupConfig(
        group_name=args.groupName,
        consume_enable=args.consumeEnable,
        consume_from_min_enable=args.consumeFromMinEnable,
        consume_broadcast_enable=args.consumeBroadcastEnable,
        retry_queue_nums=args.retryQueueNums,
        retry_max_times=args.retryMaxTimes,
        broker_id=args.brokerId,
        which_broker_when_consume_slowly=args.whichBrokerWhenConsumeSlowly,
        notify_consumer_ids_changed_enable=args.notifyConsumerIdsChanged,
        consume_message_orderly=args.consumeMessageOrderly,
    )
    addrs = await targets(admin, args)
    for addr in addrs:
        await admin.update_sub_group(addr, config)
    return {"updated": args.groupName, "brokers": addrs, "config": unstructure_body(config)}


@command(
    "deleteSubGroup",
    "delete a subscription group (with -c also its retry and dead-letter topics, as Apache)",
    lambda p: (
        where(p),
        p.add_argument("-g", "--groupName", required=True, type=A.group),
        p.add_argument("-r", "--removeOffset", type=A.java_bool, default=False),
    ),
)
async def delete_sub_group(admin: AdminClient, args: argparse.Namespace) -> Any:
    addrs = await targets(admin, args)
    for addr in addrs:
        await admin.delete_sub_group(addr, args.groupName, remove_offset=args.removeOffset)
    out: dict[str, Any] = {"deleted": args.groupName, "brokers": addrs}
    if args.clusterName:
        topics = []
        for topic in (K.retry_topic(args.groupName), K.dlq_topic(args.groupName)):
            try:
                await admin.delete_topic(topic, args.clusterName)
                topics.append(topic)
            except MQClientError:
                pass  # the group never had one
        out["deletedTopics"] = topics
    return out


def _last_time(ms: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ms / 1000)) if ms else "N/A"


def _progress_setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("-g", "--groupName", type=A.group, help="default: every group")
    p.add_argument("-s", "--showClientIP", type=A.java_bool, default=False, help="true|false")
    p.add_argument("-t", "--topic", type=A.topic, help="only this topic (ours)")


@command(
    "consumerProgress", "a group's per-queue offsets and lag, or every group's", _progress_setup
)
async def consumer_progress(admin: AdminClient, args: argparse.Namespace) -> Any:
    if not args.groupName:
        return await every_group(admin)
    if args.topic and await admin.instance.fetch_route(args.topic) is None:
        raise MQClientError(f"topic {args.topic!r} does not exist (no NameServer routes it)")
    stats = await admin.consume_stats(args.groupName, args.topic)
    if not stats.offset_table:
        on = f" on {args.topic}" if args.topic else ""
        raise MQClientError(
            f"no consume progress for group {args.groupName!r}{on}: it has not consumed there "
            "(or the group does not exist)"
        )
    owners = await _queue_owners(admin, args.groupName) if args.showClientIP else {}
    rows = []
    # 5.x's #Inflight (pullOffset - consumerOffset): shown when a pop group has messages in
    # flight, so 4.x groups' output is unchanged
    pop = any(w.pull_offset is not None for w in stats.offset_table.values())
    for mq, w in sorted(stats.offset_table.items()):
        diff = max(0, w.broker_offset - w.consumer_offset)
        ip = [owners.get(mq, "N/A")] if args.showClientIP else []
        inflight = [max(0, (w.pull_offset or w.consumer_offset) - w.consumer_offset)] if pop else []
        rows.append(
            [
                mq.topic,
                mq.broker_name,
                mq.queue_id,
                w.broker_offset,
                w.consumer_offset,
                *ip,
                *inflight,
                diff,
                _last_time(w.last_timestamp),
            ]
        )
    headers = [
        "#Topic",
        "#Broker Name",
        "#QID",
        "#Broker Offset",
        "#Consumer Offset",
        *(["#Client IP"] if args.showClientIP else []),
        *(["#Inflight"] if pop else []),
        "#Diff",
        "#LastTime",
    ]
    total = sum(r[-2] for r in rows)
    footer = f"Consume TPS: {stats.consume_tps:.2f}\nDiff Total: {total}"
    if pop:
        footer += f"\nConsume Inflight Total: {sum(r[-3] for r in rows)}"
    return table_result(headers, rows, footer)


async def _queue_owners(admin: AdminClient, group: str) -> dict[Any, str]:
    """Queue -> the IP of the member holding it (each member's running info)."""
    owners = {}
    connection = await admin.consumer_connection(group)
    for member in connection.connection_set:
        info = await admin.consumer_running_info(group, member.client_id)
        owners.update(dict.fromkeys(info.mq_table, member.client_id.split("@")[0]))
    return owners


async def every_group(admin: AdminClient) -> Any:
    """Apache's consumerProgress without -g: one row per group with a retry topic."""
    rows = []
    for topic in await admin.topic_list():
        if not topic.startswith(K.RETRY_GROUP_TOPIC_PREFIX):
            continue
        group = topic[len(K.RETRY_GROUP_TOPIC_PREFIX) :]
        tps, diff, count, version, kind, model = 0, 0, 0, "OFFLINE", "", ""
        try:
            stats = await admin.consume_stats(group)
            tps = int(stats.consume_tps)
            diff = sum(w.broker_offset - w.consumer_offset for w in stats.offset_table.values())
        except MQClientError:
            pass
        try:
            connection = await admin.consumer_connection(group)
            count = len(connection.connection_set)
        except MQClientError:
            connection = None
        if connection is not None and count:
            version = version_desc(min(c.version for c in connection.connection_set))
            push = connection.consume_type is ConsumeType.CONSUME_PASSIVELY
            kind = "PUSH" if push else "PULL"
            if connection.consume_type is ConsumeType.CONSUME_POP:
                kind = "POP"  # 5.x's typeCN
            model = connection.message_model.value if push and connection.message_model else ""
        rows.append([group, count, version, kind, model, tps, diff])
    headers = ["#Group", "#Count", "#Version", "#Type", "#Model", "#TPS", "#Diff Total"]
    return table_result(headers, rows)


@command(
    "consumerConnection",
    "a group's online members and subscriptions",
    lambda p: (
        p.add_argument("-g", "--consumerGroup", required=True, type=A.group),
        p.add_argument("-b", "--brokerAddr", type=A.address, help="ask this broker"),
    ),
)
async def consumer_connection(admin: AdminClient, args: argparse.Namespace) -> Any:
    cc = await admin.consumer_connection(args.consumerGroup, args.brokerAddr)
    members = table(
        ["#ClientId", "#ClientAddr", "#Language", "#Version"],
        [
            [c.client_id, c.client_addr, c.language, version_desc(c.version)]
            for c in sorted(cc.connection_set, key=lambda c: c.client_id)
        ],
    )
    subs = table(
        ["#Topic", "#SubExpression"],
        [[topic, sub.sub_string] for topic, sub in sorted(cc.subscription_table.items())],
    )
    kinds = [
        f"{name}: {value.name if value else None}"
        for name, value in (
            ("ConsumeType", cc.consume_type),
            ("MessageModel", cc.message_model),
            ("ConsumeFromWhere", cc.consume_from_where),
        )
    ]
    text = "\n".join([members, "", "Below is subscription:", subs, "", *kinds])
    return Shown(text, unstructure_body(cc))


@command(
    "brokerConsumeStats",
    "every consumer group's offsets and lag on a broker",
    lambda p: (
        p.add_argument("-b", "--brokerAddr", required=True, type=A.address),
        p.add_argument("-t", "--timeoutMillis", type=A.timeout_ms, default=50_000),
        p.add_argument("-l", "--level", type=A.non_negative, default=0, help="only lag >= this"),
        p.add_argument("-o", "--order", type=A.java_bool, default=False, help="ordered only"),
    ),
)
async def broker_consume_stats(admin: AdminClient, args: argparse.Namespace) -> Any:
    stats = await admin.broker_consume_stats(
        args.brokerAddr, order_only=args.order, timeout_s=args.timeoutMillis / 1000
    )
    queues = [
        (group, mq, w)
        for entry in stats.consume_stats_list
        for group, per_topic in sorted(entry.items())
        for topic_stats in per_topic
        for mq, w in sorted(topic_stats.offset_table.items())
    ]
    rows = [
        [
            mq.topic,
            group,
            mq.broker_name,
            mq.queue_id,
            w.broker_offset,
            w.consumer_offset,
            w.broker_offset - w.consumer_offset,
            _last_time(w.last_timestamp),
        ]
        for group, mq, w in queues
        if w.broker_offset - w.consumer_offset >= args.level
    ]
    headers = [
        "#Topic",
        "#Group",
        "#Broker Name",
        "#QID",
        "#Broker Offset",
        "#Consumer Offset",
        "#Diff",
        "#LastTime",
    ]
    return table_result(headers, rows, f"Diff Total: {stats.total_diff}")


@command(
    "consumerStatus",
    "what each member of a group holds: queues, cached messages, offsets, subscriptions",
    lambda p: (
        p.add_argument("-g", "--consumerGroup", required=True, type=A.group),
        p.add_argument("-i", "--clientId", help="one member (default: every member)"),
        p.add_argument("-b", "--brokerAddr", type=A.address, help="ask through this broker"),
        flag(p, "-s", "jstack", "ask for a thread dump"),
    ),
)
async def consumer_status(admin: AdminClient, args: argparse.Namespace) -> Any:
    group, via = args.consumerGroup, args.brokerAddr
    if args.clientId:
        clients = [args.clientId]
    else:
        connection = await admin.consumer_connection(group, via)
        clients = sorted(c.client_id for c in connection.connection_set)
    out = {}
    for client in clients:
        info = await admin.consumer_running_info(group, client, jstack=args.jstack, addr=via)
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
    "getConsumerConfig",
    "a subscription group's config on every broker that has it",
    lambda p: p.add_argument("-g", "--groupName", required=True, type=A.group),
)
async def get_consumer_config(admin: AdminClient, args: argparse.Namespace) -> Any:
    info = await admin.cluster_info()
    cluster_of = {n: c for c, names in info.cluster_addr_table.items() for n in names}
    found: dict[str, Any] = {}
    lines: list[str] = []
    for name, data in sorted(info.broker_addr_table.items()):
        addrs = data.broker_addrs
        addr = addrs.get(MASTER_ID) or next(iter(addrs.values()), None)
        if addr is None:
            continue
        config = (await admin.all_sub_groups(addr)).get(args.groupName)
        if config is None:
            continue
        view = unstructure_body(config)
        found[f"{cluster_of.get(name, '')}:{name}"] = view
        lines.append(
            f"============================={cluster_of.get(name, '')}:{name}"
            "============================="
        )
        lines += [f"{k:<40}=  {v}" for k, v in view.items()]
    if not found:
        raise MQClientError(f"no broker has the subscription group {args.groupName!r}")
    return Shown("\n".join(lines), found)


@command(
    "producerConnection",
    "a producer group's connections",
    lambda p: (
        p.add_argument("-g", "--producerGroup", required=True, type=A.group),
        p.add_argument("-t", "--topic", required=True, type=A.topic),
    ),
)
async def producer_connection(admin: AdminClient, args: argparse.Namespace) -> Any:
    return await admin.producer_connection(args.producerGroup, args.topic)


@command(
    "diagnoseGroup",
    "why is this message not consumed? route, members, lag, retries and DLQ in one report",
    lambda p: (
        p.add_argument("-g", "--groupName", required=True, type=A.group),
        p.add_argument("-t", "--topic", required=True, type=A.topic),
    ),
)
async def diagnose_group(admin: AdminClient, args: argparse.Namespace) -> Any:
    return await admin.diagnose_group(args.groupName, args.topic)
