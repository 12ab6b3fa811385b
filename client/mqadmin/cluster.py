"""mqadmin: clusters and brokers (list, status, config, HA, send round trips, promotion)."""

from __future__ import annotations

import argparse
import time
from typing import Any

import trio

from client.admin import AdminClient
from client.errors import MQClientError
from client.message import Message
from client.mqadmin import args as A
from client.mqadmin.base import Shown, command, flag, key_values, table_result, targets, where
from client.producer import Producer
from remoting.errors import RemotingError

UNREACHABLE = (MQClientError, RemotingError, OSError)

BASE_HEADERS = [
    "#Cluster Name",
    "#Broker Name",
    "#BID",
    "#Addr",
    "#Version",
    "#InTPS(LOAD)",
    "#OutTPS(LOAD)",
    "#PCWait(ms)",
    "#Hour",
    "#SPACE",
    "#Role",
    "#MaxOffset",
]
MORE_HEADERS = [
    "#Cluster Name",
    "#Broker Name",
    "#InTotalYest",
    "#OutTotalYest",
    "#InTotalToday",
    "#OutTotalToday",
]


def first_number(text: str | None) -> float | None:
    """Java's tps values are "10s 1min 10min" figures; the first is the one shown."""
    try:
        return float((text or "").split()[0])
    except (IndexError, ValueError):
        return None


def _tps(rt: dict[str, str], tps_key: str, pool: str) -> str:
    if tps_key not in rt:
        return "-"
    # a broker up for less than 10 s reports "  " (no window covered yet): Java shows 0
    tps = first_number(rt[tps_key]) or 0.0
    queued = rt.get(f"{pool}ThreadPoolQueueSize", "-")
    wait = rt.get(f"{pool}ThreadPoolQueueHeadWaitTimeMills", "-")
    return f"{tps:.2f}({queued},{wait}ms)"


def base_row(rt: dict[str, str], now_ms: int) -> list[Any]:
    """Apache's clusterList columns from a broker's runtime info ("-" for a figure the broker
    does not report), then ours: its role and CommitLog end."""
    earliest = first_number(rt.get("earliestMessageTimeStamp"))
    ratio = first_number(rt.get("commitLogDiskRatio"))
    return [
        rt.get("brokerVersionDesc", "-"),
        _tps(rt, "putTps", "send"),
        _tps(rt, "getTransferedTps", "pull"),
        rt.get("pageCacheLockTimeMills", "-"),
        f"{(now_ms - earliest) / 3_600_000:.2f}" if earliest else "-",
        f"{ratio:.4f}" if ratio is not None else "-",
        rt.get("brokerRole", "-"),
        rt.get("commitLogMaxOffset", "-"),
    ]


def _difference(rt: dict[str, str], later: str, earlier: str) -> Any:
    try:
        return int(rt[later]) - int(rt[earlier])
    except (KeyError, ValueError):
        return "-"


def more_row(rt: dict[str, str]) -> list[Any]:
    return [
        _difference(rt, "msgPutTotalTodayMorning", "msgPutTotalYesterdayMorning"),
        _difference(rt, "msgGetTotalTodayMorning", "msgGetTotalYesterdayMorning"),
        _difference(rt, "msgPutTotalTodayNow", "msgPutTotalTodayMorning"),
        _difference(rt, "msgGetTotalTodayNow", "msgGetTotalTodayMorning"),
    ]


async def cluster_table(admin: AdminClient, more: bool) -> dict[str, Any]:
    """One row per broker the NameServers list. A broker that does not answer keeps its row
    (the NameServers drop a silent broker only after 120 s) marked unreachable; none listed,
    or none answering, is an error."""
    info = await admin.cluster_info()
    rows, answered, listed = [], 0, 0
    now = int(time.time() * 1000)
    for cluster, names in sorted(info.cluster_addr_table.items()):
        for name in sorted(names):
            data = info.broker_addr_table.get(name)
            for bid, addr in sorted(data.broker_addrs.items()) if data else []:
                listed += 1
                try:
                    rt = await admin.runtime_info(addr)
                    answered += 1
                except UNREACHABLE:
                    rt = {"brokerRole": "unreachable"}
                if more:
                    rows.append([cluster, name, *more_row(rt)])
                else:
                    rows.append([cluster, name, bid, addr, *base_row(rt, now)])
    namesrvs = ";".join(admin.instance.config.namesrv_addrs)
    if not listed:
        raise MQClientError(
            f"no broker is registered with the NameServer(s) {namesrvs}: start mqbroker with "
            f"namesrvAddr={namesrvs} (a broker that stopped is dropped after 120 s)"
        )
    table = table_result(MORE_HEADERS if more else BASE_HEADERS, rows)
    if not answered:
        table["error"] = f"none of the {listed} broker(s) the NameServers list answers"
    return table


@command(
    "clusterList",
    "clusters and their brokers: version, load, disk (-m: message totals; -i: every N s)",
    lambda p: (
        flag(p, "-m", "moreStats", "message totals of yesterday and today"),
        p.add_argument("-i", "--interval", type=A.seconds, help="print again every N seconds"),
    ),
)
async def cluster_list(admin: AdminClient, args: argparse.Namespace) -> Any:
    while True:
        table = await cluster_table(admin, args.moreStats)
        error = table.pop("error", None)
        if error and not args.interval:
            args.emit(table)
            raise MQClientError(error)
        if not args.interval:
            return table
        args.emit(table)
        await trio.sleep(args.interval)


