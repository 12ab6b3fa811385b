"""mqadmin: one broker at a time (send checks, its producers, store maintenance on demand)."""

from __future__ import annotations

import argparse
import time
from typing import Any

from client.admin import AdminClient
from client.errors import MQClientError
from client.message import Message
from client.mqadmin import args as A
from client.mqadmin.base import Shown, command
from client.producer import Producer


def _body(size: int) -> bytes:
    """Apache's sendMsgStatus body: "hello jodie" repeated to about ``size`` bytes."""
    return b"hello jodie" * max(1, -(-size // 11))


@command(
    "sendMsgStatus",
    "send messages to a broker's own topic, one round trip each",
    lambda p: (
        p.add_argument("-b", "--brokerName", required=True),
        p.add_argument("-s", "--messageSize", type=A.message_size, default=128),
        p.add_argument("-c", "--count", type=A.count, default=50),
    ),
)
async def send_msg_status(admin: AdminClient, args: argparse.Namespace) -> Any:
    producer = Producer(admin.instance, "PID_SMSC")
    await producer.send(Message(args.brokerName, _body(16)))  # warm up the route, as Apache
    results = []
    for _ in range(args.count):
        t0 = time.perf_counter()
        result = await producer.send(Message(args.brokerName, _body(args.messageSize)))
        results.append(
            {
                "rtMillis": round((time.perf_counter() - t0) * 1000, 2),
                "sendStatus": result.status.name,
                "msgId": result.msg_id,
                "offsetMsgId": result.offset_msg_id,
                "queueId": result.message_queue.queue_id,
                "queueOffset": result.queue_offset,
            }
        )
    text = "\n".join(
        f"rt={r['rtMillis']}ms, SendResult [sendStatus={r['sendStatus']}, msgId={r['msgId']}, "
        f"offsetMsgId={r['offsetMsgId']}, queueId={r['queueId']}, queueOffset={r['queueOffset']}]"
        for r in results
    )
    return Shown(text, results)


@command(
    "producer",
    "every producer group a broker knows, with its instances",
    lambda p: p.add_argument("-b", "--broker", required=True, type=A.address),
)
async def producer_info(admin: AdminClient, args: argparse.Namespace) -> Any:
    table = await admin.producer_table(args.broker)
    lines = []
    for group, infos in sorted(table.items()):
        if not infos:
            lines.append(f"producer group ({group}) instances are empty")
        for info in infos:
            lines.append(
                f"producer group ({group}) instance : clientId={info.get('clientId')},"
                f"remoteIP={info.get('remoteIP')}, language={info.get('language')}, "
                f"version={info.get('version')}, "
                f"lastUpdateTimestamp={info.get('lastUpdateTimestamp')}"
            )
    return Shown("\n".join(lines), table)


def _scope_setup(p: argparse.ArgumentParser) -> None:
    """Apache's maintenance commands: -b one broker, -c a cluster's, neither every broker."""
    group = p.add_mutually_exclusive_group()
    group.add_argument("-b", "--brokerAddr", type=A.address)
    group.add_argument("-c", "--cluster", dest="clusterName")


async def _every_broker(admin: AdminClient, args: argparse.Namespace) -> list[str]:
    if args.brokerAddr:
        return [args.brokerAddr]
    info = await admin.cluster_info()
    if args.clusterName and args.clusterName not in info.cluster_addr_table:
        raise MQClientError(f"cluster {args.clusterName!r} not found")
    names = (
        info.cluster_addr_table[args.clusterName]
        if args.clusterName
        else set(info.broker_addr_table)
    )
    addrs = [
        addr
        for name in sorted(names)
        for _, addr in sorted(info.broker_addr_table[name].broker_addrs.items())
    ]
    if not addrs:
        raise MQClientError("no broker is registered with the NameServers")
    return addrs


async def _on_each(admin: AdminClient, args: argparse.Namespace, operation) -> Any:
    results = {addr: await operation(addr) for addr in await _every_broker(admin, args)}
    if not all(results.values()):
        refused = sorted(addr for addr, ok in results.items() if not ok)
        raise MQClientError(f"refused by {', '.join(refused)}")
    return Shown("success", {"brokers": sorted(results)})


@command(
    "cleanExpiredCQ",
    "drop ConsumeQueue and index files that point only at deleted CommitLog data, now",
    _scope_setup,
)
async def clean_expired_cq(admin: AdminClient, args: argparse.Namespace) -> Any:
    return await _on_each(admin, args, admin.clean_expired_consume_queue)


@command(
    "deleteExpiredCommitLog",
    "delete CommitLog files older than fileReservedTime now, whatever deleteWhen says",
    _scope_setup,
)
async def delete_expired_commit_log(admin: AdminClient, args: argparse.Namespace) -> Any:
    return await _on_each(admin, args, admin.delete_expired_commit_log)


@command(
    "cleanUnusedTopic",
    "drop the ConsumeQueues of topics a broker's store holds but its topic config does not",
    _scope_setup,
)
async def clean_unused_topic(admin: AdminClient, args: argparse.Namespace) -> Any:
    return await _on_each(admin, args, admin.clean_unused_topic)
