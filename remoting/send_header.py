"""SEND_MESSAGE and SEND_MESSAGE_V2's custom header, decoded once per send.

``python_decode_send_header`` is the reference: the generic header decoder
(remoting.header_codec), which checks every field and names each bad one. The C twin
(remoting/native/codec/send_header.c) takes only the plain form every client sends and gives
the same values without building the V2 object; anything else (a number with spaces or out of
range, a topic not yet known valid, a value that is not a str) it leaves to the reference, so
both answer every input alike.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from remoting.codec_native import native
from remoting.codes import RequestCode
from remoting.header_codec import decode_header
from remoting.headers import SendMessageRequestHeader, SendMessageRequestHeaderV2
from remoting.names import valid_topics

if TYPE_CHECKING:
    from remoting.command import RemotingCommand

_SEND_MESSAGE = int(RequestCode.SEND_MESSAGE)


def python_decode_send_header(
    ext_fields: dict[str, str] | None, v2: bool
) -> SendMessageRequestHeader:
    """The header or RequestError(SYSTEM_ERROR) naming every bad field."""
    if v2:
        return decode_header(SendMessageRequestHeaderV2, ext_fields).to_v1()
    return decode_header(SendMessageRequestHeader, ext_fields)


def _native_decode_send_header(
    ext_fields: dict[str, str] | None, v2: bool
) -> SendMessageRequestHeader:
    if type(ext_fields) is dict:
        values = native.decode_send_header(ext_fields, v2, valid_topics)
        if values is not None:
            return SendMessageRequestHeader(*values)
    return python_decode_send_header(ext_fields, v2)


decode_send_header = python_decode_send_header if native is None else _native_decode_send_header


def request_send_header(request: RemotingCommand) -> SendMessageRequestHeader:
    """A send request's header: from the values its JSON header was scanned into
    (remoting/command.py ScannedCommand) when its topics are known valid, as the C decoder
    requires them, else decoded from its extFields."""
    values = request.header_values
    if values is not None and values[1] in valid_topics and values[2] in valid_topics:
        return SendMessageRequestHeader(*values)
    return decode_send_header(request.ext_fields, request.code != _SEND_MESSAGE)
