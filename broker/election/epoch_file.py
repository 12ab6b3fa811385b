"""The epoch file beside the CommitLog (RocketMQ 5's EpochFileCache, ``epochFileCheckpoint`` in
the store root): one ``epoch startOffset`` line per term this log holds bytes of, the term's
first CommitLog byte. A member about to follow a master compares its file with the group's
history (kept with the state in etcd) to find how much of its log the master's log shares,
and cuts the rest, saving it aside (broker/election/truncation.py).

Parsing and the comparison are pure; ``load``/``save`` are the file's only I/O (the save is a
write to a temporary file, fsync and rename, so a crash leaves the old or the new file).
"""

from __future__ import annotations

import os
from pathlib import Path

from etcdstate.epochs import EpochEntry, EpochFileError, check

FILE_NAME = "epochFileCheckpoint"
MAX_FILE_BYTES = 64 * 1024


def parse(text: str) -> list[EpochEntry]:
    entries = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        fields = line.split()
        if len(fields) != 2 or not all(f.isdecimal() and len(f) <= 19 for f in fields):
            raise EpochFileError(f"line {number}: expected 'epoch startOffset': {line!r:.60}")
        entries.append(EpochEntry(int(fields[0]), int(fields[1])))
    return check(entries)


def format_entries(entries: list[EpochEntry]) -> str:
    return "".join(f"{e.epoch} {e.start_offset}\n" for e in check(entries))


def _ends(entries: list[EpochEntry], log_end: int | None) -> dict[int, tuple[int, int | None]]:
    """epoch -> [start, end) in that log; the newest term's end is the log's end (None: open,
    the master still writes it)."""
    ends: dict[int, tuple[int, int | None]] = {}
    for entry, following in zip(entries, [*entries[1:], None][: len(entries)], strict=True):
        end = following.start_offset if following is not None else log_end
        ends[entry.epoch] = (entry.start_offset, end)
    return ends


def consistent_end(mine: list[EpochEntry], my_end: int, theirs: list[EpochEntry]) -> int:
    """How much of my log (ending at ``my_end``) the master's log (history ``theirs``, still
    growing) shares: up to the end, in both, of the newest term both hold from the same
    start. 0 when they share no term (all of mine is cut)."""
    my_terms, their_terms = _ends(mine, my_end), _ends(theirs, None)
    for epoch in sorted(set(my_terms) & set(their_terms), reverse=True):
        my_start, my_stop = my_terms[epoch]
        their_start, their_stop = their_terms[epoch]
        if my_start != their_start:
            continue
        assert my_stop is not None
        return my_stop if their_stop is None else min(my_stop, their_stop)
    return 0 if mine else min(my_end, theirs[0].start_offset if theirs else 0)


def load(store_root: Path) -> list[EpochEntry]:
    path = store_root / FILE_NAME
    try:
        with path.open("rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        return []
    if len(data) > MAX_FILE_BYTES:
        raise EpochFileError(f"{path}: over {MAX_FILE_BYTES} bytes")
    try:
        return parse(data.decode("ascii"))
    except (UnicodeDecodeError, EpochFileError) as exc:
        raise EpochFileError(f"{path}: {exc}") from None


def save(store_root: Path, entries: list[EpochEntry]) -> None:
    path = store_root / FILE_NAME
    tmp = path.with_name(FILE_NAME + ".tmp")
    with tmp.open("w", encoding="ascii") as f:
        f.write(format_entries(entries))
        f.flush()
        os.fsync(f.fileno())
    tmp.replace(path)
    directory = os.open(store_root, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
