"""Queue allocation strategies for clustering consumers (RocketMQ's AllocateMessageQueue*).

Pure functions of (my client id, every queue, every client id) -> my queues. Callers pass both
lists sorted, as RebalanceImpl does, so every member of a group computes the same split.
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Callable, Sequence

from remoting.body import MessageQueue

Strategy = Callable[[str, Sequence[MessageQueue], Sequence[str]], list[MessageQueue]]


def averagely(cid: str, mqs: Sequence[MessageQueue], cids: Sequence[str]) -> list[MessageQueue]:
    """Contiguous blocks; the first ``len(mqs) % len(cids)`` clients get one queue more."""
    if cid not in cids or not mqs:
        return []
    index, n, total = cids.index(cid), len(cids), len(mqs)
    mod = total % n
    size = 1 if total <= n else total // n + (1 if mod > 0 and index < mod else 0)
    start = index * size if mod > 0 and index < mod else index * size + mod
    count = min(size, total - start)
    return [mqs[(start + i) % total] for i in range(max(count, 0))]


def averagely_by_circle(
    cid: str, mqs: Sequence[MessageQueue], cids: Sequence[str]
) -> list[MessageQueue]:
    """Queue i goes to client i mod n."""
    if cid not in cids:
        return []
    return list(mqs[cids.index(cid) :: len(cids)])


def _md5_hash(key: str) -> int:
    digest = hashlib.md5(key.encode()).digest()
    # Java's ConsistentHashRouter.MD5Hash: the first four digest bytes, big-endian, as a long.
    return int.from_bytes(digest[:4], "big")


def consistent_hash(virtual_nodes: int = 10) -> Strategy:
    """A hash ring of ``virtual_nodes`` points per client; a queue (by its toString) belongs to
    the first point clockwise. Members joining or leaving move few queues."""

    def allocate(cid: str, mqs: Sequence[MessageQueue], cids: Sequence[str]) -> list[MessageQueue]:
        if cid not in cids:
            return []
        ring = sorted((_md5_hash(f"{c}-{i}"), c) for c in cids for i in range(virtual_nodes))
        points = [point for point, _ in ring]

        def owner(mq: MessageQueue) -> str:
            at = bisect.bisect_left(points, _md5_hash(str(mq)))
            return ring[at % len(ring)][1]

        return [mq for mq in mqs if owner(mq) == cid]

    return allocate


def by_config(queues: Sequence[MessageQueue]) -> Strategy:
    """A fixed list, whatever the group looks like."""
    fixed = list(queues)
    return lambda cid, mqs, cids: list(fixed)


STRATEGIES: dict[str, Strategy] = {
    "AVG": averagely,
    "AVG_BY_CIRCLE": averagely_by_circle,
    "CONSISTENT_HASH": consistent_hash(),
}
