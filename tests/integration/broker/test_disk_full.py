"""A real ``mqbroker`` whose store is on a small tmpfs that fills up: it stays up, serves
reads, refuses sends with the reason, never answers a stored message as failed, writes again
by itself once space is freed, and restarts after kill -9 on the full disk with every
acknowledged message. Mounting needs root: elsewhere these tests skip, saying so."""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from remoting import message as codec
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from tests.kits.brokerkit import broker_conf, call, pull_all, send_request, start_broker
from tests.kits.hakit import runtime_info, wait_until

MiB = 1024 * 1024
# Writes are refused for the disk's own errors here, not by the usage ratio (a unit test
# covers that one), and nothing stored may be cleaned away to make room.
SMALL_STORE = {
    "mappedFileSizeCommitLog": MiB,
    "maxMessageSize": 128 * 1024,  # a message must fit a CommitLog file
    "mappedFileSizeConsumeQueue": 1000 * 20,
    "maxHashSlotNum": 1000,
    "maxIndexNum": 20_000,
    "diskSpaceWarningLevelRatio": 1.0,
    "cleanFileForciblyEnable": "false",
    "cleanResourceInterval": 200,
}


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Callable[[str], Path]]:
    """Mounts tmpfs file systems of a given size; unmounts them, whatever happened. List it
    before ``processes`` so the brokers are stopped before their disk goes."""
    mounts: list[Path] = []

    def mount(size: str) -> Path:
        if os.geteuid() != 0:
            pytest.skip("mounting a small tmpfs needs root")
        where = tmp_path / f"disk{len(mounts)}"
        where.mkdir()
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
        mounts.append(where)
        return where

    try:
        yield mount
    finally:
        for where in reversed(mounts):
            if subprocess.run(["umount", str(where)], capture_output=True).returncode != 0:
                subprocess.run(["umount", "-l", str(where)], check=False)


