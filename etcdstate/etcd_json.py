"""etcd v3's JSON gateway, both ways, as pure functions: requests become dicts, replies become
typed values (the etcd API's own names: ``mod_revision``, ``create_revision``, ``lease``).

This is the one place an etcd reply is checked: the gateway sends keys and values in base64,
int64s as decimal strings, and leaves out every field that holds its zero value (a missing
``succeeded`` means false, a missing ``kvs`` means none). Anything else that does not fit
raises EtcdProtocolError naming the field; nothing here touches a socket.
"""

from __future__ import annotations

import base64
import binascii
import enum
from typing import Any

import attrs

LONG_MAX = 2**63 - 1
MAX_KEY_BYTES = 1024
# Our values are small JSON documents; etcd's own request limit is 1.5 MiB.
MAX_VALUE_BYTES = 64 * 1024


class EtcdError(Exception):
    """etcd did not do what was asked (its error, or no member reachable)."""


class EtcdProtocolError(EtcdError):
    """A reply that is not what etcd's gateway sends."""


class EtcdUnavailable(EtcdError):
    """No endpoint answered."""


class EtcdLeaseNotFound(EtcdError):
    """The lease named is gone at etcd (it expired, or was revoked)."""


@attrs.frozen
class KeyValue:
    key: bytes
    value: bytes
    create_revision: int
    mod_revision: int
    version: int
    lease: int


class Target(enum.Enum):
    MOD = "MOD"
    CREATE = "CREATE"
    VERSION = "VERSION"
    VALUE = "VALUE"


@attrs.frozen
class Compare:
    """One condition of a transaction, always ``EQUAL``: "unchanged since I read it" (the key's
    ``mod_revision``), "absent" (``create_revision`` 0) or "holds this value"."""

    key: bytes
    target: Target
    value: int | bytes

    @classmethod
    def mod_revision(cls, key: bytes, revision: int) -> Compare:
        return cls(key, Target.MOD, revision)

    @classmethod
    def absent(cls, key: bytes) -> Compare:
        return cls(key, Target.CREATE, 0)

    @classmethod
    def value_is(cls, key: bytes, value: bytes) -> Compare:
        return cls(key, Target.VALUE, value)


@attrs.frozen
class Put:
    key: bytes
    value: bytes
    lease: int = 0


@attrs.frozen
class Delete:
    key: bytes


@attrs.frozen
class Range:
    key: bytes


Op = Put | Delete | Range


@attrs.frozen
class TxnResult:
    succeeded: bool
    revision: int
    # The key-values each Range op of the branch that ran returned, in op order.
    ranges: list[list[KeyValue]]


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def check_key(key: bytes) -> bytes:
    if not 0 < len(key) <= MAX_KEY_BYTES:
        raise ValueError(f"etcd key of {len(key)} bytes (1..{MAX_KEY_BYTES})")
    return key


def check_value(value: bytes) -> bytes:
    if len(value) > MAX_VALUE_BYTES:
        raise ValueError(f"etcd value of {len(value)} bytes (at most {MAX_VALUE_BYTES})")
    return value


def prefix_end(prefix: bytes) -> bytes:
    """The range end that selects every key starting with ``prefix`` (etcd's rule: the prefix
    with its last byte below 0xff incremented)."""
    stripped = prefix.rstrip(b"\xff")
    if not stripped:
        return b"\x00"  # every key
    return stripped[:-1] + bytes([stripped[-1] + 1])


def range_request(key: bytes, *, prefix: bool = False, limit: int = 0) -> dict[str, Any]:
    request: dict[str, Any] = {"key": b64(check_key(key))}
    if prefix:
        request["range_end"] = b64(prefix_end(key))
    if limit:
        request["limit"] = str(limit)
    return request


def put_request(key: bytes, value: bytes, lease: int = 0) -> dict[str, Any]:
    request: dict[str, Any] = {"key": b64(check_key(key)), "value": b64(check_value(value))}
    if lease:
        request["lease"] = str(lease)
    return request


def _compare(compare: Compare) -> dict[str, Any]:
    out: dict[str, Any] = {
        "key": b64(check_key(compare.key)),
        "target": compare.target.value,
        "result": "EQUAL",
    }
    if compare.target is Target.VALUE:
        assert isinstance(compare.value, bytes)
        out["value"] = b64(check_value(compare.value))
    else:
        assert isinstance(compare.value, int)
        field = {Target.MOD: "mod_revision", Target.CREATE: "create_revision"}
        out[field.get(compare.target, "version")] = str(compare.value)
    return out


