"""Applying a repair bundle to a stopped slave's store (no Spark needed): verify every file's
SHA-256, cut the slave's log at the bundle's start (a diverged tail goes), append the master's
bytes at exactly their offsets, and let the store rebuild ConsumeQueues and the index. Applying
the same bundle twice changes nothing. On its next start the slave's HA client reports the new
max offset and replication continues from there instead of from zero."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import attrs
import msgpack

from broker.store.config import BrokerRole, MessageStoreConfig
from broker.store.message_store import DefaultMessageStore

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


def _same_bytes(store: DefaultMessageStore, bundle: Path, manifest: dict[str, Any]) -> bool:
    """The store already holds the bundle's bytes (compared a chunk at a time: bundles can be
    gigabytes)."""
    for entry in manifest["files"]:
        offset = entry["start"]
        with open(bundle / entry["file"], "rb") as handle:
            while chunk := handle.read(CHUNK):
                view = store.get_commit_log_data(offset)
                if view is None or len(view) < len(chunk) or view[: len(chunk)] != chunk:
                    return False
                offset += len(chunk)
    return True


def _consume_queue_file_size(store_dir: Path) -> int | None:
    """The ConsumeQueue file size the store was written with (its broker.conf may differ from
    the default): any existing queue file tells."""
    for topic in sorted((store_dir / "consumequeue").glob("*")):
        for queue in sorted(topic.glob("*")):
            for segment in sorted(queue.glob("*")):
                return segment.stat().st_size
    return None


def apply_bundle(
    store_dir: Path,
    bundle: Path,
    *,
    dry_run: bool = False,
    store_config: MessageStoreConfig | None = None,
) -> dict[str, Any]:
    manifest = read_manifest(bundle)
    overrides: dict[str, Any] = {
        "store_path_root_dir": store_dir,
        "mapped_file_size_commit_log": manifest["segmentSize"],
        "broker_role": BrokerRole.SLAVE,
    }
    cq_size = _consume_queue_file_size(store_dir)
    if cq_size:
        overrides["mapped_file_size_consume_queue"] = cq_size
    if store_config is not None:
        if store_config.mapped_file_size_commit_log != manifest["segmentSize"]:
            raise BundleError(
                f"broker.conf says mappedFileSizeCommitLog={store_config.mapped_file_size_commit_log}"
                f" but the bundle's segments are {manifest['segmentSize']} bytes"
            )
        config = attrs.evolve(store_config, **overrides)
    else:
        config = MessageStoreConfig(**overrides)
    store = DefaultMessageStore(config, store_host=("127.0.0.1", 0))
    store.load()
    try:
        before = store.max_phys_offset
        start, end = manifest["start"], manifest["end"]
        result = {"store": str(store_dir), "before": before, "start": start, "end": end}
        if before == end and _same_bytes(store, bundle, manifest):
            return {**result, "changed": False, "reason": "already applied"}
        if before < start and store.commit_log.queue.files:
            raise BundleError(
                f"the store ends at {before}, before the bundle's start {start}: it changed since "
                "the report (run the job again)"
            )
        if dry_run:
            return {
                **result,
                "changed": False,
                "reason": "dry run",
                "wouldCut": max(0, before - start),
            }
        if store.commit_log.queue.files and before != start:
            store.truncate_dirty_tail(start)  # a diverged or corrupt tail goes
        for entry in manifest["files"]:
            offset = entry["start"]
            with open(bundle / entry["file"], "rb") as handle:
                while chunk := handle.read(CHUNK):
                    if not store.append_to_commit_log(offset, chunk):
                        raise BundleError(
                            f"could not append at {offset} (store ends at {store.max_phys_offset})"
                        )
                    offset += len(chunk)
        store.reput.do_reput(1 << 62)
        return {**result, "changed": True, "after": store.max_phys_offset}
    finally:
        store.shutdown()
