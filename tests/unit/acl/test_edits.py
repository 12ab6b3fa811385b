"""The admin edits of an ACL file (updateAclConfig, deleteAclConfig, updateGlobalWhiteAddr)."""

from __future__ import annotations

import pytest

from acl.config import FileVersion
from acl.edits import AccountUpdate, AclEditError, delete_account, set_global_white, update_account

BASE = """\
globalWhiteRemoteAddresses:
- 10.10.103.*
accounts:
- accessKey: RocketMQ
  secretKey: 12345678
  defaultTopicPerm: DENY
  topicPerms:
  - topicA=PUB
- accessKey: rocketmq2
  secretKey: 87654321
  admin: true
"""


def test_a_new_account_is_added_and_the_version_bumped() -> None:
    update = AccountUpdate(access_key="newUser1", secret_key="abcdefgh", topic_perms=["t=SUB"])
    _, parsed = update_account(BASE, "f", update, counter=4, now_ms=1_700_000_000_000)
    assert [a.access_key for a in parsed.accounts] == ["RocketMQ", "rocketmq2", "newUser1"]
    assert parsed.accounts[2].topic_perms == ("t=SUB",)
    assert parsed.data_version == FileVersion(5, 1_700_000_000_000)
    assert parsed.global_white_remote_addresses == ("10.10.103.*",)


def test_an_update_keeps_what_it_does_not_name() -> None:
    update = AccountUpdate(access_key="RocketMQ", secret_key="12345678", default_group_perm="SUB")
    _, parsed = update_account(BASE, "f", update, counter=0, now_ms=1)
    account = next(a for a in parsed.accounts if a.access_key == "RocketMQ")
    assert account.topic_perms == ("topicA=PUB",) and account.default_topic_perm == "DENY"
    assert account.default_group_perm == "SUB"


@pytest.mark.parametrize(
    ("update", "reason"),
    [
        (AccountUpdate(access_key="short", secret_key="12345678"), "length should longer than 6"),
        (AccountUpdate(access_key="newUser1"), "secretKey"),
        (
            AccountUpdate(access_key="newUser1", secret_key="12345678", topic_perms=["t"]),
            "Res=Perm",
        ),
        (
            AccountUpdate(access_key="newUser1", secret_key="12345678", default_topic_perm="ALL"),
            "'ALL' is not one of",
        ),
        (
            AccountUpdate(
                access_key="newUser1", secret_key="12345678", white_remote_address="1.*.2"
            ),
            "whiteRemoteAddress",
        ),
    ],
)
def test_a_bad_update_is_refused_and_never_echoes_the_secret(
    update: AccountUpdate, reason: str
) -> None:
    with pytest.raises(AclEditError) as refused:
        update_account(BASE, "f", update, counter=0, now_ms=1)
    assert reason in str(refused.value)
    assert "12345678" not in str(refused.value)


def test_delete_removes_the_account_or_says_there_was_none() -> None:
    result = delete_account(BASE, "f", "RocketMQ", counter=0, now_ms=1)
    assert result is not None
    assert [a.access_key for a in result[1].accounts] == ["rocketmq2"]
    assert delete_account(BASE, "f", "nobody00", counter=0, now_ms=1) is None


def test_the_global_white_list_is_replaced_and_checked() -> None:
    _, parsed = set_global_white(BASE, "f", ["192.168.0.*", " 10.1.1.1 "], counter=0, now_ms=1)
    assert parsed.global_white_remote_addresses == ("192.168.0.*", "10.1.1.1")
    with pytest.raises(AclEditError):
        set_global_white(BASE, "f", ["not-an-ip"], counter=0, now_ms=1)
