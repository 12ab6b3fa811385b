"""Custom headers <-> extFields (docs/STYLE.md §4, docs/spec/remoting.md §3.3): the one place a header
value from the wire is parsed and checked.

extFields is a Java ``Map<String,String>``: camelCase names, every value a string, booleans
parsed like ``Boolean.parseBoolean``, nulls dropped on the way out. Every field's type says its
Java type and range (remoting.wire_types); a value outside it, a missing required field or a bad
name is answered SYSTEM_ERROR with a remark naming each bad field and its value.

Headers are decoded on every request, so each class gets a straight-line decoder generated once
(parse and check inline, about 5x faster than a converter's per-field hook calls). Any failure
falls back to ``_explain``, which checks each field with ``wire_types.check_value`` and says what
is wrong.
"""

from __future__ import annotations

import sys
import types
import typing
from collections.abc import Callable
from typing import Any, TypeVar

import attrs

from remoting.codec_native import native
from remoting.codes import ResponseCode
from remoting.errors import RequestError
from remoting.wire_types import MARKS, Bits, Length, Name, OneOf, Range, check_value, show

T = TypeVar("T")


def wire_name(a: attrs.Attribute) -> str:
    """queue_offset -> queueOffset, unless the field gives its Java spelling in metadata."""
    if "wire" in a.metadata:
        return a.metadata["wire"]
    head, *rest = a.name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


class ExtFields(dict):
    """extFields whose values are all strings already (what the header encoders build): the
    JSON writer then skips its per-value check."""

    __slots__ = ()


@attrs.frozen
class FieldSpec:
    attr: str
    wire: str
    label: str  # the wire name, and the Java one where they differ (SEND_MESSAGE_V2's letters)
    base: type  # str, int, bool or float
    marks: tuple[Any, ...]
    required: bool
    default: Any
    blank_is_absent: bool  # an optional name sent as "" means "none" (Java's isBlank checks)


def optional_inner(t: Any) -> Any:
    args = typing.get_args(t)
    if typing.get_origin(t) in (typing.Union, types.UnionType) and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        return rest[0] if len(rest) == 1 else None
    return None


def field_specs(cls: type) -> list[FieldSpec]:
    """Each field's wire name, type and checks. A header int must say its Java type."""
    hints = typing.get_type_hints(cls, include_extras=True)
    specs = []
    for a in attrs.fields(cls):
        typ = hints[a.name]
        inner = optional_inner(typ)
        typ = inner if inner is not None else typ
        marks: tuple[Any, ...] = ()
        if typing.get_origin(typ) is typing.Annotated:
            marks = tuple(m for m in typ.__metadata__ if isinstance(m, MARKS))
            typ = typing.get_args(typ)[0]
        if typ not in (str, int, bool, float):
            raise TypeError(f"{cls.__name__}.{a.name}: no header type {typ!r}")
        if typ is int and not any(isinstance(m, Range) for m in marks):
            raise TypeError(f"{cls.__name__}.{a.name}: say its Java type (Int, Long, ...)")
        wire = wire_name(a)
        java = a.metadata.get("java")
        specs.append(
            FieldSpec(
                attr=a.name,
                wire=wire,
                label=f"{wire} ({java})" if java else wire,
                base=typ,
                marks=marks,
                required=a.default is attrs.NOTHING,
                default=None if a.default is attrs.NOTHING else a.default,
                blank_is_absent=inner is not None and any(isinstance(m, Name) for m in marks),
            )
        )
    return specs


# ------------------------------------------------------------------------------- decoding

_PARSERS = {str: "_v", int: "_int(_v)", bool: "(_v.lower() == 'true')", float: "float(_v)"}


def _check_lines(local: str, index: int, marks: tuple[Any, ...], ns: dict[str, Any]) -> list[str]:
    lines = []
    for number, mark in enumerate(marks):
        if isinstance(mark, Range):
            lines.append(f"if not {mark.low} <= {local} <= {mark.high}: raise _Bad")
        elif isinstance(mark, Bits):
            lines.append(f"{local} &= {mark.mask}")
        elif isinstance(mark, Name):
            seen, check = f"_seen{index}_{number}", f"_name{index}_{number}"
            ns[seen], ns[check] = mark.seen, mark.problem
            lines.append(f"if {local} not in {seen} and {check}({local}) is not None: raise _Bad")
        elif isinstance(mark, OneOf):
            ns[f"_one{index}_{number}"] = mark.choices
            lines.append(f"if {local} not in _one{index}_{number}: raise _Bad")
        elif isinstance(mark, Length):
            lines.append(f"if not {mark.low} <= len({local}) <= {mark.high}: raise _Bad")
    return lines


def _compile_header_decoder(cls: type) -> Callable[[dict[str, str]], Any]:
    specs = field_specs(cls)
    positional = all(a.init and not a.kw_only for a in attrs.fields(cls))
    ns: dict[str, Any] = {"_cls": cls, "_int": int, "_Bad": ValueError}
    lines, args = ["def decode(ext):"], []
    for index, spec in enumerate(specs):
        local = f"f{index}"
        parse = [f"{local} = {_PARSERS[spec.base]}", *_check_lines(local, index, spec.marks, ns)]
        if spec.required:
            lines += [f"    _v = ext[{spec.wire!r}]", *(f"    {line}" for line in parse)]
        else:
            ns[f"_d{index}"] = spec.default
            absent = "_v is None or _v == ''" if spec.blank_is_absent else "_v is None"
            lines += [f"    _v = ext.get({spec.wire!r})", f"    if {absent}:"]
            lines += [f"        {local} = _d{index}", "    else:"]
            lines += [f"        {line}" for line in parse]
        args.append(local if positional else f"{spec.attr}={local}")
    lines.append(f"    return _cls({', '.join(args)})")
    # int() also takes "1_000" and " 7 ", which Java's parseLong refuses; harmless, and the
    # check would cost more than the parse.
    exec("\n".join(lines), ns)
    return ns["decode"]


