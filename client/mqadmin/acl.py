"""mqadmin: ACL (RocketMQ 4.9's updateAclConfig, deleteAclConfig, clusterAclConfigVersion,
updateGlobalWhiteAddr and 4.9.4's getAclConfig/getAccessConfigSubCommand), and the account
every mqadmin command signs with.

Credentials, first found wins: ``-a/--access-key`` and ``-s/--secret-key`` (long forms only on
the commands whose own ``-a``/``-s`` name the account they change, as in RocketMQ), the
environment's ``ROCKETMQ_ACCESS_KEY`` and ``ROCKETMQ_SECRET_KEY``, then RocketMQ's
``${ROCKETMQ_HOME}/conf/tools.yml``. Secret keys are never printed.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from acl.config import parse_tools_file
from acl.credentials import SessionCredentials
from acl.errors import AclConfigError
from acl.protocol import CreateAccessConfigRequestHeader
from client import admin_acl
from client.admin import AdminClient
from client.errors import MQClientError
from client.mqadmin.base import command, targets, where

ENV_ACCESS_KEY = "ROCKETMQ_ACCESS_KEY"
ENV_SECRET_KEY = "ROCKETMQ_SECRET_KEY"


def add_credential_flags(p: argparse.ArgumentParser) -> None:
    """The signing account's flags, short forms unless the command has its own -a/-s."""
    taken = p._option_string_actions  # argparse has no public "is this flag used"
    short = "-a" not in taken and "-s" not in taken
    p.add_argument(
        *(["-a"] if short else []),
        "--access-key",
        dest="acl_access_key",
        help="access key to sign requests with (ACL)",
    )
    p.add_argument(
        *(["-s"] if short else []), "--secret-key", dest="acl_secret_key", help="its secret key"
    )


def credentials(args: argparse.Namespace) -> SessionCredentials | None:
    pair = (getattr(args, "acl_access_key", None), getattr(args, "acl_secret_key", None))
    source = "--access-key/--secret-key"
    if not any(pair):
        pair, source = (os.environ.get(ENV_ACCESS_KEY), os.environ.get(ENV_SECRET_KEY)), "env"
    if not any(pair):
        return _tools_yml()
    if not all(pair):
        raise MQClientError(
            f"credentials from {source}: give both the access key and the secret key"
        )
    access_key, secret_key = pair
    assert access_key and secret_key
    return SessionCredentials(access_key, secret_key)


def _tools_yml() -> SessionCredentials | None:
    home = os.environ.get("ROCKETMQ_HOME")
    if not home:
        return None
    path = Path(home) / "conf" / "tools.yml"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise MQClientError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise MQClientError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    try:
        pair = parse_tools_file(text, str(path))
    except AclConfigError as exc:
        raise MQClientError(str(exc)) from None
    return SessionCredentials(*pair) if pair else None


async def _every_broker(admin: AdminClient, args: argparse.Namespace) -> list[str]:
    if args.brokerAddr:
        return [args.brokerAddr]
    return await admin_acl.every_broker(admin, args.clusterName)


def _update_setup(p: argparse.ArgumentParser) -> None:
    where(p)
    p.add_argument("-a", "--accessKey", required=True, help="the account's access key")
    p.add_argument("-s", "--secretKey", required=True, help="the account's secret key")
    p.add_argument("-w", "--whiteRemoteAddress", help="addresses that skip the signature")
    p.add_argument("-i", "--defaultTopicPerm", help="DENY, PUB, SUB or PUB|SUB")
    p.add_argument("-u", "--defaultGroupPerm", help="DENY, PUB, SUB or PUB|SUB")
    p.add_argument("-t", "--topicPerms", help="topicA=DENY,topicB=PUB|SUB")
    p.add_argument("-g", "--groupPerms", help="groupA=DENY,groupB=SUB")
    p.add_argument("-m", "--admin", choices=["true", "false"], help="an admin account")


