"""mqadmin: traffic and lag over time (statsAll, startMonitoring)."""

from __future__ import annotations

import argparse
import time
from typing import Any

import trio

from client.admin import AdminClient
from client.mqadmin import args as A
from client.mqadmin.base import command, flag, table_result
from client.mqadmin.groups import every_group
from remoting import constants as K


def day_sum(stats) -> int:
    """Messages over the last day, as Java's statsAll reads it: the day window, or when that
    is still empty the hour, or the minute."""
    if stats is None:
        return 0
    for window in (stats.stats_day, stats.stats_hour, stats.stats_minute):
        if window.sum:
            return window.sum
    return 0


STATS_HEADERS = [
    "#Topic",
    "#Consumer Group",
    "#Accumulation",
    "#InTPS",
    "#OutTPS",
    "#InMsg24Hour",
    "#OutMsg24Hour",
]


@command(
    "statsAll",
    "per topic and consumer group: lag, messages per second in and out, and over 24 hours",
    lambda p: (
        flag(p, "-a", "activeTopic", "only topics with traffic"),
        p.add_argument("-t", "--topic", type=A.topic, help="one topic (default: every topic)"),
    ),
)
async def stats_all(admin: AdminClient, args: argparse.Namespace) -> Any:
    topics = [args.topic] if args.topic else await admin.topic_list()
    rows = []
    for topic in sorted(t for t in topics if not K.is_system_topic(t) and not t.startswith("%")):
        masters = await admin.topic_masters(topic)
        puts = [await admin.view_broker_stats(a, "TOPIC_PUT_NUMS", topic) for a in masters]
        in_tps = sum(s.stats_minute.tps for s in puts if s is not None)
        in_day = sum(day_sum(s) for s in puts)
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
                out_day = sum(day_sum(s) for s in gets)
            if args.activeTopic and not (in_tps or out_tps):
                continue
            rows.append([topic, group, lag, f"{in_tps:.2f}", f"{out_tps:.2f}", in_day, out_day])
    return table_result(STATS_HEADERS, rows)


@command(
    "startMonitoring",
    "watch every consumer group: a lag table every -i seconds until Ctrl-C (or --rounds)",
    lambda p: (
        p.add_argument("-i", "--interval", type=A.seconds, default=60, help="seconds (60)"),
        p.add_argument("--rounds", type=A.non_negative, default=0, help="stop after N; 0: never"),
    ),
)
async def start_monitoring(admin: AdminClient, args: argparse.Namespace) -> Any:
    done = 0
    while True:
        table = await every_group(admin)
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        table["headers"] = ["#Time", *table["headers"]]
        table["rows"] = [[stamp, *row] for row in table["rows"]]
        args.emit(table)
        done += 1
        if args.rounds and done >= args.rounds:
            return None
        await trio.sleep(args.interval)
