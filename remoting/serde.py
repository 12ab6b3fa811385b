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
import types
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


# Headers are decoded on every request, so each class gets a straight-line function generated
# once (about 5x faster than cattrs' per-field hook calls). Any failure falls back to the cattrs
# path, which produces the error message naming every bad field.
_FAST_PARSERS: dict[Any, str] = {
    str: "{v}",
    int: "_int({v})",
    bool: "({v}.lower() == 'true')",
    float: "float({v})",
}
_header_decoders: dict[type, Callable[[dict[str, str]], Any]] = {}
_header_encoders: dict[type, Callable[[Any], dict[str, str]]] = {}


def _optional_inner(t: Any) -> Any:
    args = typing.get_args(t)
    if typing.get_origin(t) in (typing.Union, types.UnionType) and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        return rest[0] if len(rest) == 1 else None
    return None


def _compile_header_decoder(cls: type) -> Callable[[dict[str, str]], Any] | None:
    hints = typing.get_type_hints(cls)
    lines = ["def decode(ext):"]
    args = []
    positional = all(a.init and not a.kw_only for a in attrs.fields(cls))
    for index, a in enumerate(attrs.fields(cls)):
        typ = hints[a.name]
        inner = _optional_inner(typ)
        parser = _FAST_PARSERS.get(inner if inner is not None else typ)
        if parser is None:
            return None
        local = f"f{index}"
        value = parser.format(v="_v")
        if a.default is attrs.NOTHING:
            lines.append(f"    _v = ext[{wire_name(a)!r}]")
            lines.append(f"    {local} = {value}")
        else:
            lines.append(f"    _v = ext.get({wire_name(a)!r})")
            lines.append(f"    {local} = _d{index} if _v is None else {value}")
        args.append(local if positional else f"{a.name}={local}")
    lines.append(f"    return _cls({', '.join(args)})")
    # int() also takes "1_000" and " 7 ", which Java's parseLong refuses; harmless, and the
    # check would cost more than the parse.
    namespace: dict[str, Any] = {"_cls": cls, "_int": int}
    for index, a in enumerate(attrs.fields(cls)):
        if a.default is not attrs.NOTHING:
            namespace[f"_d{index}"] = a.default
    exec("\n".join(lines), namespace)
    return namespace["decode"]


class ExtFields(dict):
    """extFields whose values are all strings already (what the header encoders build): the
    JSON writer then skips its per-value check."""

    __slots__ = ()


def _compile_header_encoder(cls: type) -> Callable[[Any], dict[str, str]] | None:
    hints = typing.get_type_hints(cls)
    lines = ["def encode(h):", "    out = _ExtFields()"]
    for a in attrs.fields(cls):
        typ = hints[a.name]
        inner = _optional_inner(typ)
        base = inner if inner is not None else typ
        if base is str:
            render = "_v"
        elif base is bool:
            render = "('true' if _v else 'false')"
        elif base is int:
            render = "str(_v)"
        elif base is float:
            render = "repr(_v)"
        else:
            return None
        lines.append(f"    _v = h.{a.name}")
        lines.append("    if _v is not None:")
        lines.append(f"        out[{wire_name(a)!r}] = {render}")
    lines.append("    return out")
    namespace: dict[str, Any] = {"_ExtFields": ExtFields}
    exec("\n".join(lines), namespace)
    return namespace["encode"]


def _slow_decode_header(cls: type[T], ext_fields: dict[str, str]) -> T:
    try:
        return ext_converter.structure(ext_fields, cls)
    except Exception as exc:
        raise RequestError(
            ResponseCode.SYSTEM_ERROR, f"bad {cls.__name__}: {_error_lines(exc)}"
        ) from None


def decode_header(cls: type[T], ext_fields: dict[str, str] | None) -> T:
    """extFields -> header object, or RequestError(SYSTEM_ERROR) naming every bad field."""
    fn = _header_decoders.get(cls)
    if fn is None:
        fn = _compile_header_decoder(cls) or (lambda ext: _slow_decode_header(cls, ext))
        _header_decoders[cls] = fn
    ext = ext_fields or {}
    try:
        return fn(ext)
    except RequestError:
        raise
    except Exception:
        return _slow_decode_header(cls, ext)


def encode_header_fields(header: object) -> dict[str, str]:
    """Header object -> extFields. Java drops nulls, never zeros or defaults."""
    cls = type(header)
    fn = _header_encoders.get(cls)
    if fn is None:
        fn = _compile_header_encoder(cls) or (
            lambda h: {k: v for k, v in ext_converter.unstructure(h).items() if v is not None}
        )
        _header_encoders[cls] = fn
    return fn(header)


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


def unstructure_body(obj: Any) -> Any:
    return body_converter.unstructure(obj)


def encode_body(obj: Any, *, standard: bool = False, pretty: bool = False) -> bytes:
    return fastjson.dumps(body_converter.unstructure(obj), standard=standard, pretty=pretty).encode(
        "utf-8"
    )