@command("updateAclConfig", "create or update an ACL account on brokers", _update_setup)
async def update_acl_config(admin: AdminClient, args: argparse.Namespace) -> Any:
    header = CreateAccessConfigRequestHeader(
        access_key=args.accessKey.strip(),
        secret_key=args.secretKey.strip(),
        white_remote_address=args.whiteRemoteAddress,
        admin=args.admin == "true",
        default_topic_perm=args.defaultTopicPerm,
        default_group_perm=args.defaultGroupPerm,
        topic_perms=args.topicPerms,
        group_perms=args.groupPerms,
    )
    done = []
    for addr in await _every_broker(admin, args):
        await admin_acl.update_account(admin, addr, header)
        done.append(addr)
    account = {k: v for k, v in vars(args).items() if k in _ACCOUNT_FLAGS and v is not None}
    return {"updated": args.accessKey, "brokers": done, "account": account}


_ACCOUNT_FLAGS = frozenset(
    {
        "whiteRemoteAddress",
        "defaultTopicPerm",
        "defaultGroupPerm",
        "topicPerms",
        "groupPerms",
        "admin",
    }
)


def _delete_setup(p: argparse.ArgumentParser) -> None:
    where(p)
    p.add_argument("-a", "--accessKey", required=True, help="the account to delete")


async def _delete(admin: AdminClient, args: argparse.Namespace) -> Any:
    done = []
    for addr in await _every_broker(admin, args):
        await admin_acl.delete_account(admin, addr, args.accessKey.strip())
        done.append(addr)
    return {"deleted": args.accessKey, "brokers": done}


command("deleteAclConfig", "delete an ACL account from brokers", _delete_setup)(_delete)
command("deleteAccessConfig", "alias of deleteAclConfig", _delete_setup)(_delete)


def _white_setup(p: argparse.ArgumentParser) -> None:
    where(p)
    p.add_argument(
        "-g", "--globalWhiteRemoteAddresses", required=True, help="10.10.103.*,192.168.0.*"
    )
    p.add_argument("-p", "--aclFileFullPath", help="which of the broker's ACL files")


@command("updateGlobalWhiteAddr", "set the global white list of brokers' ACL files", _white_setup)
async def update_global_white_addr(admin: AdminClient, args: argparse.Namespace) -> Any:
    addresses = args.globalWhiteRemoteAddresses.strip()
    done = []
    for addr in await _every_broker(admin, args):
        await admin_acl.update_global_white(admin, addr, addresses, args.aclFileFullPath)
        done.append(addr)
    return {"globalWhiteRemoteAddresses": addresses.split(","), "brokers": done}


@command("clusterAclConfigVersion", "the ACL files' versions on brokers", lambda p: where(p))
async def cluster_acl_config_version(admin: AdminClient, args: argparse.Namespace) -> Any:
    rows = []
    for addr in await targets(admin, args):
        rows += admin_acl.version_rows(await admin_acl.acl_versions(admin, addr))
    headers = ["#Cluster Name", "#Broker Name", "#Broker Addr", "#AclFilePath",
               "#AclConfigVersionNum", "#AclLastUpdateTime"]  # fmt: skip
    return {"headers": headers, "rows": rows}


async def _get_acl_config(admin: AdminClient, args: argparse.Namespace) -> Any:
    out = {}
    for addr in await targets(admin, args):
        body = await admin_acl.acl_config(admin, addr)
        out[addr] = {
            "globalWhiteRemoteAddresses": body.global_white_addrs,
            "accounts": [
                {
                    "accessKey": a.access_key,
                    "whiteRemoteAddress": a.white_remote_address,
                    "admin": a.admin,
                    "defaultTopicPerm": a.default_topic_perm,
                    "defaultGroupPerm": a.default_group_perm,
                    "topicPerms": a.topic_perms,
                    "groupPerms": a.group_perms,
                }
                for a in body.plain_access_configs
            ],
        }
    return out


command("getAclConfig", "the ACL accounts of brokers (no secret keys)", lambda p: where(p))(
    _get_acl_config
)
command("getAccessConfigSubCommand", "alias of getAclConfig", lambda p: where(p))(_get_acl_config)
