"""mqadmin: auto-failover (broker/election/), RocketMQ 5's commands and flags. The group's
state is read and changed through etcdstate/, the layout the brokers share: no broker code.

``-a`` names the controller as in RocketMQ 5; here the controller is etcd, so it takes the
etcd endpoints (``http://127.0.0.1:2379``, several separated by ';' or ','), and
``--etcdPrefix`` says where the brokers keep their state (``controllerEtcdPrefix``).
``getSyncStateSet`` and ``electMaster`` read and write etcd; ``getBrokerEpoch`` asks each
broker of the group for its epoch file (GET_BROKER_RUNTIME_INFO).
"""

from __future__ import annotations

import argparse
from typing import Any

from client.admin import AdminClient
from client.errors import MQClientError
from client.mqadmin import args as A
from client.mqadmin.base import Shown, command
from etcdstate.etcd import EtcdClient
from etcdstate.etcd_json import EtcdError
from etcdstate.group import GroupState, GroupStateError, Member
from etcdstate.store import GroupStore

DEFAULT_PREFIX = "/rocketmq-trio"


def _controller(p: argparse.ArgumentParser, *, required: bool = True) -> None:
    p.add_argument(
        "-a", "--controllerAddress", required=required, help="etcd endpoints (http://host:port)"
    )
    p.add_argument("--etcdPrefix", default=DEFAULT_PREFIX, help="controllerEtcdPrefix")


def _endpoints(text: str) -> list[str]:
    endpoints = [e.strip() for e in text.replace(";", ",").split(",") if e.strip()]
    if not endpoints:
        raise MQClientError("-a: no etcd endpoint")
    return [e if "://" in e else f"http://{e}" for e in endpoints]


async def _group_names(admin: AdminClient, args: argparse.Namespace) -> list[tuple[str, str]]:
    """(cluster, brokerName) pairs named by -b / -c, found in the NameServer's cluster table."""
    info = await admin.cluster_info()
    pairs = [
        (cluster, name)
        for cluster, names in sorted(info.cluster_addr_table.items())
        for name in sorted(names)
        if (args.clusterName and cluster == args.clusterName)
        or (args.brokerName and name == args.brokerName)
    ]
    if not pairs:
        raise MQClientError(f"no broker group {args.brokerName or args.clusterName!r} is known")
    return pairs


def _state_text(name: str, state: GroupState, alive: dict[int, Member]) -> str:
    lines = [
        f"#brokerName\t{name}",
        f"#MasterBrokerId\t{state.master.broker_id}",
        f"#MasterAddr\t{state.master.addr}",
        f"#MasterEpoch\t{state.epoch}",
        f"#SyncStateSetEpoch\t{state.epoch}",
        f"#SyncStateSetNums\t{len(state.sync_state_set)}",
    ]
    for member_id in sorted(alive):
        member = alive[member_id]
        kind = "InSyncReplica" if member_id in state.sync_state_set else "NotInSyncReplica"
        lines.append(
            f"{kind}:\tbrokerId={member_id}, addr={member.addr}, "
            f"maxPhyOffset={member.max_phys_offset}"
        )
    for member_id in sorted(state.sync_state_set - set(alive)):
        lines.append(f"InSyncReplica:\tbrokerId={member_id}, (no lease: not alive)")
    return "\n".join(lines)


@command(
    "getSyncStateSet",
    "the master, epoch and SyncStateSet of broker groups (controller mode)",
    lambda p: (
        _controller(p),
        p.add_argument("-b", "--brokerName"),
        p.add_argument("-c", "--clusterName"),
    ),
)
async def get_sync_state_set(admin: AdminClient, args: argparse.Namespace) -> Any:
    if not (args.brokerName or args.clusterName):
        raise MQClientError("pass -b brokerName or -c clusterName")
    etcd = EtcdClient(_endpoints(args.controllerAddress))
    texts, data = [], {}
    try:
        for cluster, name in await _group_names(admin, args):
            state, _, alive = await GroupStore(etcd, args.etcdPrefix, cluster, name).read()
            if state is None:
                texts.append(f"#brokerName\t{name}\n(no state in etcd: not in controller mode)")
                continue
            texts.append(_state_text(name, state, alive))
            data[name] = {
                "clusterName": cluster,
                "masterBrokerId": state.master.broker_id,
                "masterAddr": state.master.addr,
                "masterEpoch": state.epoch,
                "syncStateSet": sorted(state.sync_state_set),
                "alive": {i: m.max_phys_offset for i, m in sorted(alive.items())},
                "epochs": [[e.epoch, e.start_offset] for e in state.epochs],
            }
    except (EtcdError, GroupStateError) as exc:
        raise MQClientError(str(exc)) from None
    finally:
        await etcd.aclose()
    return Shown("\n\n".join(texts), data)


