"""plain_acl.yml -> typed accounts; a file that cannot be used is refused naming the line."""

from __future__ import annotations

from pathlib import Path

import pytest

from acl.config import FileVersion, parse_acl_file, parse_tools_file
from acl.errors import AclConfigError

# RocketMQ 4.9.8's distribution/conf/plain_acl.yml, as shipped
ROCKETMQ_EXAMPLE = """\
globalWhiteRemoteAddresses:
  - 10.10.103.*
  - 192.168.0.*

accounts:
  - accessKey: RocketMQ
    secretKey: 12345678
    whiteRemoteAddress:
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - topicA=DENY
      - topicB=PUB|SUB
      - topicC=SUB
    groupPerms:
      # the group should convert to retry topic
      - groupA=DENY
      - groupB=PUB|SUB
      - groupC=SUB

  - accessKey: rocketmq2
    secretKey: 12345678
    whiteRemoteAddress: 192.168.1.*
    # if it is admin, it could access all resources
    admin: true
"""


def test_rocketmqs_example_reads_as_java_reads_it() -> None:
    parsed = parse_acl_file(ROCKETMQ_EXAMPLE, "plain_acl.yml")
    assert parsed.global_white_remote_addresses == ("10.10.103.*", "192.168.0.*")
    first, second = parsed.accounts
    assert (first.access_key, first.secret_key, first.line) == ("RocketMQ", "12345678", 6)
    assert first.white_remote_address is None and first.admin is False
    assert first.topic_perms == ("topicA=DENY", "topicB=PUB|SUB", "topicC=SUB")
    assert (first.default_topic_perm, first.default_group_perm) == ("DENY", "SUB")
    assert second.admin is True and second.white_remote_address == "192.168.1.*"
    assert second.default_topic_perm is None  # DENY, as Java reads a missing one
    assert parsed.data_version == FileVersion() and parsed.warnings == ()


def test_our_example_file_parses() -> None:
    example = Path(__file__).resolve().parents[3] / "conf" / "plain_acl.yml"
    parsed = parse_acl_file(example.read_text(), str(example))
    assert [a.admin for a in parsed.accounts] == [True, False] and not parsed.warnings


def test_an_empty_file_has_no_accounts() -> None:
    assert parse_acl_file("", "f").accounts == ()
    assert parse_acl_file("# nothing\n", "f").accounts == ()


def test_the_data_version_and_unknown_keys() -> None:
    text = "dataVersion:\n- counter: 3\n  timestamp: 1700000000000\nextra: 1\n"
    parsed = parse_acl_file(text, "f.yml")
    assert parsed.data_version == FileVersion(3, 1_700_000_000_000)
    assert parsed.warnings == ("f.yml:4: extra ignored",)


ACCOUNT = "accounts:\n  - accessKey: RocketMQ\n    secretKey: 12345678\n"


@pytest.mark.parametrize(
    ("text", "where", "reason"),
    [
        ("accounts: [\n", "f.yml:2", "not valid YAML"),
        ("- a\n- b\n", "f.yml:1", "the file must be a mapping"),
        ("accounts:\n  - accessKey: short\n    secretKey: 12345678\n", "f.yml:2", "accessKey"),
        ("accounts:\n  - accessKey: RocketMQ\n", "f.yml:2", "secretKey must be at least 7"),
        (ACCOUNT + "    defaultTopicPerm: PUBSUB\n", "f.yml:4", "'PUBSUB' is not one of"),
        (ACCOUNT + "    topicPerms:\n      - topicA\n", "f.yml:5", "'topicA' is not name=PERM"),
        (ACCOUNT + "    groupPerms:\n      - g=ALL\n", "f.yml:5", "'ALL' is not one of"),
        (ACCOUNT + "    whiteRemoteAddress: 10.0.0.300\n", "f.yml:4", "whiteRemoteAddress"),
        (ACCOUNT + "    admin: maybe\n", "f.yml:4", "admin must be true or false"),
        (ACCOUNT + "    secretKey: 87654321\n", "f.yml:4", "secretKey appears twice"),
        (ACCOUNT + ACCOUNT[len("accounts:\n") :], "f.yml:4", "RocketMQ appears twice"),
        ("globalWhiteRemoteAddresses:\n  - 1.2.*.4\n", "f.yml:2", "only * may follow"),
        ("accounts:\n  - accessKey: [1]\n", "f.yml:2", "single value"),
        ("accounts:\n  - accessKey: RocketMQ\n    secretKey: 12345.678\n", "f.yml:3", "quote it"),
        ("accounts: !!python/object:os.system ls\n", "f.yml:1", "not valid YAML"),
    ],
)
def test_a_bad_file_is_refused_naming_line_and_reason(text: str, where: str, reason: str) -> None:
    with pytest.raises(AclConfigError) as refused:
        parse_acl_file(text, "f.yml")
    message = str(refused.value)
    assert message.startswith(where + ":") and reason in message, message


def test_secrets_stay_out_of_reprs_and_errors() -> None:
    parsed = parse_acl_file(ACCOUNT.replace("12345678", "verysecret"), "f.yml")
    assert "verysecret" not in repr(parsed)
    with pytest.raises(AclConfigError) as refused:
        parse_acl_file(ACCOUNT.replace("12345678", "31415.9265"), "f.yml")
    assert "31415" not in str(refused.value) and "found a float" in str(refused.value)


def test_tools_yml_gives_mqadmins_credentials() -> None:
    assert parse_tools_file("accessKey: rocketmq2\nsecretKey: 12345678\n", "t") == (
        "rocketmq2",
        "12345678",
    )
    assert parse_tools_file("accessKey: rocketmq2\n", "t") is None
    assert parse_tools_file("", "t") is None
