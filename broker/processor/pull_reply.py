"""The reply to a pull that found messages, and the plain SUCCESS reply a consumer's offset
commit gets, as their encoded frames (issue 27): one bytes format instead of a response
command, its extFields dict and the encoder per request.

``make_response`` followed by ``encode_command`` is the reference: for a SUCCESS reply (remark
FOUND, the status's name, as Java sets it) to a request with a JSON header the bytes are the same (tests/unit/broker/test_pull_reply.py holds
them equal), the fields in the reference's order, every value a number. A request with a
ROCKETMQ (binary) header, and every other code, is answered by the reference.
"""

from __future__ import annotations

from typing import Any

from remoting.codes import CURRENT_VERSION, ResponseCode
from remoting.command import EncodedReply
from remoting.frame import PREFIX

_SUCCESS = int(ResponseCode.SUCCESS)
# bytes formatting: cheaper than formatting a str and encoding it
_HEADER = (
    b'{"code":0,"extFields":{"suggestWhichBrokerId":"%d","nextBeginOffset":"%d",'
    b'"minOffset":"%d","maxOffset":"%d"},"flag":1,"language":"JAVA","opaque":%d,'
    b'"remark":"FOUND","serializeTypeCurrentRPC":"JSON","version":' + b"%d}" % CURRENT_VERSION
)
_pack = PREFIX.pack
_OK_HEADER = (
    b'{"code":0,"flag":1,"language":"JAVA","opaque":%d,"serializeTypeCurrentRPC":"JSON",'
    b'"version":' + b"%d}" % CURRENT_VERSION
)


def found_reply(
    opaque: int,
    suggest_which_broker_id: int,
    next_begin_offset: int,
    min_offset: int,
    max_offset: int,
    buffers: list[Any],
    size: int,
) -> EncodedReply:
    """The SUCCESS reply whose body is ``buffers`` (``size`` bytes: the stored records, slices
    of the mapped CommitLog, written as they are)."""
    header = _HEADER % (
        suggest_which_broker_id, next_begin_offset, min_offset, max_offset, opaque
    )  # fmt: skip
    length = len(header)
    return EncodedReply(_SUCCESS, [_pack(4 + length + size, length) + header, *buffers])


def success_reply(opaque: int) -> EncodedReply:
    """The SUCCESS reply with no fields, remark or body (UPDATE_CONSUMER_OFFSET's) to a
    request with a JSON header."""
    header = _OK_HEADER % opaque
    return EncodedReply(_SUCCESS, [_pack(4 + len(header), len(header)) + header])
