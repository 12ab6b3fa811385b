"""Header values are checked against their Java types in one place, the header decoder: a value
out of range is a RequestError(SYSTEM_ERROR) naming the field and the value, never a truncated
or wrapped number; the compiled decoders agree with the reference check on any input."""

from __future__ import annotations

import inspect

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remoting import headers
from remoting.codes import ResponseCode
from remoting.errors import RequestError
from remoting.header_codec import field_specs
from remoting.serde import decode_header, encode_header_fields
from remoting.wire_types import CLIENT_SYS_FLAG_BITS, check_value

HEADER_CLASSES = [
    cls
    for _, cls in inspect.getmembers(headers, inspect.isclass)
    if attrs.has(cls) and cls.__module__ == headers.__name__
]

V2 = {"a": "PG", "b": "T", "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "1", "h": "0"}


def refusal(cls: type, ext: dict[str, str]) -> str:
    with pytest.raises(RequestError) as caught:
        decode_header(cls, ext)
    assert caught.value.code == ResponseCode.SYSTEM_ERROR
    return caught.value.remark


@pytest.mark.parametrize("cls", HEADER_CLASSES, ids=lambda c: c.__name__)
def test_every_header_says_the_java_type_of_each_field(cls: type) -> None:
    specs = field_specs(cls)  # raises for an int without Int/Long/...
    assert [s.attr for s in specs] == [a.name for a in attrs.fields(cls)]


@pytest.mark.parametrize(
    ("field", "value", "accepted"),
    [
        ("e", str(2**31 - 1), True),
        ("e", str(-(2**31)), True),
        ("e", str(2**31), False),
        ("e", str(-(2**31) - 1), False),
        ("h", str(2**32 + 5), False),  # flag: once silently cut to 5
        ("j", str(2**40), False),  # reconsumeTimes
        ("g", str(2**63 - 1), True),
        ("g", str(2**63), False),
        ("g", str(2**70), False),
    ],
)
def test_send_v2_ints_and_longs_are_within_their_java_range(field, value, accepted) -> None:
    ext = {**V2, field: value}
    if accepted:
        header = decode_header(headers.SendMessageRequestHeaderV2, ext)
        assert getattr(header, field) == int(value)
    else:
        assert f"{field} (" in refusal(headers.SendMessageRequestHeaderV2, ext)
        assert value[:20] in refusal(headers.SendMessageRequestHeaderV2, ext)


@pytest.mark.parametrize("value", [2**31 + 4, 2**32 + 16, -(2**31) - 1])
def test_a_sys_flag_outside_java_int_is_refused_as_javas_parse_int_does(value: int) -> None:
    remark = refusal(headers.SendMessageRequestHeaderV2, {**V2, "f": str(value)})
    assert f"f (sysFlag)='{value}' is out of the range of Java int" in remark


@pytest.mark.parametrize(
    ("sent", "kept"),
    [
        (0x1 | 0x2 | 0x4, 0x7),  # compressed, multi tags, prepared
        (0xC, 0xC),  # rollback type
        (0x301, 0x301),  # zlib compressed, as a 4.9.8 Java producer sends it
        (0x10, 0),  # born host IPv6: the broker decides from the connection
        (0x20, 0),  # store host IPv6
        (0x40 | 0x80 | 0x800 | 0x4000_0000, 0),  # 5.x store bits and unknown ones
        (-1, CLIENT_SYS_FLAG_BITS),
    ],
)
def test_only_the_sys_flag_bits_a_client_decides_are_kept(sent: int, kept: int) -> None:
    for cls, field in (
        (headers.SendMessageRequestHeaderV2, "f"),
        (headers.SendMessageRequestHeader, "sysFlag"),
    ):
        ext = {**V2, "f": str(sent)} if field == "f" else _v1({"sysFlag": str(sent)})
        header = decode_header(cls, ext)
        assert (header.f if field == "f" else header.sys_flag) == kept


def _v1(changes: dict[str, str]) -> dict[str, str]:
    v1 = decode_header(headers.SendMessageRequestHeaderV2, V2).to_v1()
    return {**encode_header_fields(v1), **changes}


@pytest.mark.parametrize("offset", [str(2**63), str(2**70), "-1"])
def test_a_committed_offset_is_a_java_long_and_not_negative(offset: str) -> None:
    ext = {"consumerGroup": "G", "topic": "T", "queueId": "0", "commitOffset": offset}
    remark = refusal(headers.UpdateConsumerOffsetRequestHeader, ext)
    assert f"commitOffset='{offset}'" in remark


def test_pull_commit_offset_may_be_minus_one_but_not_past_a_long() -> None:
    ext = {
        "consumerGroup": "G", "topic": "T", "queueId": "0", "queueOffset": "0",
        "maxMsgNums": "32", "sysFlag": "2", "commitOffset": "-1",
        "suspendTimeoutMillis": "0", "subVersion": "0",
    }  # fmt: skip
    assert decode_header(headers.PullMessageRequestHeader, ext).commit_offset == -1
    for field, value in (("commitOffset", 2**63), ("queueOffset", 2**70), ("maxMsgNums", 2**31)):
        assert f"{field}='{value}'" in refusal(
            headers.PullMessageRequestHeader, {**ext, field: str(value)}
        )


def test_every_problem_is_named_at_once_and_long_values_are_cut_short() -> None:
    ext = {**V2, "b": "../etc", "e": "x" * 5000, "g": str(2**64)}
    del ext["a"]
    remark = refusal(headers.SendMessageRequestHeaderV2, ext)
    assert "a (producerGroup) is missing" in remark
    assert "b (topic)='../etc': The specified topic contains illegal characters" in remark
    assert "e (queueId)='xxxxx" in remark and "is not a number" in remark
    assert "g (bornTimestamp)=" in remark
    assert len(remark) < 600


def test_create_topic_refuses_bad_queue_numbers_perm_and_filter_type() -> None:
    ext = {
        "topic": "T", "defaultTopic": "TBW102", "readQueueNums": "8", "writeQueueNums": "8",
        "perm": "6", "topicFilterType": "SINGLE_TAG",
    }  # fmt: skip
    assert decode_header(headers.CreateTopicRequestHeader, ext).read_queue_nums == 8
    for field, value in (
        ("readQueueNums", "0"),
        ("writeQueueNums", str(2**31 - 1)),
        ("perm", "16"),
        ("perm", "-1"),
        ("topicFilterType", "ANY_TAG"),
    ):
        assert f"{field}='{value}'" in refusal(
            headers.CreateTopicRequestHeader, {**ext, field: value}
        )


def test_an_optional_name_sent_blank_means_none() -> None:
    header = decode_header(
        headers.GetConsumeStatsRequestHeader, {"consumerGroup": "G", "topic": ""}
    )
    assert header.topic is None
    assert "topic='a/b'" in refusal(
        headers.GetConsumeStatsRequestHeader, {"consumerGroup": "G", "topic": "a/b"}
    )


def test_kv_names_are_bounded() -> None:
    ok = decode_header(
        headers.PutKVConfigRequestHeader, {"namespace": "N", "key": "k", "value": ""}
    )
    assert ok.value == ""
    for ext in ({"namespace": "", "key": "k"}, {"namespace": "N", "key": "k" * 256}):
        assert "characters long" in refusal(headers.GetKVConfigRequestHeader, ext)


def test_broker_ids_are_not_negative() -> None:
    ext = {"brokerName": "b", "brokerAddr": "a:1", "clusterName": "c", "brokerId": "-1"}
    assert "brokerId='-1'" in refusal(headers.UnRegisterBrokerRequestHeader, ext)


# ------------------------------------------------------------ compiled decoder vs reference

_NUMBERS = st.one_of(
    st.integers(-(2**31) - 2, 2**31 + 2),
    st.sampled_from([2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**64 + 16, 0x10, 0x30]),
).map(str)
_NAMES = st.sampled_from(["T", "%RETRY%G", "", "../x", "a/b", "T\n", "\x00", "é", "x" * 300])
_VALUES = st.one_of(_NUMBERS, _NAMES, st.sampled_from(["true", "FALSE", "x", "1_0", " 7"]))


@settings(max_examples=300, deadline=None)
@given(cls=st.sampled_from(HEADER_CLASSES), data=st.data())
def test_the_compiled_decoder_agrees_with_the_reference_check(cls: type, data) -> None:
    specs = field_specs(cls)
    ext = {
        spec.wire: data.draw(_VALUES) for spec in specs if spec.required or data.draw(st.booleans())
    }
    expected, problems = {}, []
    for spec in specs:
        raw = ext.get(spec.wire)
        if raw is None or (raw == "" and spec.blank_is_absent):
            expected[spec.attr] = spec.default
            if spec.required:
                problems.append(spec.wire)
            continue
        value, problem = check_value(spec.base, spec.marks, raw)
        expected[spec.attr] = value
        if problem is not None:
            problems.append(spec.wire)
    try:
        header = decode_header(cls, ext)
    except RequestError as exc:
        assert problems, exc.remark
        for wire in problems:
            assert wire in exc.remark
        return
    assert not problems
    assert attrs.asdict(header) == expected


def test_request_bodies_are_checked_but_files_a_java_broker_wrote_still_load() -> None:
    from remoting.body import SubscriptionData, SubscriptionGroupConfig, SubscriptionGroupWrapper
    from remoting.serde import check_body, structure_body

    for bad, remark in (
        (SubscriptionGroupConfig(group_name="../g"), "groupName='../g'"),
        (SubscriptionGroupConfig(group_name="G", retry_queue_nums=2**31 - 1), "retryQueueNums="),
        (SubscriptionGroupConfig(group_name="G", broker_id=-1), "brokerId=-1"),
        (SubscriptionData(topic="T", sub_version=2**63), "subVersion="),
    ):
        with pytest.raises(RequestError) as caught:
            check_body(bad)
        assert remark in caught.value.remark
    check_body(SubscriptionGroupConfig(group_name="G", retry_queue_nums=0))
    on_disk = {"subscriptionGroupTable": {"my.group": {"groupName": "my.group", "brokerId": -1}}}
    loaded = structure_body(SubscriptionGroupWrapper, on_disk)
    assert loaded.subscription_group_table["my.group"].broker_id == -1
