"""A request against the rules: Java's PlainPermissionManager.validate and checkPerm."""

from __future__ import annotations

import json

import pytest

from acl.address import parse_host
from acl.config import parse_acl_file
from acl.credentials import SessionCredentials
from acl.errors import Refusal
from acl.rules import AclRules, build_rules
from acl.signature import Signer, content_prefix
from acl.validator import validate
from remoting.codes import RequestCode as R
from remoting.command import RemotingCommand

RULES_TEXT = """\
globalWhiteRemoteAddresses:
  - 10.10.*.*
accounts:
  - accessKey: RocketMQ
    secretKey: 12345678
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - topicA=DENY
      - topicB=PUB|SUB
      - topicC=SUB
    groupPerms:
      - groupA=DENY
  - accessKey: trustedHost
    secretKey: 12345678
    whiteRemoteAddress: 192.168.7.*
  - accessKey: rocketmq2
    secretKey: 87654321
    admin: true
  - accessKey: listedAdmin
    secretKey: 87654321
    admin: true
    topicPerms:
      - topicB=SUB
"""
USER = SessionCredentials("RocketMQ", "12345678")
ADMIN = SessionCredentials("rocketmq2", "87654321")


@pytest.fixture(scope="module")
def rules() -> AclRules:
    return build_rules([("plain_acl.yml", parse_acl_file(RULES_TEXT, "plain_acl.yml"))])[0]


def check(
    rules: AclRules,
    code: int,
    fields: dict[str, str] | None = None,
    body: bytes = b"",
    *,
    who: SessionCredentials | None = USER,
    host: str = "127.0.0.1",
) -> Refusal | None:
    request = RemotingCommand.request(code, dict(fields or {}), body)
    if who is not None:
        who.sign(request)
    return validate(rules, request, parse_host(host))


def send(topic: str) -> dict[str, str]:
    return {"a": "PG", "b": topic, "c": "TBW102", "d": "4", "e": "0"}


def test_send_needs_pub_on_the_topic(rules: AclRules) -> None:
    assert check(rules, R.SEND_MESSAGE_V2, send("topicB")) is None
    refused = check(rules, R.SEND_MESSAGE_V2, send("topicC"))
    assert refused is not None and refused.message == "No default permission for topic:topicC"
    assert refused.remark.startswith(
        "org.apache.rocketmq.acl.common.AclException: No default permission for topic:topicC, "
        "org.apache.rocketmq.acl.plain.PlainPermissionManager.checkPerm("
    )
    assert check(rules, R.SEND_MESSAGE_V2, send("unlisted")) is not None  # default DENY
    assert check(rules, R.SEND_BATCH_MESSAGE, send("topicA")) is not None
    assert check(rules, R.SEND_MESSAGE, {"topic": "topicC", "producerGroup": "PG"}) is not None


def test_a_send_to_a_retry_topic_needs_sub_on_its_group(rules: AclRules) -> None:
    assert check(rules, R.SEND_MESSAGE_V2, send("%RETRY%groupB")) is None  # default SUB
    refused = check(rules, R.SEND_MESSAGE_V2, send("%RETRY%groupA"))
    assert refused is not None and refused.message == "No default permission for group:groupA"


def test_pull_needs_sub_on_topic_and_group(rules: AclRules) -> None:
    pull = {"consumerGroup": "groupB", "topic": "topicC", "queueId": "0", "queueOffset": "0"}
    assert check(rules, R.PULL_MESSAGE, pull) is None
    assert check(rules, R.PULL_MESSAGE, {**pull, "topic": "topicA"}) is not None
    assert check(rules, R.PULL_MESSAGE, {**pull, "consumerGroup": "groupA"}) is not None
    assert check(rules, R.UPDATE_CONSUMER_OFFSET, {**pull, "consumerGroup": "groupA"}) is not None
    assert check(rules, R.QUERY_CONSUMER_OFFSET, {**pull, "topic": "topicA"}) is not None


def test_heartbeat_names_its_groups_and_subscriptions(rules: AclRules) -> None:
    def heartbeat(group: str, topic: str) -> bytes:
        consumer = {"groupName": group, "subscriptionDataSet": [{"topic": topic}]}
        return json.dumps({"clientID": "c", "consumerDataSet": [consumer]}).encode()

    assert check(rules, R.HEART_BEAT, body=heartbeat("groupB", "topicC")) is None
    assert check(rules, R.HEART_BEAT, body=heartbeat("groupA", "topicC")) is not None
    assert check(rules, R.HEART_BEAT, body=heartbeat("groupB", "topicA")) is not None
    garbled = check(rules, R.HEART_BEAT, body=b"{not json")
    assert garbled is not None and "PlainAccessValidator.parse" in garbled.frame


