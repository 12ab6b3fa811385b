"""Command headers written the hostile way (pure): JSON headers whose values are any JSON type,
NaN, lone surrogates or invalid UTF-8, and ROCKETMQ binary headers whose every length field may
lie. Our own encoders (remoting/command.py) only write what Java would, so the fuzzer has its
own writers.
"""

from __future__ import annotations

import json
import random
import struct
from typing import Any

from remoting.codes import CURRENT_VERSION

_FIXED = struct.Struct(">hbhiii")  # code, language, version, opaque, flag, remark length
JSON_TYPE, ROCKETMQ_TYPE = 0, 1
# Values of any JSON type (and not JSON at all: NaN, Infinity) for a header's own fields.
ODD_JSON = [
    None, True, False, 0, -1, 2**31, -(2**31) - 1, 2**63, 2**70, 1.5, float("nan"),
    float("inf"), float("-inf"), 1e300, "", "1", "x" * 1000, [], [1], {}, {"a": 1}, "\ud800",
]  # fmt: skip


def prefix(serialize_type: int, header: bytes, body: bytes = b"") -> bytes:
    return struct.pack(">iI", 4 + len(header) + len(body), (serialize_type << 24) | len(header))


def framed(serialize_type: int, header: bytes, body: bytes = b"") -> bytes:
    return prefix(serialize_type, header, body) + header + body


def json_header(fields: dict[str, Any], *, ascii_only: bool = True) -> bytes:
    """A JSON header as written by a peer that may break every rule: non-ASCII as is or
    escaped, NaN and infinities as bare words, lone surrogates as escapes (or, written as
    UTF-8, as invalid bytes)."""
    text = json.dumps(fields, ensure_ascii=ascii_only, allow_nan=True, separators=(",", ":"))
    return text.encode("utf-8", "surrogatepass")


def request_fields(
    code: Any, ext: dict[str, Any] | None, opaque: int, *, flag: int = 0
) -> dict[str, Any]:
    out: dict[str, Any] = {"code": code, "flag": flag, "language": "JAVA", "opaque": opaque}
    if ext is not None:
        out["extFields"] = ext
    out["serializeTypeCurrentRPC"] = "JSON"
    out["version"] = CURRENT_VERSION
    return out


def rocketmq_header(
    code: int,
    ext: dict[str, str] | list[tuple[bytes, bytes]],
    opaque: int,
    *,
    flag: int = 0,
    language: int = 0,
    version: int = CURRENT_VERSION,
    remark: bytes = b"",
) -> bytes:
    """A ROCKETMQ binary header (docs/spec/remoting.md §5); ``ext`` may be raw (key, value) bytes."""
    entries = (
        [(k.encode("utf-8", "surrogatepass"), v.encode("utf-8", "surrogatepass")) for k, v in ext.items()]
        if isinstance(ext, dict)
        else ext
    )  # fmt: skip
    packed = b"".join(
        struct.pack(">h", len(k)) + k + struct.pack(">i", len(v)) + v for k, v in entries
    )
    fixed = _FIXED.pack(
        _short(code), language & 0xFF if language < 128 else language - 256, _short(version),
        _int(opaque), _int(flag), len(remark),
    )  # fmt: skip
    return fixed + remark + struct.pack(">i", len(packed)) + packed


def _short(value: int) -> int:
    return (value + 2**15) % 2**16 - 2**15


def _int(value: int) -> int:
    return (value + 2**31) % 2**32 - 2**31


# ---------------------------------------------------------------- mutations of decoded headers


def mutate_json_fields(rng: random.Random, fields: dict[str, Any], codes: list[int]) -> str:
    """Change a decoded JSON header in place, one way; returns what was done."""
    choice = rng.randrange(8)
    ext = fields.get("extFields")
    if choice == 0:
        fields["code"] = rng.choice(codes)  # this header, read by another processor
        return "other-code"
    if choice == 1:
        key = rng.choice(["code", "opaque", "flag", "version", "language", "remark"])
        fields[key] = rng.choice(ODD_JSON)
        return f"odd-{key}"
    if choice == 2:
        fields["flag"] = rng.choice([1, 2, 3, -1, 0x7FFFFFFF])
        return "flag-bits"
    if choice == 3 and isinstance(ext, dict) and ext:
        key = rng.choice(sorted(ext))
        ext[key] = rng.choice(ODD_JSON)
        return "odd-ext-value"
    if choice == 4 and isinstance(ext, dict) and ext:
        del ext[rng.choice(sorted(ext))]
        return "dropped-ext-field"
    if choice == 5:
        fields["extFields"] = rng.choice([[], "x", 1, None, [{"a": "b"}], {"": ""}])
        return "ext-not-an-object"
    if choice == 6:
        fields["extFields"] = {f"k{i}": "v" for i in range(rng.choice([1000, 20_000]))}
        return "many-ext-fields"
    del fields[rng.choice(sorted(fields))]
    return "dropped-field"


def raw_json_damage(rng: random.Random, header: bytes) -> tuple[str, bytes]:
    """Damage a JSON header as text: nesting, duplicate keys, bad escapes and encodings."""
    choice = rng.randrange(7)
    if choice == 0:
        depth = rng.choice([100, 1000, 30_000])
        return "deep", header[:-1] + b',"x":' + b"[" * depth + b"]" * depth + b"}"
    if choice == 1:
        return "duplicate-code", header[:-1] + b',"code":' + str(rng.randrange(400)).encode() + b"}"
    if choice == 2:
        return "bad-escape", header.replace(b'"', b'"\\x', 1)
    if choice == 3:
        return "invalid-utf8", header.replace(b'"', b'"\xc3\x28', 2)
    if choice == 4:
        return "bom", b"\xef\xbb\xbf" + header
    if choice == 5:
        return "nan-token", header.replace(b'"opaque":', b'"opaque":NaN,"o":', 1)
    return "fastjson-keys", header[:-1] + b",0:1,{}:2}"


def rocketmq_damage(rng: random.Random, header: bytes) -> tuple[str, bytes]:
    """A ROCKETMQ header whose remark, extFields or entry lengths lie (the bytes after the
    fixed part are taken as they are)."""
    out = bytearray(header)
    remark_length = struct.unpack_from(">i", out, _FIXED.size - 4)[0]
    ext_at = _FIXED.size + max(remark_length, 0)
    choice = rng.randrange(4)
    lies = [-1, 0, 1, 2**31 - 1, -(2**31), len(header), len(header) + 1]
    if choice == 0 or ext_at + 4 > len(out):
        struct.pack_into(">i", out, _FIXED.size - 4, rng.choice(lies))
        return "remark-length-lie", bytes(out)
    if choice == 1 or ext_at + 6 > len(out):
        struct.pack_into(">i", out, ext_at, rng.choice(lies))
        return "ext-length-lie", bytes(out)
    if choice == 2:
        struct.pack_into(">h", out, ext_at + 4, rng.choice([-1, 0, 1, 32767, -32768]))
        return "key-length-lie", bytes(out)
    key_length = struct.unpack_from(">h", out, ext_at + 4)[0]
    at = ext_at + 6 + max(key_length, 0)
    if at + 4 > len(out):
        return "short-entry", bytes(out[: ext_at + 5])
    struct.pack_into(">i", out, at, rng.choice(lies))
    return "value-length-lie", bytes(out)
