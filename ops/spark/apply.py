"""Applying a repair bundle to a stopped slave's store (no Spark needed): verify every file's
SHA-256, cut the slave's log at the bundle's start (a diverged tail goes), append the master's
bytes at exactly their offsets. Applying the same bundle twice changes nothing.

The store's files are opened with the store's own file helpers (segments, ConsumeQueues, index
files), never as a running store: the ConsumeQueues and the index are only cut back to where
they agree with the log, and the broker's next start dispatches the rest from its recovery
point (StoreRecovery, then reput), as it does after any restart. Its HA client then reports the
new max offset and replication continues from there instead of from zero.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import msgpack

from broker.store.checkpoint import StoreCheckpoint, StoreLock
from broker.store.config import BrokerRole, MessageStoreConfig
from broker.store.consume_queue_table import ConsumeQueueTable
from broker.store.index_file import read_header
from broker.store.layout import INDEX_HEADER
from broker.store.mapped_file_queue import MappedFileQueue
from broker.store.recovery import abnormal_start_index, scan_commit_log

CHUNK = 1 << 20


class BundleError(ValueError):
    """The bundle is damaged or does not fit this store; nothing was changed."""


def read_manifest(bundle: Path) -> dict[str, Any]:
    try:
        manifest = msgpack.unpackb((bundle / "manifest.msgpack").read_bytes())
    except (OSError, ValueError) as exc:
        raise BundleError(f"{bundle}: no readable manifest.msgpack ({exc})") from None
    for entry in manifest["files"]:
        digest = hashlib.sha256()
        path = bundle / entry["file"]
        try:
            with open(path, "rb") as handle:
                while chunk := handle.read(CHUNK):
                    digest.update(chunk)
        except OSError as exc:
            raise BundleError(f"{path}: {exc}") from None
        if digest.hexdigest() != entry["sha256"]:
            raise BundleError(f"{path}: checksum mismatch, the bundle is damaged")
        if path.stat().st_size != entry["end"] - entry["start"]:
            raise BundleError(f"{path}: size does not match the manifest")
    return manifest


def _chunks(bundle: Path, manifest: dict[str, Any]) -> Iterator[tuple[int, bytes]]:
    """(offset, bytes) of the bundle, a chunk at a time: bundles can be gigabytes."""
    for entry in manifest["files"]:
        offset = entry["start"]
        with open(bundle / entry["file"], "rb") as handle:
            while chunk := handle.read(CHUNK):
                yield offset, chunk
                offset += len(chunk)


def _consume_queue_file_size(store_dir: Path) -> int | None:
    """The ConsumeQueue file size the store was written with (its broker.conf may differ from
    the default): any existing queue file tells."""
    for topic in sorted((store_dir / "consumequeue").glob("*")):
        for queue in sorted(topic.glob("*")):
            for segment in sorted(queue.glob("*")):
                return segment.stat().st_size
    return None


def _config(
    store_dir: Path, manifest: dict[str, Any], store_config: MessageStoreConfig | None
) -> MessageStoreConfig:
    overrides: dict[str, Any] = {
        "store_path_root_dir": store_dir,
        "mapped_file_size_commit_log": manifest["segmentSize"],
        "broker_role": BrokerRole.SLAVE,
    }
    cq_size = _consume_queue_file_size(store_dir)
    if cq_size:
        overrides["mapped_file_size_consume_queue"] = cq_size
    if store_config is None:
        return MessageStoreConfig(**overrides)
    if store_config.mapped_file_size_commit_log != manifest["segmentSize"]:
        raise BundleError(
            f"broker.conf says mappedFileSizeCommitLog={store_config.mapped_file_size_commit_log}"
            f" but the bundle's segments are {manifest['segmentSize']} bytes"
        )
    return attrs.evolve(store_config, **overrides)


def _safe_timestamp(config: MessageStoreConfig) -> int:
    """The checkpoint's safe recovery point, 0 (scan everything) without a checkpoint."""
    if not config.checkpoint_path.is_file():
        return 0
    checkpoint = StoreCheckpoint(config.checkpoint_path)
    checkpoint.load()
    try:
        return checkpoint.min_timestamp(index_safe=config.message_index_safe)
    finally:
        checkpoint.close()  # writes back the same three values


@attrs.define
class CommitLogFiles:
    """The CommitLog's segments and the end of its valid records, found as the broker's next
    start will find it (recovery.py): after a clean stop a scan from the third-last segment,
    after a crash (the abort file is there) from the checkpoint's safe point."""

    queue: MappedFileQueue
    valid_end: int

    @classmethod
    def open(cls, config: MessageStoreConfig) -> CommitLogFiles:
        queue = MappedFileQueue(config.commit_log_dir, config.mapped_file_size_commit_log)
        queue.load()
        segments = [(mapped.start_offset, mapped.view) for mapped in queue.files]
        start, mode = max(0, len(segments) - 3), "normal"
        if config.abort_path.exists():
            start, mode = abnormal_start_index(segments, _safe_timestamp(config)), "abnormal"
        report = scan_commit_log(segments, start, mode=mode, check_crc=config.check_crc_on_recover)
        return cls(queue, report.valid_end)

    def holds(self, offset: int, chunk: bytes) -> bool:
        mapped = self.queue.find(offset)
        if mapped is None or offset + len(chunk) > self.valid_end:
            return False
        position = offset - mapped.start_offset
        return mapped.view[position : position + len(chunk)] == chunk

    def append(self, offset: int, chunk: bytes) -> None:
        """``chunk`` at exactly ``offset``, the log's end (bundle files never cross a segment
        boundary). The file's blocks are allocated first: a full disk is a DiskError here,
        never a SIGBUS on the mapping."""
        end = self.queue.max_byte_offset
        if self.queue.files and offset != end:
            raise BundleError(f"could not append at {offset} (the store ends at {end})")
        mapped = self.queue.writable(offset)
        position = offset - mapped.start_offset
        if position != mapped.wrote_position or len(chunk) > mapped.file_size - position:
            raise BundleError(f"could not append {len(chunk)} bytes at {offset}")
        mapped.allocate_range(position, len(chunk))
        mapped.mmap[position : position + len(chunk)] = chunk
        mapped.wrote_position = position + len(chunk)
        self.valid_end = offset + len(chunk)

    def close(self, *, flush: bool) -> None:
        if flush:
            for mapped in self.queue.files:
                mapped.flush()
        self.queue.close()