def test_the_admin_codes_need_an_admin_account(rules: AclRules) -> None:
    refused = check(rules, R.UPDATE_AND_CREATE_TOPIC, {"topic": "x"})
    assert refused is not None
    assert (
        refused.message
        == "Need admin permission for request code=17, but accessKey=RocketMQ is not"
    )
    assert check(rules, R.UPDATE_AND_CREATE_TOPIC, {"topic": "x"}, who=ADMIN) is None
    assert check(rules, R.UPDATE_AND_CREATE_ACL_CONFIG, {"accessKey": "newUser1"}) is not None
    assert check(rules, R.GET_ALL_TOPIC_CONFIG) is None  # any account (Java's default)


def test_an_admin_with_lists_is_held_to_them(rules: AclRules) -> None:
    listed = SessionCredentials("listedAdmin", "87654321")
    assert check(rules, R.SEND_MESSAGE_V2, send("anything"), who=ADMIN) is None
    assert check(rules, R.SEND_MESSAGE_V2, send("topicB"), who=listed) is not None  # SUB only
    assert check(rules, R.SEND_MESSAGE_V2, send("other"), who=listed) is not None  # default DENY


def test_credentials_must_be_known_and_the_signature_right(rules: AclRules) -> None:
    refused = check(rules, R.GET_ALL_TOPIC_CONFIG, who=None)
    assert refused is not None and refused.message == "No accessKey is configured"
    stranger = SessionCredentials("stranger", "12345678")
    refused = check(rules, R.GET_ALL_TOPIC_CONFIG, who=stranger)
    assert refused is not None and refused.message == "No acl config for stranger"
    wrong = SessionCredentials("RocketMQ", "12345679")
    refused = check(rules, R.SEND_MESSAGE_V2, send("topicB"), who=wrong)
    assert (
        refused is not None and refused.message == "Check signature failed for accessKey=RocketMQ"
    )
    request = RemotingCommand.request(R.SEND_MESSAGE_V2, send("topicB"), b"body")
    USER.sign(request)
    request.body = b"tampered"
    assert validate(rules, request, None) is not None


def test_white_listed_addresses_skip_the_checks_as_in_java(rules: AclRules) -> None:
    # globally white-listed: no credentials at all, even admin codes
    assert (
        check(rules, R.DELETE_TOPIC_IN_BROKER, {"topic": "t"}, who=None, host="10.10.3.4") is None
    )
    # an account's white list: known key, no signature check, no permission check
    unsigned = RemotingCommand.request(R.UPDATE_AND_CREATE_TOPIC, {"AccessKey": "trustedHost"})
    assert validate(rules, unsigned, parse_host("192.168.7.9")) is None
    assert validate(rules, unsigned, parse_host("192.168.8.9")) is not None


def test_anyone_signed_may_publish_traces(rules: AclRules) -> None:
    assert check(rules, R.SEND_MESSAGE_V2, send("RMQ_SYS_TRACE_TOPIC")) is None


def test_the_namesrv_reads_need_no_credentials_its_writes_an_admin(rules: AclRules) -> None:
    assert check(rules, R.GET_ROUTEINFO_BY_TOPIC, {"topic": "t"}, who=None) is None
    assert check(rules, R.REGISTER_BROKER, who=None) is not None
    assert check(rules, R.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "b"}) is not None
    assert check(rules, R.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "b"}, who=ADMIN) is None


def test_a_query_signed_with_javas_unique_key_flag_either_way_passes(rules: AclRules) -> None:
    fields = {"topic": "topicC", "key": "k", "maxNum": "32", "beginTimestamp": "0",
              "endTimestamp": "1"}  # fmt: skip
    ours = RemotingCommand.request(R.QUERY_MESSAGE, dict(fields))
    USER.sign(ours)
    ours.ext_fields["_UNIQUE_KEY_QUERY"] = "true"  # type: ignore[index]
    assert validate(rules, ours, None) is None
    javas = RemotingCommand.request(R.QUERY_MESSAGE, {**fields, "_UNIQUE_KEY_QUERY": "true"})
    USER.sign(javas)  # ours leaves the flag out: sign as Java's client does, flag included
    prefix = content_prefix(javas.ext_fields, frozenset({"Signature"}))
    javas.ext_fields["Signature"] = Signer("12345678").sign(prefix).decode()  # type: ignore[index]
    assert validate(rules, javas, None) is None


def test_view_by_id_needs_sub_on_the_topic_of_that_message(rules: AclRules) -> None:
    class Store:
        def topic_at(self, phys_offset: int) -> str | None:
            return {100: "topicA", 200: "topicC"}.get(phys_offset)

    def view(offset: int) -> Refusal | None:
        request = RemotingCommand.request(R.VIEW_MESSAGE_BY_ID, {"offset": str(offset)})
        USER.sign(request)
        return validate(rules, request, None, Store())

    assert view(100) is not None and view(200) is None
    assert view(300) is None  # no message there: the processor answers that
