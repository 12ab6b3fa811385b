"""mqadmin: topics (create, change, delete, list, route, status, queue allocation)."""

from __future__ import annotations

import argparse
from typing import Any

from client import allocate
from client.admin import AdminClient
from client.errors import MQClientError
from client.mqadmin import args as A
from client.mqadmin.base import command, flag, table_result, targets, where
from client.route import MASTER_ID, subscribe_queues
from remoting import constants as K
from remoting.body import TopicConfig
from remoting.serde import unstructure_body


def _topic_setup(p: argparse.ArgumentParser) -> None:
    where(p)
    p.add_argument("-t", "--topic", required=True, type=A.topic)
    p.add_argument("-r", "--readQueueNums", type=A.queue_nums, default=8)
    p.add_argument("-w", "--writeQueueNums", type=A.queue_nums, default=8)
    p.add_argument("-p", "--perm", type=A.perm, default=6, help="2 (W), 4 (R), 6 (RW)")
    p.add_argument("-o", "--order", type=A.java_bool, default=False, help="true|false")
    p.add_argument("-u", "--unit", type=A.java_bool, default=False, help="true|false")
    p.add_argument("-s", "--hasUnitSub", type=A.java_bool, default=False, help="true|false")
    p.add_argument(
        "-a", "--attributes", default=None, help="5.x attributes, e.g. +message.type=FIFO"
    )


def _sys_flag(unit: bool, unit_sub: bool) -> int:
    return (K.TOPIC_SYS_FLAG_UNIT if unit else 0) | (K.TOPIC_SYS_FLAG_UNIT_SUB if unit_sub else 0)


@command("updateTopic", "create or update a topic", _topic_setup)
async def update_topic(admin: AdminClient, args: argparse.Namespace) -> Any:
    config = TopicConfig(
        topic_name=args.topic,
        read_queue_nums=args.readQueueNums,
        write_queue_nums=args.writeQueueNums,
        perm=args.perm,
        order=args.order,
        topic_sys_flag=_sys_flag(args.unit, args.hasUnitSub),
    )
    done = []
    for addr in await targets(admin, args):
        await admin.create_topic(addr, config, args.attributes)
        done.append(addr)
    out: dict[str, Any] = {"created": args.topic, "brokers": done}
    if args.order:  # as Apache: ordered topics keep brokerName:queues in the NameServers' KV
        out["orderConf"] = await _order_conf(admin, args, done)
    return {**out, "config": unstructure_body(config)}


async def _order_conf(admin: AdminClient, args: argparse.Namespace, addrs: list[str]) -> str:
    info = await admin.cluster_info()
    names = sorted(
        name
        for name, data in info.broker_addr_table.items()
        if data.broker_addrs.get(MASTER_ID) in addrs
    )
    conf = ";".join(f"{name}:{args.writeQueueNums}" for name in names)
    return await admin.put_order_conf(args.topic, conf, whole_cluster=not args.brokerAddr)


@command(
    "deleteTopic",
    "delete a topic from a cluster's masters and from the NameServers (for that cluster)",
    lambda p: (
        p.add_argument("-t", "--topic", required=True, type=A.topic),
        p.add_argument("-c", "--clusterName", required=True),
    ),
)
async def delete_topic(admin: AdminClient, args: argparse.Namespace) -> Any:
    brokers = await admin.delete_topic(args.topic, args.clusterName)
    return {"deleted": args.topic, "cluster": args.clusterName, "brokers": brokers}


@command(
    "topicList",
    "every topic the NameServers know (-c: with its cluster and consumer groups)",
    lambda p: flag(p, "-c", "clusterModel", "one row per topic and consumer group"),
)
async def topic_list(admin: AdminClient, args: argparse.Namespace) -> Any:
    topics = await admin.topic_list()
    if not args.clusterModel:
        return topics
    info = await admin.cluster_info()
    cluster_of = {n: c for c, names in info.cluster_addr_table.items() for n in names}
    rows = []
    for topic in topics:
        if topic.startswith((K.RETRY_GROUP_TOPIC_PREFIX, K.DLQ_GROUP_TOPIC_PREFIX)):
            continue
        route = await admin.instance.fetch_route(topic)
        datas = sorted(route.broker_datas, key=lambda d: d.broker_name) if route else []
        cluster = cluster_of.get(datas[0].broker_name, "") if datas else ""
        groups = await admin.topic_consumer_groups(topic) if datas else []
        rows += [[cluster, topic, group] for group in groups or [""]]
    return table_result(["#Cluster Name", "#Topic", "#Consumer Group"], rows)


