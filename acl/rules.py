"""The accounts and white lists in force, and Java's PlainPermissionManager.validate and
checkPerm over them. Pure: built from parsed ACL files, asked about one request at a time."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

import attrs

from acl.address import AddressMatcher, parse_pattern
from acl.config import AccountConfig, AclFile
from acl.errors import (
    FRAME_DEFAULT_PERM,
    FRAME_NEED_ADMIN,
    FRAME_RESOURCE_PERM,
    Refusal,
)
from acl.permission import DENY, PUB, check_permission, parse_perm, split_resource_perm
from acl.signature import Signer
from remoting import constants as K

log = logging.getLogger(__name__)

Resources = Sequence[tuple[str, int]]  # (topic, or %RETRY%group for a group; needed perm)


@attrs.frozen(eq=False)
class Account:
    access_key: str
    signer: Signer = attrs.field(repr=False)
    white: AddressMatcher
    admin: bool
    default_topic_perm: int
    default_group_perm: int
    # Topics by name and groups as their retry topic; None when the account lists none (an
    # admin without lists may use everything, as in Java).
    perms: Mapping[str, int] | None


def compile_account(config: AccountConfig) -> Account:
    perms: dict[str, int] = {}
    for items, is_topic in ((config.group_perms, False), (config.topic_perms, True)):
        for item in items:
            pair = split_resource_perm(item)
            assert pair is not None, item  # config.parse_acl_file checked it
            name = pair[0] if is_topic else K.retry_topic(pair[0])
            perms[name] = parse_perm(pair[1]) or DENY
    return Account(
        access_key=config.access_key,
        signer=Signer(config.secret_key),
        white=parse_pattern(config.white_remote_address),
        admin=config.admin,
        default_topic_perm=parse_perm(config.default_topic_perm or "DENY") or DENY,
        default_group_perm=parse_perm(config.default_group_perm or "DENY") or DENY,
        perms=perms or None,
    )


@attrs.frozen(eq=False)
class AclRules:
    accounts: Mapping[str, Account] = attrs.Factory(dict)
    global_white: tuple[AddressMatcher, ...] = ()


def build_rules(files: Sequence[tuple[str, AclFile]]) -> tuple[AclRules, dict[str, str]]:
    """The rules of every file, in order; an accessKey defined again in a later file is
    ignored with a warning, as in Java. Also returns which file holds each accessKey."""
    accounts: dict[str, Account] = {}
    owners: dict[str, str] = {}
    white: list[AddressMatcher] = []
    for path, parsed in files:
        white.extend(parse_pattern(p) for p in parsed.global_white_remote_addresses)
        for config in parsed.accounts:
            if config.access_key in owners:
                log.warning(
                    "accessKey %s of %s ignored: %s defines it first",
                    config.access_key,
                    path,
                    owners[config.access_key],
                )
                continue
            owners[config.access_key] = path
            accounts[config.access_key] = compile_account(config)
    return AclRules(accounts, tuple(white)), owners


def _print(resource: str) -> tuple[str, bool]:
    if resource.startswith(K.RETRY_GROUP_TOPIC_PREFIX):
        return f"group:{resource[len(K.RETRY_GROUP_TOPIC_PREFIX) :]}", True
    return f"topic:{resource}", False


def check_perm(
    account: Account, code: int, needs_admin: bool, resources: Resources
) -> Refusal | None:
    """Java's checkPerm, after the signature passed (or was skipped for the address)."""
    # RocketMQ lets every account publish traces; Java skips the whole check then.
    for name, perm in resources:
        if perm == PUB and name == K.TRACE_TOPIC:
            return None
    if needs_admin and not account.admin:
        return Refusal(
            f"Need admin permission for request code={code}, but accessKey="
            f"{account.access_key} is not",
            FRAME_NEED_ADMIN,
        )
    owned_map = account.perms
    if not resources or (owned_map is None and account.admin):
        return None
    for name, needed in resources:
        owned = owned_map.get(name) if owned_map is not None else None
        frame = FRAME_RESOURCE_PERM
        if owned is None:
            frame = FRAME_DEFAULT_PERM
            is_group = name.startswith(K.RETRY_GROUP_TOPIC_PREFIX)
            owned = account.default_group_perm if is_group else account.default_topic_perm
        if not check_permission(needed, owned):
            return Refusal(f"No default permission for {_print(name)[0]}", frame)
    return None
