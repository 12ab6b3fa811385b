"""cattrs converters between attrs classes and the wire (docs/STYLE.md §4).

* ``decode_header`` / ``encode_header_fields``: custom headers <-> extFields (from
  remoting.header_codec, where every header value is parsed and range-checked).
* ``decode_body`` / ``encode_body``: JSON bodies in fastjson's dialect: camelCase names, enums
  as names (ordinals accepted, the C++ client sends them), numbers accepted as strings,
  missing collections as empty.
"""

from __future__ import annotations

import enum
import typing
from collections.abc import Callable
from typing import Any, TypeVar

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from remoting import fastjson
from remoting.codes import ResponseCode
from remoting.errors import RequestError
from remoting.header_codec import ExtFields as ExtFields  # re-exported: one import for callers
from remoting.header_codec import decode_header as decode_header
from remoting.header_codec import encode_header_fields as encode_header_fields
from remoting.header_codec import optional_inner, wire_name
from remoting.wire_types import MARKS, value_problem

T = TypeVar("T")


def _renames(cls: type, converter: cattrs.Converter, omit_none: bool = False) -> dict[str, Any]:
    return {a.name: override(rename=wire_name(a)) for a in attrs.fields(cls)}


def java_bool(value: Any) -> bool:
    """Boolean.parseBoolean: only a case-insensitive "true" is true."""
    if isinstance(value, bool):
        return value
    return isinstance(value, str) and value.lower() == "true"


def _java_int(value: Any, _: Any = None) -> int:
    if isinstance(value, bool):
        raise ValueError(f"expected a number, got {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        text = value.strip()
        if text and (text.isdigit() or (text[0] in "+-" and text[1:].isdigit())):
            return int(text)
    raise ValueError(f"{value!r} is not an integer")


def _java_float(value: Any, _: Any = None) -> float:
    if isinstance(value, bool):
        raise ValueError(f"expected a number, got {value!r}")
    return float(value)


def _java_str(value: Any, _: Any = None) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    raise ValueError(f"{value!r} is not a string")


def _structure_enum(value: Any, cls: type[enum.Enum]) -> enum.Enum:
    if isinstance(value, cls):
        return value
    if isinstance(value, str):
        if value in cls.__members__:
            return cls[value]
        if value.lstrip("-").isdigit():
            value = int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        members = list(cls)
        if 0 <= value < len(members):
            return members[value]  # Java ordinal
    raise ValueError(f"{value!r} is not a valid {cls.__name__}")


def _error_lines(exc: BaseException) -> str:
    return "; ".join(cattrs.transform_error(exc, format_exception=lambda e, _: str(e)))


# ---------------------------------------------------------------- JSON bodies

body_converter = cattrs.Converter()
body_converter.register_structure_hook(bool, lambda v, _: java_bool(v))
body_converter.register_structure_hook(int, _java_int)
body_converter.register_structure_hook(float, _java_float)
body_converter.register_structure_hook(str, _java_str)
body_converter.register_structure_hook_factory(
    lambda t: isinstance(t, type) and issubclass(t, enum.Enum), lambda t: _structure_enum
)
body_converter.register_unstructure_hook_factory(
    lambda t: isinstance(t, type) and issubclass(t, enum.Enum), lambda t: lambda v: v
)


def _omit_none_unstructure(cls: type) -> Callable[[Any], dict[str, Any]]:
    inner = make_dict_unstructure_fn(cls, body_converter, **_renames(cls, body_converter))

    def unstructure(obj: Any) -> dict[str, Any]:
        return {k: v for k, v in inner(obj).items() if v is not None}

    return unstructure


def _lenient_structure(cls: type) -> Callable[[Any, type], Any]:
    inner = make_dict_structure_fn(
        cls, body_converter, _cattrs_forbid_extra_keys=False, **_renames(cls, body_converter)
    )

    def structure(value: Any, typ: type) -> Any:
        if not isinstance(value, dict):
            raise ValueError(
                f"expected a JSON object for {cls.__name__}, got {type(value).__name__}"
            )
        # A JSON null for a field with a default means "absent" (fastjson omits nulls anyway).
        if any(v is None for v in value.values()):
            value = {k: v for k, v in value.items() if v is not None}
        return inner(value, typ)

    return structure


body_converter.register_unstructure_hook_factory(attrs.has, _omit_none_unstructure)
body_converter.register_structure_hook_factory(attrs.has, _lenient_structure)


def _is_set(t: Any) -> bool:
    return typing.get_origin(t) in (set, frozenset)


def _structure_set(value: Any, t: Any) -> Any:
    (item_type,) = typing.get_args(t) or (Any,)
    items = value if isinstance(value, list | tuple | set | frozenset) else []
    return typing.get_origin(t)(body_converter.structure(v, item_type) for v in items)


body_converter.register_structure_hook_factory(_is_set, lambda t: _structure_set)
body_converter.register_unstructure_hook_factory(
    _is_set, lambda t: lambda v: [body_converter.unstructure(i) for i in v]
)


def structure_body(cls: type[T], data: Any) -> T:
    return body_converter.structure(data, cls)


def decode_body(cls: type[T], body: bytes | bytearray | memoryview | str) -> T:
    """A fastjson body -> an attrs object, or RequestError(SYSTEM_ERROR) saying what is wrong."""
    try:
        data = fastjson.loads(body)
    except Exception as exc:
        raise RequestError(ResponseCode.SYSTEM_ERROR, f"bad {cls.__name__} body: {exc}") from None
    try:
        return body_converter.structure(data, cls)
    except Exception as exc:
        raise RequestError(
            ResponseCode.SYSTEM_ERROR, f"bad {cls.__name__} body: {_error_lines(exc)}"
        ) from None


_marked_fields: dict[type, list[tuple[str, str, tuple[Any, ...]]]] = {}


def _marks_of(cls: type) -> list[tuple[str, str, tuple[Any, ...]]]:
    """(attribute, wire name, marks) of each field of ``cls`` whose type carries checks."""
    marked = _marked_fields.get(cls)
    if marked is None:
        hints = typing.get_type_hints(cls, include_extras=True)
        marked = []
        for a in attrs.fields(cls):
            typ = hints[a.name]
            inner = optional_inner(typ)
            typ = inner if inner is not None else typ
            if typing.get_origin(typ) is typing.Annotated:
                marks = tuple(m for m in typ.__metadata__ if isinstance(m, MARKS))
                marked.append((a.name, wire_name(a), marks))
        _marked_fields[cls] = marked
    return marked


def check_body(obj: Any) -> None:
    """A request body's own fields against their Java types and name rules (not the objects it
    holds: the caller checks those it uses), or RequestError(SYSTEM_ERROR) naming the bad ones.
    The body converter ignores these marks, so files a Java broker wrote still load."""
    problems = []
    for name, wire, marks in _marks_of(type(obj)):
        value = getattr(obj, name)
        problem = None if value is None else value_problem(marks, value)
        if problem is not None:
            problems.append(f"{wire}={problem}")
    if problems:
        raise RequestError(
            ResponseCode.SYSTEM_ERROR, f"bad {type(obj).__name__}: {'; '.join(problems)}"
        )


def unstructure_body(obj: Any) -> Any:
    return body_converter.unstructure(obj)


def encode_body(obj: Any, *, standard: bool = False, pretty: bool = False) -> bytes:
    return fastjson.dumps(body_converter.unstructure(obj), standard=standard, pretty=pretty).encode(
        "utf-8"
    )
