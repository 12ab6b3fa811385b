"""PartialFrameBudget: the bytes a server's connections hold in frames not complete yet,
against one limit for all of them (``serverPartialFramesMaxBytes``). Pure bookkeeping: the
connection reports what it holds after each read, and asks whom to close when over.

Why close and not stop reading: a partial frame is only freed by completing it, so a paused
connection keeps exactly the memory we want back, and clients paused half-way through big
frames can wait on each other until every one of them idles out. Closing frees the bytes at
once; RocketMQ clients treat a dropped connection as a failed call and retry.

Whom to close: the holder whose frame has made no progress for longest, which may be the one
reading now. A client sending a big frame at full speed finishes it quickly; one trickling
bytes to keep memory pinned (a slowloris) is the stalest, and goes first. Connections holding
at most ``floor`` bytes (one read) are never picked: small requests are never refused for
someone else's big frames.
"""

from __future__ import annotations

from collections.abc import Hashable

# After the held bytes fall to a quarter of a peak this large, freed heap is handed back.
TRIM_AFTER_PEAK_BYTES = 32 * 1024 * 1024


class PartialFrameBudget:
    __slots__ = ("_progress", "floor", "limit", "peak", "total")

    def __init__(self, limit: int, floor: int) -> None:
        self.limit, self.floor = limit, floor
        self.total = 0
        self.peak = 0
        self._progress: dict[Hashable, float] = {}  # holders above floor: when they last grew

    def change(self, holder: Hashable, old: int, new: int, now: float) -> None:
        """``holder`` held ``old`` bytes and holds ``new`` now."""
        self.total += new - old
        if new > self.floor:
            if new > old or holder not in self._progress:
                self._progress[holder] = now
        else:
            self._progress.pop(holder, None)
        if self.total > self.peak:
            self.peak = self.total

    @property
    def over(self) -> bool:
        return self.total > self.limit

    def stalest(self) -> Hashable | None:
        """The holder above floor whose frame grew least recently; None if there is none."""
        progress = self._progress
        return min(progress, key=progress.__getitem__) if progress else None

    def idle_s(self, holder: Hashable, now: float) -> float:
        return now - self._progress.get(holder, now)

    def take_trim(self) -> bool:
        """True once the held bytes have fallen far from a large peak: time to hand the freed
        heap back (malloc_trim). The peak starts again from here."""
        if self.peak >= TRIM_AFTER_PEAK_BYTES and self.total <= self.peak // 4:
            self.peak = self.total
            return True
        return False
