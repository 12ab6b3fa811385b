"""A child process for the crash tests: appends to a store as fast as it can and prints
``ACK <seq> <queue_offset> <phys_offset>`` for every put acknowledged under its flush mode
(SYNC_FLUSH: once durable). Message ``seq`` goes to queue offset ``seq``; every fifth write is a
batch of three. ``python -m tests.faults.store_writer STORE_DIR ASYNC_FLUSH|SYNC_FLUSH``"""

from __future__ import annotations

import sys
from pathlib import Path

import trio

from broker.store.config import FlushDiskType, MessageStoreConfig
from broker.store.message_store import DefaultMessageStore
from broker.store.types import MessageExtBrokerInner
from remoting import message as codec

SEGMENT = 64 * 1024


def config(root: Path, flush: str) -> MessageStoreConfig:
    return MessageStoreConfig(
        store_path_root_dir=root,
        mapped_file_size_commit_log=SEGMENT,
        mapped_file_size_consume_queue=20 * 1000,
        max_hash_slot_num=1000,
        max_index_num=4000,
        flush_disk_type=FlushDiskType(flush),
        flush_interval_commit_log=20,
    )


def body(seq: int) -> bytes:
    return f"seq={seq};".encode() + bytes([seq % 251]) * (seq % 300)


async def main(root: Path, flush: str) -> None:
    store = DefaultMessageStore(config(root, flush), store_host=("127.0.0.1", 10911))
    store.load()
    out = sys.stdout
    async with trio.open_nursery() as nursery:
        await nursery.start(store.run)
        seq = store.get_max_offset_in_queue("T", 0)
        print(f"READY port=0 start={seq}", file=out, flush=True)
        while True:
            if seq % 5 == 4:
                entries = [(0, body(seq + i), f"KEYS\x01k{seq + i}") for i in range(3)]
                batch = MessageExtBrokerInner(
                    topic="T", queue_id=0, body=codec.encode_batch_body(entries)
                )
                result = store.put_messages(batch)
            else:
                result = store.put_message(
                    MessageExtBrokerInner(
                        topic="T", queue_id=0, body=body(seq), properties={"KEYS": f"k{seq}"}
                    )
                )
            assert result.ok, result
            if store.config.flush_disk_type is FlushDiskType.SYNC_FLUSH:
                status = await store.wait_flushed(result.append.end_offset, 5)
                assert status.name == "PUT_OK", status
            for i, msg_id in enumerate(result.append.msg_ids):
                phys = codec.decode_offset_msg_id(msg_id).phys_offset
                out.write(f"ACK {seq} {result.append.queue_offset + i} {phys}\n")
                seq += 1
            out.flush()
            await trio.sleep(0)


if __name__ == "__main__":
    trio.run(main, Path(sys.argv[1]), sys.argv[2])