def cut_index(index_dir: Path, phys_offset: int) -> int | None:
    """Delete the newest index files holding entries at or past ``phys_offset`` (as
    IndexService.truncate_from does) and return the first offset they covered, or None. Read by
    their headers alone: the files' slot and entry counts are the broker's settings, which a
    tool without its broker.conf does not know, and opening them at the wrong size would lose
    them."""
    if not index_dir.is_dir():
        return None
    rebuild_from = None
    for path in sorted((p for p in index_dir.iterdir() if p.name.isdigit()), reverse=True):
        with open(path, "rb") as handle:
            header = read_header(handle.read(INDEX_HEADER.size).ljust(INDEX_HEADER.size, b"\0"))
        if header.end_phy_offset < phys_offset or header.index_count <= 1:
            break
        path.unlink()
        rebuild_from = header.begin_phy_offset
    return rebuild_from


def cut_dispatched(config: MessageStoreConfig, phys_offset: int, *, empty_log: bool) -> None:
    """ConsumeQueues and index cut back to what the log holds below ``phys_offset``; the
    broker's next start dispatches from there. An index file touching the cut goes whole, so
    the queues are cut back to its first entry too: dispatch then rebuilds both."""
    if empty_log:  # as recovery does for a store without a log
        shutil.rmtree(config.consume_queue_dir, ignore_errors=True)
        shutil.rmtree(config.index_dir, ignore_errors=True)
        return
    rebuild_from = cut_index(config.index_dir, phys_offset)
    cut = phys_offset if rebuild_from is None else min(phys_offset, rebuild_from)
    queues = ConsumeQueueTable(config.consume_queue_dir, config.mapped_file_size_consume_queue)
    queues.load()
    try:
        for consume_queue in queues:
            consume_queue.recover()
            if consume_queue.max_phys_offset > cut:
                consume_queue.truncate_to_phys(cut)
                for mapped in consume_queue.queue.files[-1:]:
                    mapped.flush()
    finally:
        queues.close()


def apply_bundle(
    store_dir: Path,
    bundle: Path,
    *,
    dry_run: bool = False,
    store_config: MessageStoreConfig | None = None,
) -> dict[str, Any]:
    manifest = read_manifest(bundle)
    config = _config(store_dir, manifest, store_config)
    lock = StoreLock(config.lock_path)  # a broker starting meanwhile is refused
    lock.acquire()
    try:
        commit_log = CommitLogFiles.open(config)
        try:
            return _apply(config, commit_log, bundle, manifest, dry_run=dry_run)
        finally:
            commit_log.close(flush=not dry_run)
    finally:
        lock.release()


def _apply(
    config: MessageStoreConfig,
    commit_log: CommitLogFiles,
    bundle: Path,
    manifest: dict[str, Any],
    *,
    dry_run: bool,
) -> dict[str, Any]:
    before, had_files = commit_log.valid_end, bool(commit_log.queue.files)
    start, end = manifest["start"], manifest["end"]
    result = {"store": str(config.store_path_root_dir), "before": before, "start": start}
    result["end"] = end
    if before == end and all(commit_log.holds(o, c) for o, c in _chunks(bundle, manifest)):
        return {**result, "changed": False, "reason": "already applied"}
    if before < start and had_files:
        raise BundleError(
            f"the store ends at {before}, before the bundle's start {start}: it changed since "
            "the report (run the job again)"
        )
    starts_a_log = not had_files or start < commit_log.queue.min_byte_offset
    if starts_a_log and start % config.mapped_file_size_commit_log:
        raise BundleError(f"a log can only start at a segment boundary, not at {start}")
    if dry_run:
        return {**result, "changed": False, "reason": "dry run", "wouldCut": max(0, before - start)}
    # The log first: a cut ConsumeQueue over an uncut log would be dispatched again from the
    # old tail, a cut log under uncut queues is what the next start expects and repairs.
    if had_files:
        commit_log.queue.truncate_dirty(start)  # a diverged or corrupt tail goes, zeroed
    commit_log.valid_end = start
    cut_dispatched(config, start, empty_log=not had_files)
    for offset, chunk in _chunks(bundle, manifest):
        commit_log.append(offset, chunk)
    return {**result, "changed": True, "after": commit_log.valid_end}
