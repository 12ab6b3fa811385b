"""Request signatures (spec: RocketMQ 4.9's AclClientRPCHook and PlainAccessValidator.parse).

The signed content is the values of the extFields, sorted by key, except ``Signature`` (and
the server also skips ``_UNIQUE_KEY_QUERY``, which Java's admin client adds after signing),
concatenated as UTF-8, then the body. The signature is base64(HMAC-SHA1(secretKey, content)).
"""

from __future__ import annotations

import hashlib
import hmac
from binascii import b2a_base64
from collections.abc import Callable, Mapping
from operator import itemgetter
from typing import Any

ACCESS_KEY = "AccessKey"
SECRET_KEY = "SecretKey"
SIGNATURE = "Signature"
SECURITY_TOKEN = "SecurityToken"
UNIQUE_KEY_QUERY = "_UNIQUE_KEY_QUERY"  # MixAll.UNIQUE_MSG_QUERY_FLAG

SERVER_SKIPS = frozenset({SIGNATURE, UNIQUE_KEY_QUERY})
SIGNER_SKIPS = SERVER_SKIPS  # what a client leaves out, so Java's brokers agree with ours


def _java_order(key: str) -> object:
    # Java's TreeMap compares UTF-16 code units; code points agree except above U+FFFF.
    return key.encode("utf-16-be", "surrogatepass")


def _values_in_order(keys: tuple[str, ...], skip: frozenset[str]) -> Callable[[Any], Any]:
    ordered = sorted(k for k in keys if k not in skip)
    if not all(k.isascii() for k in ordered):
        ordered.sort(key=_java_order)
    if not ordered:
        return lambda fields: ()
    # itemgetter of one key returns the value itself: joining a str's characters is the str
    return itemgetter(*ordered)


# Requests of one kind carry the same extFields keys in the same order, so the sorted order is
# worked out once per (keys, skip) shape: half the cost of sorting on every request. Bounded,
# as the shapes come from peers.
_ORDERS: dict[tuple[tuple[str, ...], frozenset[str]], Callable[[Any], Any]] = {}
MAX_CACHED_SHAPES = 1024


def content_prefix(ext_fields: Mapping[str, str] | None, skip: frozenset[str]) -> bytes:
    """The extFields part of the signed content."""
    if not ext_fields:
        return b""
    shape = (tuple(ext_fields), skip)
    values = _ORDERS.get(shape)
    if values is None:
        values = _values_in_order(shape[0], skip)
        if len(_ORDERS) < MAX_CACHED_SHAPES:
            _ORDERS[shape] = values
    # Java's getBytes(UTF_8) writes '?' for a lone surrogate, as "replace" does.
    return "".join(values(ext_fields)).encode("utf-8", "replace")


class Signer:
    """HMAC-SHA1 keyed once with a secret key; each signature copies the keyed state."""

    __slots__ = ("_keyed",)

    def __init__(self, secret_key: str) -> None:
        self._keyed = hmac.new(secret_key.encode("utf-8", "replace"), digestmod=hashlib.sha1)

    def sign(self, prefix: bytes, body: bytes | bytearray | memoryview = b"") -> bytes:
        """The base64 signature (ASCII bytes) of ``prefix`` followed by ``body``."""
        mac = self._keyed.copy()
        mac.update(prefix)
        if body:
            mac.update(body)
        return b2a_base64(mac.digest(), newline=False)

    def __repr__(self) -> str:  # never the key
        return "<Signer>"


def signature_matches(expected: bytes, given: str | None) -> bool:
    """Constant-time comparison of what we computed with what the request carries."""
    if given is None:
        return False
    return hmac.compare_digest(expected, given.encode("utf-8", "replace"))