def _route_table(route) -> dict[str, Any]:
    queues = {q.broker_name: q for q in route.queue_datas}
    rows, reads, writes = [], 0, 0
    for data in sorted(route.broker_datas, key=lambda d: d.broker_name):
        q = queues.get(data.broker_name)
        if q is None:
            continue
        reads, writes = reads + q.read_queue_nums, writes + q.write_queue_nums
        addrs = "{" + ", ".join(f"{k}={v}" for k, v in sorted(data.broker_addrs.items())) + "}"
        rows.append(
            [data.cluster, data.broker_name, addrs, q.read_queue_nums, q.write_queue_nums, q.perm]
        )
    headers = ["#ClusterName", "#BrokerName", "#BrokerAddrs", "#ReadQueue", "#WriteQueue", "#Perm"]
    footer = f"Total: {len(rows)} brokers, {reads} read queues, {writes} write queues"
    return table_result(headers, rows, footer, data=unstructure_body(route))


@command(
    "topicRoute",
    "a topic's route (-l: as a table)",
    lambda p: (
        p.add_argument("-t", "--topic", required=True, type=A.topic),
        flag(p, "-l", "list", "one row per broker"),
    ),
)
async def topic_route(admin: AdminClient, args: argparse.Namespace) -> Any:
    route = await admin.topic_route(args.topic)
    return _route_table(route) if args.list else unstructure_body(route)


@command(
    "topicStatus",
    "min/max offset per queue",
    lambda p: p.add_argument("-t", "--topic", required=True, type=A.topic),
)
async def topic_status(admin: AdminClient, args: argparse.Namespace) -> Any:
    stats = await admin.topic_stats(args.topic)
    rows = [
        [mq.broker_name, mq.queue_id, o.min_offset, o.max_offset, o.last_update_timestamp]
        for mq, o in sorted(stats.offset_table.items())
    ]
    return table_result(
        ["#Broker Name", "#QID", "#Min Offset", "#Max Offset", "#Last Updated"], rows
    )


@command(
    "topicClusterList",
    "the clusters a topic lives in",
    lambda p: p.add_argument("-t", "--topic", required=True, type=A.topic),
)
async def topic_cluster_list(admin: AdminClient, args: argparse.Namespace) -> Any:
    route = await admin.topic_route(args.topic)
    return sorted({d.cluster for d in route.broker_datas})


def _perm_setup(p: argparse.ArgumentParser) -> None:
    where(p)
    p.add_argument("-t", "--topic", required=True, type=A.topic)
    p.add_argument("-p", "--perm", required=True, type=A.perm, help="2 (W), 4 (R), 6 (RW)")


@command("updateTopicPerm", "change a topic's permission on a broker or a cluster", _perm_setup)
async def update_topic_perm(admin: AdminClient, args: argparse.Namespace) -> Any:
    route = await admin.topic_route(args.topic)
    if not route.queue_datas:
        raise MQClientError(f"topic {args.topic!r} has no queues on any broker")
    perms = {q.broker_name: q for q in route.queue_datas}
    masters = {d.broker_name: d.broker_addrs.get(MASTER_ID) for d in route.broker_datas}
    if args.brokerAddr:
        names = [name for name, addr in masters.items() if addr == args.brokerAddr]
        if not names:
            raise MQClientError(
                f"{args.brokerAddr} is not the master of a broker serving {args.topic!r}"
            )
    else:
        cluster_names = (await admin.cluster_info()).cluster_addr_table.get(args.clusterName)
        if not cluster_names:
            raise MQClientError(f"cluster {args.clusterName!r} not found")
        names = sorted(n for n in cluster_names if n in perms and masters.get(n))
    changed = []
    for name in names:
        queue = perms[name]
        if queue.perm == args.perm:
            changed.append({"broker": masters[name], "perm": f"{queue.perm} (unchanged)"})
            continue
        config = TopicConfig(
            topic_name=args.topic,
            read_queue_nums=queue.read_queue_nums,
            write_queue_nums=queue.write_queue_nums,
            perm=args.perm,
            topic_sys_flag=queue.topic_sys_flag,
        )
        await admin.create_topic(masters[name], config)
        changed.append({"broker": masters[name], "perm": f"{queue.perm} -> {args.perm}"})
    return {"topic": args.topic, "brokers": changed}


@command(
    "allocateMQ",
    "which queues of a topic each client would consume (AllocateMessageQueueAveragely)",
    lambda p: (
        p.add_argument("-t", "--topic", required=True, type=A.topic),
        p.add_argument("-i", "--ipList", required=True, type=A.ip_list, help="client ids, a,b,c"),
    ),
)
async def allocate_mq(admin: AdminClient, args: argparse.Namespace) -> Any:
    route = await admin.topic_route(args.topic)
    mqs = sorted(subscribe_queues(args.topic, route))
    result = {
        cid: [
            {"topic": mq.topic, "brokerName": mq.broker_name, "queueId": mq.queue_id}
            for mq in allocate.averagely(cid, mqs, args.ipList)
        ]
        for cid in args.ipList
    }
    return {"result": result}
