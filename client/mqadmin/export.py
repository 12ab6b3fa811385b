"""mqadmin: exporting a cluster's metadata, configuration and figures as JSON files, in the
shapes Apache 4.9.8's export commands write (metadata.json / topic.json /
subscriptionGroup.json, configs.json, metrics.json under -f, default /tmp/rocketmq/export).
A figure our brokers do not report is written as null."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import attrs
import trio

from client.admin import AdminClient
from client.admin_brokers import parse_properties
from client.errors import MQClientError
from client.mqadmin import args as A
from client.mqadmin.base import command, flag
from client.mqadmin.cluster import first_number
from client.mqadmin.monitor import day_sum
from client.route import MASTER_ID
from remoting import constants as K
from remoting import fastjson
from remoting.serde import unstructure_body
from remoting.version import CURRENT_VERSION_DESC, version_desc

DEFAULT_DIR = "/tmp/rocketmq/export"
# The broker settings Apache's exportConfigs keeps.
EXPORTED_BROKER_KEYS = (
    "brokerClusterName",
    "brokerId",
    "brokerName",
    "brokerRole",
    "fileReservedTime",
    "filterServerNums",
    "flushDiskType",
    "maxMessageSize",
    "messageDelayLevel",
    "msgTraceTopicName",
    "slaveReadEnable",
    "traceOn",
    "traceTopicEnable",
    "useTLS",
    "autoCreateTopicEnable",
    "autoCreateSubscriptionGroup",
)


async def _write(folder: str, name: str, data: Any) -> dict[str, Any]:
    path = Path(folder) / name
    text = fastjson.dumps(data, standard=True, pretty=True)

    def write() -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    await trio.to_thread.run_sync(write)
    return {"exported": str(path)}


def _path_setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("-f", "--filePath", type=A.path_to_write, default=DEFAULT_DIR, help="a folder")


def _metadata_setup(p: argparse.ArgumentParser) -> None:
    group = p.add_mutually_exclusive_group(required=True)
    group.add_argument("-c", "--clusterName", help="every master of it, merged")
    group.add_argument("-b", "--brokerAddr", type=A.address, help="one broker")
    _path_setup(p)
    flag(p, "-t", "topic", "topics only (topic.json)")
    flag(p, "-g", "subscriptionGroup", "subscription groups only (subscriptionGroup.json)")
    flag(p, "-s", "specialTopic", "with retry and dead-letter topics")


async def _masters(admin: AdminClient, cluster: str) -> list[str]:
    masters = sorted((await admin.masters(cluster)).values())
    if not masters:
        raise MQClientError(f"cluster {cluster!r} has no master online")
    return masters


@command("exportMetadata", "topics and subscription groups of a cluster or broker", _metadata_setup)
async def export_metadata(admin: AdminClient, args: argparse.Namespace) -> Any:
    addrs = [args.brokerAddr] if args.brokerAddr else await _masters(admin, args.clusterName)
    topics: dict[str, Any] = {}
    groups: dict[str, Any] = {}
    for addr in addrs:  # merged as Apache merges: queue numbers add up across masters
        for name, config in (
            await admin.user_topic_config(addr, special=args.specialTopic)
        ).items():
            view, seen = unstructure_body(config), topics.get(name)
            if seen is not None:
                view["readQueueNums"] += seen["readQueueNums"]
                view["writeQueueNums"] += seen["writeQueueNums"]
            topics[name] = view
        for name, config in (await admin.user_sub_groups(addr)).items():
            view, seen = unstructure_body(config), groups.get(name)
            if seen is not None:
                view["retryQueueNums"] += seen["retryQueueNums"]
            groups[name] = view
    result: dict[str, Any] = {"exportTime": int(time.time() * 1000)}
    if args.topic:
        result["topicConfigTable"], name = topics, "topic.json"
    elif args.subscriptionGroup:
        result["subscriptionGroupTable"], name = groups, "subscriptionGroup.json"
    else:
        result.update(topicConfigTable=topics, subscriptionGroupTable=groups)
        name = "metadata.json"
    return await _write(args.filePath, name, result)


def _cluster_setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("-c", "--clusterName", required=True)
    _path_setup(p)


async def _pairs(admin: AdminClient, cluster: str) -> dict[str, tuple[str, list[str]]]:
    """brokerName -> (master address, slave addresses) of a cluster's brokers with a master."""
    info = await admin.cluster_info()
    names = info.cluster_addr_table.get(cluster)
    if not names:
        raise MQClientError(f"cluster {cluster!r} not found")
    pairs = {}
    for name in sorted(names):
        addrs = info.broker_addr_table[name].broker_addrs
        if MASTER_ID in addrs:
            slaves = [a for bid, a in sorted(addrs.items()) if bid != MASTER_ID]
            pairs[name] = (addrs[MASTER_ID], slaves)
    return pairs


