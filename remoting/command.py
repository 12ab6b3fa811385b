"""RemotingCommand and its two header serializations (docs/spec/remoting.md §3-§5).

Pure: ``decode_command(frame)`` and ``encode_command(cmd)`` only turn bytes into commands and
back. Every extFields value is normalised to its Java ``toString()`` form on the way in (C++
sends numbers), and written as a string on the way out (Go and C++ read strings only).

Decoding raises :class:`RemoteProtocolError` and nothing else, whatever the bytes: ``code``,
``opaque``, ``flag`` and ``version`` are Java ints (a header Java's decoder cannot read closes the
channel there too), and text that only the lenient parser takes must still be UTF-8 throughout
(a lone surrogate escape would fail later, when a reply is encoded).
"""

from __future__ import annotations

import itertools
import json
import struct
from typing import Any

import attrs
import orjson

from remoting import fastjson
from remoting.codec_native import native
from remoting.codes import CURRENT_VERSION, LanguageCode, SerializeType
from remoting.errors import RemoteProtocolError
from remoting.frame import PREFIX, Frame
from remoting.serde import ExtFields

RPC_RESPONSE = 1  # flag bit 0
RPC_ONEWAY = 2  # flag bit 1

_encode_str = json.encoder.encode_basestring  # type: ignore[attr-defined]
_json_loads = orjson.loads
_LANGUAGE_BY_CODE = {member.value: member.name for member in LanguageCode}
_ROCKETMQ_FIXED = struct.Struct(">hbhiii")  # code, language, version, opaque, flag, remarkLength
_I32 = struct.Struct(">i")
_I16 = struct.Struct(">h")
_ONLY_STR = frozenset((str,))
_EXACT = frozenset((str, int, bool, type(None)))  # what orjson never rounds
_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1  # Java int
_JSON, _ROCKETMQ = int(SerializeType.JSON), int(SerializeType.ROCKETMQ)

_plain_command = None if native is None else native.plain_command
_scan_send = None if native is None else native.scan_send_command
_json_frame_head = None if native is None else native.json_frame_head

_opaque_counter = itertools.count()


def next_opaque() -> int:
    """Request ids: per process, from 0 like Java's AtomicInteger, wrapping at 2^31."""
    return next(_opaque_counter) & 0x7FFFFFFF


class Gather:
    """A body written as its parts one after another, never joined: a pull's stored records,
    slices of the mapped CommitLog that ``sendmsg`` gathers (a join copied every record). A
    slice keeps its segment mapped until it is written (broker/store/mapped_file.py)."""

    __slots__ = ("parts", "size")

    def __init__(self, parts: list[memoryview], size: int) -> None:
        self.parts, self.size = parts, size

    def __len__(self) -> int:
        return self.size

    def __bytes__(self) -> bytes:
        return b"".join(self.parts)


BodyType = bytes | bytearray | memoryview | Gather


class EncodedReply:
    """A reply a processor encoded itself, sent as it is: one bytes format instead of a
    response command, its extFields and the encoder (a found pull's,
    broker/processor/pull_reply.py, held equal to ``encode_command``'s bytes by its tests).
    ``code`` is for the processor's own callers; ``buffers`` the frame, in order."""

    __slots__ = ("buffers", "code")

    def __init__(self, code: int, buffers: list[BodyType]) -> None:
        self.code, self.buffers = code, buffers


@attrs.define(slots=True, eq=False)
class RemotingCommand:
    code: int
    language: str = "JAVA"
    version: int = CURRENT_VERSION
    opaque: int = 0
    flag: int = 0
    remark: str | None = None
    ext_fields: dict[str, str] | None = None
    body: BodyType = b""
    serialize_type: int = SerializeType.JSON
    # The custom header's values when the JSON header was scanned (ScannedCommand)
    header_values = None

    @classmethod
    def request(
        cls,
        code: int,
        ext_fields: dict[str, str] | None = None,
        body: BodyType = b"",
        *,
        oneway: bool = False,
        language: str = "JAVA",
    ) -> RemotingCommand:
        return cls(
            code=int(code),
            language=language,
            opaque=next_opaque(),
            flag=RPC_ONEWAY if oneway else 0,
            ext_fields=ext_fields,
            body=body,
        )

    @property
    def is_response(self) -> bool:
        return bool(self.flag & RPC_RESPONSE)

    @property
    def is_oneway(self) -> bool:
        return bool(self.flag & RPC_ONEWAY)

    def ext(self, name: str, default: str | None = None) -> str | None:
        fields = self.ext_fields
        return default if fields is None else fields.get(name, default)

    def make_response(
        self,
        code: int = 0,
        remark: str | None = None,
        ext_fields: dict[str, str] | None = None,
        body: BodyType = b"",
    ) -> RemotingCommand:
        """A response to this request: same opaque, same serialize type (spec §3.3)."""
        # Positional: this runs for every reply, and keywords cost 2.5x as much here.
        return RemotingCommand(
            int(code),
            "JAVA",
            CURRENT_VERSION,
            self.opaque,
            RPC_RESPONSE,
            remark,
            ext_fields,
            body,
            self.serialize_type,
        )

    def error_response(self, code: int, remark: str) -> RemotingCommand:
        return self.make_response(code, remark)


