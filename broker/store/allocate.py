"""AllocateMappedFileService: the next CommitLog segment, created before it is needed."""

from __future__ import annotations

import logging
from functools import partial
from pathlib import Path

import trio

from broker.store.mapped_file import MappedFile, StoreError

log = logging.getLogger(__name__)


class AllocateMappedFileService:
    """Keeps the next CommitLog segment created (fallocate + map) in a worker thread, so an
    append that rolls over never waits for a 1 GiB allocation on the event loop."""

    name = "allocate-mapped-file"

    def __init__(self, file_size: int) -> None:
        self.file_size = file_size
        self.ready: dict[str, MappedFile] = {}
        self._wanted = trio.Event()
        self._queue = None

    def allocate(self, path: Path, file_size: int) -> MappedFile:
        ready = self.ready.pop(path.name, None)
        return ready if ready is not None else MappedFile(path, file_size, create=True)

    def request(self, queue: object) -> None:
        self._wanted.set()

    async def run(
        self, queue: object, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        task_status.started()
        self._wanted.set()
        while True:
            await self._wanted.wait()
            self._wanted = trio.Event()
            last = queue.last  # type: ignore[attr-defined]
            if last is None:
                continue
            name = f"{last.end_offset:020d}"
            path = queue.directory / name  # type: ignore[attr-defined]
            if name in self.ready or path.exists():
                continue
            try:
                mapped = await trio.to_thread.run_sync(
                    partial(MappedFile, path, self.file_size, create=True)
                )
            except (OSError, StoreError) as exc:
                log.warning("pre-allocating %s failed (will retry on demand): %s", path, exc)
                continue
            if any(f.start_offset == mapped.start_offset for f in queue.files):  # type: ignore[attr-defined]
                mapped.close()  # the append path created it meanwhile: keep theirs
            else:
                self.ready[name] = mapped

    def close(self) -> None:
        for mapped in self.ready.values():
            mapped.close()
        self.ready.clear()
