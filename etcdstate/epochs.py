"""A broker group's history of terms: each epoch with its first CommitLog byte (RocketMQ 5's
EpochEntry). Kept in a member's epoch file (broker/election/epoch_file.py) and with the group's
state in etcd (group.py); checked here, once, for both.
"""

from __future__ import annotations

import attrs

MAX_ENTRIES = 64  # the oldest terms are dropped: a log that old was cleaned long ago
LONG_MAX = 2**63 - 1


class EpochFileError(ValueError):
    """An epoch file (or history) that is not what a broker writes."""


@attrs.frozen
class EpochEntry:
    epoch: int
    start_offset: int


def check(entries: list[EpochEntry]) -> list[EpochEntry]:
    """Epochs strictly increasing, start offsets never decreasing, both in range."""
    previous: EpochEntry | None = None
    for entry in entries:
        if not 0 < entry.epoch < 2**31 or not 0 <= entry.start_offset <= LONG_MAX:
            raise EpochFileError(f"entry {entry.epoch} {entry.start_offset} out of range")
        if previous is not None and (
            entry.epoch <= previous.epoch or entry.start_offset < previous.start_offset
        ):
            raise EpochFileError(
                f"entry {entry.epoch} {entry.start_offset} does not follow "
                f"{previous.epoch} {previous.start_offset}"
            )
        previous = entry
    return entries[-MAX_ENTRIES:]


def append(entries: list[EpochEntry], entry: EpochEntry) -> list[EpochEntry]:
    """``entries`` with ``entry`` as the newest term (replacing a later or equal one, which a
    cut log no longer holds)."""
    kept = [e for e in entries if e.epoch < entry.epoch and e.start_offset <= entry.start_offset]
    return check([*kept, entry])
