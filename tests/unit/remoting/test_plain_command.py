"""The JSON command header's C fast path (remoting/native/codec/command.c, plain_command)
against the Python checks it skips (remoting/command.py, the reference): the same command, or
the same RemoteProtocolError, for every header; anything not in the plain form is left to the
reference."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from remoting import command
from remoting.codec_native import native
from remoting.command import RemotingCommand, decode_command, encode_command
from remoting.errors import RemoteProtocolError
from remoting.frame import Frame
from remoting.header_codec import ExtFields
from tests.kits.nativekit import needs_codec

ABSENT = object()
numbers = st.one_of(
    st.integers(-(2**33), 2**33),
    st.sampled_from([0, 2**31 - 1, 2**31, -1, 2**63, True, False, 1.0, 1.5, "7", "x", None]),
)
texts = st.one_of(st.text(max_size=8), st.sampled_from([None, 7, True, ["JAVA"], {"a": 1}]))
ext_values = st.one_of(
    st.text(max_size=6), st.sampled_from([None, 0, -(2**63), 2**64, True, 1.5, [1], {"b": "c"}])
)
exts = st.one_of(
    st.dictionaries(st.text(max_size=4), st.text(max_size=6), max_size=4),
    st.dictionaries(st.text(max_size=4), ext_values, max_size=4),
    st.sampled_from([None, [], "x", 3]),
)


def outcome(header: bytes) -> Any:
    try:
        cmd = decode_command(Frame(0, header, b"body"))
    except RemoteProtocolError as exc:
        return ("refused", str(exc))
    return (cmd.code, cmd.language, cmd.version, cmd.opaque, cmd.flag, cmd.remark,
            cmd.ext_fields, bytes(cmd.body), cmd.serialize_type)  # fmt: skip


def both(header: bytes, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    with monkeypatch.context() as patch:
        patch.setattr(command, "_plain_command", None)
        reference = outcome(header)
    return outcome(header), reference


@needs_codec
@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(
    fields=st.fixed_dictionaries(
        {},
        optional={
            "code": numbers,
            "opaque": numbers,
            "flag": numbers,
            "version": numbers,
            "language": texts,
            "remark": texts,
            "extFields": exts,
            "serializeTypeCurrentRPC": st.just("JSON"),
        },
    )
)
@example(fields={"code": 10, "language": "JAVA", "opaque": 3, "extFields": {"a": "b"}})
@example(fields={"code": 10, "language": None})
@example(fields={"code": 10, "remark": None, "extFields": None})
@example(fields={"code": 2**31})
@example(fields={"code": True})
def test_plain_command_equals_the_reference(fields: dict[str, Any]) -> None:
    header = json.dumps(fields).encode()
    with pytest.MonkeyPatch.context() as monkeypatch:
        fast, reference = both(header, monkeypatch)
    assert fast == reference


@needs_codec
def test_plain_command_takes_what_clients_send() -> None:
    data = {"code": 310, "flag": 0, "language": "JAVA", "opaque": 5, "version": 409,
            "extFields": {"a": "PG", "b": "T"}, "serializeTypeCurrentRPC": "JSON"}  # fmt: skip
    assert native.plain_command(data) == (310, "JAVA", 409, 5, 0, None, {"a": "PG", "b": "T"})
    assert native.plain_command({"code": 1}) == (1, "JAVA", 0, 0, 0, None, None)
    for bad in ({"code": -1}, {"code": 1, "extFields": {"a": 1}}, {"code": 1, "language": 0}, []):
        assert native.plain_command(bad) is None


# ------------------------------------------------------------------------------ encoding

head_texts = st.one_of(
    st.text(alphabet=st.characters(max_codepoint=0x80), max_size=8),
    st.sampled_from(['a"b', "a\\b", "\x7f", "\x1f", "é", "\u2028", "x" * 600]),
)
head_ints = st.one_of(st.integers(-(2**31), 2**31 - 1), st.sampled_from([2**63, -(2**64)]))


def encoded(cmd: RemotingCommand) -> Any:
    try:
        return b"".join(bytes(part) for part in encode_command(cmd))
    except Exception as exc:  # the reference's own refusal (orjson, struct): same either way
        return type(exc).__name__


@needs_codec
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(
    code=head_ints,
    opaque=head_ints,
    language=head_texts,
    remark=st.one_of(st.none(), head_texts),
    ext=st.one_of(
        st.none(),
        st.dictionaries(head_texts, head_texts, max_size=4),
        st.dictionaries(head_texts, st.sampled_from([None, 7, True, "v"]), max_size=3),
    ),
    ext_fields_type=st.sampled_from([dict, ExtFields]),
    body=st.sampled_from([b"", b"xyz"]),
)
@example(code=0, opaque=1, language="JAVA", remark=None, ext={"msgId": "7F"},
         ext_fields_type=dict, body=b"")  # fmt: skip
def test_native_frame_head_equals_the_reference(
    code: int, opaque: int, language: str, remark: str | None, ext: Any,
    ext_fields_type: type, body: bytes,
) -> None:  # fmt: skip
    if ext is not None:
        ext = ext_fields_type(ext)
    cmd = RemotingCommand(code, language, 409, opaque, 1, remark, ext, body)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(command, "_json_frame_head", None)
        reference = encoded(cmd)
    assert encoded(cmd) == reference


@needs_codec
def test_native_frame_head_writes_a_plain_reply() -> None:
    assert native.json_frame_head(0, {"a": "b"}, 1, "JAVA", 5, None, 409, 3) is not None
    assert native.json_frame_head(0, {"a": 'q"'}, 1, "JAVA", 5, None, 409, 3) is None
