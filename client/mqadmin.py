"""``mqadmin``: RocketMQ's admin command line (subcommand and flag names as in Java's tool).
Tables for people by default, ``--json`` for scripts. Exit 1 with a message on any error."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import trio

from client.admin import AdminClient
from client.errors import MQClientError
from client.message import Message
from client.producer import Producer
from remoting import constants as K
from remoting.body import SubscriptionGroupConfig, TopicConfig
from remoting.errors import RemotingError
from remoting.message import MessageExt
from remoting.serde import unstructure_body

Command = Callable[[AdminClient, argparse.Namespace], Awaitable[Any]]
COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None], Command]] = {}


def command(
    name: str, help: str, setup: Callable[[argparse.ArgumentParser], None] = lambda p: None
):
    def register(fn: Command) -> Command:
        COMMANDS[name] = (help, setup, fn)
        return fn

    return register


def table(headers: list[str], rows: list[list[Any]]) -> str:
    cells = [headers] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells
    )


def message_view(m: MessageExt) -> dict[str, Any]:
    return {
        "msgId": m.msg_id,
        "offsetMsgId": m.offset_msg_id,
        "topic": m.topic,
        "tags": m.tags,
        "keys": m.keys,
        "queueId": m.queue_id,
        "queueOffset": m.queue_offset,
        "commitLogOffset": m.commit_log_offset,
        "reconsumeTimes": m.reconsume_times,
        "bornTimestamp": m.born_timestamp,
        "storeTimestamp": m.store_timestamp,
        "bornHost": m.born_host,
        "storeHost": m.store_host,
        "properties": m.properties,
        "body": m.body.decode("utf-8", "replace"),
    }


def where(p: argparse.ArgumentParser) -> None:
    group = p.add_mutually_exclusive_group(required=True)
    group.add_argument("-c", "--clusterName")
    group.add_argument("-b", "--brokerAddr")


async def targets(admin: AdminClient, args: argparse.Namespace) -> list[str]:
    if args.brokerAddr:
        return [args.brokerAddr]
    return list((await admin.masters(args.clusterName)).values())


# ---------------------------------------------------------------------- cluster and brokers


@command("clusterList", "list clusters, brokers and their load")
async def cluster_list(admin: AdminClient, args: argparse.Namespace) -> Any:
    info = await admin.cluster_info()
    rows = []
    for cluster, names in sorted(info.cluster_addr_table.items()):
        for name in sorted(names):
            for bid, addr in sorted(info.broker_addr_table[name].broker_addrs.items()):
                try:
                    rt = await admin.runtime_info(addr)
                except (MQClientError, RemotingError, OSError):
                    rt = {}
                rows.append(
                    [
                        cluster,
                        name,
                        bid,
                        addr,
                        rt.get("brokerVersionDesc", "?"),
                        rt.get("commitLogMaxOffset", "?"),
                        rt.get("brokerRole", "?"),
                    ]
                )
    headers = ["#Cluster Name", "#Broker Name", "#BID", "#Addr", "#Version", "#MaxOffset", "#Role"]
    return {"headers": headers, "rows": rows}


@command("brokerStatus", "a broker's runtime info", lambda p: where(p))
async def broker_status(admin: AdminClient, args: argparse.Namespace) -> Any:
    return {addr: await admin.runtime_info(addr) for addr in await targets(admin, args)}


@command("getBrokerConfig", "a broker's configuration", lambda p: where(p))
async def get_broker_config(admin: AdminClient, args: argparse.Namespace) -> Any:
    return {addr: await admin.broker_config(addr) for addr in await targets(admin, args)}


@command("haStatus", "replication status of masters (per slave) and slaves", lambda p: where(p))
async def ha_status(admin: AdminClient, args: argparse.Namespace) -> Any:
    return {addr: await admin.ha_status(addr) for addr in await targets(admin, args)}


# ---------------------------------------------------------------------- topics


def _topic_setup(p: argparse.ArgumentParser) -> None:
    where(p)
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-r", "--readQueueNums", type=int, default=8)
    p.add_argument("-w", "--writeQueueNums", type=int, default=8)
    p.add_argument("-p", "--perm", type=int, default=6)
    p.add_argument("-o", "--order", choices=["true", "false"], default="false")


@command("updateTopic", "create or update a topic", _topic_setup)
async def update_topic(admin: AdminClient, args: argparse.Namespace) -> Any:
    problem = K.topic_name_problem(args.topic)
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


# ---------------------------------------------------------------------- groups


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


# ---------------------------------------------------------------------- messages


@command(
    "queryMsgById",
    "a message by its offsetMsgId",
    lambda p: p.add_argument("-i", "--msgId", required=True),
)
async def query_msg_by_id(admin: AdminClient, args: argparse.Namespace) -> Any:
    return message_view(await admin.view_message(args.msgId))


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


def parse_time(text: str) -> int:
    """ms since the epoch, ``now``, or RocketMQ's ``yyyy-MM-dd#HH:mm:ss:SSS`` (local time)."""
    import datetime

    if text == "now":
        return int(time.time() * 1000)
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        moment = datetime.datetime.strptime(text, "%Y-%m-%d#%H:%M:%S:%f")
    except ValueError:
        raise MQClientError(
            f"bad time {text!r}: use ms, 'now' or yyyy-MM-dd#HH:mm:ss:SSS"
        ) from None
    return int(moment.timestamp() * 1000)


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
    "topicClusterList",
    "the clusters a topic lives in",
    lambda p: p.add_argument("-t", "--topic", required=True),
)
async def topic_cluster_list(admin: AdminClient, args: argparse.Namespace) -> Any:
    route = await admin.topic_route(args.topic)
    return sorted({d.cluster for d in route.broker_datas})


