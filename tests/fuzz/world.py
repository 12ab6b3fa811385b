"""The processes under test and the tree around them.

Everything a campaign's servers could touch lives in one directory, the world: the broker's
store and the NameServer's KV file (the only places they may write), their confs, logs, their
working directory and HOME, and a sentinel tree (a file, an empty directory) that traversal
names aim at. ``snapshot`` hashes the world but the store, the KV directory, the logs and the
confs, before and after.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import attrs
import psutil

from tests.fuzz.report import Sample
from tests.harness import ProcessPool, ServerProcess, python_module
from tests.kits.brokerkit import broker_conf

FUZZ_TOPIC, FUZZ_GROUP = "FuzzT", "FuzzG"


@attrs.define
class World:
    root: Path
    pool: ProcessPool
    namesrv: ServerProcess | None = None
    broker: ServerProcess | None = None
    broker_conf: Path | None = None

    @property
    def store(self) -> Path:
        return self.root / "store-broker-a-0"

    @property
    def kv_dir(self) -> Path:
        return self.root / "namesrv-kv"

    @property
    def private(self) -> list[Path]:
        """Where the servers may write."""
        return [self.store, self.kv_dir, self.root / "logs", self.root / "conf"]

    def env(self) -> dict[str, str]:
        return {"HOME": str(self.root / "home")}

    def prepare(self) -> None:
        for sub in ("sentinel/empty", "home", "cwd", "conf"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        (self.root / "sentinel" / "victim").write_text("keep me")
        (self.root / "home" / ".keep").write_text("")

    def start_namesrv(self) -> ServerProcess:
        conf = self.root / "conf" / "namesrv.conf"
        values = {
            "listenPort": 0,
            "listenHost": "127.0.0.1",
            "kvConfigPath": self.kv_dir / "kvConfig.json",
        }
        conf.write_text("".join(f"{k}={v}\n" for k, v in values.items()))
        argv = python_module("namesrv", "-c", str(conf))
        self.namesrv = self.pool.start("namesrv", argv, env=self.env(), cwd=self.root / "cwd")
        return self.namesrv

    def start_broker(self, name: str = "broker") -> ServerProcess:
        if self.broker_conf is None:
            assert self.namesrv is not None
            self.broker_conf = broker_conf(
                self.root / "conf",
                namesrvAddr=self.namesrv.addr,
                storePathRootDir=self.store,
                # The campaign judges what the wire does to the servers, not the shared
                # machine's disk: past 90% used (it was at 91%) the store would refuse every
                # send and log ERRORs, past 85% delete segments of acknowledged messages.
                diskMaxUsedSpaceRatio=95,
                diskSpaceCleanForciblyRatio=0.99,
                diskSpaceWarningLevelRatio=0.99,
            )
        argv = python_module("broker", "-c", str(self.broker_conf))
        self.broker = self.pool.start(name, argv, env=self.env(), cwd=self.root / "cwd")
        return self.broker

    def servers(self) -> dict[str, ServerProcess]:
        out = {}
        if self.namesrv is not None:
            out["namesrv"] = self.namesrv
        if self.broker is not None:
            out["broker"] = self.broker
        return out


def snapshot(root: Path, skip: list[Path]) -> dict[str, str]:
    """Every path under ``root`` but the ``skip`` subtrees: a content hash, 'dir' or a link."""
    out = {}
    for directory, dirs, files in os.walk(root):
        here = Path(directory)
        dirs[:] = [d for d in dirs if here / d not in skip]
        out[str(here.relative_to(root))] = "dir"
        for name in files:
            path = here / name
            if path.is_symlink():
                out[str(path.relative_to(root))] = f"link:{os.readlink(path)}"
                continue
            out[str(path.relative_to(root))] = hashlib.sha1(path.read_bytes()).hexdigest()
    return out


def changed(before: dict[str, str], after: dict[str, str]) -> list[str]:
    created = [f"created {p}" for p in sorted(set(after) - set(before))]
    removed = [f"removed {p}" for p in sorted(set(before) - set(after))]
    edited = [f"changed {p}" for p in sorted(set(before) & set(after)) if before[p] != after[p]]
    return created + removed + edited


def sample(pid: int) -> Sample:
    """RSS (and its anonymous part: the heap, not the store's mapped files, which the kernel
    counts as resident once touched), descriptors and how many of them are sockets."""
    process = psutil.Process(pid)
    anon = 0
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("RssAnon:"):
                anon = int(line.split()[1]) * 1024
    sockets = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            sockets += os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:")
        except OSError:
            pass  # closed while we looked
    return Sample(process.memory_info().rss, anon, process.num_fds(), sockets)
