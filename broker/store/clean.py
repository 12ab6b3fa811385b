"""File expiry and disk protection (docs/spec/store-format.md §12).

Every ``cleanResourceInterval``: CommitLog segments older than ``fileReservedTime`` hours go at
the ``deleteWhen`` hours, or at once when the disk is fuller than ``diskMaxUsedSpaceRatio``;
past ``diskSpaceCleanForciblyRatio`` even unexpired ones go; past
``diskSpaceWarningLevelRatio`` the store refuses writes until space is back. ConsumeQueue and
index files wholly below the CommitLog's new min offset follow.

The disk-usage function and the clock are injected, so the policy is tested without filling a
disk. File deletion (unlink + munmap) is quick and happens on the loop, a few files per round.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path

import attrs
import psutil
import trio

from broker.store.commit_log import CommitLog
from broker.store.config import MessageStoreConfig
from broker.store.consume_queue_table import ConsumeQueueTable
from broker.store.index_service import IndexService
from broker.store.slotted import Slotted

log = logging.getLogger(__name__)

DiskUsage = Callable[[Path], float]  # path -> used ratio in [0, 1]
MAX_FILES_PER_ROUND = 10


def psutil_disk_usage(path: Path) -> float:
    while not path.exists() and path != path.parent:
        path = path.parent
    return psutil.disk_usage(str(path)).percent / 100.0


@attrs.frozen
class CleanDecision:
    delete: bool
    force: bool
    disk_full: bool
    reason: str


def decide(
    *,
    usage: float,
    hour: int,
    delete_when: str,
    max_used_ratio: float,
    force_ratio: float,
    warning_ratio: float,
    clean_forcibly: bool,
    manual: bool,
) -> CleanDecision:
    """Pure policy: whether to delete expired files now, whether unexpired ones may go too,
    and whether the store must refuse writes."""
    disk_full = usage > warning_ratio
    force = clean_forcibly and usage > force_ratio
    hours = {int(h) for h in delete_when.split(";") if h.strip().isdigit()}
    if force:
        return CleanDecision(
            True, True, disk_full, f"disk {usage:.0%} used > clean-forcibly {force_ratio:.0%}"
        )
    if usage > max_used_ratio:
        return CleanDecision(
            True,
            False,
            disk_full,
            f"disk {usage:.0%} used > diskMaxUsedSpaceRatio {max_used_ratio:.0%}",
        )
    if hour in hours:
        return CleanDecision(True, False, disk_full, f"hour {hour:02d} is in deleteWhen")
    if manual:
        return CleanDecision(True, False, disk_full, "requested")
    return CleanDecision(False, False, disk_full, "")


class CleanService(Slotted):
    """Owns ``disk_full``: past diskSpaceWarningLevelRatio the store refuses writes."""

    # read by plain_pass.c from their slots (broker/store/slotted.py)
    __slots__ = ("disk_full",)

    name = "clean"

    def __init__(
        self,
        config: MessageStoreConfig,
        clock: Callable[[], int],
        commit_log: CommitLog,
        consume_queues: ConsumeQueueTable,
        index_service: IndexService,
        disk_usage: DiskUsage,
    ) -> None:
        self.config = config
        self.clock = clock
        self.commit_log = commit_log
        self.consume_queues = consume_queues
        self.index_service = index_service
        self.disk_usage = disk_usage
        self.disk_full = False
        self.manual_rounds = 0  # DELETE_EXPIRED_COMMITLOG asks for 20 rounds, like Java

    def usage(self) -> float:
        config = self.config
        return max(
            self.disk_usage(config.commit_log_dir), self.disk_usage(config.consume_queue_dir)
        )

    def run_once(self) -> CleanDecision:
        """One round: check the disk, delete what the policy allows, then clean the queues."""
        config = self.config
        now = self.clock()
        decision = decide(
            usage=self.usage(),
            hour=time.localtime(now / 1000).tm_hour,
            delete_when=config.delete_when,
            max_used_ratio=config.disk_max_used_space_ratio / 100,
            force_ratio=config.disk_space_clean_forcibly_ratio,
            warning_ratio=config.disk_space_warning_level_ratio,
            clean_forcibly=config.clean_file_forcibly_enable,
            manual=self.manual_rounds > 0,
        )
        self.manual_rounds = max(0, self.manual_rounds - 1)
        if decision.disk_full != self.disk_full:
            self.disk_full = decision.disk_full
            if decision.disk_full:
                log.error(
                    "disk full: writes refused until usage drops below %.0f%%",
                    config.disk_space_warning_level_ratio * 100,
                )
            else:
                log.info("disk space back: writes accepted again")
        if decision.delete:
            deleted = self.commit_log.queue.delete_expired_by_time(
                config.file_reserved_time * 3_600_000,
                force=decision.force,
                max_files=MAX_FILES_PER_ROUND,
                now_ms=now,
            )
            if deleted:
                log.info(
                    "deleted %d commit log segments (%s): first=%s",
                    len(deleted),
                    decision.reason,
                    deleted[0].path.name,
                )
        self.clean_queues()
        return decision

    def clean_queues(self) -> None:
        commit_log_min = self.commit_log.min_phys_offset
        if commit_log_min <= 0:
            return
        for consume_queue in self.consume_queues:
            consume_queue.delete_expired(commit_log_min, MAX_FILES_PER_ROUND)
        self.index_service.delete_expired(commit_log_min)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        interval = self.config.clean_resource_interval / 1000
        while True:
            try:
                self.run_once()
            except OSError as exc:
                log.warning("clean round failed: %s", exc)
            await trio.sleep(interval)