@command("brokerStatus", "a broker's runtime info", lambda p: where(p))
async def broker_status(admin: AdminClient, args: argparse.Namespace) -> Any:
    infos = {addr: await admin.runtime_info(addr) for addr in await targets(admin, args)}
    if args.brokerAddr:
        return Shown(key_values(infos[args.brokerAddr]), infos)
    text = "\n".join(
        f"{addr:<24} {line}"
        for addr, info in infos.items()
        for line in key_values(info).split("\n")
    )
    return Shown(text, infos)


@command("getBrokerConfig", "a broker's configuration", lambda p: where(p))
async def get_broker_config(admin: AdminClient, args: argparse.Namespace) -> Any:
    from client.admin_brokers import parse_properties

    texts = {addr: await admin.broker_config(addr) for addr in await targets(admin, args)}
    shown = []
    for addr, text in texts.items():
        values = parse_properties(text.encode())
        shown += [f"============{addr}============", key_values(values, 50, "=  "), ""]
    return Shown("\n".join(shown).rstrip(), texts)


HA_HEADERS = [
    "#Broker Addr",
    "#Role",
    "#Slave Addr",
    "#Ack Offset",
    "#Lag Bytes",
    "#Lag Millis",
    "#InSync",
]
HA_FOOTER = (
    "InSync: the slave trails by less than haSlaveFallbehindMax bytes, so SYNC_MASTER sends wait "
    "for it (RocketMQ 5's meaning; it says nothing about time).\nLag Millis: the master had none "
    "of the bytes the slave lacks that long ago (0 when it lacks none)."
)


def _ha_rows(addr: str, status: dict[str, Any]) -> list[list[Any]]:
    role = status.get("brokerRole", "")
    if "controllerEpoch" in status:  # auto-failover: the epoch and the SyncStateSet's ids
        role += f" epoch={status['controllerEpoch']} syncStateSet={status.get('syncStateSet')}"
    if "slaves" in status:
        return [
            [addr, role, s["addr"], s["ackOffset"], s["lagBytes"], s["lagMillis"], s["inSync"]]
            for s in status["slaves"]
        ] or [[addr, role, "(no slave)", "-", "-", "-", "-"]]
    connected = status.get("haConnected", "-")
    return [
        [
            addr,
            role,
            f"master {status.get('haMasterAddr', '-')}",
            "-",
            "-",
            "-",  # a slave knows what it has, not what its master has since (see the master)
            f"connected={connected}",
        ]
    ]


@command("haStatus", "replication status of masters (per slave) and slaves", lambda p: where(p))
async def ha_status(admin: AdminClient, args: argparse.Namespace) -> Any:
    statuses = {addr: await admin.ha_status(addr) for addr in await targets(admin, args)}
    rows = [row for addr, status in statuses.items() for row in _ha_rows(addr, status)]
    return table_result(HA_HEADERS, rows, HA_FOOTER, data=statuses)


@command(
    "updateBrokerConfig",
    "change a broker setting at run time",
    lambda p: (
        where(p),
        p.add_argument("-k", "--key", required=True),
        p.add_argument("-v", "--value", required=True),
    ),
)
async def update_broker_config(admin: AdminClient, args: argparse.Namespace) -> Any:
    addrs = await targets(admin, args)
    brokers = {}
    for addr in addrs:
        brokers[addr] = await admin.update_broker_config(addr, {args.key: args.value}) or "ok"
    return {"updated": {args.key: args.value}, "brokers": brokers}


def _rt_setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("-a", "--amount", type=A.count, default=100, help="messages per broker")
    p.add_argument("-s", "--size", type=A.message_size, default=128, help="bytes")
    p.add_argument("-c", "--cluster", dest="clusterName", help="default: every cluster")
    p.add_argument("-p", "--printLog", type=A.java_bool, default=False, help="time|room|... lines")
    p.add_argument("-m", "--machineRoom", default="noname", help="for -p lines")
    p.add_argument("-i", "--interval", type=A.seconds, help="measure again every N seconds")


RT_HEADERS = [
    "#Cluster Name",
    "#Broker Name",
    "#RT",
    "#successCount",
    "#failCount",
    "#Addr",
    "#RT max",
]


async def _round_trips(admin: AdminClient, producer: Producer, args) -> list[list[Any]]:
    from remoting.body import MessageQueue

    info = await admin.cluster_info()
    clusters = [args.clusterName] if args.clusterName else sorted(info.cluster_addr_table)
    rows = []
    for cluster in clusters:
        for name, addr in (await admin.masters(cluster)).items():
            mq = MessageQueue(topic=name, broker_name=name, queue_id=0)  # the broker's own topic
            times, failed = [], 0
            for _ in range(args.amount):
                t0 = time.perf_counter()
                try:
                    await producer.send(Message(name, b"a" * args.size), mq)
                    times.append((time.perf_counter() - t0) * 1000)
                except UNREACHABLE:
                    failed += 1
            avg = sum(times) / len(times) if times else float("nan")
            rows.append(
                [
                    cluster,
                    name,
                    f"{avg:.2f}",
                    len(times),
                    failed,
                    addr,
                    f"{max(times, default=0):.2f}",
                ]
            )
    return rows


@command("clusterRT", "send round-trip time to every master of a cluster", _rt_setup)
async def cluster_rt(admin: AdminClient, args: argparse.Namespace) -> Any:
    producer = Producer(admin.instance, "PID_SMSC")
    while True:
        rows = await _round_trips(admin, producer, args)
        if args.printLog:
            stamp = time.strftime("%Y-%m-%d %H:%M:%S")
            result: Any = Shown(
                "\n".join(f"{stamp}|{args.machineRoom}|{r[0]}|{r[1]}|{r[2]}" for r in rows), rows
            )
        else:
            result = table_result(RT_HEADERS, rows)
        if not args.interval:
            return result
        args.emit(result)
        await trio.sleep(args.interval)