@command(
    "getBrokerEpoch",
    "each broker's epoch entries (its epoch file) and controller status",
    lambda p: (p.add_argument("-b", "--brokerName"), p.add_argument("-c", "--clusterName")),
)
async def get_broker_epoch(admin: AdminClient, args: argparse.Namespace) -> Any:
    if not (args.brokerName or args.clusterName):
        raise MQClientError("pass -b brokerName or -c clusterName")
    info = await admin.cluster_info()
    texts, data = [], {}
    for _, name in await _group_names(admin, args):
        broker = info.broker_addr_table.get(name)
        addrs = sorted(broker.broker_addrs.items()) if broker is not None else []
        for broker_id, addr in addrs:
            rows = await admin.runtime_info(addr)
            entries = rows.get("epochEntries", "")
            data[addr] = {"brokerName": name, "brokerId": broker_id, **_controller_rows(rows)}
            lines = [
                f"#clusterName\t{broker.cluster if broker else ''}",
                f"#brokerName\t{name}",
                f"#brokerAddr\t{addr}",
                f"#brokerId\t{broker_id}",
                f"#controllerEpoch\t{rows.get('controllerEpoch', '-')}",
            ]
            for pair in filter(None, entries.split(",")):
                epoch, _, start = pair.partition(":")
                lines.append(f"#Epoch: {epoch}\tStartOffset: {start}")
            lines.append(f"#MaxOffset\t{rows.get('commitLogMaxOffset', '-')}")
            texts.append("\n".join(lines))
    return Shown("\n\n".join(texts), data)


def _controller_rows(rows: dict[str, str]) -> dict[str, str]:
    keys = ("controllerEpoch", "controllerStatus", "syncStateSet", "epochEntries")
    return {k: rows[k] for k in (*keys, "truncatedBytes", "commitLogMaxOffset") if k in rows}


@command(
    "electMaster",
    "make a member of the SyncStateSet the master now (controller mode)",
    lambda p: (
        _controller(p),
        p.add_argument(
            "-b",
            "--brokerId",
            type=A.int_range(1, 2**63 - 1, "brokerId"),
            required=True,
            help="member id",
        ),
        p.add_argument("-bn", "--brokerName", required=True),
        p.add_argument("-c", "--clusterName", required=True),
    ),
)
async def elect_master(admin: AdminClient, args: argparse.Namespace) -> Any:
    etcd = EtcdClient(_endpoints(args.controllerAddress))
    try:
        store = GroupStore(etcd, args.etcdPrefix, args.clusterName, args.brokerName)
        state, revision, alive = await store.read()
        if state is None:
            raise MQClientError(f"{args.brokerName} has no state in etcd")
        target = alive.get(args.brokerId)
        if target is None:
            raise MQClientError(f"member {args.brokerId} holds no lease: it is not alive")
        if args.brokerId not in state.sync_state_set:
            raise MQClientError(
                f"member {args.brokerId} is not in the SyncStateSet "
                f"{sorted(state.sync_state_set)}: it may lack acknowledged messages"
            )
        if state.master.broker_id == args.brokerId:
            raise MQClientError(f"member {args.brokerId} is the master already")
        new = state.elect(target)
        if not await store.swap(revision, new, fallen=None):
            raise MQClientError("the group's state changed meanwhile: try again")
    except (EtcdError, GroupStateError) as exc:
        raise MQClientError(str(exc)) from None
    finally:
        await etcd.aclose()
    text = "\n".join(
        [
            f"#ClusterName\t{args.clusterName}",
            f"#BrokerName\t{args.brokerName}",
            f"#BrokerMasterAddr\t{target.addr}",
            f"#MasterEpoch\t{new.epoch}",
            f"#SyncStateSetEpoch\t{new.epoch}",
        ]
        + [f"\t#Broker\t{i}\t{m.addr}" for i, m in sorted(alive.items())]
    )
    return Shown(text, {"masterBrokerId": args.brokerId, "masterEpoch": new.epoch})
