"""A real ``mqbroker`` writing across several CommitLog segments, with the page warmer running
ahead of the writer and the flush writing only what was appended (broker/store/warm.py,
MappedFile.flush_range), is killed with SIGKILL: the restarted broker serves every
acknowledged message, and recovery leaves the log byte for byte as the kill left it (the warmed
tail beyond the last record is zeros, read as the log's end, never as records)."""

from __future__ import annotations

from pathlib import Path

from remoting.client import RemotingClient
from tests.kits.brokerkit import broker_conf, call, pull_all, send_request, start_broker

MiB = 1024 * 1024
QUEUES = 4


def commit_log_bytes(store: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((store / "commitlog").iterdir())}


async def test_a_killed_broker_recovers_its_warmed_segments_byte_for_byte(
    processes, tmp_path
) -> None:
    conf = broker_conf(
        tmp_path,
        mappedFileSizeCommitLog=MiB,  # the warmer's 32 MiB ahead covers each segment whole
        maxMessageSize=64 * 1024,
        flushIntervalCommitLog=20,  # many range flushes while the segments fill
        flushCommitLogLeastPages=1,
    )
    store = tmp_path / "store-broker-a-0"
    broker = start_broker(processes, conf)
    sent: dict[int, list[bytes]] = {q: [] for q in range(QUEUES)}
    async with RemotingClient.open() as client:
        for index in range(400):  # ~3.3 MiB: four segments
            body = index.to_bytes(4, "big") * 2048
            queue_id = index % QUEUES
            reply = await call(client, broker.addr, send_request("WarmT", body, queue_id=queue_id))
            assert reply.code == 0, reply.remark
            sent[queue_id].append(body)
    broker.kill()
    killed = commit_log_bytes(store)
    assert len(killed) >= 4
    again = start_broker(processes, conf, "broker-again")
    async with RemotingClient.open() as client:
        for queue_id, bodies in sent.items():
            got = await pull_all(client, again.addr, "WarmT", queue_id)
            assert [m.body for m in got] == bodies
    assert again.terminate() == 0
    assert commit_log_bytes(store) == killed
