"""The console's pure parts: lag figures, charts, the sampled history, the input boundary, the
body views and the cluster rows built from what brokers report."""

from __future__ import annotations

import pytest

from console import lag as L
from console.bodyview import SHOWN_BYTES, body_views, hex_dump
from console.charts import line_chart, nice_ceiling
from console.forms import (
    MAX_FORM_BYTES,
    BadInput,
    MessageQuery,
    OffsetReset,
    TopicChange,
    TopicDelete,
    Values,
    parse_form,
)
from console.history import History
from console.pages.cluster import broker_row, ha_lines, put_tps_text
from console.pages.groups import subscription_rows
from console.pages.topics import route_shows
from remoting.body import (
    BrokerData,
    ConsumeStats,
    ConsumeStatsList,
    MessageQueue,
    OffsetWrapper,
    QueueData,
    TopicConfig,
    TopicRouteData,
)


def mq(queue_id: int, topic: str = "T") -> MessageQueue:
    return MessageQueue(topic=topic, broker_name="broker-a", queue_id=queue_id)


# ---------------------------------------------------------------------- lag


def test_lag_in_seconds_is_the_wait_of_the_oldest_unconsumed_message() -> None:
    assert L.lag_seconds(5, 1_000_000, 1_004_500) == 4.5
    assert L.lag_seconds(0, None, 1_004_500) == 0.0  # nothing waits
    assert L.lag_seconds(3, L.NOT_READ, 1_004_500) is None  # unknown, never a guess
    assert L.lag_seconds(3, None, 1_004_500) == 0.0  # all it lags on expired: RocketMQ says 0
    assert L.lag_seconds(3, 1_005_000, 1_004_500) == 0.0  # a broker clock ahead of ours


def test_a_groups_lag_is_summed_over_topics_and_brokers_never_below_zero() -> None:
    def stats(*pairs: tuple[int, int]) -> ConsumeStats:
        return ConsumeStats(
            offset_table={
                mq(i): OffsetWrapper(broker_offset=b, consumer_offset=c)
                for i, (b, c) in enumerate(pairs)
            }
        )

    a = ConsumeStatsList(
        consume_stats_list=[{"G": [stats((10, 4), (5, 5)), stats((3, 0))], "H": [stats((1, 9))]}]
    )
    b = ConsumeStatsList(consume_stats_list=[{"G": [stats((7, 6))]}])
    assert L.lag_by_group([a, b]) == {"G": 6 + 3 + 1, "H": 0}


def test_the_queues_lagging_most_are_measured_first_and_the_count_is_bounded() -> None:
    offsets = {
        mq(0): OffsetWrapper(broker_offset=10, consumer_offset=10),
        mq(1): OffsetWrapper(broker_offset=10, consumer_offset=7),
        mq(2): OffsetWrapper(broker_offset=50, consumer_offset=0),
        mq(3): OffsetWrapper(broker_offset=9, consumer_offset=8),
    }
    assert L.to_measure(offsets) == [(mq(2), 0), (mq(1), 7), (mq(3), 8)]
    assert L.to_measure(offsets, limit=1) == [(mq(2), 0)]


def test_queue_lags_carry_messages_and_seconds_per_queue() -> None:
    offsets = {
        mq(1): OffsetWrapper(broker_offset=10, consumer_offset=7, last_timestamp=5),
        mq(0): OffsetWrapper(broker_offset=4, consumer_offset=4),
        mq(2): OffsetWrapper(broker_offset=6, consumer_offset=1),
        mq(3): OffsetWrapper(broker_offset=20, consumer_offset=12),
    }
    lags = L.queue_lags(offsets, {mq(1): 40_000, mq(3): None}, now_ms=100_000)
    assert [(q.mq.queue_id, q.messages, q.seconds) for q in lags] == [
        (0, 0, 0.0),
        (1, 3, 60.0),
        (2, 5, None),  # lags, not measured
        (3, 8, 0.0),  # lags on expired messages only: nothing stored has waited
    ]
    assert L.oldest_seconds(lags) == 60.0
    assert L.oldest_seconds(lags[2:3]) is None
    assert L.oldest_seconds(lags[:1]) == 0.0


# ---------------------------------------------------------------------- charts


def test_chart_escapes_names_and_draws_only_the_window() -> None:
    svg = line_chart(
        "Lag",
        {"<script>": [(0, 5.0), (3_000_000, 7.0), (3_600_000, 9.0)]},
        now_ms=3_600_000,
        window_ms=3_600_000,
    )
    assert "<script>" not in svg and "&lt;script&gt;" in svg
    assert svg.count("<polyline") == 1
    assert svg.startswith("<svg") and svg.endswith("</svg>")