def _explain(cls: type, ext: dict[str, str]) -> RequestError:
    """Why ``ext`` is not a ``cls``: each bad field with its value."""
    problems = []
    for spec in field_specs(cls):
        raw = ext.get(spec.wire)
        if raw is None or (raw == "" and spec.blank_is_absent):
            if spec.required:
                problems.append(f"{spec.label} is missing")
            continue
        if not isinstance(raw, str):  # decode_command gives strings; a caller may not
            problems.append(f"{spec.label}={show(raw)} is not a string")
            continue
        _, problem = check_value(spec.base, spec.marks, raw)
        if problem is not None:
            problems.append(f"{spec.label}={problem}")
    detail = "; ".join(problems) or "cannot be decoded"
    return RequestError(ResponseCode.SYSTEM_ERROR, f"bad {cls.__name__}: {detail}")


_header_decoders: dict[type, Callable[[dict[str, str]], Any]] = {}


def decode_header(cls: type[T], ext_fields: dict[str, str] | None) -> T:
    """extFields -> header object, or RequestError(SYSTEM_ERROR) naming every bad field."""
    fn = _header_decoders.get(cls)
    if fn is None:
        fn = _header_decoders[cls] = _compile_header_decoder(cls)
    ext = ext_fields or {}
    try:
        return fn(ext)
    except Exception:
        raise _explain(cls, ext) from None


# --------------------------------------------------------------------- the plain fast path

_STR, _INT, _NAME = 0, 1, 2  # the field kinds of remoting/native/codec/plain_header.c


def plain_fields(cls: type) -> tuple[tuple[Any, ...], ...] | None:
    """``cls`` for the C fast path (``decode_plain_header``): per field (wire key, kind,
    required, low, high, names, default); None when a field is not a str, a ranged integer or
    a name, or the class cannot be built positionally (the reference alone decodes it)."""
    if not all(a.init and not a.kw_only for a in attrs.fields(cls)):
        return None
    fields = []
    for spec in field_specs(cls):
        ranges = [m for m in spec.marks if isinstance(m, Range)]
        names = [m for m in spec.marks if isinstance(m, Name)]
        low, high, seen, kind = 0, 0, None, _STR
        if len(spec.marks) != len(ranges) + len(names) or len(spec.marks) > 1:
            return None
        if spec.base is int and ranges:
            kind, low, high = _INT, ranges[0].low, ranges[0].high
        elif spec.base is str and names:
            kind, seen = _NAME, names[0].seen
        elif spec.base is not str or spec.marks:
            return None
        key = sys.intern(spec.wire)  # the dict lookup compares pointers
        fields.append((key, kind, spec.required, low, high, seen, spec.default))
    return tuple(fields)


def plain_decoder(cls: type[T]) -> Callable[[dict[str, str] | None], T]:
    """``decode_header`` for ``cls``, with the C taking the plain form every client sends
    (each value a str, integers as digits within range, names already seen valid) and this
    module's decoder, the reference, judging everything else."""
    fields = plain_fields(cls)
    if native is None or fields is None:
        return lambda ext_fields: decode_header(cls, ext_fields)
    decode_plain = native.decode_plain_header

    def decode(ext_fields: dict[str, str] | None) -> T:
        if type(ext_fields) is dict:
            values = decode_plain(ext_fields, fields)
            if values is not None:
                return cls(*values)
        return decode_header(cls, ext_fields)

    return decode


def request_decoder(cls: type[T], code: int) -> Callable[[Any], T]:
    """``plain_decoder`` for requests of ``code``: the values the C scanned straight from a
    request's JSON header (remoting/command.py ScannedCommand, registered here for ``code``)
    when it could, else the request's extFields decoded."""
    decode = plain_decoder(cls)
    fields = plain_fields(cls)
    if native is None or fields is None:
        return lambda request: decode(request.ext_fields)
    native.configure_header_scan(int(code), fields)

    def decode_request(request: Any) -> T:
        values = request.header_values
        if values is not None:
            return cls(*values)
        return decode(request.ext_fields)

    return decode_request


# ------------------------------------------------------------------------------- encoding

_RENDER = {str: "_v", bool: "('true' if _v else 'false')", int: "str(_v)", float: "repr(_v)"}
_header_encoders: dict[type, Callable[[Any], dict[str, str]]] = {}


def _compile_header_encoder(cls: type) -> Callable[[Any], dict[str, str]]:
    lines = ["def encode(h):", "    out = _ExtFields()"]
    for spec in field_specs(cls):
        lines.append(f"    _v = h.{spec.attr}")
        lines.append("    if _v is not None:")
        lines.append(f"        out[{spec.wire!r}] = {_RENDER[spec.base]}")
    lines.append("    return out")
    ns: dict[str, Any] = {"_ExtFields": ExtFields}
    exec("\n".join(lines), ns)
    return ns["encode"]


def encode_header_fields(header: object) -> dict[str, str]:
    """Header object -> extFields. Java drops nulls, never zeros or defaults."""
    cls = type(header)
    fn = _header_encoders.get(cls)
    if fn is None:
        fn = _header_encoders[cls] = _compile_header_encoder(cls)
    return fn(header)