# ---------------------------------------------------------------------------------- decoding


def decode_command(frame: Frame) -> RemotingCommand:
    """One frame to one command. Raises RemoteProtocolError for a header that won't parse."""
    if frame.serialize_type == _JSON:
        return _decode_json_header(frame.header, frame.body)
    return _decode_rocketmq_header(frame.header, frame.body)


def decode_declined(frame: Frame) -> RemotingCommand:
    """``decode_command`` for a frame whose JSON header the native scan has declined already
    (remoting/frame.py ``take_commands``, ``whole_command``): not scanned a second time."""
    if frame.serialize_type == _JSON:
        return _parse_json_header(frame.header, frame.body)
    return _decode_rocketmq_header(frame.header, frame.body)


def _decode_json_header(header: bytes, body: BodyType = b"") -> RemotingCommand:
    if _scan_send is not None:
        # A plain send's header, read from its bytes into a ScannedCommand with no dict
        # (remoting/native/codec/send_scan.c); anything else is parsed below.
        scanned = _scan_send(header, body)
        if scanned is not None:
            return scanned  # type: ignore[no-any-return]
    return _parse_json_header(header, body)


def _parse_json_header(header: bytes, body: BodyType = b"") -> RemotingCommand:
    try:
        data = _json_loads(header)
        lenient = False
    except orjson.JSONDecodeError:
        data = fastjson.loads(header)  # raises FastjsonDecodeError (a RemoteProtocolError)
        lenient = True
    else:
        # What every client sends, checked in one C call (the checks below are the reference)
        plain = _plain_command(data) if _plain_command is not None else None
        if plain is not None:
            code, language, version, opaque, flag, remark, ext = plain
            return RemotingCommand(code, language, version, opaque, flag, remark, ext, body, _JSON)
    return _checked_json_header(data, lenient, header, body)


_LAZY: Any = object()  # a ScannedCommand's extFields not parsed yet
_ext_slot = RemotingCommand.__dict__["ext_fields"]  # the slot's descriptor, under the property
_get_ext, _set_ext = _ext_slot.__get__, _ext_slot.__set__


class ScannedCommand(RemotingCommand):
    """A request whose JSON header was scanned from its bytes: a plain send (``header_values``:
    SendMessageRequestHeader's values, the topics not yet checked valid) or a request of a
    code registered by ``header_codec.request_decoder`` (its class's values). Its ``ext_fields``
    is made from ``header`` by the orjson path, only when something asks for them (ACL, the
    reference handler, logging): the dict every other command has from the start."""

    __slots__ = ("header", "header_values")

    @property  # type: ignore[override]
    def ext_fields(self) -> dict[str, str] | None:
        ext = _get_ext(self)
        if ext is _LAZY:
            ext = _parse_json_header(self.header).ext_fields
            _set_ext(self, ext)
        return ext  # type: ignore[no-any-return]

    @ext_fields.setter
    def ext_fields(self, value: dict[str, str] | None) -> None:
        _set_ext(self, value)


_SCANNED_SLOTS = (
    *(RemotingCommand.__dict__[name] for name in attrs.fields_dict(RemotingCommand)),
    ScannedCommand.__dict__["header"],
    ScannedCommand.__dict__["header_values"],
)  # the order send_scan.c fills them in: the attrs fields', then the scan's own
if _scan_send is not None:
    native.configure_send_scan(ScannedCommand, _SCANNED_SLOTS, _LAZY)


