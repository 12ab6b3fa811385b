"""Frames the official C++ client really sent (tests/data/interop-frames) decode as it meant them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from remoting import body, headers, serde
from remoting.codes import RequestCode
from remoting.command import decode_command
from remoting.frame import FrameDecoder
from tests.conftest import INTEROP_FRAMES

CAPTURES = sorted(INTEROP_FRAMES.glob("cpp/*/frames.json"))


def _captured() -> list[tuple[Path, dict]]:
    out = []
    for index in CAPTURES:
        for entry in json.loads(index.read_text()):
            out.append((index.parent / entry["file"], entry))
    return out


CAPTURED = _captured()


def test_the_captures_are_present() -> None:
    assert len(CAPTURED) >= 20, f"expected the C++ captures under {INTEROP_FRAMES}"


@pytest.mark.parametrize(
    ("path", "entry"), CAPTURED, ids=[str(p.relative_to(INTEROP_FRAMES)) for p, _ in CAPTURED]
)
def test_captured_frame_decodes_to_what_the_client_sent(path: Path, entry: dict) -> None:
    decoder = FrameDecoder()
    decoder.receive_data(path.read_bytes())
    frame = decoder.next_frame()
    assert frame is not None and decoder.next_frame() is None
    command = decode_command(frame)
    assert command.code == entry["code"]
    assert command.opaque == entry["opaque"]
    assert command.language == "CPP"
    assert command.version == entry["version"]
    assert command.is_oneway is False  # the C++ client never sets the oneway bit on the wire
    assert len(command.body) == entry["bodyLen"]
    # Every extFields value arrives as its Java toString() form, whatever JSON type C++ used.
    expected = {
        k: (v if isinstance(v, str) else json.dumps(v)) for k, v in entry["extFields"].items()
    }
    assert command.ext_fields == expected


def _commands(code: int) -> list:
    out = []
    for path, entry in CAPTURED:
        if entry["code"] == code:
            decoder = FrameDecoder()
            decoder.receive_data(path.read_bytes())
            out.append(decode_command(decoder.next_frame()))
    return out


def test_cpp_send_headers_structure_with_numbers_and_zero_booleans() -> None:
    sends = _commands(RequestCode.SEND_MESSAGE)
    assert sends
    for command in sends:
        header = serde.decode_header(headers.SendMessageRequestHeader, command.ext_fields)
        assert header.default_topic == "TBW102"
        assert header.default_topic_queue_nums == 4
        assert 0 <= header.queue_id < 4
        # "0" and "1" are both false: Boolean.parseBoolean, exactly as a Java broker reads
        # them, which is why this client's batches are stored as one message (interop README).
        assert header.batch is False and header.unit_mode is False
        if command.ext_fields["batch"] == "1":
            assert header.properties == "WAIT\x01true\x02"
        else:
            assert "UNIQ_KEY\x01" in header.properties
    assert {c.ext_fields["batch"] for c in sends} == {"0", "1"}


def test_cpp_pull_headers_carry_the_subscription_string() -> None:
    pulls = _commands(RequestCode.PULL_MESSAGE)
    assert pulls
    for command in pulls:
        header = serde.decode_header(headers.PullMessageRequestHeader, command.ext_fields)
        assert header.max_msg_nums == 32
        assert header.sys_flag & 0b110 == 0b110  # SUSPEND and SUBSCRIPTION
        assert header.suspend_timeout_millis == 15000
        expected = "*" if header.topic.startswith("%RETRY%") else "TagA || TagB"
        assert header.subscription == expected


def test_cpp_consumer_heartbeat_enums_arrive_as_ordinals() -> None:
    beats = [
        serde.decode_body(body.HeartbeatData, c.body) for c in _commands(RequestCode.HEART_BEAT)
    ]
    consumers = [cd for hb in beats for cd in hb.consumer_data_set]
    assert consumers
    for data in consumers:
        assert data.consume_type is body.ConsumeType.CONSUME_PASSIVELY
        assert data.message_model is body.MessageModel.CLUSTERING
        assert data.consume_from_where is body.ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET
        topics = {s.topic: s for s in data.subscription_data_set}
        assert topics[f"%RETRY%{data.group_name}"].sub_string == "*"
        assert any(s.sub_version > 1_600_000_000_000 for s in data.subscription_data_set)
