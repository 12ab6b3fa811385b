"""The remoting codec's laws: commands survive both header serializations, framing does not
depend on how the bytes arrive, and garbage raises RemoteProtocolError and nothing else."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from remoting.codes import LanguageCode, SerializeType
from remoting.command import RemotingCommand, decode_command, encode_command_bytes
from remoting.errors import RemoteProtocolError
from remoting.frame import FrameDecoder

# Strings as Java holds them: any code point but lone surrogates (not encodable as UTF-8).
text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40)
non_empty = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40)
int32 = st.integers(-(2**31), 2**31 - 1)

commands = st.builds(
    RemotingCommand,
    code=st.integers(-(2**15), 2**15 - 1),
    language=st.sampled_from([member.name for member in LanguageCode]),
    version=st.integers(-(2**15), 2**15 - 1),
    opaque=int32,
    flag=st.integers(0, 3),
    remark=st.none() | non_empty,
    # ROCKETMQ maps zero-length keys and values to null, as RocketMQ 4.9 does
    ext_fields=st.none() | st.dictionaries(non_empty, non_empty, max_size=8),
    body=st.binary(max_size=300),
    serialize_type=st.sampled_from([SerializeType.JSON, SerializeType.ROCKETMQ]),
)


def frames_of(data: bytes, cuts: list[int]) -> tuple[list, int]:
    decoder = FrameDecoder()
    out, start = [], 0
    for cut in [*sorted(cuts), len(data)]:
        decoder.receive_data(data[start:cut])
        start = cut
        out += decoder.frames()
    return out, decoder.buffered_bytes


@given(command=commands)
def test_any_command_round_trips_through_its_serialization(command: RemotingCommand) -> None:
    (frame,), rest = frames_of(encode_command_bytes(command), [])
    decoded = decode_command(frame)
    assert rest == 0
    assert (
        decoded.code,
        decoded.language,
        decoded.version,
        decoded.opaque,
        decoded.flag,
        decoded.remark,
        decoded.ext_fields or None,
        bytes(decoded.body),
        decoded.serialize_type,
    ) == (
        command.code,
        command.language,
        command.version,
        command.opaque,
        command.flag,
        command.remark,
        command.ext_fields or None,
        bytes(command.body),
        int(command.serialize_type),
    )


@given(
    batch=st.lists(commands, min_size=1, max_size=5),
    data=st.data(),
    trailing=st.binary(max_size=6),
)
@settings(max_examples=200)
def test_frames_do_not_depend_on_how_the_bytes_arrive(batch, data, trailing: bytes) -> None:
    stream = b"".join(encode_command_bytes(command) for command in batch)
    # Fewer than 8 trailing bytes can never be a frame (nor a refused one): they wait.
    tail = trailing[:7] if len(trailing) < 4 else b"\x00\x00\x01\x00" + trailing[4:7]
    whole, rest = frames_of(stream + tail, [])
    assert len(whole) == len(batch) and rest == len(tail)
    byte_by_byte, _ = frames_of(stream + tail, list(range(1, len(stream) + len(tail))))
    cuts = data.draw(st.lists(st.integers(0, len(stream) + len(tail)), max_size=12))
    randomly, rest_random = frames_of(stream + tail, cuts)
    assert byte_by_byte == whole == randomly and rest_random == len(tail)


@given(garbage=st.binary(max_size=400), prefix=st.booleans())
@settings(max_examples=300)
def test_garbage_raises_one_error_type_only(garbage: bytes, prefix: bool) -> None:
    if prefix:  # a plausible frame prefix so the header parsers see the garbage too
        garbage = (
            (len(garbage) + 4).to_bytes(4, "big")
            + ((garbage[:1] or b"\x00")[0] & 1).to_bytes(1, "big")
            + min(len(garbage), 0xFFFFFF).to_bytes(3, "big")
            + garbage
        )
    decoder = FrameDecoder()
    try:
        decoder.receive_data(garbage)
        for frame in decoder.frames():
            decode_command(frame)
    except RemoteProtocolError:
        pass
