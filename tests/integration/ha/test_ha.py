"""Master/slave replication between real ``mqbroker`` processes (docs/spec/ha.md)."""

from __future__ import annotations

import shutil
import signal

import pytest
import trio

from broker.ha.protocol import encode_report
from remoting.client import RemotingClient
from remoting.codes import ResponseCode
from tests.kits.brokerkit import (
    broker_conf,
    call,
    pull_all,
    send_request,
    start_broker,
    start_namesrv,
)
from tests.kits.hakit import (
    commit_log_bytes,
    max_offset,
    produce_batches,
    runtime_info,
    slaves_of,
    start_pair,
    wait_converged,
    wait_topic_on_slave,
    wait_until,
)


async def pull_keys(client: RemotingClient, addr: str, topic: str, queues: int = 4) -> list[str]:
    keys: list[str] = []
    for queue_id in range(queues):
        messages = await pull_all(client, addr, topic, queue_id, max_nums=32)
        keys += [m.keys for m in messages]
    return keys


async def wait_slave_connected(client: RemotingClient, master: str) -> None:
    async def connected() -> bool:
        return len(await slaves_of(client, master)) > 0

    await wait_until(connected, 30, "a slave to connect")


async def test_async_slave_copies_the_log_byte_for_byte_and_serves_it_when_the_master_stops(
    processes, tmp_path
) -> None:
    namesrv = start_namesrv(processes, tmp_path)
    segment = 8 * 1024 * 1024
    pair = start_pair(processes, tmp_path, namesrv.addr, mappedFileSizeCommitLog=segment)
    async with RemotingClient.open() as client:
        await wait_slave_connected(client, pair.master.addr)
        keys = await produce_batches(client, pair.master.addr, "Replicated", 50_000)
        end = await wait_converged(client, pair.master.addr, pair.slave.addr)
        # 50k x ~200 B crosses the 8 MiB segment boundary: chunks must stop at it.
        assert end > segment
        assert commit_log_bytes(pair.slave_store, 0, end) == commit_log_bytes(
            pair.master_store, 0, end
        )
        [slave] = await slaves_of(client, pair.master.addr)
        assert slave["ackOffset"] == end and slave["lagBytes"] == 0 and slave["inSync"]

        await wait_topic_on_slave(client, pair.slave.addr, "Replicated")
        pair.master.terminate()
        seen = await pull_keys(client, pair.slave.addr, "Replicated")
        assert len(seen) == len(keys) and set(seen) == set(keys)


async def test_sync_master_acks_only_what_the_slave_holds(processes, tmp_path) -> None:
    namesrv = start_namesrv(processes, tmp_path)
    pair = start_pair(processes, tmp_path, namesrv.addr, role="SYNC_MASTER", syncFlushTimeout=1000)
    acked: list[str] = []
    async with RemotingClient.open() as client:
        await wait_slave_connected(client, pair.master.addr)
        for i in range(200):
            response = await call(
                client,
                pair.master.addr,
                send_request("Sync", b"x" * 64, keys=f"a{i}", queue_id=i % 4),
            )
            assert response.code == ResponseCode.SUCCESS, response.remark
            acked.append(f"a{i}")

        pair.slave.send_signal(signal.SIGSTOP)
        try:
            stalled = [
                await call(client, pair.master.addr, send_request("Sync", b"late", keys=f"s{i}"))
                for i in range(3)
            ]
        finally:
            pair.slave.send_signal(signal.SIGCONT)
        # Stored on the master but never confirmed by the slave: no SEND_OK.
        assert [r.code for r in stalled] == [ResponseCode.FLUSH_SLAVE_TIMEOUT] * 3

        resumed = await call(client, pair.master.addr, send_request("Sync", b"again", keys="r0"))
        assert resumed.code == ResponseCode.SUCCESS
        acked.append("r0")

        await wait_topic_on_slave(client, pair.slave.addr, "Sync")
        pair.master.kill()
        shutil.rmtree(pair.master_store)
        seen = set(await pull_keys(client, pair.slave.addr, "Sync"))
        assert set(acked) <= seen


async def test_sync_master_without_a_slave_answers_slave_not_available_and_keeps_the_message(
    processes, tmp_path
) -> None:
    master = start_broker(processes, broker_conf(tmp_path, brokerRole="SYNC_MASTER"))
    async with RemotingClient.open() as client:
        response = await call(client, master.addr, send_request("Lonely", b"m", keys="k0"))
        assert response.code == ResponseCode.SLAVE_NOT_AVAILABLE
        [stored] = await pull_all(client, master.addr, "Lonely", 0)
        assert stored.keys == "k0"


