"""mqadmin: the NameServers (KV config, write permission of a broker name, their own
configuration, order-topic configuration). Each goes to every NameServer given with -n, in
order, and stops at the first that refuses."""

from __future__ import annotations

import argparse
from typing import Any

from client.admin import AdminClient
from client.mqadmin import args as A
from client.mqadmin.base import Shown, command, key_values
from remoting import constants as K
from remoting.codes import RequestCode


def _kv_setup(p: argparse.ArgumentParser, with_value: bool) -> None:
    p.add_argument("-s", "--namespace", required=True)
    p.add_argument("-k", "--key", required=True)
    if with_value:
        p.add_argument("-v", "--value", required=True)


@command(
    "updateKvConfig", "put a KV config entry on every NameServer", lambda p: _kv_setup(p, True)
)
async def update_kv_config(admin: AdminClient, args: argparse.Namespace) -> Any:
    return {"namesrvs": await admin.put_kv_config(args.namespace, args.key, args.value)}


@command(
    "deleteKvConfig", "delete a KV config entry on every NameServer", lambda p: _kv_setup(p, False)
)
async def delete_kv_config(admin: AdminClient, args: argparse.Namespace) -> Any:
    return {"namesrvs": await admin.delete_kv_config(args.namespace, args.key)}


def _broker_name_setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("-b", "--brokerName", required=True)


async def _set_write_perm(admin: AdminClient, broker_name: str, *, wipe: bool) -> Any:
    """WIPE_/ADD_WRITE_PERM_OF_BROKER on every NameServer, with the topic count each changed."""
    code, field, key = (
        (RequestCode.WIPE_WRITE_PERM_OF_BROKER, "wipeTopicCount", "wipedTopics")
        if wipe
        else (RequestCode.ADD_WRITE_PERM_OF_BROKER, "addTopicCount", "addedTopics")
    )
    answers = await admin.each_namesrv(code, {"brokerName": broker_name})
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


@command("getNamesrvConfig", "every NameServer's configuration")
async def get_namesrv_config(admin: AdminClient, args: argparse.Namespace) -> Any:
    configs = await admin.namesrv_configs()
    text = "\n".join(
        f"============{addr}============\n{key_values(values, 50, '=  ')}"
        for addr, values in configs.items()
    )
    return Shown(text, configs)


@command(
    "updateNamesrvConfig",
    "change a NameServer setting at run time, on every NameServer",
    lambda p: (
        p.add_argument("-k", "--key", required=True),
        p.add_argument("-v", "--value", required=True),
    ),
)
async def update_namesrv_config(admin: AdminClient, args: argparse.Namespace) -> Any:
    done = await admin.update_namesrv_config({args.key.strip(): args.value.strip()})
    return {"updated": {args.key.strip(): args.value.strip()}, "namesrvs": done}


@command(
    "updateOrderConf",
    "an ordered topic's brokerName:queueNums list in the NameServers' KV (put, get, delete)",
    lambda p: (
        p.add_argument("-t", "--topic", required=True, type=A.topic),
        p.add_argument("-v", "--orderConf", type=A.order_conf, help="brokerName:num;..."),
        p.add_argument("-m", "--method", required=True, choices=["put", "get", "delete"]),
    ),
)
async def update_order_conf(admin: AdminClient, args: argparse.Namespace) -> Any:
    namespace = K.ORDER_TOPIC_CONFIG_NAMESPACE
    if args.method == "get":
        conf = await admin.get_kv_config(namespace, args.topic)
        return {"topic": args.topic, "orderConf": conf}
    if args.method == "delete":
        return {
            "deleted": args.topic,
            "namesrvs": await admin.delete_kv_config(namespace, args.topic),
        }
    if not args.orderConf:
        from client.errors import MQClientError

        raise MQClientError("put needs the order conf: -v brokerName:num;brokerName:num")
    conf = await admin.put_order_conf(args.topic, args.orderConf, whole_cluster=True)
    return {"topic": args.topic, "orderConf": conf}
