"""The pull path's filters: properties read straight out of stored records (any host
layout), SQL92 judged on them, and a retry topic judged by the group's subscription to each
message's original topic."""

from __future__ import annotations

import pytest

from broker.processor.message_filter import (
    ExpressionMessageFilter,
    RetryMessageFilter,
    record_properties,
    tags_filter,
)
from remoting import message as codec
from remoting.java_hash import java_string_hash
from remoting.record import pack_record_into, record_size


def record(
    properties: dict[str, str], *, born: str = "10.0.0.1", store: str = "10.0.0.2"
) -> memoryview:
    topic, props = b"%RETRY%G", codec.properties_to_string(properties).encode()
    born_bytes, store_bytes = codec.host_bytes(born), codec.host_bytes(store)
    body = b"body bytes that are not properties \x01\x02"
    size = record_size(
        len(body),
        len(topic),
        len(props),
        born_v6=len(born_bytes) == 16,
        store_v6=len(store_bytes) == 16,
    )
    sys_flag = (codec.BORNHOST_V6_FLAG if len(born_bytes) == 16 else 0) | (
        codec.STOREHOSTADDRESS_V6_FLAG if len(store_bytes) == 16 else 0
    )
    buffer = bytearray(size)
    pack_record_into(
        buffer,
        0,
        total_size=size,
        body_crc=codec.body_crc(body),
        queue_id=0,
        flag=0,
        queue_offset=0,
        phys_offset=0,
        sys_flag=sys_flag,
        born_timestamp=1,
        born_address=born_bytes,
        born_port=1,
        store_timestamp=2,
        store_address=store_bytes,
        store_port=2,
        reconsume_times=0,
        prepared_transaction_offset=0,
        body=body,
        topic=topic,
        properties=props,
    )
    return memoryview(bytes(buffer))


@pytest.mark.parametrize(
    ("born", "store"),
    [("10.0.0.1", "10.0.0.2"), ("::1", "10.0.0.2"), ("10.0.0.1", "fe80::2"), ("::1", "::2")],
)
def test_properties_are_found_whatever_the_host_layout(born: str, store: str) -> None:
    props = {"a": "7", "b": "x", "TAGS": "T"}
    assert record_properties(record(props, born=born, store=store)) == props


def test_sql92_filter_passes_every_unit_and_judges_the_record() -> None:
    message_filter = ExpressionMessageFilter("a > 5 AND b = 'x'")
    assert message_filter.is_matched_by_consume_queue(java_string_hash("anything"))
    assert message_filter.is_matched_by_commit_log(record({"a": "7", "b": "x"}))
    assert not message_filter.is_matched_by_commit_log(record({"a": "7", "b": "y"}))
    assert not message_filter.is_matched_by_commit_log(record({"b": "x"}))


def test_retry_messages_are_judged_by_the_subscription_to_their_original_topic() -> None:
    expressions = {"Orders": "a > 5"}  # Audit: a tag subscription, nothing to judge
    message_filter = RetryMessageFilter(tags_filter("*"), expressions.get)
    assert message_filter.is_matched_by_commit_log(record({"RETRY_TOPIC": "Orders", "a": "9"}))
    assert not message_filter.is_matched_by_commit_log(record({"RETRY_TOPIC": "Orders", "a": "1"}))
    assert message_filter.is_matched_by_commit_log(record({"RETRY_TOPIC": "Audit", "a": "1"}))


def test_tag_filters_never_need_the_record() -> None:
    assert tags_filter("TagA || TagB").is_matched_by_commit_log is None
    assert tags_filter("TagA").is_matched_by_consume_queue(java_string_hash("TagA"))
    assert not tags_filter("TagA").is_matched_by_consume_queue(java_string_hash("TagB"))
