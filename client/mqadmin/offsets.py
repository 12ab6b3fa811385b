"""mqadmin: moving a group's offsets (reset to a time, skip what is accumulated, clone)."""

from __future__ import annotations

import argparse
from typing import Any

from client.admin import AdminClient
from client.mqadmin import args as A
from client.mqadmin.base import command, flag, table_result

RESET_HEADERS = ["#brokerName", "#queueId", "#offset"]


def _offsets_table(table: dict) -> dict[str, Any]:
    rows = [[mq.broker_name, mq.queue_id, offset] for mq, offset in sorted(table.items())]
    return table_result(RESET_HEADERS, rows)


def _reset_setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("-g", "--group", required=True, type=A.group)
    p.add_argument("-t", "--topic", required=True, type=A.topic)
    p.add_argument(
        "-s",
        "--timestamp",
        required=True,
        type=A.timestamp,
        help="now, ms since the epoch, or yyyy-MM-dd#HH:mm:ss:SSS",
    )
    p.add_argument("-f", "--force", type=A.java_bool, default=True, help="true|false")
    flag(p, "-c", "cplus", "the group's consumers are C++ clients")


@command(
    "resetOffsetByTime",
    "move a group's offsets on a topic to a point in time (online or not)",
    _reset_setup,
)
async def reset_offset_by_time(admin: AdminClient, args: argparse.Namespace) -> Any:
    table = await admin.reset_offset_by_time(
        args.group, args.topic, args.timestamp, force=args.force, cpp=args.cplus
    )
    return _offsets_table(table)


@command(
    "skipAccumulatedMessage",
    "move a group's offsets on a topic to the end: what is not consumed yet is skipped",
    lambda p: (
        p.add_argument("-g", "--group", required=True, type=A.group),
        p.add_argument("-t", "--topic", required=True, type=A.topic),
        p.add_argument("-f", "--force", type=A.java_bool, default=True, help="true|false"),
    ),
)
async def skip_accumulated_message(admin: AdminClient, args: argparse.Namespace) -> Any:
    # timestamp -1: every queue's max offset, as Apache's tool asks
    table = await admin.reset_offset_by_time(args.group, args.topic, -1, force=args.force)
    return _offsets_table(table)


@command(
    "cloneGroupOffset",
    "a new consumer group starts where another one is on a topic",
    lambda p: (
        p.add_argument("-s", "--srcGroup", required=True, type=A.group),
        p.add_argument("-d", "--destGroup", required=True, type=A.group),
        p.add_argument("-t", "--topic", required=True, type=A.topic),
        p.add_argument("-o", "--offline", type=A.java_bool, default=False, help="true|false"),
    ),
)
async def clone_group_offset(admin: AdminClient, args: argparse.Namespace) -> Any:
    brokers = await admin.clone_group_offset(
        args.srcGroup, args.destGroup, args.topic, offline=args.offline
    )
    return {
        "cloned": f"{args.srcGroup} -> {args.destGroup}",
        "topic": args.topic,
        "brokers": brokers,
    }
