"""The reply to a stored single send as its encoded frame, for a group of pipelined sends
(issue 27): one string format instead of a response command, its extFields dict and the
encoder per reply.

``put_result_response`` followed by ``encode_command`` is the reference: for a PUT_OK result
of a request with a JSON header the bytes are the same (tests/unit/broker/test_send_reply.py
holds them equal), the fields in the reference's order, every value one JSON needs no escape
for (the offset message id is hex, the rest numbers). Anything else is answered by the
reference.
"""

from __future__ import annotations

from remoting.codes import CURRENT_VERSION
from remoting.frame import PREFIX

# The header around its four values (msgId, queueId, queueOffset, opaque): the native plain
# pass fills the same pieces (broker/store/group_put.py put_rows).
REPLY_PIECES = (
    b'{"code":0,"extFields":{"msgId":"',
    b'","queueId":"',
    b'","queueOffset":"',
    b'","MSG_REGION":"DefaultRegion","TRACE_ON":"true"},"flag":1,"language":"JAVA","opaque":',
    b',"serializeTypeCurrentRPC":"JSON","version":' + b"%d}" % CURRENT_VERSION,
)
# bytes formatting: a third cheaper than formatting a str and encoding it
_HEADER = b"".join(
    piece + code
    for piece, code in zip(REPLY_PIECES, (b"%s", b"%d", b"%d", b"%d", b""), strict=True)
)
_pack = PREFIX.pack


def stored_reply_frame(opaque: int, msg_id: str, queue_id: int, queue_offset: int) -> bytes:
    """The frame of a SUCCESS reply: msgId, queueId and queueOffset of the stored message."""
    header = _HEADER % (msg_id.encode(), queue_id, queue_offset, opaque)
    length = len(header)
    return _pack(4 + length, length) + header