def fill(disk: Path) -> None:
    """Take every free byte of ``disk`` (a filler file; ``free`` gives it back)."""
    fd = os.open(disk / "filler", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        for chunk in (b"\0" * MiB, b"\0" * 4096):
            while True:
                try:
                    os.write(fd, chunk)
                except OSError as exc:
                    assert exc.errno == errno.ENOSPC
                    break
    finally:
        os.close(fd)
    assert os.statvfs(disk).f_bavail == 0


def free(disk: Path) -> None:
    (disk / "filler").unlink()


async def send(client, addr: str, queue_id: int, body: bytes, keys: str | None = None):
    return await call(client, addr, send_request("DF", body, queue_id=queue_id, keys=keys))


async def writable(client, addr: str) -> bool:
    return (await runtime_info(client, addr))["storeWritable"] == "true"


def query(key: str) -> RemotingCommand:
    fields = {"topic": "DF", "key": key, "maxNum": "32", "beginTimestamp": "0"}
    return RemotingCommand.request(
        RequestCode.QUERY_MESSAGE, {**fields, "endTimestamp": str(2**62)}
    )


async def stored(client, addr: str) -> dict[int, list[bytes]]:
    return {q: [m.body for m in await pull_all(client, addr, "DF", q)] for q in range(4)}


async def send_until_refused(client, addr: str, acked: dict[int, list[bytes]], area: str) -> None:
    """64 KiB messages to queue 0 until one is refused for the disk; the rest are acked."""
    for i in range(40):
        body = b"c" * 64 * 1024 + b"%d" % i
        response = await send(client, addr, 0, body)
        if response.code != ResponseCode.SUCCESS:
            assert response.code == ResponseCode.SERVICE_NOT_AVAILABLE
            assert area in response.remark and "[Errno 28]" in response.remark
            return
        acked[0].append(body)
    raise AssertionError("40 sends of 64 KiB on a full disk were all accepted")


async def test_a_full_disk_refuses_sends_keeps_reads_and_recovers_by_itself(
    tmpfs, processes, tmp_path
) -> None:
    disk = tmpfs("16m")
    conf = broker_conf(tmp_path, storePathRootDir=disk / "store", **SMALL_STORE)
    broker = start_broker(processes, conf)
    acked: dict[int, list[bytes]] = {q: [] for q in range(4)}
    async with RemotingClient.open() as client:
        for i in range(20):
            assert (await send(client, broker.addr, 0, f"a{i}".encode(), keys=f"k{i}")).code == 0
            acked[0].append(f"a{i}".encode())
        # The consumer group exists before the disk is full: creating one writes a config
        # file, which is not the store's (issue 22, settings part).
        assert await stored(client, broker.addr) == acked
        fill(disk)
        # Queue 1 has no ConsumeQueue file yet and the disk cannot give one: the message is
        # in the CommitLog, so it is answered as stored; sends are refused after it.
        first = await send(client, broker.addr, 1, b"b0")
        assert first.code == ResponseCode.SUCCESS
        acked[1].append(b"b0")
        refused = await send(client, broker.addr, 0, b"refused")
        assert refused.code == ResponseCode.SERVICE_NOT_AVAILABLE
        assert "disk is full" in refused.remark and "[Errno 28]" in refused.remark
        assert "consumequeue/DF/1" in refused.remark
        info = await runtime_info(client, broker.addr)
        assert (
            info["storeWritable"] == "false" and "dispatch: disk full" in info["storeDiskTrouble"]
        )
        # Reads go on: pulls, queries by key
        assert (await stored(client, broker.addr))[0] == acked[0]
        found = await call(client, broker.addr, query("k7"))
        assert [m.body for m in codec.decode_messages(found.body)] == [b"a7"]
        free(disk)
        await wait_until(lambda: writable(client, broker.addr), 30, "sends accepted again")
        assert await stored(client, broker.addr) == acked
        again = await send(client, broker.addr, 1, b"b1")
        assert (again.code, again.ext("queueOffset")) == (0, "1")
        acked[1].append(b"b1")

        # Now fill the CommitLog's segment (queue 0 has its file): the next segment cannot be
        # created, the record that needs it is refused whole.
        fill(disk)
        await send_until_refused(client, broker.addr, acked, "commitlog")
    # kill -9, then start again on the still full disk: recovery needs no room.
    assert broker.alive()
    broker.kill()  # and its output is all in the log file now
    log = broker.log_path.read_text()
    assert "disk trouble: area=dispatch" in log and "disk trouble over: area=dispatch" in log
    assert "disk trouble: area=commitlog" in log and "Traceback" not in log
    broker = start_broker(processes, conf, "broker-on-a-full-disk")
    async with RemotingClient.open() as client:
        assert await stored(client, broker.addr) == acked
        await send_until_refused(client, broker.addr, acked, "commitlog")
        assert await stored(client, broker.addr) == acked
        free(disk)
        await wait_until(lambda: writable(client, broker.addr), 30, "sends accepted again")
        resumed = await send(client, broker.addr, 3, b"d0")
        assert resumed.code == ResponseCode.SUCCESS
        acked[3].append(b"d0")
        assert await stored(client, broker.addr) == acked


async def test_rocketmq_s_default_index_starts_on_a_disk_smaller_than_its_file(
    tmpfs, processes, tmp_path
) -> None:
    """The default index file is 420 MB: on 64 MB it is allocated as it fills; on 8 MB, where
    even its hash slots do not fit, the broker runs without a key index."""
    roomy, tiny = tmpfs("64m"), tmpfs("8m")
    defaults = {"maxHashSlotNum": 5_000_000, "maxIndexNum": 20_000_000}
    for disk, name in ((roomy, "roomy"), (tiny, "tiny")):
        conf = broker_conf(
            tmp_path,
            name,
            storePathRootDir=disk / "store",
            mappedFileSizeCommitLog=MiB,
            maxMessageSize=128 * 1024,
            **defaults,
        )
        broker = start_broker(processes, conf, name)
        async with RemotingClient.open() as client:
            assert (await stored(client, broker.addr))[0] == []  # creates the consumer group
            for i in range(30):
                response = await send(client, broker.addr, 0, f"m{i}".encode(), keys=f"key{i}")
                assert response.code == ResponseCode.SUCCESS
            found = await call(client, broker.addr, query("key3"))
            info = await runtime_info(client, broker.addr)
            assert len((await stored(client, broker.addr))[0]) == 30
        index_files = list((disk / "store" / "index").glob("*"))
        if disk is roomy:
            assert [m.body for m in codec.decode_messages(found.body)] == [b"m3"]
            assert [f.stat().st_size for f in index_files] == [420_000_040]
            assert index_files[0].stat().st_blocks * 512 < 24 * MiB
        else:
            assert found.code == ResponseCode.QUERY_NOT_FOUND
            assert info["storeWritable"] == "true"
            assert "index: disk full" in info["storeDiskTrouble"]
            assert int(info["indexKeysNotIndexed"]) >= 30
            assert index_files == []
        broker.terminate()