def test_chart_without_samples_says_so() -> None:
    svg = line_chart("TPS", {}, now_ms=1, window_ms=3_600_000, empty_note="nothing yet")
    assert "nothing yet" in svg and "<polyline" not in svg


@pytest.mark.parametrize(
    ("value", "ceiling"), [(0, 1.0), (0.3, 0.5), (7, 10.0), (10, 10.0), (11, 20.0), (4500, 5000.0)]
)
def test_nice_ceiling(value: float, ceiling: float) -> None:
    assert nice_ceiling(value) == ceiling


# ---------------------------------------------------------------------- history


def test_history_keeps_one_window_and_a_bounded_number_of_series() -> None:
    history = History(window_ms=1000, max_series=2)
    for t in range(0, 3000, 100):
        history.add("lag", "g1", t, float(t))
    assert [t for t, _ in history.series("lag")["g1"]] == list(range(1900, 3000, 100))
    history.add("lag", "g2", 3000, 1.0)
    history.add("lag", "g3", 3000, 1.0)  # one series too many
    assert sorted(history.series("lag")) == ["g1", "g2"]
    assert history.dropped == {"lag": 1}
    assert list(history.top("lag", 1)) == ["g1"]
    history.forget_older_than(10_000)
    assert history.series("lag") == {}


# ---------------------------------------------------------------------- input boundary


def test_a_bad_value_names_its_field() -> None:
    with pytest.raises(BadInput, match=r"^topic: invalid topic"):
        TopicChange.read(Values({"cluster": "C", "topic": "../etc"}))
    with pytest.raises(BadInput, match=r"^readQueueNums: 0 is outside 1\.\.1024"):
        TopicChange.read(Values({"cluster": "C", "topic": "T", "readQueueNums": "0"}))
    with pytest.raises(BadInput, match=r"^perm: 3 is not a topic permission"):
        TopicChange.read(Values({"cluster": "C", "topic": "T", "perm": "3"}))
    with pytest.raises(BadInput, match=r"^cluster: required"):
        TopicChange.read(Values({"topic": "T"}))
    with pytest.raises(BadInput, match=r"^topic: 2000 characters"):
        TopicChange.read(Values({"cluster": "C", "topic": "T" * 2000}))


def test_a_change_that_cannot_be_undone_needs_the_name_typed_again() -> None:
    with pytest.raises(BadInput, match=r"^confirm: type the topic's name \(T\)"):
        TopicDelete.read(Values({"cluster": "C", "topic": "T", "confirm": "t"}))
    assert TopicDelete.read(Values({"cluster": "C", "topic": "T", "confirm": "T"})).topic == "T"
    with pytest.raises(BadInput, match=r"^confirm"):
        OffsetReset.read(Values({"group": "G", "topic": "T", "timestamp": "now"}))
    reset = OffsetReset.read(
        Values({"group": "G", "topic": "T", "timestamp": "1700000000000", "confirm": "G"})
    )
    assert reset.timestamp_ms == 1_700_000_000_000


def test_message_queries() -> None:
    now = 10_000_000
    assert MessageQuery.read(Values({}), now) is None
    by_time = MessageQuery.read(Values({"topic": "T"}), now)
    assert (by_time.begin_ms, by_time.end_ms) == (now - 3_600_000, now)
    by_key = MessageQuery.read(Values({"topic": "T", "key": "k1"}), now)
    assert by_key.key == "k1" and by_key.begin_ms is None
    by_id = MessageQuery.read(Values({"topic": "T", "msgId": "7f" * 16}), now)
    assert by_id.msg_id == "7F" * 16
    with pytest.raises(BadInput, match=r"^msgId: .* is not a message id"):
        MessageQuery.read(Values({"topic": "T", "msgId": "zz"}), now)
    with pytest.raises(BadInput, match=r"^begin: the range starts after it ends"):
        MessageQuery.read(Values({"topic": "T", "begin": "2000", "end": "1000"}), now)
    with pytest.raises(BadInput, match=r"^key: "):
        MessageQuery.read(Values({"topic": "T", "key": "a\x00b"}), now)


def test_forms_are_bounded() -> None:
    assert parse_form(b"a=1&b=x%20y") == {"a": "1", "b": "x y"}
    with pytest.raises(BadInput, match=r"^form: "):
        parse_form(b"a=" + b"x" * MAX_FORM_BYTES)
    with pytest.raises(BadInput, match=r"^form: not a URL-encoded form"):
        parse_form(b"a=\xff\xfe")


