"""A real ``mqbroker`` taking SEND_BATCH_MESSAGE requests, or pipelined single sends, killed with
SIGKILL: the ConsumeQueue units and IndexFile entries its put path wrote (packed by the append,
broker/store/dispatch.py dispatch_appended and, for the plain single sends' pass, dispatch_rows)
are byte for byte what a recovery writes from its CommitLog alone, the way reput and the crash
re-dispatch build them from DispatchRequests."""

from __future__ import annotations

import shutil
from pathlib import Path

import trio

from broker.store.config import MessageStoreConfig
from broker.store.message_store import DefaultMessageStore
from remoting import message as codec
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from tests.harness import ProcessPool
from tests.kits.brokerkit import broker_conf, call, send_request, start_broker

# Small files, so a few hundred messages cross ConsumeQueue files and roll the index.
STORE = {
    "mappedFileSizeCommitLog": 1024 * 1024,
    "maxMessageSize": 128 * 1024,  # a message must fit a CommitLog file
    "mappedFileSizeConsumeQueue": 64 * 20,
    "maxHashSlotNum": 64,
    "maxIndexNum": 300,
}


def _batch_body(round_no: int, count: int) -> bytes:
    return codec.encode_batch_body(
        [
            (
                0,
                b"b" * (round_no * 7 % 300),
                f"TAGS\x01T{(round_no + i) % 3}\x02KEYS\x01k{i} r{round_no}"
                f"\x02UNIQ_KEY\x01U{round_no}-{i}",
            )
            for i in range(count)
        ]
    )


def _files(directory: Path) -> list[tuple[str, bytes]]:
    return sorted(
        (str(p.relative_to(directory)), p.read_bytes()) for p in directory.rglob("*") if p.is_file()
    )


def _index_files(directory: Path) -> list[bytes]:
    """In name order: the names are the times the files were created."""
    return [p.read_bytes() for p in sorted(directory.iterdir())]


async def test_killed_broker_queues_and_index_equal_a_rebuild_from_the_log(
    processes: ProcessPool, tmp_path: Path
) -> None:
    conf = broker_conf(tmp_path, **STORE)
    broker = start_broker(processes, conf)
    async with RemotingClient.open() as client:
        for round_no in range(30):
            request = send_request(
                f"BatchCrash{round_no % 2}",
                _batch_body(round_no, 1 + round_no % 13),
                queue_id=round_no % 3,
                code=RequestCode.SEND_BATCH_MESSAGE,
                batch=True,
            )
            response = await call(client, broker.addr, request)
            assert response.code == ResponseCode.SUCCESS, response.remark
    broker.kill()
    _assert_rebuilt_the_same(tmp_path, "BatchCrash")


async def test_killed_broker_after_pipelined_single_sends_equals_a_rebuild(
    processes: ProcessPool, tmp_path: Path
) -> None:
    """Waves of single sends in flight together on one connection: the broker reads several at
    once and stores them in the plain pass (put_rows), several topics, queues, tags and keys."""
    broker = start_broker(processes, broker_conf(tmp_path, **STORE))

    async def send(client: RemotingClient, n: int) -> None:
        request = send_request(
            f"PlainCrash{n % 2}", b"p" * (n * 13 % 200), queue_id=n % 3, tags=f"T{n % 4}",
            keys=f"k{n} w{n // 50}",
        )  # fmt: skip
        response = await call(client, broker.addr, request)
        assert response.code == ResponseCode.SUCCESS, response.remark

    async with RemotingClient.open() as client:
        await send(client, 0)  # the topics exist before the waves
        await send(client, 1)
        for wave in range(8):
            async with trio.open_nursery() as nursery:
                for n in range(2 + wave * 50, 2 + (wave + 1) * 50):
                    nursery.start_soon(send, client, n)
    broker.kill()
    _assert_rebuilt_the_same(tmp_path, "PlainCrash")


def _assert_rebuilt_the_same(tmp_path: Path, topic: str) -> None:
    """The killed broker's ConsumeQueue and IndexFiles equal those recovery builds from a copy
    of its CommitLog alone."""
    store_dir = tmp_path / "store-broker-a-0"
    killed_cq, killed_index = _files(store_dir / "consumequeue"), _index_files(store_dir / "index")
    assert any(topic in name for name, _ in killed_cq) and len(killed_index) > 1
    rebuilt_dir = tmp_path / "rebuilt"
    shutil.copytree(store_dir / "commitlog", rebuilt_dir / "commitlog")
    (rebuilt_dir / "abort").touch()  # a crash: re-dispatch the whole log
    store = DefaultMessageStore(
        MessageStoreConfig(
            store_path_root_dir=rebuilt_dir,
            mapped_file_size_commit_log=STORE["mappedFileSizeCommitLog"],
            mapped_file_size_consume_queue=STORE["mappedFileSizeConsumeQueue"],
            max_hash_slot_num=STORE["maxHashSlotNum"],
            max_index_num=STORE["maxIndexNum"],
        ),
        store_host=("127.0.0.1", 10911),
    )
    store.load()
    store.shutdown()
    assert _files(rebuilt_dir / "consumequeue") == killed_cq
    assert _index_files(rebuilt_dir / "index") == killed_index
