"""found_reply gives the reference's bytes (make_response with the pull's extFields, then
encode_command) for every found pull of a JSON-header request, body parts as they were."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from broker.processor.pull_reply import found_reply
from remoting.codes import RequestCode, ResponseCode
from remoting.command import EncodedReply, Gather, RemotingCommand, encode_command

JAVA_INT = st.integers(-(2**31), 2**31 - 1)
JAVA_LONG = st.integers(-(2**63), 2**63 - 1)


@given(
    opaque=JAVA_INT,
    suggest=JAVA_LONG,
    offsets=st.tuples(JAVA_LONG, JAVA_LONG, JAVA_LONG),
    parts=st.lists(st.binary(min_size=1, max_size=40), max_size=5),
)
def test_the_frame_is_the_reference_reply(opaque, suggest, offsets, parts) -> None:
    next_offset, min_offset, max_offset = offsets
    request = RemotingCommand.request(RequestCode.PULL_MESSAGE, {"topic": "T"})
    request.opaque = opaque
    buffers = [memoryview(p) for p in parts]
    size = sum(map(len, parts))
    ext = {
        "suggestWhichBrokerId": str(suggest),
        "nextBeginOffset": str(next_offset),
        "minOffset": str(min_offset),
        "maxOffset": str(max_offset),
    }
    reference = encode_command(
        request.make_response(ResponseCode.SUCCESS, "FOUND", ext, Gather(buffers, size))
    )
    reply = found_reply(opaque, suggest, next_offset, min_offset, max_offset, buffers, size)
    assert type(reply) is EncodedReply and reply.code == ResponseCode.SUCCESS
    assert [bytes(b) for b in reply.buffers] == [bytes(b) for b in reference]
    assert all(a is b for a, b in zip(reply.buffers[1:], buffers, strict=True))  # not copied
