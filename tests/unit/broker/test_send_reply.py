"""stored_reply_frame gives the reference's bytes (put_result_response, then encode_command)
for every stored single send answered at once."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from broker.processor.send import put_result_response
from broker.processor.send_reply import stored_reply_frame
from broker.store.types import AppendMessageResult, PutMessageResult, PutMessageStatus
from remoting.codes import RequestCode
from remoting.command import RemotingCommand, encode_command_bytes
from remoting.message import create_offset_msg_id

JAVA_INT = st.integers(-(2**31), 2**31 - 1)


@given(
    opaque=JAVA_INT,
    queue_id=st.integers(0, 2**31 - 1),
    queue_offset=st.integers(0, 2**63 - 1),
    phys=st.integers(0, 2**63 - 1),
    v6=st.booleans(),
)
def test_the_frame_is_the_reference_reply(opaque, queue_id, queue_offset, phys, v6) -> None:
    host = (b"\xfe\x80" + b"\x00" * 13 + b"\x01", 10911) if v6 else (b"\x7f\x00\x00\x01", 10911)
    msg_id = create_offset_msg_id(*host, phys)
    request = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, {"b": "T"}, b"x")
    request.opaque = opaque
    append = AppendMessageResult(phys, 100, msg_id, [msg_id], 1, queue_offset)
    result = PutMessageResult(PutMessageStatus.PUT_OK, append, queue_id=queue_id)
    reference = encode_command_bytes(put_result_response(request, result))
    assert stored_reply_frame(opaque, msg_id, queue_id, queue_offset) == reference
