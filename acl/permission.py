"""Permission bits and their names in plain_acl.yml (Java's acl Permission class)."""

from __future__ import annotations

DENY = 1
ANY = 1 << 1
PUB = 1 << 2
SUB = 1 << 3

_BY_NAME = {"DENY": DENY, "PUB": PUB, "SUB": SUB, "PUB|SUB": PUB | SUB, "SUB|PUB": PUB | SUB}
PERM_NAMES = tuple(_BY_NAME)


def parse_perm(text: str) -> int | None:
    """``PUB``, ``SUB``, ``PUB|SUB``, ``SUB|PUB`` or ``DENY`` (spaces around allowed); None for
    anything else. Java reads an unknown name as DENY silently; callers refuse it instead."""
    return _BY_NAME.get(text.strip())


def check_permission(needed: int, owned: int) -> bool:
    if owned & DENY:
        return False
    if needed & ANY:
        return bool(owned & (PUB | SUB))
    return bool(needed & owned)


def split_resource_perm(item: str) -> tuple[str, str] | None:
    """``name=PERM`` -> (name, PERM) stripped, as Java splits it (empty pieces dropped, so
    ``a==SUB`` is ``a`` and ``SUB``); None unless there are exactly two pieces."""
    pieces = [p for p in item.split("=") if p]
    if len(pieces) != 2:
        return None
    return pieces[0].strip(), pieces[1].strip()
