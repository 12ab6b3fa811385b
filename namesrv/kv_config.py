"""KVConfigManager: the NameServer's namespaced key-value store, persisted atomically to
``kvConfigPath`` as ``{"configTable":{namespace:{key:value}}}`` after every change."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from remoting import fastjson

log = logging.getLogger(__name__)


def write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    if path.exists():
        bak = path.with_name(path.name + ".bak")
        bak.unlink(missing_ok=True)
        os.link(path, bak)
    os.replace(tmp, path)


class KVConfigManager:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.table: dict[str, dict[str, str]] = {}

    def load(self) -> None:
        for candidate in (self.path, self.path.with_name(self.path.name + ".bak")):
            try:
                text = candidate.read_text(encoding="utf-8")
            except FileNotFoundError:
                continue
            try:
                data = fastjson.loads(text)
                table = data.get("configTable") or {}
                self.table = {
                    str(ns): {str(k): str(v) for k, v in kv.items()} for ns, kv in table.items()
                }
                return
            except Exception as exc:
                log.error("%s is unreadable (%s); trying the backup", candidate, exc)

    def persist(self) -> None:
        write_atomically(self.path, fastjson.dumps({"configTable": self.table}, pretty=True))

    def put(self, namespace: str, key: str, value: str) -> None:
        self.table.setdefault(namespace, {})[key] = value
        log.info("KV config put: %s %s=%s", namespace, key, value)
        self.persist()

    def get(self, namespace: str, key: str) -> str | None:
        return self.table.get(namespace, {}).get(key)

    def delete(self, namespace: str, key: str) -> None:
        ns = self.table.get(namespace)
        if ns is not None and ns.pop(key, None) is not None:
            if not ns:
                del self.table[namespace]
            self.persist()

    def namespace(self, namespace: str) -> dict[str, str] | None:
        ns = self.table.get(namespace)
        return dict(ns) if ns is not None else None
