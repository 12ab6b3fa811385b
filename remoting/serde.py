"""cattrs converters between attrs classes and the wire (STYLE.md §4).

* ``decode_header`` / ``encode_header_fields``: custom headers <-> extFields, a Java
  ``Map<String,String>``: camelCase names, every value a string, booleans parsed like
  ``Boolean.parseBoolean``, nulls dropped on the way out.
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

T = TypeVar("T")


def wire_name(a: attrs.Attribute) -> str:
    """queue_offset -> queueOffset, unless the field gives its Java spelling in metadata."""
    if "wire" in a.metadata:
        return a.metadata["wire"]
    head, *rest = a.name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


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


# ---------------------------------------------------------------- extFields (custom headers)

ext_converter = cattrs.Converter()
ext_converter.register_structure_hook(bool, lambda v, _: java_bool(v))
ext_converter.register_structure_hook(int, _java_int)
ext_converter.register_structure_hook(float, _java_float)
ext_converter.register_structure_hook(str, _java_str)
ext_converter.register_unstructure_hook(bool, lambda v: "true" if v else "false")
ext_converter.register_unstructure_hook(int, str)
ext_converter.register_unstructure_hook(float, repr)
ext_converter.register_structure_hook_factory(
    lambda t: isinstance(t, type) and issubclass(t, enum.Enum), lambda t: _structure_enum
)
ext_converter.register_unstructure_hook_factory(
    lambda t: isinstance(t, type) and issubclass(t, enum.Enum), lambda t: lambda v: v.name
)
ext_converter.register_unstructure_hook_factory(
    attrs.has,
    lambda cls: make_dict_unstructure_fn(cls, ext_converter, **_renames(cls, ext_converter)),
)
ext_converter.register_structure_hook_factory(
    attrs.has,
    lambda cls: make_dict_structure_fn(
        cls, ext_converter, _cattrs_forbid_extra_keys=False, **_renames(cls, ext_converter)
    ),
)


def _error_lines(exc: BaseException) -> str:
    return "; ".join(cattrs.transform_error(exc, format_exception=lambda e, _: str(e)))


_header_structurers: dict[type, Callable[[dict[str, str], type], Any]] = {}


def decode_header(cls: type[T], ext_fields: dict[str, str] | None) -> T:
    """extFields -> header object, or RequestError(SYSTEM_ERROR) naming every bad field."""
    fn = _header_structurers.get(cls)
    if fn is None:
        fn = _header_structurers[cls] = ext_converter.get_structure_hook(cls)
    try:
        return fn(ext_fields or {}, cls)
    except Exception as exc:
        raise RequestError(
            ResponseCode.SYSTEM_ERROR, f"bad {cls.__name__}: {_error_lines(exc)}"
        ) from None


def encode_header_fields(header: object) -> dict[str, str]:
    """Header object -> extFields. Java drops nulls, never zeros or defaults."""
    return {k: v for k, v in ext_converter.unstructure(header).items() if v is not None}


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
            raise ValueError(f"expected a JSON object for {cls.__name__}, got {type(value).__name__}")
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


def unstructure_body(obj: Any) -> Any:
    return body_converter.unstructure(obj)


def encode_body(obj: Any, *, standard: bool = False, pretty: bool = False) -> bytes:
    return fastjson.dumps(body_converter.unstructure(obj), standard=standard, pretty=pretty).encode(
        "utf-8"
    )
