"""mqadmin: clusters and brokers (status, config, HA, round trips, promotion, KV config)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import trio

from client.admin import AdminClient
from client.errors import MQClientError
from client.message import Message
from client.mqadmin.base import command, targets, where
from client.producer import Producer
from remoting.errors import RemotingError


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


@command(
    "updateBrokerConfig",
    "change a broker setting at run time (and in its -c file)",
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


async def _each_namesrv(admin: AdminClient, code: int, fields: dict[str, str]) -> dict[str, Any]:
    """The response of every NameServer (-n), in order; the first refusal stops it."""
    return {
        addr: await admin._ok(addr, admin.instance.request(code, fields))
        for addr in admin.instance.config.namesrv_addrs
    }


async def _every_namesrv(admin: AdminClient, code: int, fields: dict[str, str]) -> list[str]:
    return list(await _each_namesrv(admin, code, fields))


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


def _broker_name_setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("-b", "--brokerName", required=True)


async def _set_write_perm(admin: AdminClient, broker_name: str, *, wipe: bool) -> Any:
    """WIPE_/ADD_WRITE_PERM_OF_BROKER on every NameServer, with the topic count each changed."""
    from remoting.codes import RequestCode

    code, field, key = (
        (RequestCode.WIPE_WRITE_PERM_OF_BROKER, "wipeTopicCount", "wipedTopics")
        if wipe
        else (RequestCode.ADD_WRITE_PERM_OF_BROKER, "addTopicCount", "addedTopics")
    )
    answers = await _each_namesrv(admin, code, {"brokerName": broker_name})
    return {
        "brokerName": broker_name,
        key: {addr: int(r.ext_fields[field]) for addr, r in answers.items()},
    }


@command(
    "wipeWritePerm",
    "stop routing sends to a broker name, on every NameServer (until the broker's topic config "
    "changes or it restarts, as in RocketMQ; brokerPermission=4 with updateBrokerConfig lasts)",
    _broker_name_setup,
)
async def wipe_write_perm(admin: AdminClient, args: argparse.Namespace) -> Any:
    return await _set_write_perm(admin, args.brokerName, wipe=True)


@command(
    "addWritePerm",
    "route sends to a broker name again, on every NameServer",
    _broker_name_setup,
)
async def add_write_perm(admin: AdminClient, args: argparse.Namespace) -> Any:
    return await _set_write_perm(admin, args.brokerName, wipe=False)


@command(
    "updateNamesrvConfig",
    "change a NameServer setting at run time (and in its -c file), on every NameServer",
    lambda p: (
        p.add_argument("-k", "--key", required=True),
        p.add_argument("-v", "--value", required=True),
    ),
)
async def update_namesrv_config(admin: AdminClient, args: argparse.Namespace) -> Any:
    from remoting import properties
    from remoting.codes import RequestCode

    body = properties.dumps({args.key: args.value}).encode()
    namesrvs = {}
    for addr in admin.instance.config.namesrv_addrs:
        request = admin.instance.request(RequestCode.UPDATE_NAMESRV_CONFIG, {}, body)
        namesrvs[addr] = (await admin._ok(addr, request)).remark or "ok"
    return {"updated": {args.key: args.value}, "namesrvs": namesrvs}


@command("getNamesrvConfig", "every NameServer's configuration")
async def get_namesrv_config(admin: AdminClient, args: argparse.Namespace) -> Any:
    from remoting.codes import RequestCode

    answers = await _each_namesrv(admin, RequestCode.GET_NAMESRV_CONFIG, {})
    return {
        addr: dict(
            line.split("=", 1) for line in bytes(r.body or b"").decode().splitlines() if "=" in line
        )
        for addr, r in answers.items()
    }