@command(
    "updateBrokerConfig",
    "change a broker setting at run time (if the broker supports it)",
    lambda p: (
        where(p),
        p.add_argument("-k", "--key", required=True),
        p.add_argument("-v", "--value", required=True),
    ),
)
async def update_broker_config(admin: AdminClient, args: argparse.Namespace) -> Any:
    addrs = await targets(admin, args)
    for addr in addrs:
        await admin.update_broker_config(addr, {args.key: args.value})
    return {"updated": {args.key: args.value}, "brokers": addrs}


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


def _promote_setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("-b", "--brokerName", required=True)
    p.add_argument("--layout", type=Path, required=True, help="the mqcluster layout folder")
    p.add_argument("--base-dir", type=Path, help="as given to mqcluster (default .run/<layout>)")
    p.add_argument("--port-offset", type=int, default=0)
    p.add_argument("--force", action="store_true", help="stop a master that still answers")


@command("promoteSlave", "make a pair's slave its master, fencing the old master", _promote_setup)
async def promote_slave(admin: AdminClient, args: argparse.Namespace) -> Any:
    from deploy.cluster import Cluster, ClusterError
    from deploy.manifest import load_manifest

    manifest = load_manifest(args.layout).shifted(args.port_offset)
    base = args.base_dir or Path(".run") / (
        manifest.name + (f"+{args.port_offset}" if args.port_offset else "")
    )
    lines: list[str] = []
    cluster = Cluster(manifest, base, out=lines.append)
    try:
        await trio.to_thread.run_sync(lambda: cluster.promote(args.brokerName, force=args.force))
    except ClusterError as exc:
        raise MQClientError(str(exc)) from None
    return lines


def _kv_setup(p: argparse.ArgumentParser, with_value: bool) -> None:
    p.add_argument("-s", "--namespace", required=True)
    p.add_argument("-k", "--key", required=True)
    if with_value:
        p.add_argument("-v", "--value", required=True)


async def _every_namesrv(admin: AdminClient, code: int, fields: dict[str, str]) -> list[str]:
    done = []
    for addr in admin.instance.config.namesrv_addrs:
        await admin._ok(addr, admin.instance.request(code, fields))
        done.append(addr)
    return done


