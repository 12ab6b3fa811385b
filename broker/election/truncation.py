"""Cutting a returning member's log back to what the master's log shares (RocketMQ 5's
truncation after EpochFileCache.findConsistentPoint), done after recovery and before any
service starts: the cut bytes are saved aside, never silently dropped, and reported.

``<storePathRootDir>/truncated/epoch-<e>-from-<offset>.commitlog`` holds them byte for byte
(records as the CommitLog stores them: the ops tools read them like a CommitLog segment).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:
    from broker.store.message_store import DefaultMessageStore

log = logging.getLogger(__name__)

TRUNCATED_DIR = "truncated"


@attrs.frozen
class TruncationReport:
    cut_from: int
    cut_to: int
    saved_to: Path | None

    @property
    def bytes_cut(self) -> int:
        return self.cut_to - self.cut_from


def save_and_truncate(
    store: DefaultMessageStore, store_root: Path, keep_end: int, epoch: int
) -> TruncationReport | None:
    """Cut the loaded store's CommitLog (and its queues and index) at ``keep_end``, saving
    the bytes beyond it first. None when there is nothing to cut."""
    end = store.max_phys_offset
    if keep_end >= end:
        return None
    folder = store_root / TRUNCATED_DIR
    folder.mkdir(exist_ok=True)
    path = folder / f"epoch-{epoch}-from-{keep_end}.commitlog"
    with path.open("wb") as f:
        offset = keep_end
        while offset < end:
            data = store.get_commit_log_data(offset)
            if not data:
                break
            f.write(data[: end - offset])
            offset += len(data)
        f.flush()
        os.fsync(f.fileno())
    store.truncate_dirty_tail(keep_end)
    report = TruncationReport(keep_end, end, path)
    log.warning(
        "controller: CommitLog cut at %d (epoch %d's master does not hold [%d, %d), %d bytes): "
        "saved to %s",
        keep_end,
        epoch,
        keep_end,
        end,
        report.bytes_cut,
        path,
    )
    return report