def _op(op: Op) -> dict[str, Any]:
    if isinstance(op, Put):
        return {"request_put": put_request(op.key, op.value, op.lease)}
    if isinstance(op, Delete):
        return {"request_delete_range": {"key": b64(check_key(op.key))}}
    return {"request_range": range_request(op.key)}


def txn_request(compare: list[Compare], success: list[Op], failure: list[Op]) -> dict[str, Any]:
    return {
        "compare": [_compare(c) for c in compare],
        "success": [_op(o) for o in success],
        "failure": [_op(o) for o in failure],
    }


# ------------------------------------------------------------------------------ replies


def _int(obj: dict[str, Any], field: str, lo: int = 0, hi: int = LONG_MAX) -> int:
    raw = obj.get(field, "0")
    if isinstance(raw, bool) or not isinstance(raw, int | str):
        raise EtcdProtocolError(f"etcd reply: {field} is not an integer: {raw!r:.60}")
    try:
        value = int(raw)
    except ValueError:
        raise EtcdProtocolError(f"etcd reply: {field} is not an integer: {raw!r:.60}") from None
    if not lo <= value <= hi:
        raise EtcdProtocolError(f"etcd reply: {field}={value} out of range [{lo}, {hi}]")
    return value


def _bytes(obj: dict[str, Any], field: str, limit: int) -> bytes:
    raw = obj.get(field, "")
    if not isinstance(raw, str) or len(raw) > (limit * 4) // 3 + 4:
        raise EtcdProtocolError(f"etcd reply: {field} is not base64 of at most {limit} bytes")
    try:
        return base64.b64decode(raw, validate=True)
    except binascii.Error:
        raise EtcdProtocolError(f"etcd reply: {field} is not base64") from None


def _object(obj: object, what: str) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise EtcdProtocolError(f"etcd reply: {what} is not an object")
    return obj


def _list(obj: dict[str, Any], field: str) -> list[Any]:
    raw = obj.get(field, [])
    if not isinstance(raw, list):
        raise EtcdProtocolError(f"etcd reply: {field} is not a list")
    return raw


def key_value(obj: object) -> KeyValue:
    kv = _object(obj, "kvs[]")
    return KeyValue(
        key=_bytes(kv, "key", MAX_KEY_BYTES),
        value=_bytes(kv, "value", MAX_VALUE_BYTES),
        create_revision=_int(kv, "create_revision"),
        mod_revision=_int(kv, "mod_revision"),
        version=_int(kv, "version"),
        lease=_int(kv, "lease", -LONG_MAX - 1),
    )


def check_error(reply: object) -> dict[str, Any]:
    """The reply object, or EtcdError carrying etcd's own message (e.g. a lease not found)."""
    body = _object(reply, "the reply")
    if "error" in body or ("code" in body and "message" in body):
        message = body.get("message", body.get("error"))
        error = EtcdLeaseNotFound if "lease not found" in str(message) else EtcdError
        raise error(f"etcd: {message!s:.200} (code {body.get('code')!s:.10})")
    return body


def range_reply(reply: object) -> list[KeyValue]:
    return [key_value(kv) for kv in _list(check_error(reply), "kvs")]


def revision(reply: object) -> int:
    header = _object(check_error(reply).get("header", {}), "header")
    return _int(header, "revision")


def txn_reply(reply: object) -> TxnResult:
    body = check_error(reply)
    succeeded = body.get("succeeded", False)
    if not isinstance(succeeded, bool):
        raise EtcdProtocolError("etcd reply: succeeded is not a boolean")
    ranges = []
    for item in _list(body, "responses"):
        item = _object(item, "responses[]")
        if "response_range" in item:
            ranges.append(range_reply(item["response_range"]))
    return TxnResult(succeeded, revision(body), ranges)


def lease_grant_reply(reply: object) -> tuple[int, int]:
    """(lease id, granted TTL in seconds)."""
    body = check_error(reply)
    return _int(body, "ID", 1), _int(body, "TTL", 1)


def lease_keepalive_reply(reply: object) -> int:
    """The TTL left after the refresh: 0 when the lease is gone (it expired or was revoked).
    The gateway wraps each streamed keep-alive answer in ``result``."""
    body = check_error(reply)
    if "result" in body:
        body = check_error(body["result"])
    return _int(body, "TTL", -1, 2**31)
