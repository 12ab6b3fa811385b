"""Topic and group names: RocketMQ's rules, and never more than one path component."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from remoting import constants as K
from remoting import names

LEGITIMATE_TOPICS = [
    "TBW102",
    K.SCHEDULE_TOPIC,
    K.TRANS_HALF_TOPIC,
    K.TRANS_OP_HALF_TOPIC,
    K.TRACE_TOPIC,
    "rmq_sys_TRACE_DATA_x",
    "%RETRY%G1",
    "%DLQ%G1",
    "MQ_INST_1380156306793859_BXYzPvyq%TopicA",  # a namespaced topic
    "a|b",
    "T" * 127,
    "%RETRY%" + "G" * 200,  # a long group's retry topic: Java's broker creates it too
]
TRAVERSALS = [
    "..",
    ".",
    "../x",
    "../../etc",
    "/abs",
    "a/b",
    "a\\b",
    "x\x00y",
    "T\n",  # a regex ending in $ lets this one through
    "%RETRY%../..",
    "%DLQ%/x",
    "é",
    "\u0661",  # a digit to \d, not to RocketMQ's charset
    " T",
    "",
]


@pytest.mark.parametrize("topic", LEGITIMATE_TOPICS)
def test_names_java_clients_use_are_topics(topic: str) -> None:
    assert names.topic_problem(topic) is None


@pytest.mark.parametrize("name", TRAVERSALS)
def test_nothing_that_could_leave_a_directory_is_a_topic_or_a_group(name: str) -> None:
    assert names.topic_problem(name) is not None
    assert names.group_problem(name) is not None


def test_lengths_are_javas() -> None:
    assert "127" in names.topic_problem("T" * 128)
    assert names.group_problem("G" * 255) is None
    assert "255" in names.group_problem("G" * 256)
    # %RETRY% + a 249-character group cannot be a file name
    assert "longest file name" in names.topic_problem("%RETRY%" + "G" * 249)
    assert "illegal" in names.topic_problem("%RETRY%" + "G.x" * 50)


@given(st.text(max_size=300))
def test_a_valid_name_is_one_safe_path_component(name: str) -> None:
    for problem in (names.topic_problem, names.group_problem):
        if problem(name) is None:
            assert name not in (".", "..") and "/" not in name and "\x00" not in name
            assert len(name.encode()) <= 255 and name.isascii()
