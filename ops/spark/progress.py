"""The job's own lines on stderr: numbered phases with the time since the command started, and
while a log is parsed a progress figure every few seconds (ranges and bytes parsed of the
total), read from Spark's status tracker. Spark's console progress bars are off unless asked
for (``--spark-progress``), so nothing interleaves with these lines.

``progress_text`` is pure; ``Ticker`` is the thread that polls Spark and prints.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import Any

MIB = 1 << 20


def to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class Phase:
    """Numbered phase lines, each with the seconds since ``t0`` (the command's start, so the
    JVM's start-up shows in the first figure)."""

    def __init__(
        self,
        out: Callable[[str], None] = to_stderr,
        *,
        t0: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.out, self.clock = out, clock
        self.t0 = clock() if t0 is None else t0
        self.n = 0

    def elapsed(self) -> float:
        return self.clock() - self.t0

    def __call__(self, text: str) -> None:
        self.n += 1
        self.out(f"[{self.n}] {self.elapsed():6.1f} s  {text}")

    def note(self, text: str) -> None:
        """A line inside the current phase (progress), not a new phase."""
        self.out(f"    {self.elapsed():6.1f} s  {text}")


def progress_text(label: str, done: int, total: int, total_bytes: int) -> str:
    """``done`` of ``total`` equal-sized tasks finished over ``total_bytes``: the bytes figure
    is the finished tasks' share (ranges are of one size but the last of each segment)."""
    share = done / total if total else 0.0
    return (
        f"{label}: {done}/{total} ranges, ~{share * total_bytes / MIB:,.1f} of "
        f"{total_bytes / MIB:,.1f} MiB ({share:.0%})"
    )


def group_progress(tracker: Any, group: str) -> tuple[int, int]:
    """(finished, all) tasks of the jobs Spark ran under ``group`` so far."""
    done = total = 0
    for job_id in tracker.getJobIdsForGroup(group):
        job = tracker.getJobInfo(job_id)
        for stage_id in job.stageIds if job else ():
            stage = tracker.getStageInfo(stage_id)
            if stage is not None:
                done += stage.numCompletedTasks
                total += stage.numTasks
    return done, total


class Ticker:
    """While open, prints ``probe()``'s progress every ``every`` seconds (a daemon thread: it
    only reads Spark's status and never outlives the phase)."""

    def __init__(
        self,
        phase: Phase,
        label: str,
        total_bytes: int,
        probe: Callable[[], tuple[int, int]],
        every: float = 5.0,
    ) -> None:
        self.phase, self.label, self.total_bytes = phase, label, total_bytes
        self.probe, self.every = probe, every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="progress", daemon=True)

    def __enter__(self) -> Ticker:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            try:
                done, total = self.probe()
            except Exception:  # the status tracker is advisory; the phase goes on without it
                continue
            if total:
                self.phase.note(progress_text(self.label, done, total, self.total_bytes))
