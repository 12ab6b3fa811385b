"""Master/slave pairs of real ``mqbroker`` processes and what the HA tests look at: runtime
info, CommitLog bytes on disk, and waiting for a slave to converge."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path

import attrs
import trio

from remoting import message as codec
from remoting.body import KVTable
from remoting.client import RemotingClient
from remoting.codes import RequestCode
from remoting.command import RemotingCommand
from remoting.serde import decode_body
from tests.harness import ProcessPool, ServerProcess
from tests.kits.brokerkit import broker_conf, call, send_request, start_broker

POLL_S = 0.05


@attrs.define
class Pair:
    master: ServerProcess
    slave: ServerProcess | None
    master_conf: Path
    slave_conf: Path
    master_store: Path
    slave_store: Path


def start_pair(
    processes: ProcessPool,
    tmp_path: Path,
    namesrv: str,
    *,
    role: str = "ASYNC_MASTER",
    start_slave: bool = True,
    **overrides: object,
) -> Pair:
    common = {"namesrvAddr": namesrv, **overrides}
    master_conf = broker_conf(tmp_path, brokerId=0, brokerRole=role, **common)
    slave_conf = broker_conf(tmp_path, brokerId=1, brokerRole="SLAVE", **common)
    master = start_broker(processes, master_conf, "master")
    slave = start_broker(processes, slave_conf, "slave") if start_slave else None
    return Pair(
        master,
        slave,
        master_conf,
        slave_conf,
        tmp_path / "store-broker-a-0",
        tmp_path / "store-broker-a-1",
    )


def promote_slave(
    processes: ProcessPool,
    pair: Pair,
    slave: ServerProcess,
    tmp_path: Path,
    namesrv: str,
    **overrides: object,
) -> ServerProcess:
    """What ``mqcluster promote`` does to a pair whose master died: the master killed -9, the
    slave stopped, and a master started on the slave's store."""
    pair.master.kill()
    slave.terminate()
    (tmp_path / "promoted").mkdir()
    conf = broker_conf(
        tmp_path / "promoted",
        brokerId=0,
        brokerRole="ASYNC_MASTER",
        storePathRootDir=pair.slave_store,
        namesrvAddr=namesrv,
        **overrides,
    )
    return start_broker(processes, conf, "promoted")


async def runtime_info(client: RemotingClient, addr: str) -> dict[str, str]:
    response = await call(
        client, addr, RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO, {})
    )
    assert response.code == 0, response.remark
    return decode_body(KVTable, response.body).table


async def max_offset(client: RemotingClient, addr: str) -> int:
    return int((await runtime_info(client, addr))["commitLogMaxOffset"])


async def slaves_of(client: RemotingClient, master: str) -> list[dict[str, object]]:
    return json.loads((await runtime_info(client, master))["haSlaves"])


async def wait_until(
    predicate: Callable[[], Awaitable[bool]], timeout_s: float = 60.0, what: str = "condition"
) -> None:
    """Another process's state has no event to await here: poll it, with a deadline."""
    with trio.move_on_after(timeout_s):
        while not await predicate():
            await trio.sleep(POLL_S)
        return
    raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")


async def wait_converged(client: RemotingClient, master: str, slave: str, timeout_s=60.0) -> int:
    target = await max_offset(client, master)

    async def caught_up() -> bool:
        info = await runtime_info(client, slave)
        return int(info["commitLogMaxOffset"]) >= target and info["dispatchBehindBytes"] == "0"

    await wait_until(caught_up, timeout_s, f"the slave to reach offset {target}")
    return target


def commit_log_bytes(store: Path, start: int, end: int) -> bytes:
    """The CommitLog's bytes [start, end) read from its segment files."""
    out = bytearray()
    for path in sorted((store / "commitlog").iterdir()):
        first = int(path.name)
        data = path.read_bytes()
        lo, hi = max(start, first), min(end, first + len(data))
        if lo < hi:
            out += data[lo - first : hi - first]
    return bytes(out)


async def produce_batches(
    client: RemotingClient,
    addr: str,
    topic: str,
    count: int,
    *,
    batch: int = 100,
    body_size: int = 100,
    queues: int = 4,
    prefix: str = "k",
) -> list[str]:
    """``count`` messages in batches round-robin over ``queues``; returns the keys sent."""
    keys: list[str] = []
    for start in range(0, count, batch):
        names = [f"{prefix}{i}" for i in range(start, min(start + batch, count))]
        body = codec.encode_batch_body(
            [(0, name.encode().ljust(body_size, b"."), f"KEYS\x01{name}") for name in names]
        )
        request = send_request(
            topic,
            body,
            queue_id=(start // batch) % queues,
            code=RequestCode.SEND_BATCH_MESSAGE,
            batch=True,
        )
        response = await call(client, addr, request)
        assert response.code == 0, (response.code, response.remark)
        keys += names
    return keys


async def wait_topic_on_slave(client: RemotingClient, slave: str, topic: str) -> None:
    """Topic configs reach a slave by its periodic sync (every slaveSynchronizeInterval: 10 s by
    default, as in RocketMQ; 0.5 s in broker_conf's)."""

    async def known() -> bool:
        response = await call(
            client, slave, RemotingCommand.request(RequestCode.GET_ALL_TOPIC_CONFIG, {})
        )
        return topic.encode() in (response.body or b"")

    await wait_until(known, 30, f"topic {topic} to reach the slave")
