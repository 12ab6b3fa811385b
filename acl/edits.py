"""Changes mqadmin makes to an ACL file (UPDATE_AND_CREATE_ACL_CONFIG, DELETE_ACL_CONFIG,
UPDATE_GLOBAL_WHITE_ADDRS_CONFIG), as pure functions from the file's text to its new text.

As in RocketMQ the file is rewritten whole (comments do not survive), an updated account keeps
the keys the request leaves out, and every change bumps the file's ``dataVersion``. Unlike
RocketMQ, the new text is parsed exactly as a reload will parse it before anyone writes it, so
a change can never leave a file the broker refuses.
"""

from __future__ import annotations

from typing import Any

import attrs

from acl.config import (
    ACCOUNTS,
    DATA_VERSION,
    GLOBAL_WHITE,
    MIN_KEY_LENGTH,
    AclFile,
    parse_acl_file,
    yaml_problem,
)
from acl.errors import AclConfigError
from acl.permission import PERM_NAMES, parse_perm, split_resource_perm


class AclEditError(ValueError):
    """A change that cannot be made; the message says why (Java's AclException text)."""


@attrs.frozen
class AccountUpdate:
    """What UPDATE_AND_CREATE_ACL_CONFIG carries (None: leave as it is)."""

    access_key: str
    secret_key: str | None = attrs.field(default=None, repr=False)
    white_remote_address: str | None = None
    admin: bool = False
    default_topic_perm: str | None = None
    default_group_perm: str | None = None
    topic_perms: list[str] | None = None
    group_perms: list[str] | None = None


def _load(text: str, name: str) -> dict[str, Any]:
    import yaml  # here, not at the top: acl/config.py says why

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise AclEditError(yaml_problem(name, exc)) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise AclEditError(f"{name}: not a mapping")
    return data


def _dump(data: dict[str, Any], name: str, counter: int, now_ms: int) -> tuple[str, AclFile]:
    import yaml

    data[DATA_VERSION] = [{"counter": counter + 1, "timestamp": now_ms}]
    text = yaml.safe_dump(data, default_flow_style=False, sort_keys=False, allow_unicode=True)
    try:
        return text, parse_acl_file(text, name)
    except AclConfigError as exc:
        raise AclEditError(str(exc)) from None


def _check_update(update: AccountUpdate) -> None:
    for key, value in (("accessKey", update.access_key), ("secretKey", update.secret_key)):
        if value is None or len(value) < MIN_KEY_LENGTH:
            raise AclEditError(
                f"The accessKey={update.access_key} and secretKey cannot be null and length "
                f"should longer than 6 ({key})"
            )
    for perm in (update.default_topic_perm, update.default_group_perm):
        if perm and parse_perm(perm) is None:
            raise AclEditError(f"{perm!r} is not one of {', '.join(PERM_NAMES)}")
    for item in (update.topic_perms or []) + (update.group_perms or []):
        pair = split_resource_perm(item)
        if pair is None or parse_perm(pair[1]) is None:
            raise AclEditError(
                f"Parse resource permission error for {item}. The expected format is "
                "'Res=Perm' with Perm one of " + ", ".join(PERM_NAMES)
            )


def _account_map(existing: dict[str, Any] | None, update: AccountUpdate) -> dict[str, Any]:
    account = dict(existing or {})
    account["accessKey"] = update.access_key
    if update.secret_key:
        account["secretKey"] = update.secret_key
    if update.white_remote_address is not None:
        account["whiteRemoteAddress"] = update.white_remote_address
    account["admin"] = update.admin
    if update.default_topic_perm:
        account["defaultTopicPerm"] = update.default_topic_perm
    if update.default_group_perm:
        account["defaultGroupPerm"] = update.default_group_perm
    if update.topic_perms is not None:
        account["topicPerms"] = list(update.topic_perms)
    if update.group_perms is not None:
        account["groupPerms"] = list(update.group_perms)
    return account


def _accounts(data: dict[str, Any], name: str) -> list[Any]:
    accounts = data.get(ACCOUNTS) or []
    if not isinstance(accounts, list):
        raise AclEditError(f"{name}: {ACCOUNTS} is not a list")
    return accounts


def update_account(
    text: str, name: str, update: AccountUpdate, counter: int, now_ms: int
) -> tuple[str, AclFile]:
    """Create the account, or update it in place (moved to the end of the list, as Java)."""
    _check_update(update)
    data = _load(text, name)
    accounts = _accounts(data, name)
    existing = None
    for index, account in enumerate(accounts):
        if isinstance(account, dict) and str(account.get("accessKey")) == update.access_key:
            existing = accounts.pop(index)
            break
    accounts.append(_account_map(existing, update))
    data[ACCOUNTS] = accounts
    return _dump(data, name, counter, now_ms)


def delete_account(
    text: str, name: str, access_key: str, counter: int, now_ms: int
) -> tuple[str, AclFile] | None:
    """The file without the account; None when it has no such account."""
    data = _load(text, name)
    accounts = _accounts(data, name)
    kept = [
        a for a in accounts if not (isinstance(a, dict) and str(a.get("accessKey")) == access_key)
    ]
    if len(kept) == len(accounts):
        return None
    data[ACCOUNTS] = kept
    return _dump(data, name, counter, now_ms)


def set_global_white(
    text: str, name: str, addresses: list[str], counter: int, now_ms: int
) -> tuple[str, AclFile]:
    data = _load(text, name)
    data[GLOBAL_WHITE] = [a.strip() for a in addresses if a.strip()]
    return _dump(data, name, counter, now_ms)
