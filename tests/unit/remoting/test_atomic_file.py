"""Atomic whole-file writes: a crash at any step leaves the old or the new file, a failed write
leaves no temp file, concurrent writers never collide, the newest state wins."""

from __future__ import annotations

import errno
import logging
import os
import threading
from pathlib import Path

import pytest
import trio

from remoting import atomic_file
from remoting.atomic_file import DurableFile, read_with_backup, write_atomically

OLD, NEW = '{"v": "old"}', '{"v": "new"}'
STEPS = ("open", "write", "fsync", "close", "link", "replace")


class Crash(Exception):
    pass


class FailingOs:
    """``os`` for atomic_file, raising at the ``fail_at``-th call of a file step. Before it
    raises, it records what the file holds at that moment: what a crash there would leave."""

    def __init__(self, path: Path, fail_at: int, error: BaseException) -> None:
        self.path, self.fail_at, self.error = path, fail_at, error
        self.calls = 0
        self.at_crash: str | None = None

    def __getattr__(self, name: str):
        real = getattr(os, name)
        if name not in STEPS:
            return real

        def step(*args, **kwargs):
            self.calls += 1
            if self.calls == self.fail_at:
                self.at_crash = self.path.read_text()
                raise self.error
            return real(*args, **kwargs)

        return step


def _count_steps(tmp_path: Path) -> int:
    path = tmp_path / "count.json"
    path.write_text(OLD)
    probe = FailingOs(path, fail_at=0, error=Crash())
    atomic_file_os, atomic_file.os = atomic_file.os, probe
    try:
        write_atomically(path, NEW)
    finally:
        atomic_file.os = atomic_file_os
    return probe.calls


def test_a_crash_or_failure_at_any_step_leaves_the_old_or_the_new_file(
    tmp_path: Path, monkeypatch
) -> None:
    steps = _count_steps(tmp_path)
    assert steps >= 8  # open, write, fsync, close, link, replace x2, open/fsync/close dir
    for fail_at in range(1, steps + 1):
        for error in (Crash(), OSError(errno.ENOSPC, "No space left on device")):
            folder = tmp_path / f"{fail_at}-{type(error).__name__}"
            folder.mkdir()
            path = folder / "topics.json"
            path.write_text(OLD)
            failing = FailingOs(path, fail_at, error)
            monkeypatch.setattr(atomic_file, "os", failing)
            with pytest.raises(type(error)):
                write_atomically(path, NEW)
            monkeypatch.setattr(atomic_file, "os", os)
            assert failing.at_crash in (OLD, NEW)  # a kill -9 at that step
            assert path.read_text() in (OLD, NEW)  # the failure, cleaned up
            assert read_with_backup(path)[0][1] in (OLD, NEW)
            left = sorted(p.name for p in folder.iterdir())
            assert left in (["topics.json"], ["topics.json", "topics.json.bak"]), left


def test_the_previous_version_is_kept_as_bak(tmp_path: Path) -> None:
    path = tmp_path / "kvConfig.json"
    write_atomically(path, OLD)
    assert not path.with_name("kvConfig.json.bak").exists()
    write_atomically(path, NEW)
    assert path.read_text() == NEW
    assert path.with_name("kvConfig.json.bak").read_text() == OLD
    path.unlink()  # a lost file: the loader falls back to the backup
    assert read_with_backup(path) == [(path.with_name("kvConfig.json.bak"), OLD)]


def test_concurrent_writers_of_one_file_never_collide(tmp_path: Path) -> None:
    path = tmp_path / "broker.conf"
    errors: list[BaseException] = []
    texts = [f"key={i}\n" * 50 for i in range(16)]

    def writer(text: str) -> None:
        try:
            for _ in range(20):
                write_atomically(path, text)
        except BaseException as exc:  # collected: the assertion below shows them
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(t,)) for t in texts]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert path.read_text() in texts
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broker.conf", "broker.conf.bak"]


def test_stale_temps_of_a_crashed_writer_are_removed_at_load(tmp_path: Path) -> None:
    path = tmp_path / "topics.json"
    write_atomically(path, OLD)
    (tmp_path / "topics.json.4242.7.tmp").write_text('{"v": "ha')
    (tmp_path / "topics.json.4242.8.baktmp").write_text(OLD)
    (tmp_path / "topics.json.keep").write_text("not ours")
    assert DurableFile(path).candidates() == [(path, OLD)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["topics.json", "topics.json.keep"]


def test_an_older_state_never_overwrites_a_newer_one(tmp_path: Path) -> None:
    file = DurableFile(tmp_path / "consumerOffset.json")
    first, second = file._number(), file._number()  # made in this order on the event loop
    file._write(second, NEW)  # ...but the newer one's thread got there first
    file._write(first, OLD)
    assert file.path.read_text() == NEW


async def test_concurrent_persists_land_the_newest_text(tmp_path: Path) -> None:
    file = DurableFile(tmp_path / "delayOffset.json")
    made: list[str] = []  # the order the states were made in (Trio may start tasks in any)

    async def change_and_persist(i: int) -> None:
        made.append(f'{{"n": {i}}}')
        await file.persist(made[-1])

    async with trio.open_nursery() as nursery:
        for i in range(30):
            nursery.start_soon(change_and_persist, i)
    assert file.path.read_text() == made[-1]


def test_a_failing_file_is_logged_once_and_once_more_when_it_recovers(
    tmp_path: Path, monkeypatch, caplog
) -> None:
    file = DurableFile(tmp_path / "consumerOffset.json", what="config/consumerOffset.json")
    full = FailingOs(file.path, fail_at=1, error=OSError(errno.ENOSPC, "No space left"))
    file.path.write_text(OLD)
    with caplog.at_level(logging.WARNING, logger="remoting.atomic_file"):
        for attempt in range(5):
            full.calls = 0
            monkeypatch.setattr(atomic_file, "os", full)
            with pytest.raises(OSError):
                file.persist_sync(f'{{"n": {attempt}}}')
        assert isinstance(file.failure, OSError)
        monkeypatch.setattr(atomic_file, "os", os)
        file.persist_sync(NEW)
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2, lines
    assert "cannot write config/consumerOffset.json" in lines[0] and "No space left" in lines[0]
    assert "config/consumerOffset.json written again" in lines[1]
    assert file.failure is None and file.path.read_text() == NEW
