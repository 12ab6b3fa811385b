"""KVConfigManager: concurrent changes are group-committed, each acknowledged change is on
disk, and a failed write refuses its whole group with the table unchanged."""

from __future__ import annotations

import errno
import json
from pathlib import Path

import pytest
import trio

from namesrv import kv_config
from namesrv.kv_config import KVConfigManager
from remoting import atomic_file


def _count_writes(monkeypatch) -> list[str]:
    written: list[str] = []
    real = atomic_file.write_atomically

    def counting(path: Path, text: str) -> None:
        written.append(text)
        real(path, text)

    monkeypatch.setattr(atomic_file, "write_atomically", counting)
    return written


async def test_sixty_concurrent_puts_all_land_in_a_few_writes(tmp_path: Path, monkeypatch) -> None:
    written = _count_writes(monkeypatch)
    kv = KVConfigManager(tmp_path / "kvConfig.json")
    async with trio.open_nursery() as nursery:
        for i in range(60):
            nursery.start_soon(kv.put, "ns", f"k{i}", str(i))
    stored = json.loads(kv.path.read_text())["configTable"]["ns"]
    assert stored == {f"k{i}": str(i) for i in range(60)} == kv.table["ns"]
    assert len(written) <= 3  # the first put alone, then the 59 that waited, together


async def test_a_failed_write_refuses_its_group_and_changes_nothing(
    tmp_path: Path, monkeypatch
) -> None:
    kv = KVConfigManager(tmp_path / "kvConfig.json")
    await kv.put("ns", "kept", "1")

    def disk_full(path: Path, text: str) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(atomic_file, "write_atomically", disk_full)
    outcomes: dict[str, str] = {}

    async def put(key: str) -> None:
        try:
            await kv.put("ns", key, "2")
            outcomes[key] = "ok"
        except OSError as exc:
            outcomes[key] = exc.strerror

    async with trio.open_nursery() as nursery:
        for key in ("a", "b", "c"):
            nursery.start_soon(put, key)
    assert outcomes == dict.fromkeys("abc", "No space left on device")
    with pytest.raises(OSError):
        await kv.delete("ns", "kept")
    assert kv.table == {"ns": {"kept": "1"}}
    monkeypatch.undo()
    await kv.put("ns", "a", "2")
    assert json.loads(kv.path.read_text())["configTable"] == {"ns": {"kept": "1", "a": "2"}}


def test_the_module_writes_through_the_shared_atomic_writer() -> None:
    assert not hasattr(kv_config, "write_atomically")  # no private copy of the writer left