def _checked_json_header(
    data: Any, lenient: bool, header: bytes, body: BodyType
) -> RemotingCommand:
    """The reference checks: numbers sent as strings, languages by ordinal, non-string
    extFields values (C++ sends numbers) and the lenient parser's text."""
    if not isinstance(data, dict):
        raise RemoteProtocolError("command header is not a JSON object")
    code = data.get("code")
    opaque = data.get("opaque", 0)
    flag = data.get("flag", 0)
    version = data.get("version", 0)
    # Four ints in [0, 2^31) pass at once; anything else (negative opaques included) is
    # converted and range-checked one by one.
    if not (
        type(code) is type(opaque) is type(flag) is type(version) is int
        and not (code | opaque | flag | version) >> 31
    ):
        code, opaque, flag, version = _header_ints(code, opaque, flag, version)
    language = data.get("language", "JAVA")
    if type(language) is not str:
        language = (
            _LANGUAGE_BY_CODE.get(language, "OTHER") if isinstance(language, int) else "OTHER"
        )
    remark = data.get("remark")
    if remark is not None and not isinstance(remark, str):
        remark = str(remark)
    ext = data.get("extFields")
    if ext is not None:
        if not isinstance(ext, dict):
            raise RemoteProtocolError("extFields is not a JSON object")
        # fastjson's unquoted numeric keys ({99:"x"}, lenient text only) arrive as ints: Java's
        # Map<String,String> has them as strings
        if not _ONLY_STR.issuperset(map(type, ext.values())) or (
            lenient and not _ONLY_STR.issuperset(map(type, ext))
        ):
            if not lenient and not _EXACT.issuperset(map(type, ext.values())):
                # orjson reads an integer past 64 bits as a float, rounded (-2^63 - 1 became
                # -2^63, a Java long): read the header again with the exact parser
                ext = fastjson.loads(header)["extFields"]
            ext = _java_strings(ext)
    if lenient:
        _check_utf8(language, remark, ext)
    return RemotingCommand(code, language, version, opaque, flag, remark, ext, body, _JSON)


def _header_ints(code: Any, opaque: Any, flag: Any, version: Any) -> tuple[int, int, int, int]:
    """Numbers sent as strings (or a null version) by lenient peers, each a Java int."""
    if code is None:
        raise RemoteProtocolError("bad command header field: no code")
    values = []
    for name, value in (("code", code), ("opaque", opaque), ("flag", flag), ("version", version)):
        try:
            number = int(value or 0)
        except (TypeError, ValueError, OverflowError):
            raise RemoteProtocolError(f"bad command header field: {name}={value!r:.40}") from None
        if not _INT_MIN <= number <= _INT_MAX:
            raise RemoteProtocolError(
                f"bad command header field: {name}={value!r:.40} is not a Java int"
            )
        values.append(number)
    return values[0], values[1], values[2], values[3]


def _check_utf8(language: str, remark: str | None, ext: dict[str, str] | None) -> None:
    try:
        language.encode("utf-8")
        if remark is not None:
            remark.encode("utf-8")
        for key, value in (ext or {}).items():
            key.encode("utf-8")
            value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise RemoteProtocolError(f"command header text is not UTF-8: {exc}") from None


def _java_strings(ext: dict[Any, Any]) -> dict[str, str]:
    """extFields is a Map<String,String> in Java: every value becomes its toString() form."""
    out: dict[str, str] = {}
    for key, value in ext.items():
        if value is None:
            continue
        if isinstance(value, str):
            out[str(key)] = value
        elif value is True:
            out[str(key)] = "true"
        elif value is False:
            out[str(key)] = "false"
        elif isinstance(value, int):
            out[str(key)] = str(value)
        elif isinstance(value, float):
            out[str(key)] = str(int(value)) if value.is_integer() else repr(value)
        else:
            out[str(key)] = fastjson.dumps(value)
    return out


def _decode_rocketmq_header(header: bytes, body: BodyType = b"") -> RemotingCommand:
    try:
        code, language, version, opaque, flag, remark_length = _ROCKETMQ_FIXED.unpack_from(
            header, 0
        )
        pos = _ROCKETMQ_FIXED.size
        remark = None
        if remark_length > 0:
            remark = _utf8(header, pos, remark_length)
            pos += remark_length
        elif remark_length < 0:
            raise RemoteProtocolError(f"negative remark length {remark_length}")
        (ext_length,) = _I32.unpack_from(header, pos)
        pos += 4
        ext = _decode_rocketmq_map(header, pos, ext_length) if ext_length > 0 else None
    except struct.error as exc:
        raise RemoteProtocolError(f"truncated ROCKETMQ header: {exc}") from None
    return RemotingCommand(
        code,
        _LANGUAGE_BY_CODE.get(language, "OTHER"),
        version,
        opaque,
        flag,
        remark,
        ext,
        body,
        _ROCKETMQ,
    )


