"""mqadmin: topics."""

from __future__ import annotations

import argparse
from typing import Any

from client.admin import AdminClient
from client.errors import MQClientError
from client.mqadmin.base import command, targets, where
from remoting import constants as K
from remoting import names
from remoting.body import TopicConfig
from remoting.serde import unstructure_body


def _topic_setup(p: argparse.ArgumentParser) -> None:
    where(p)
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-r", "--readQueueNums", type=int, default=8)
    p.add_argument("-w", "--writeQueueNums", type=int, default=8)
    p.add_argument("-p", "--perm", type=int, default=6)
    p.add_argument("-o", "--order", choices=["true", "false"], default="false")


@command("updateTopic", "create or update a topic", _topic_setup)
async def update_topic(admin: AdminClient, args: argparse.Namespace) -> Any:
    problem = names.topic_problem(args.topic)
    if problem:
        raise MQClientError(f"invalid topic {args.topic!r}: {problem}")
    config = TopicConfig(
        topic_name=args.topic,
        read_queue_nums=args.readQueueNums,
        write_queue_nums=args.writeQueueNums,
        perm=args.perm,
        order=args.order == "true",
    )
    done = []
    for addr in await targets(admin, args):
        await admin.create_topic(addr, config)
        done.append(addr)
    return {"created": args.topic, "brokers": done, "config": unstructure_body(config)}


@command(
    "deleteTopic",
    "delete a topic from a cluster's brokers and the NameServers",
    lambda p: (
        p.add_argument("-t", "--topic", required=True),
        p.add_argument("-c", "--clusterName", required=True),
    ),
)
async def delete_topic(admin: AdminClient, args: argparse.Namespace) -> Any:
    await admin.delete_topic(args.topic, args.clusterName)
    return {"deleted": args.topic, "cluster": args.clusterName}


@command("topicList", "every topic the NameServers know")
async def topic_list(admin: AdminClient, args: argparse.Namespace) -> Any:
    return await admin.topic_list()


@command("topicRoute", "a topic's route", lambda p: p.add_argument("-t", "--topic", required=True))
async def topic_route(admin: AdminClient, args: argparse.Namespace) -> Any:
    return unstructure_body(await admin.topic_route(args.topic))


@command(
    "topicStatus",
    "min/max offset per queue",
    lambda p: p.add_argument("-t", "--topic", required=True),
)
async def topic_status(admin: AdminClient, args: argparse.Namespace) -> Any:
    stats = await admin.topic_stats(args.topic)
    rows = [
        [mq.broker_name, mq.queue_id, o.min_offset, o.max_offset, o.last_update_timestamp]
        for mq, o in sorted(stats.offset_table.items())
    ]
    return {
        "headers": ["#Broker Name", "#QID", "#Min Offset", "#Max Offset", "#Last Updated"],
        "rows": rows,
    }


@command(
    "topicClusterList",
    "the clusters a topic lives in",
    lambda p: p.add_argument("-t", "--topic", required=True),
)
async def topic_cluster_list(admin: AdminClient, args: argparse.Namespace) -> Any:
    route = await admin.topic_route(args.topic)
    return sorted({d.cluster for d in route.broker_datas})


def _day_sum(stats) -> int:
    """Messages over the last day, as Java's statsAll reads it: the day window, or when that
    is still empty the hour, or the minute."""
    if stats is None:
        return 0
    for window in (stats.stats_day, stats.stats_hour, stats.stats_minute):
        if window.sum:
            return window.sum
    return 0


@command(
    "statsAll",
    "per topic and consumer group: lag, messages per second in and out, and over 24 hours",
    lambda p: (
        p.add_argument("-t", "--topic", help="one topic (default: every topic)"),
        p.add_argument("-a", "--activeTopic", action="store_true", help="only topics with traffic"),
    ),
)
async def stats_all(admin: AdminClient, args: argparse.Namespace) -> Any:
    topics = [args.topic] if args.topic else await admin.topic_list()
    rows = []
    for topic in sorted(t for t in topics if not K.is_system_topic(t) and not t.startswith("%")):
        masters = await admin.topic_masters(topic)
        puts = [await admin.view_broker_stats(a, "TOPIC_PUT_NUMS", topic) for a in masters]
        in_tps = sum(s.stats_minute.tps for s in puts if s is not None)
        in_day = sum(_day_sum(s) for s in puts)
        groups = await admin.topic_consumer_groups(topic)
        for group in groups or [""]:
            lag = out_tps = out_day = 0
            if group:
                stats = await admin.consume_stats(group, topic)
                lag = sum(w.broker_offset - w.consumer_offset for w in stats.offset_table.values())
                gets = [
                    await admin.view_broker_stats(a, "GROUP_GET_NUMS", f"{topic}@{group}")
                    for a in masters
                ]
                out_tps = sum(s.stats_minute.tps for s in gets if s is not None)
                out_day = sum(_day_sum(s) for s in gets)
            if args.activeTopic and not (in_tps or out_tps):
                continue
            rows.append([topic, group, lag, f"{in_tps:.2f}", f"{out_tps:.2f}", in_day, out_day])
    headers = ["#Topic", "#Consumer Group", "#Accumulation", "#InTPS", "#OutTPS",
               "#InMsg24Hour", "#OutMsg24Hour"]  # fmt: skip
    return {"headers": headers, "rows": rows}