@command("exportConfigs", "a cluster's main broker settings and its size", _cluster_setup)
async def export_configs(admin: AdminClient, args: argparse.Namespace) -> Any:
    pairs = await _pairs(admin, args.clusterName)
    configs = {}
    for name, (master, _) in pairs.items():
        values = parse_properties((await admin.broker_config(master)).encode())
        configs[name] = {k: values.get(k) for k in EXPORTED_BROKER_KEYS}
    scale = {
        "namesrvSize": len(admin.instance.config.namesrv_addrs),
        "masterBrokerSize": len(pairs),
        "slaveBrokerSize": sum(len(slaves) for _, slaves in pairs.values()),
    }
    return await _write(
        args.filePath, "configs.json", {"brokerConfigs": configs, "clusterScale": scale}
    )


@attrs.define
class Totals:
    tps: dict[str, float] = attrs.Factory(
        lambda: dict.fromkeys(
            ("totalNormalInTps", "totalNormalOutTps", "totalTransInTps", "totalScheduleInTps"), 0.0
        )
    )
    day: dict[str, int] = attrs.Factory(
        lambda: dict.fromkeys(
            ("normalOneDayInNum", "normalOneDayOutNum", "transOneDayInNum", "scheduleOneDayInNum"),
            0,
        )
    )


async def _broker_metrics(admin: AdminClient, addr: str, totals: Totals) -> dict[str, Any]:
    rt = await admin.runtime_info(addr)
    config = parse_properties((await admin.broker_config(addr)).encode())
    trans = await admin.view_broker_stats(addr, "TOPIC_PUT_NUMS", K.TRANS_HALF_TOPIC)
    schedule = await admin.view_broker_stats(addr, "TOPIC_PUT_NUMS", K.SCHEDULE_TOPIC)
    groups = await admin.user_sub_groups(addr)
    tps = {
        "normalInTps": first_number(rt.get("putTps")),
        "normalOutTps": first_number(rt.get("getTransferedTps")),
        "transInTps": trans.stats_minute.tps if trans else 0.0,
        "scheduleInTps": schedule.stats_minute.tps if schedule else 0.0,
    }
    day = {"transOneDayInNum": day_sum(trans), "scheduleOneDayInNum": day_sum(schedule)}
    for key, value in zip(totals.tps, tps.values(), strict=True):
        totals.tps[key] += value or 0.0
    for key in day:
        totals.day[key] += day[key]
    clients = set()
    for group in groups:
        try:
            connection = await admin.consumer_connection(group)
        except MQClientError:
            continue
        clients |= {f"{c.language}%{version_desc(c.version)}" for c in connection.connection_set}
    return {
        "runtimeEnv": {
            "cpuNum": config.get("clientCallbackExecutorThreads"),
            "totalMemKBytes": rt.get("totalMemKBytes"),
        },
        "runtimeQuota": {
            "diskRatio": {
                "commitLogDiskRatio": rt.get("commitLogDiskRatio"),
                "consumeQueueDiskRatio": rt.get("consumeQueueDiskRatio"),
            },
            "tps": tps,
            "oneDayNum": {"normalOneDayInNum": None, "normalOneDayOutNum": None, **day},
            "messageAverageSize": rt.get("putMessageAverageSize"),
            "topicSize": len(await admin.user_topic_config(addr, special=False)),
            "groupSize": len(groups),
        },
        "runtimeVersion": {"rocketmqVersion": CURRENT_VERSION_DESC, "clientInfo": sorted(clients)},
    }


@command("exportMetrics", "a cluster's traffic, disk use and client versions", _cluster_setup)
async def export_metrics(admin: AdminClient, args: argparse.Namespace) -> Any:
    pairs = await _pairs(admin, args.clusterName)
    totals = Totals()
    report = {
        name: await _broker_metrics(admin, master, totals) for name, (master, _) in pairs.items()
    }
    result = {
        "evaluateReport": report,
        "totalData": {"totalTps": totals.tps, "totalOneDayNum": totals.day},
    }
    return await _write(args.filePath, "metrics.json", result)
