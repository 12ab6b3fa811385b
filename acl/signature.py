"""Request signatures (spec: RocketMQ 4.9's AclClientRPCHook and PlainAccessValidator.parse).

The signed content is the values of the extFields, sorted by key, except ``Signature`` (and
the server also skips ``_UNIQUE_KEY_QUERY``, which Java's admin client adds after signing),
concatenated as UTF-8, then the body. The signature is base64(HMAC-SHA1(secretKey, content)).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Mapping

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


def content_prefix(ext_fields: Mapping[str, str] | None, skip: frozenset[str]) -> bytes:
    """The extFields part of the signed content."""
    if not ext_fields:
        return b""
    keys = sorted(ext_fields)
    if not all(k.isascii() for k in keys):
        keys.sort(key=_java_order)
    # Java's getBytes(UTF_8) writes '?' for a lone surrogate, as "replace" does.
    return "".join([ext_fields[k] for k in keys if k not in skip]).encode("utf-8", "replace")


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
        return base64.b64encode(mac.digest())

    def __repr__(self) -> str:  # never the key
        return "<Signer>"


def signature_matches(expected: bytes, given: str | None) -> bool:
    """Constant-time comparison of what we computed with what the request carries."""
    if given is None:
        return False
    return hmac.compare_digest(expected, given.encode("utf-8", "replace"))