def _decode_rocketmq_map(header: bytes, pos: int, length: int) -> dict[str, str]:
    end = pos + length
    if end > len(header):
        raise RemoteProtocolError(f"extFields length {length} exceeds the header")
    out: dict[str, str] = {}
    try:
        while pos < end:
            (key_length,) = _I16.unpack_from(header, pos)
            key_end = pos + 2 + key_length
            (value_length,) = _I32.unpack_from(header, key_end)
            pos = key_end + 4 + value_length
            if key_length < 0 or value_length < 0 or pos > end:
                raise RemoteProtocolError("extFields entry runs past its section")
            if key_length and value_length:  # 4.9.x maps zero-length keys and values to null
                out[header[key_end - key_length : key_end].decode()] = header[
                    pos - value_length : pos
                ].decode()
    except struct.error:
        raise RemoteProtocolError("truncated extFields entry") from None
    except UnicodeDecodeError as exc:
        raise RemoteProtocolError(f"extFields string is not UTF-8: {exc}") from None
    return out


def _utf8(data: bytes, pos: int, length: int) -> str:
    if length < 0 or pos + length > len(data):
        raise RemoteProtocolError(f"string of {length} bytes runs past the header")
    try:
        return data[pos : pos + length].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RemoteProtocolError(f"string is not UTF-8: {exc}") from None


# ---------------------------------------------------------------------------------- encoding


def encode_header(command: RemotingCommand) -> bytes:
    if command.serialize_type == SerializeType.ROCKETMQ:
        return _encode_rocketmq_header(command)
    return _encode_json_header(command)


def encode_command(command: RemotingCommand) -> list[BodyType]:
    """The frame as buffers to write in order (the body is not copied)."""
    body = command.body
    head = None
    if command.serialize_type == _ROCKETMQ:
        header = _encode_rocketmq_header(command)
    elif _json_frame_head is not None:
        # Every reply: the C head needs no escaping and gives orjson's bytes, else None
        head = _json_frame_head(
            command.code, command.ext_fields, command.flag, command.language,
            command.opaque, command.remark, command.version, len(body),
        )  # fmt: skip
    if head is None:
        if command.serialize_type != _ROCKETMQ:
            header = _encode_json_header(command)
        header_length = len(header)
        head = (
            PREFIX.pack(
                4 + header_length + len(body), (command.serialize_type << 24) | header_length
            )
            + header
        )
    if type(body) is Gather:
        return [head, *body.parts]
    if body:
        return [head, body]
    return [head]


def encode_command_bytes(command: RemotingCommand) -> bytes:
    return b"".join(encode_command(command))


def _encode_json_header(command: RemotingCommand) -> bytes:
    # Fixed key order (Java's alphabetical one), compact, every extFields value a string.
    # orjson keeps insertion order and writes UTF-8 as is, like fastjson.
    ext = command.ext_fields
    if ext:
        if type(ext) is not ExtFields and not _ONLY_STR.issuperset(map(type, ext.values())):
            ext = {k: _ext_str(v) for k, v in ext.items() if v is not None}
        header = {"code": command.code, "extFields": ext}
    else:
        header = {"code": command.code}
    header["flag"] = command.flag
    header["language"] = command.language
    header["opaque"] = command.opaque
    if command.remark is not None:
        header["remark"] = command.remark
    header["serializeTypeCurrentRPC"] = "JSON"
    header["version"] = command.version
    return orjson.dumps(header)


def _ext_str(value: object) -> str:
    if value is True:
        return "true"
    if value is False:
        return "false"
    return str(value)


def _encode_rocketmq_header(command: RemotingCommand) -> bytes:
    remark = command.remark.encode("utf-8") if command.remark else b""
    language = _LANGUAGE_VALUES.get(command.language, _LANGUAGE_OTHER)
    parts: list[bytes] = []
    append = parts.append
    for key, value in (command.ext_fields or {}).items():
        if key is None or value is None:
            continue
        key_part = _KEY_PARTS.get(key)
        if key_part is None:
            key_part = _key_part(key)
        value_bytes = (value if type(value) is str else _ext_str(value)).encode("utf-8")
        append(key_part)
        append(_I32.pack(len(value_bytes)))
        append(value_bytes)
    entries = b"".join(parts)
    fixed = _ROCKETMQ_FIXED.pack(
        command.code, language, command.version, command.opaque, command.flag, len(remark)
    )
    return b"".join((fixed, remark, _I32.pack(len(entries)), entries))


def _key_part(key: str) -> bytes:
    """length(2) + UTF-8 of an extFields key; header keys repeat, so they are kept."""
    key_bytes = key.encode("utf-8")
    part = _I16.pack(len(key_bytes)) + key_bytes
    if len(_KEY_PARTS) < 4096:
        _KEY_PARTS[key] = part
    return part


_KEY_PARTS: dict[str, bytes] = {}
_LANGUAGE_VALUES = {member.name: member.value for member in LanguageCode}
_LANGUAGE_OTHER = LanguageCode.OTHER.value