@command(
    "updateKvConfig", "put a KV config entry on every NameServer", lambda p: _kv_setup(p, True)
)
async def update_kv_config(admin: AdminClient, args: argparse.Namespace) -> Any:
    from remoting.codes import RequestCode

    fields = {"namespace": args.namespace, "key": args.key, "value": args.value}
    return {"namesrvs": await _every_namesrv(admin, RequestCode.PUT_KV_CONFIG, fields)}


@command(
    "deleteKvConfig", "delete a KV config entry on every NameServer", lambda p: _kv_setup(p, False)
)
async def delete_kv_config(admin: AdminClient, args: argparse.Namespace) -> Any:
    from remoting.codes import RequestCode

    fields = {"namespace": args.namespace, "key": args.key}
    return {"namesrvs": await _every_namesrv(admin, RequestCode.DELETE_KV_CONFIG, fields)}


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
    "clusterRT",
    "send round-trip time to every master of a cluster",
    lambda p: (
        p.add_argument("-c", "--clusterName"),
        p.add_argument("-a", "--amount", type=int, default=100),
        p.add_argument("-s", "--size", type=int, default=128),
    ),
)
async def cluster_rt(admin: AdminClient, args: argparse.Namespace) -> Any:
    from remoting.body import MessageQueue

    producer = Producer(admin.instance, "PID_SMSC")
    rows = []
    info = await admin.cluster_info()
    clusters = [args.clusterName] if args.clusterName else sorted(info.cluster_addr_table)
    for cluster in clusters:
        masters = await admin.masters(cluster)
        for name, addr in masters.items():
            mq = MessageQueue(topic=name, broker_name=name, queue_id=0)  # the broker's own topic
            times, failed = [], 0
            for _ in range(args.amount):
                t0 = time.perf_counter()
                try:
                    await producer.send(Message(name, b"x" * args.size), mq)
                    times.append((time.perf_counter() - t0) * 1000)
                except (MQClientError, RemotingError):
                    failed += 1
            avg = sum(times) / len(times) if times else float("nan")
            rows.append([cluster, name, addr, f"{avg:.2f}", f"{max(times, default=0):.2f}", failed])
    headers = ["#Cluster Name", "#Broker Name", "#Addr", "#RT avg ms", "#RT max ms", "#Failed"]
    return {"headers": headers, "rows": rows}


# ---------------------------------------------------------------------- main


def render(result: Any, as_json: bool) -> str:
    if as_json:
        return json.dumps(result, indent=2, sort_keys=True, default=str)
    if isinstance(result, dict) and "headers" in result:
        out = table(result["headers"], result["rows"])
        return out + ("\n\n" + result["footer"] if result.get("footer") else "")
    if isinstance(result, list) and all(isinstance(x, str) for x in result):
        return "\n".join(result)
    if isinstance(result, dict) and all(isinstance(v, str) for v in result.values()):
        return "\n\n".join(f"== {k}\n{v}" for k, v in result.items())
    return json.dumps(result, indent=2, sort_keys=True, default=str)


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(
        prog="mqadmin", description="RocketMQ admin tool (rocketmq-trio)"
    )
    sub = root.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (help_text, setup, _) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.add_argument("-n", "--namesrvAddr", default=None, help="host:port;host:port")
        p.add_argument("--json", action="store_true", help="machine-readable output")
        setup(p)
    return root


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    namesrv = args.namesrvAddr or os.environ.get("NAMESRV_ADDR")
    if not namesrv:
        print("mqadmin: no NameServer: pass -n host:port or set NAMESRV_ADDR", file=sys.stderr)
        return 1
    _, _, fn = COMMANDS[args.command]

    async def run() -> Any:
        async with AdminClient.open(namesrv) as admin:
            return await fn(admin, args)

    try:
        result = trio.run(run)
    except (MQClientError, RemotingError, OSError) as exc:
        print(f"mqadmin {args.command}: {exc}", file=sys.stderr)
        return 1
    print(render(result, args.json))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
