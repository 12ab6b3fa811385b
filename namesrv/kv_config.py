"""KVConfigManager: the NameServer's namespaced key-value store, persisted atomically to
``kvConfigPath`` as ``{"configTable":{namespace:{key:value}}}`` (remoting/atomic_file.py).

A change is acknowledged once it is on disk, and only then visible. Concurrent changes are
group-committed: those that arrive while a write runs share the next write, so 60 concurrent
puts cost a few writes, not 60, and each one lands. When a write fails (ENOSPC, EIO) every
change of its group is refused with the error and the table stays as it was.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import attrs
import trio

from remoting import fastjson
from remoting.atomic_file import DurableFile

log = logging.getLogger(__name__)

Table = dict[str, dict[str, str]]


@attrs.define
class _Group:
    changes: list[Callable[[Table], None]] = attrs.Factory(list)
    done: bool = False
    error: OSError | None = None


def _put(namespace: str, key: str, value: str) -> Callable[[Table], None]:
    def change(table: Table) -> None:
        table.setdefault(namespace, {})[key] = value

    return change


def _delete(namespace: str, key: str) -> Callable[[Table], None]:
    def change(table: Table) -> None:
        entries = table.get(namespace)
        if entries is not None and entries.pop(key, None) is not None and not entries:
            del table[namespace]

    return change


class KVConfigManager:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.file = DurableFile(path, what="KV config")
        self.table: Table = {}
        self._group = _Group()  # the changes waiting for the next write
        self._turn = trio.Lock()  # held by the task writing a group

    def load(self) -> None:
        for candidate, text in self.file.candidates():
            try:
                data = fastjson.loads(text)
                table = data.get("configTable") or {}
                self.table = {
                    str(ns): {str(k): str(v) for k, v in kv.items()} for ns, kv in table.items()
                }
                return
            except Exception as exc:
                log.error("%s is unreadable (%s); trying the backup", candidate, exc)

    async def put(self, namespace: str, key: str, value: str) -> None:
        await self._commit(_put(namespace, key, value))
        log.info("KV config put: %s %s=%s", namespace, key, value)

    async def delete(self, namespace: str, key: str) -> bool:
        """False when there was no such entry (nothing written)."""
        if self.get(namespace, key) is None:
            return False
        await self._commit(_delete(namespace, key))
        return True

    def get(self, namespace: str, key: str) -> str | None:
        return self.table.get(namespace, {}).get(key)

    def namespace(self, namespace: str) -> dict[str, str] | None:
        ns = self.table.get(namespace)
        return dict(ns) if ns is not None else None

    async def _commit(self, change: Callable[[Table], None]) -> None:
        """Returns once a write carrying ``change`` landed; raises its OSError otherwise."""
        group = self._group
        group.changes.append(change)
        async with self._turn:
            if not group.done:  # no write carried this group yet: this task writes it
                await self._write(group)
        if group.error is not None:
            raise group.error

    async def _write(self, group: _Group) -> None:
        self._group = _Group()  # changes from now on wait for the next write
        table = {ns: dict(entries) for ns, entries in self.table.items()}
        for change in group.changes:
            change(table)
        try:
            await self.file.persist(fastjson.dumps({"configTable": table}, pretty=True))
        except OSError as exc:
            group.error = exc
        else:
            self.table = table
        finally:
            group.done = True