# ---------------------------------------------------------------------- bodies


def test_body_views() -> None:
    views = body_views(b'{"order": 1}')
    assert views.json == '{\n  "order": 1\n}' and views.text == '{"order": 1}'
    assert hex_dump(b"AB\x00") == "00000000  41 42 00" + " " * 39 + "  AB."
    binary = body_views(b"\xff\x00")
    assert binary.json is None and binary.json_problem.startswith("not JSON")
    big = body_views(b"x" * (SHOWN_BYTES + 1))
    assert big.shown == SHOWN_BYTES and big.size == SHOWN_BYTES + 1 and big.json is None


# ---------------------------------------------------------------------- cluster rows


def test_replication_lines_from_what_brokers_report() -> None:
    slaves = '[{"addr":"s:1","inSync":false,"lagBytes":900,"lagMillis":12}]'
    assert ha_lines({"haSlaves": slaves}) == ["slave s:1: OUT OF SYNC, 900 B / 12 ms behind"]
    assert ha_lines({"haSlaves": "[]"}) == ["no slave connected"]
    assert ha_lines({"haSlaves": "{not json"}) == ["haSlaves unreadable"]
    assert ha_lines({"haSlaves": "[1, 2]"}) == []
    follower = {"masterAddr": "m:1", "haConnected": "false", "haLastChunkMillisAgo": "-1"}
    assert ha_lines(follower)[0].startswith("follows m:1: NOT CONNECTED")


def test_a_broker_row_says_why_it_is_empty() -> None:
    row = broker_row("C", "b", 0, "a:1", OSError("connect refused"))
    assert row.problem == "connect refused"
    full = broker_row("C", "b", 0, "a:1", {"diskFull": "true", "commitLogDiskRatio": "0.97"})
    assert full.writable.startswith("NO") and full.disk_ratio == "97.0 %"


def test_put_tps_is_the_sampled_minute_else_javas_middle_rate() -> None:
    assert put_tps_text("0.00", 45.98) == "45.98"  # ours: a first runtime read says 0
    assert put_tps_text("12.5 40.1 38.0", None) == "40.10"  # Java: 10 s, 1 min, 10 min
    assert put_tps_text("12.5  ", None) == "12.50"  # up less than a minute: 10 s
    assert put_tps_text("7.25", None) == "7.25"
    assert put_tps_text(None, None) == put_tps_text("  ", None) == "-"
    history = History()
    assert history.latest("put", "b") is None
    history.add("put", "b", 1, 3.0)
    history.add("put", "b", 2, 4.0)
    assert history.latest("put", "b") == 4.0


def test_a_changed_topic_is_awaited_until_its_route_has_the_new_queues_on_each_broker() -> None:
    config = TopicConfig(topic_name="T", read_queue_nums=8, write_queue_nums=8)
    a = BrokerData(cluster="C", broker_name="a", broker_addrs={0: "h:1"})
    b = BrokerData(cluster="C", broker_name="b", broker_addrs={0: "h:2"})

    def route(*queues: tuple[str, int]) -> TopicRouteData:
        datas = [
            QueueData(broker_name=n, read_queue_nums=q, write_queue_nums=q, perm=4)
            for n, q in queues
        ]
        return TopicRouteData(queue_datas=datas, broker_datas=[a, b][: len(queues)])

    assert route_shows(route(("a", 8), ("b", 8)), ["h:1", "h:2"], config)
    assert not route_shows(route(("a", 8)), ["h:1", "h:2"], config)  # b not registered yet
    assert not route_shows(route(("a", 8), ("b", 4)), ["h:1", "h:2"], config)  # b's old queues
    assert route_shows(route(("a", 8)), ["h:1"], config)  # perm 4 (a read-only broker) is fine


def test_members_that_subscribe_differently_are_flagged_per_topic() -> None:
    rows, inconsistent = subscription_rows(
        {"c1": {"Orders": "*", "Audit": "a"}, "c2": {"Orders": "TagA"}, "c3": {"Orders": "*"}}
    )
    assert inconsistent
    assert rows == [
        ("Audit", {"c1": "a", "c2": "(none)", "c3": "(none)"}, True),  # c2, c3 lack the topic
        ("Orders", {"c1": "*", "c2": "TagA", "c3": "*"}, True),
    ]
    rows, inconsistent = subscription_rows({"c1": {"Orders": "*"}, "c2": {"Orders": "*"}})
    assert not inconsistent and rows == [("Orders", {"c1": "*", "c2": "*"}, False)]
    assert subscription_rows({}) == ([], False)
