"""The fuzzer's own pure parts: a case is rebuilt byte for byte from its id, each is sent the
way its bytes need, and what must be refused is marked so (no servers here)."""

from __future__ import annotations

import random
from pathlib import Path

import attrs
import pytest

from remoting import headers as H
from remoting.codes import RequestCode
from remoting.command import decode_command
from remoting.frame import FrameDecoder
from tests.fuzz import mutate
from tests.fuzz.cases import Plan, Shape, shape_of
from tests.fuzz.seeds import bodies_by_code, corpus
from tests.fuzz.values import field_table, hostile_values
from tests.fuzz.world import FUZZ_GROUP, FUZZ_TOPIC

C = RequestCode
WORLD = Path("/nonexistent/world")


@pytest.fixture(scope="module")
def plan() -> Plan:
    seeds = corpus(FUZZ_TOPIC, FUZZ_GROUP)
    broker = {
        C.SEND_MESSAGE_V2: H.SendMessageRequestHeaderV2,
        C.PULL_MESSAGE: H.PullMessageRequestHeader,
        C.SEND_BATCH_MESSAGE: H.SendMessageRequestHeaderV2,
        C.GET_ALL_TOPIC_CONFIG: None,
    }
    namesrv = {C.REGISTER_BROKER: H.RegisterBrokerRequestHeader, C.GET_KV_CONFIG: None}
    known = {"offset": "0"}
    return Plan(
        seed=5,
        world=WORLD,
        seeds=seeds,
        tables={
            False: field_table(broker, FUZZ_TOPIC, FUZZ_GROUP, known),
            True: field_table(namesrv, FUZZ_TOPIC, FUZZ_GROUP, known),
        },
        values=hostile_values(WORLD),
        bodies=bodies_by_code(seeds),
    )


def test_every_case_is_rebuilt_byte_for_byte_from_its_id(plan: Plan) -> None:
    ids = [f"w{w}/{n}/{side}" for w in range(3) for n in range(150) for side in "bn"]
    ids += [f"sweep/{side}/{i}" for side in "bn" for i in range(0, 5000, 37)]
    first = {case_id: plan.case(case_id) for case_id in ids}
    assert all(plan.case(case_id) == case for case_id, case in first.items())
    kinds = {case.kind.split(":", 1)[0] for case in first.values()}
    assert {"field", "bytes", "body", "header-json", "header-rocketmq"} <= kinds


def test_each_case_is_sent_the_way_its_bytes_need(plan: Plan) -> None:
    for n in range(600):
        case = plan.case(f"w0/{n}/b")
        decoder = FrameDecoder()
        decoder.receive_data(case.data)
        if case.shape is Shape.PIPELINED:  # one whole frame the server decodes
            frame = decoder.next_frame()
            assert frame is not None and decoder.buffered_bytes == 0
            decode_command(frame)
        else:
            assert shape_of(case.data) is case.shape


def test_no_two_cases_of_one_sender_share_an_opaque(plan: Plan) -> None:
    """An answer is matched to its case by its opaque. Drawn at random, seed 3 gave sweep/n/283431
    (brokerId 2^31, taken) and sweep/n/283433 (brokerId -2^63 - 1, refused) the same one on one
    connection, and the 30-minute campaign reported the refused value as accepted."""
    seeded = attrs.evolve(plan, seed=3)
    senders = [[f"sweep/n/{i}" for i in range(283_000, 284_000)]]
    senders += [[f"w{w}/{n}/b" for n in range(3000)] for w in range(2)]
    for ids in senders:
        opaques = [seeded.case(case_id).opaque for case_id in ids]
        answered = [o for o in opaques if o is not None]
        assert len(answered) > len(ids) // 4
        assert len(set(answered)) == len(answered), ids[0]
        assert all(o >> 30 == 1 for o in answered)  # above the pings' (traffic.py)


def test_a_value_out_of_its_java_range_must_be_refused_one_in_range_need_not_be(
    plan: Plan,
) -> None:
    header = plan.tables[False][C.PULL_MESSAGE]
    assert header.out_of_range("queueId", str(2**31))
    assert header.out_of_range("queueOffset", str(2**63))
    assert header.out_of_range("topic", "../x")
    assert not header.out_of_range("queueOffset", str(2**63 - 1))
    assert not header.out_of_range("subscription", "\x00")  # any text: no rule
    assert not header.out_of_range("subscription", "", rocketmq=True)  # optional: absent
    assert header.out_of_range("topic", "", rocketmq=True)  # required: missing


def test_the_sweep_walks_every_field_of_every_code_with_every_value(plan: Plan) -> None:
    entries = plan.sweep_entries(False)
    fields = {(code, field) for code, field, _ in entries}
    assert (C.PULL_MESSAGE, "queueOffset") in fields and (C.SEND_MESSAGE_V2, "f") in fields
    per_field = len(plan.values)
    assert len(entries) == len(fields) * per_field
    # codes whose class the server did not name get the fields of all-optional classes
    assert any(code == C.GET_ALL_TOPIC_CONFIG for code, _ in fields)


def test_fix_length_makes_the_prefix_honest_and_length_lies_do_not() -> None:
    rng = random.Random(1)
    frame = b"\x00\x00\x00\x08\x00\x00\x00\x02{}xx"
    assert mutate.fix_length(frame[:-1])[:4] == (len(frame) - 5).to_bytes(4, "big")
    lies = {mutate.length_lie(rng, frame)[:8] for _ in range(50)}
    assert len(lies) > 10
