"""Remote address patterns (``globalWhiteRemoteAddresses``, an account's ``whiteRemoteAddress``)
with the meaning RocketMQ 4.9's RemoteAddressStrategyFactory gives them:

* blank: matches nothing; ``*``, ``*.*.*.*``, ``*:*:*:*:*:*:*:*``: matches every address;
* one address (IPv4 or IPv6, compared as addresses, so ``::1`` equals ``0:0:0:0:0:0:0:1``);
* a list ``a,b,c`` of addresses, or ``prefix{x,y,z}`` (``192.168.1.{1,2}``, ``2::ac5:78:{1,2}``);
* a range: the first octet (IPv6: group) that is ``*`` or ``m-n`` bounds that position and
  everything after it is free: ``192.168.*.*``, ``192.168.1.1-100``, ``10.*``;
  IPv6 as Java reads it: a ``*`` last, a hex ``m-n`` in the last group or the one before a
  final ``*``, and ``::`` in the fixed part expanded so the pattern spans eight groups
  (``2::ac5:78:1-200:*``, ``2::ac5:78:1-200``, ``2:3:*``).

Stricter than Java where Java would misbehave rather than refuse: after a ``*`` or range only
``*`` may follow (Java ignores what follows, so ``192.168.1-5.7`` would match 192.168.3.9), a
range's first octet cannot be a wildcard (Java throws a NullPointerException per request), and
every piece must parse. A bad pattern raises ValueError with the reason.
"""

from __future__ import annotations

import ipaddress
import struct

import attrs

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
_V6_GROUPS = struct.Struct(">8H")
_EVERYTHING = frozenset({"*", "*.*.*.*", "*:*:*:*:*:*:*:*"})
_HEX = frozenset("0123456789abcdefABCDEF")


def parse_host(host: str) -> Address | None:
    """A peer's host as an address; None when it is not one (only ``*`` matches it then)."""
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


@attrs.frozen
class Nothing:
    def matches(self, addr: Address | None) -> bool:
        return False


@attrs.frozen
class Everything:
    def matches(self, addr: Address | None) -> bool:
        return True


@attrs.frozen
class OneOf:
    addresses: frozenset[Address]

    def matches(self, addr: Address | None) -> bool:
        return addr in self.addresses


@attrs.frozen
class Range:
    """``prefix`` fixes the first octets (IPv6: groups); the next one lies in [start, end]."""

    version: int
    prefix: tuple[int, ...]
    start: int
    end: int

    def matches(self, addr: Address | None) -> bool:
        if addr is None or addr.version != self.version:
            return False
        parts = tuple(addr.packed) if self.version == 4 else _V6_GROUPS.unpack(addr.packed)
        index = len(self.prefix)
        return parts[:index] == self.prefix and self.start <= parts[index] <= self.end


AddressMatcher = Nothing | Everything | OneOf | Range
NOTHING, EVERYTHING = Nothing(), Everything()


def parse_pattern(text: str | None) -> AddressMatcher:
    if text is None or not text.strip():
        return NOTHING
    text = text.strip()
    if text in _EVERYTHING:
        return EVERYTHING
    if text.endswith("}"):
        return _braces(text)
    if "," in text:
        return OneOf(frozenset(_one(p) for p in text.split(",") if p.strip()))
    if "*" in text or "-" in text:
        return _range6(text) if ":" in text else _range4(text)
    return OneOf(frozenset({_one(text)}))


def _one(text: str) -> Address:
    try:
        return ipaddress.ip_address(text.strip())
    except ValueError:
        raise ValueError(f"{text.strip()!r} is not an IPv4 or IPv6 address") from None


def _braces(text: str) -> OneOf:
    head, _, tail = text.partition("{")
    separator = ":" if ":" in text else "."
    if not tail or "{" in tail or not head.endswith(separator):
        raise ValueError(f"{text!r}: expected an address prefix then {{x,y,...}}")
    values = [v for v in tail[:-1].split(",") if v.strip()]
    if not values:
        raise ValueError(f"{text!r}: nothing between the braces")
    return OneOf(frozenset(_one(head + v.strip()) for v in values))


def _bounds(text: str, *, base: int, top: int) -> tuple[int, int]:
    """``*`` or ``m-n`` -> (m, n) within 0..top."""
    if text == "*":
        return 0, top
    low, sep, high = text.partition("-")
    try:
        start, end = int(low, base), int(high, base)
    except ValueError:
        raise ValueError(f"{text!r} is not * or a range m-n") from None
    if not sep or low.startswith(("+", "-")) or high.startswith(("+", "-")):
        raise ValueError(f"{text!r} is not * or a range m-n")
    if not 0 <= start <= end <= top:
        limit = f"{top:x}" if base == 16 else str(top)
        raise ValueError(f"range {text!r} must satisfy 0 <= m <= n <= {limit}")
    return start, end


def _range4(text: str) -> Range:
    parts = [p.strip() for p in text.split(".")]
    if not 2 <= len(parts) <= 4:
        raise ValueError(f"{text!r}: an IPv4 pattern has at most four octets")
    index = next((i for i, p in enumerate(parts) if p == "*" or "-" in p), None)
    if not index:  # None cannot happen (the caller saw * or -); 0 is a wildcard first octet
        raise ValueError(f"{text!r}: the first octet must be a number")
    prefix = []
    for part in parts[:index]:
        if not part.isdigit() or not 0 <= int(part) <= 255:
            raise ValueError(f"{text!r}: {part!r} is not an octet 0-255")
        prefix.append(int(part))
    start, end = _bounds(parts[index], base=10, top=255)
    if any(p != "*" for p in parts[index + 1 :]):
        raise ValueError(f"{text!r}: only * may follow a * or a range")
    return Range(4, tuple(prefix), start, end)


def _range6(text: str) -> Range:
    if "*" in text and not text.endswith("*"):
        raise ValueError(f"{text!r}: '*' may only come last")
    groups = text.split(":")
    if groups[-1] == "*" and len(groups) > 1 and "-" in groups[-2]:
        bounds, fixed, width = groups[-2], groups[:-2], 6
    elif groups[-1] == "*":
        bounds, fixed, width = "*", groups[:-1], 7
    elif "-" in groups[-1]:
        bounds, fixed, width = groups[-1], groups[:-1], 7
    else:
        raise ValueError(f"{text!r}: a range must be the last group or come before a final '*'")
    prefix = _expand6(":".join(fixed), width, text)
    start, end = _bounds(bounds.strip(), base=16, top=0xFFFF)
    return Range(6, prefix, start, end)


def _expand6(fixed: str, width: int, text: str) -> tuple[int, ...]:
    """The fixed groups as Java's AclUtils.expandIP(fixed, width) yields them: ``::`` becomes
    as many zero groups as make ``width`` groups; without ``::`` the groups are taken as
    written (so ``2:3:*`` fixes two groups)."""
    if not fixed:
        raise ValueError(f"{text!r}: an IPv6 pattern needs at least one fixed group")
    missing = width - fixed.count(":")
    if missing > 0:
        fixed = fixed.replace("::", ":" * (missing + 1))
    tokens = fixed.split(":")
    if len(tokens) > 7:
        raise ValueError(f"{text!r}: no group left for the wildcard or range")
    for token in tokens:
        if len(token) > 4 or not _HEX.issuperset(token):
            raise ValueError(f"{text!r}: {token!r} is not an IPv6 group")
    return tuple(int(t or "0", 16) for t in tokens)
