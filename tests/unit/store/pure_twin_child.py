"""Child of test_pure_twin.py: fills a store with a fixed clock, recovers it as after kill -9,
and prints a digest of every file's bytes (index files in order, their names are wall time)."""

from __future__ import annotations

import hashlib
import json
import sys
from itertools import count
from pathlib import Path

from broker.store.message_store import DefaultMessageStore
from broker.store.store_native import native as store_native
from broker.store.types import MessageExtBrokerInner
from remoting import message as codec
from remoting.codec_native import native as codec_native
from tests.unit.store.conftest import small_config


def fill(root: Path) -> None:
    ticks = count(1_700_000_000_000, 7)
    store = DefaultMessageStore(
        small_config(root), store_host=("10.0.0.1", 10911), clock=lambda: next(ticks)
    )
    store.load()
    for i in range(300):
        props = {"KEYS": f"k{i} K{i}", "UNIQ_KEY": f"U{i:08d}", "TAGS": ["A", "Bé", "😀"][i % 3]}
        if i % 50 == 7:
            props["DELAY"] = "2"
        store.put_message(
            MessageExtBrokerInner(
                topic=f"T{i % 3}",
                queue_id=i % 4,
                body=bytes([i % 251]) * (i % 97),
                properties=props,
                born_host=(bytes(16) if i % 11 == 0 else b"\x7f\x00\x00\x01", 4000 + i),
            )
        )
        if i % 40 == 0:
            entries = [(j, b"b" * j, f"TAGS\x01x{j}\x02KEYS\x01bk{i}-{j}") for j in range(5)]
            store.put_messages(
                MessageExtBrokerInner(
                    topic="Batch",
                    queue_id=i % 2,
                    body=codec.encode_batch_body(entries),
                    properties={"WAIT": "true"},
                )
            )
    store.shutdown()


def digest(root: Path) -> dict[str, str]:
    out = {}
    for folder in ("commitlog", "consumequeue"):
        for path in sorted((root / folder).rglob("*")):
            if path.is_file():
                out[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    for i, path in enumerate(sorted((root / "index").iterdir())):
        out[f"index#{i}"] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def main() -> None:
    root = Path(sys.argv[1])
    fill(root)
    clean = digest(root)
    (root / "abort").write_text("")
    for path in (root / "consumequeue").rglob("*"):
        if path.is_file():
            path.unlink()
    store = DefaultMessageStore(small_config(root), store_host=("10.0.0.1", 10911))
    store.load()  # abnormal recovery: every record scanned and dispatched again
    store.shutdown()
    loaded = {"codec": codec_native is not None, "store": store_native is not None}
    print(json.dumps({"native": loaded, "clean": clean, "recovered": digest(root)}))


if __name__ == "__main__":
    main()
