"""StoreHealth: the disk trouble the store is in, area by area, and whether it takes writes.

A store file that cannot be created, grown or flushed (a full disk: ENOSPC, EDQUOT; a failing
one: EIO, ...) is reported here by the path that met it, which then goes on without it: no
service dies of a disk. What each area means, and what ends it:

==========  =============  ================================================================
area        refuses sends  over when
==========  =============  ================================================================
commitlog   yes            the allocation service creates the missing segment (retries);
                           on a slave, the next replicated append that lands
dispatch    yes            reput gets past the record it could not give a ConsumeQueue unit
flush       yes            a flush round succeeds (the failed pages were dirtied again)
index       no             an index file or its next entries can be allocated; keys of the
                           messages stored meanwhile are not indexed
checkpoint  no             a ConsumeQueue, index and checkpoint flush succeeds (until then
                           the checkpoint stays behind: a crash re-dispatches from there)
==========  =============  ================================================================

RocketMQ marks the store unwritable for good after 30 failed ConsumeQueue writes or 3 failed
index files (RunningFlags), until a restart; here every area ends by itself once space is back.

The put path reads one attribute, ``writable``. Operators see the trouble in runtime info and in
the log: a WARNING naming the area, path and errno when it starts, again at most every
``LOG_EVERY_S`` while it lasts, and an INFO line when it is over.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import attrs

from broker.store.mapped_file import DiskError
from broker.store.slotted import Slotted
from broker.store.types import PutMessageResult, PutMessageStatus

log = logging.getLogger(__name__)

COMMIT_LOG, DISPATCH, FLUSH, INDEX, CHECKPOINT = (
    "commitlog",
    "dispatch",
    "flush",
    "index",
    "checkpoint",
)
_BLOCKING = frozenset({COMMIT_LOG, DISPATCH, FLUSH})
RETRY_S = 1.0  # how often a service tries again what the disk refused
LOG_EVERY_S = 30.0
_RESUMES = {
    COMMIT_LOG: "sends resume once the next CommitLog segment can be created",
    DISPATCH: "sends resume once dispatch has caught up",
    FLUSH: "sends resume once a flush succeeds",
    INDEX: "keys of messages stored meanwhile are not indexed",
    CHECKPOINT: "the checkpoint stays behind: a crash meanwhile re-dispatches from it",
}


@attrs.define
class DiskProblem:
    area: str
    error: DiskError
    since: float  # monotonic seconds
    failures: int = 1
    logged_at: float = 0.0

    def describe(self) -> str:
        kind = "disk full" if self.error.disk_full else "disk error"
        return f"{self.area}: {kind}: {self.error}"


class StoreHealth(Slotted):
    # read by plain_pass.c from their slots (broker/store/slotted.py)
    __slots__ = ("writable",)

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.problems: dict[str, DiskProblem] = {}
        self.writable = True
        self.keys_not_indexed = 0

    def failed(self, area: str, error: DiskError) -> None:
        """``area`` met ``error``: logged when new, then at most every LOG_EVERY_S."""
        now = self.clock()
        problem = self.problems.get(area)
        if problem is None:
            problem = self.problems[area] = DiskProblem(area, error, now, logged_at=now)
            self.writable = not _BLOCKING.intersection(self.problems)
            log.warning("disk trouble: area=%s %s: %s", area, error, _RESUMES[area])
            return
        problem.error = error
        problem.failures += 1
        if now - problem.logged_at >= LOG_EVERY_S:
            problem.logged_at = now
            log.warning(
                "disk trouble goes on: area=%s for %.0f s, %d failures, last: %s",
                area,
                now - problem.since,
                problem.failures,
                error,
            )

    def recovered(self, area: str) -> None:
        problem = self.problems.pop(area, None)
        if problem is None:
            return
        self.writable = not _BLOCKING.intersection(self.problems)
        log.info(
            "disk trouble over: area=%s after %.1f s, %d failures",
            area,
            self.clock() - problem.since,
            problem.failures,
        )

    def refusal(self) -> PutMessageResult:
        """What a send is answered while a blocking problem lasts."""
        blocking = [p for p in self.problems.values() if p.area in _BLOCKING]
        full = any(p.error.disk_full for p in blocking)
        first = blocking[0] if blocking else None
        detail = "" if first is None else f"{first.error}; {_RESUMES[first.area]}"
        if full:
            return PutMessageResult(
                status=PutMessageStatus.DISK_FULL, remark=f"the broker's disk is full: {detail}"
            )
        return PutMessageResult(
            status=PutMessageStatus.SERVICE_NOT_AVAILABLE,
            remark=f"the broker's disk failed: {detail}",
        )

    def runtime_info(self) -> dict[str, str]:
        return {
            "storeWritable": "true" if self.writable else "false",
            "storeDiskTrouble": "; ".join(p.describe() for p in self.problems.values()),
            "indexKeysNotIndexed": str(self.keys_not_indexed),
        }
