"""AllocateMappedFileService: the next CommitLog segment, created before it is needed, and
created again and again while the disk refuses it."""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial
from pathlib import Path

import trio

from broker.store.health import RETRY_S
from broker.store.mapped_file import DiskError, MappedFile, StoreError, segment_name

log = logging.getLogger(__name__)


class AllocateMappedFileService:
    """Keeps the next CommitLog segment created (fallocate + map) in a worker thread, so an
    append that rolls over never waits for a 1 GiB allocation on the event loop.

    When an append could not get its segment (``retry``), the store refuses sends and this
    service tries to create that segment every RETRY_S; ``on_recovered`` is called once it
    exists, and the next append takes it."""

    name = "allocate-mapped-file"

    def __init__(self, file_size: int) -> None:
        self.file_size = file_size
        self.ready: dict[str, MappedFile] = {}
        self.on_failed: Callable[[DiskError], None] = lambda _: None
        self.on_recovered: Callable[[], None] = lambda: None
        # The page warmer's (broker/store/warm.py): a segment made ready is offered to it, and
        # taken back from it (by start offset) before that segment, or a file of the same
        # name the appender creates itself, goes to the appender, or before it is closed.
        self.on_ready: Callable[[MappedFile], None] = lambda _: None
        self.on_handover: Callable[[int], None] = lambda _: None
        self._wanted = trio.Event()
        self._retry: Path | None = None
        self._warned_for: str | None = None  # a failed pre-allocation is logged once per name

    def allocate(self, path: Path, file_size: int) -> MappedFile:
        self.on_handover(int(path.name))
        ready = self.ready.pop(path.name, None)
        return ready if ready is not None else MappedFile(path, file_size, create=True)

    def request(self, queue: object) -> None:
        self._wanted.set()

    def retry(self, path: Path) -> None:
        """An append needed ``path`` and the disk refused it: create it as soon as possible."""
        self._retry = path
        self._wanted.set()

    def _next(self, queue: object) -> Path | None:
        if self._retry is not None:
            return self._retry
        last = queue.last  # type: ignore[attr-defined]
        if last is None:
            return None
        return queue.directory / segment_name(last.end_offset)  # type: ignore[attr-defined]

    async def run(
        self, queue: object, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        task_status.started()
        self._wanted.set()
        while True:
            await self._wanted.wait()
            self._wanted = trio.Event()
            path = self._next(queue)
            if path is None or path.name in self.ready:
                continue
            if path.exists() and self._retry is None:
                continue
            try:
                await trio.to_thread.run_sync(partial(self._create, path))
            except DiskError as exc:
                if self._retry is None:
                    if self._warned_for != path.name:
                        self._warned_for = path.name
                        log.warning("pre-allocating failed (will retry on demand): %s", exc)
                    continue
                self.on_failed(exc)
                await trio.sleep(RETRY_S)
                self._wanted.set()
                continue
            except (OSError, StoreError) as exc:
                log.warning("pre-allocating %s failed (will retry on demand): %s", path, exc)
                continue
            mapped = self.ready.get(path.name)
            if mapped is not None and any(
                f.start_offset == mapped.start_offset
                for f in queue.files  # type: ignore[attr-defined]
            ):
                stale = self.ready.pop(path.name)  # the append path created it meanwhile
                self.on_handover(stale.start_offset)
                stale.close()
            if self._retry == path:
                self._retry = None
                self.on_recovered()

    def _create(self, path: Path) -> None:
        """In a worker thread: create and map ``path`` (kept in ``ready``)."""
        mapped = MappedFile(path, self.file_size, create=True)
        self.ready[path.name] = mapped
        self.on_ready(mapped)

    def close(self) -> None:
        for mapped in self.ready.values():
            self.on_handover(mapped.start_offset)
            mapped.close()
        self.ready.clear()