async def fake_slave(addr: str, offset: int) -> trio.SocketStream:
    host, port = addr.rsplit(":", 1)
    stream = await trio.open_tcp_stream(host, int(port) + 1)
    await stream.send_all(encode_report(offset))
    return stream


async def closed_by_peer(stream: trio.SocketStream) -> bool:
    """Reads (and drops) whatever the master streams until it closes the connection."""
    with trio.move_on_after(30):
        try:
            while await stream.receive_some(1 << 16):
                pass
        except trio.BrokenResourceError:
            pass
        return True
    return False


async def test_fake_slave_reporting_beyond_the_masters_log_is_refused_and_never_acks(
    processes, tmp_path
) -> None:
    master = start_broker(
        processes, broker_conf(tmp_path, brokerRole="SYNC_MASTER", syncFlushTimeout=1000)
    )
    async with RemotingClient.open() as client:
        assert (await call(client, master.addr, send_request("T", b"m"))).code == 11
        end = await max_offset(client, master.addr)

        ahead = await fake_slave(master.addr, end + (1 << 20))
        assert await closed_by_peer(ahead)
        assert await slaves_of(client, master.addr) == []
        response = await call(client, master.addr, send_request("T", b"m"))
        assert response.code == ResponseCode.SLAVE_NOT_AVAILABLE

        # A slave with a plausible start that then acks bytes it was never sent.
        liar = await fake_slave(master.addr, end)
        await wait_slave_connected(client, master.addr)
        results = []

        async def send() -> None:
            results.append(await call(client, master.addr, send_request("T", b"after")))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(send)
            await liar.send_all(encode_report(end + (1 << 30)))
            assert await closed_by_peer(liar)
        # Timed out waiting, or found no slave left: either way never SEND_OK.
        [result] = results
        assert result.code in (ResponseCode.FLUSH_SLAVE_TIMEOUT, ResponseCode.SLAVE_NOT_AVAILABLE)
        info = await runtime_info(client, master.addr)
        assert int(info["haPush2SlaveMaxOffset"]) <= int(info["commitLogMaxOffset"])
        log_text = master.log_tail(400)
        assert "refusing it" in log_text and "ack ignored" in log_text


@pytest.mark.slow
async def test_late_slave_catches_up_and_resumes_after_kill_9_and_master_restart(
    processes, tmp_path
) -> None:
    namesrv = start_namesrv(processes, tmp_path)
    pair = start_pair(
        processes,
        tmp_path,
        namesrv.addr,
        start_slave=False,
        mappedFileSizeCommitLog=64 * 1024 * 1024,
        haTransferBatchSize=8192,
    )
    async with RemotingClient.open() as client:
        keys = await produce_batches(
            client, pair.master.addr, "Late", 10_000, batch=32, body_size=4000
        )
        target = await max_offset(client, pair.master.addr)
        assert target > 35 * 1024 * 1024  # "tens of MB" behind

        slave = start_broker(processes, pair.slave_conf, "slave")

        async def some_progress() -> bool:
            return await max_offset(client, slave.addr) > 0

        await wait_until(some_progress, 30, "the slave to start copying")
        slave.kill()  # most likely mid-transfer; either way the restart must resume cleanly
        slave.start()
        await wait_converged(client, pair.master.addr, slave.addr)
        assert commit_log_bytes(pair.slave_store, 0, target) == commit_log_bytes(
            pair.master_store, 0, target
        )

        pair.master.terminate()
        pair.master.start()
        # The blocking restart gave the client no chance to see the old connection close.
        await client.close_connection(pair.master.addr)
        keys += await produce_batches(
            client, pair.master.addr, "Late", 1000, batch=50, prefix="after-restart-"
        )
        end = await wait_converged(client, pair.master.addr, slave.addr)
        assert commit_log_bytes(pair.slave_store, 0, end) == commit_log_bytes(
            pair.master_store, 0, end
        )
        await wait_topic_on_slave(client, slave.addr, "Late")
        info = await runtime_info(client, slave.addr)
        assert info["haConnected"] == "true"
        seen = await pull_keys(client, slave.addr, "Late")
        assert sorted(seen) == sorted(keys)


def test_ha_port_is_always_listen_port_plus_one() -> None:
    from broker.config import load_broker_config

    broker, store = load_broker_config({"listenPort": "20911", "haListenPort": "1"})
    assert store.ha_listen_port == broker.listen_port + 1 == 20912
