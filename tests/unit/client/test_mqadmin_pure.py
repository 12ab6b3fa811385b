"""The pure parts behind mqadmin: version names, trace records, the oldest wait of a group,
and the argument checks."""

from __future__ import annotations

import argparse

import pytest

from client import trace
from client.admin import oldest_wait_ms
from client.mqadmin import args as A
from remoting.body import MessageQueue, QueueTimeSpan
from remoting.version import version_desc


@pytest.mark.parametrize(
    ("ordinal", "name"),
    [(212, "V4_0_0_SNAPSHOT"), (233, "V4_1_0"), (401, "V4_9_4"), (409, "V4_9_8"),
     (412, "V5_0_0_SNAPSHOT"), (611, "V5_9_9"), (612, "HIGHER_VERSION")],
)  # fmt: skip
def test_version_names_follow_javas_enum(ordinal: int, name: str) -> None:
    assert version_desc(ordinal) == name


def test_a_pub_record_reads_back_as_javas_trace_view() -> None:
    record = trace.encode_pub(timestamp=1_700_000_000_000, region="DefaultRegion", group="PG",
                              topic="T", msg_id="AB", tags=None, keys="k1 k2", store_host="h:1",
                              body_length=5, cost_ms=3, offset_msg_id="CD", success=True)  # fmt: skip
    assert record.count(trace.CONTENT_SPLITOR) == 13 and record.endswith(trace.FIELD_SPLITOR)
    other = record.replace("\x01AB\x01", "\x01ZZ\x01")  # a record about another message
    [view] = trace.decode(record + other + "Junk\x01x", "AB", "10.0.0.1:5")
    assert (view["type"], view["group"], view["tags"], view["keys"]) == (
        "Pub",
        "PG",
        "null",
        "k1 k2",
    )
    assert (view["offsetMsgId"], view["status"], view["costTime"]) == ("CD", "success", 3)
    assert view["clientHost"] == "10.0.0.1:5"


def test_sub_after_records_keep_their_group_and_time() -> None:
    body = "\x01".join(["SubAfter", "req", "AB", "12", "false", "k", "0", "1700", "CG"]) + "\x02"
    [view] = trace.decode(body, "AB")
    assert (view["group"], view["timestamp"], view["status"]) == ("CG", 1700, "failed")


def span(queue_id: int, first: int, delay: int) -> QueueTimeSpan:
    mq = MessageQueue(topic="T", broker_name="b", queue_id=queue_id)
    return QueueTimeSpan(message_queue=mq, min_time_stamp=first, delay_time=delay)


def test_the_oldest_wait_counts_only_lagging_queues_and_never_from_1970() -> None:
    now = 1_000_000
    spans = [
        span(0, first=990_000, delay=4_000),  # consumed some: waits 4 s
        span(1, first=0, delay=now),  # empty queue, no offset: counted from 0 by the broker
        span(2, first=995_000, delay=now + 1),  # never consumed: its oldest message, 5 s
    ]
    lags = {("b", 0): 3, ("b", 1): 0, ("b", 2): 1}
    assert oldest_wait_ms(spans, lags, now) == 5_000
    assert oldest_wait_ms(spans, {("b", 0): 3}, now) == 4_000
    assert oldest_wait_ms(spans, {}, now) == 0


@pytest.mark.parametrize(
    ("check", "good", "value"),
    [(A.address, "10.0.0.1:9876", "10.0.0.1:9876"), (A.namesrv_list, "a:1; b:2", "a:1;b:2"),
     (A.java_bool, "TRUE", True), (A.perm, "6", 6), (A.timestamp, "1700000000000", 1700000000000),
     (A.offset_msg_ids, "7f00000100002a9f0000000000000000,7F00000100002A9F00000000000000FF",
      ["7F00000100002A9F0000000000000000", "7F00000100002A9F00000000000000FF"])],
)  # fmt: skip
def test_good_values_pass(check, good: str, value) -> None:
    assert check(good) == value


@pytest.mark.parametrize(
    ("check", "bad"),
    [(A.address, "host"), (A.address, "host:0"), (A.namesrv_list, ";"), (A.java_bool, "yes"),
     (A.perm, "7"), (A.queue_nums, "-1"), (A.timestamp, "2024-02-30#00:00:00:000"),
     (A.offset_msg_id, "zz" * 16), (A.group, "a" * 256), (A.order_conf, "a:b"), (A.charset, "x")],
)  # fmt: skip
def test_bad_values_are_argument_errors(check, bad: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        check(bad)
