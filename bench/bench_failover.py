"""Auto-failover (broker/election/) on one machine: a single-member etcd and one group of three
brokers (SYNC_MASTER, minInSyncReplicas=2, controllerHeartBeatTimeoutMills=3000), a producer
sending keyed messages one at a time to the master etcd names; kill -9 the master and time
until the first send the new master acknowledges. Then every acknowledged key is looked for
on the new master (lost = acked and absent; duplicates = present twice). And sync-send
throughput of a SYNC_MASTER pair with controller mode on and off, alternated.
``BENCH_FAILOVER_RUNS`` (default 20) sets the number of kills (0: throughput only). Printed,
never asserted.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import trio

from bench.bench_broker import QUEUES, Broker, measure, send_frame
from bench.bench_ha import wait_slave
from etcdstate.etcd import EtcdClient
from etcdstate.group import GroupState, group_key
from remoting import message as codec
from remoting.client import RemotingClient
from remoting.codes import RequestCode
from remoting.command import RemotingCommand
from remoting.errors import RemotingError
from remoting.headers import PullMessageRequestHeader, SendMessageRequestHeaderV2
from remoting.serde import encode_header_fields

RUNS = int(os.environ.get("BENCH_FAILOVER_RUNS", "20"))
HEART_BEAT_MS = 3000
TOPIC = "FailoverBench"


def start_etcd(root: Path, port: int) -> subprocess.Popen[bytes]:
    etcd = shutil.which("etcd")
    if etcd is None:
        raise SystemExit("no etcd binary: install Debian's etcd-server (make install)")
    client, peer = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{port + 1}"
    proc = subprocess.Popen(
        [etcd, "--name=m", f"--data-dir={root}/etcd", f"--listen-client-urls={client}",
         f"--advertise-client-urls={client}", f"--listen-peer-urls={peer}",
         f"--initial-advertise-peer-urls={peer}", f"--initial-cluster=m={peer}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    while True:
        try:
            with urllib.request.urlopen(f"{client}/health", timeout=1):
                return proc
        except OSError:
            time.sleep(0.05)


def started(broker: Broker) -> Broker:
    """Its stdout read on and dropped: a role change logs warnings, and a full pipe would stop
    the broker mid-write (bench_broker.Broker reads it only up to READY)."""
    stdout = broker.proc.stdout
    assert stdout is not None
    threading.Thread(target=lambda: stdout.read(), daemon=True).start()
    return broker


def member_extra(member_id: int, etcd_port: int, controller: bool = True) -> str:
    if not controller:
        return "brokerRole=SYNC_MASTER\n"
    return (
        f"brokerName=bench\nbrokerId={member_id}\nbrokerRole=SYNC_MASTER\n"
        "enableControllerMode=true\nminInSyncReplicas=2\n"
        f"controllerEtcdEndpoints=http://127.0.0.1:{etcd_port}\n"
        f"controllerHeartBeatTimeoutMills={HEART_BEAT_MS}\n"
    )


def send_request(key: str) -> RemotingCommand:
    header = SendMessageRequestHeaderV2(
        a="PG", b=TOPIC, c="TBW102", d=1, e=0, f=0, g=int(time.time() * 1000), h=0,
        i=f"KEYS\x01{key}\x02UNIQ_KEY\x01{key}\x02WAIT\x01true",
    )  # fmt: skip
    return RemotingCommand.request(
        RequestCode.SEND_MESSAGE_V2, encode_header_fields(header), key.encode()
    )


async def stored_keys(client: RemotingClient, addr: str) -> list[str]:
    keys, offset = [], 0
    while True:
        header = PullMessageRequestHeader(
            consumer_group="CG", topic=TOPIC, queue_id=0, queue_offset=offset, max_msg_nums=32,
            sys_flag=0x4, commit_offset=0, suspend_timeout_millis=0, sub_version=0,
            subscription="*",
        )  # fmt: skip
        request = RemotingCommand.request(RequestCode.PULL_MESSAGE, encode_header_fields(header))
        response = await client.invoke(addr, request, 5)
        if response.code != 0:
            return keys
        keys += [m.properties.get("KEYS", "") for m in codec.decode_messages(response.body)]
        offset = int(response.ext("nextBeginOffset"))


async def master_of(etcd: EtcdClient, prefix_name: str) -> GroupState | None:
    kv = await etcd.get(group_key("/rocketmq-trio", "DefaultCluster", prefix_name))
    return None if kv is None else GroupState.decode(kv.value)


async def one_failover(root: Path, run: int, etcd_port: int) -> tuple[float, int, int]:
    """(seconds from kill -9 to the first acked send on the new master, lost, duplicated)."""
    name = f"bench{run}"
    port = 21000 + run * 40
    brokers = {}
    for i in (1, 2, 3):
        extra = member_extra(i, etcd_port).replace("brokerName=bench", f"brokerName={name}")
        brokers[i] = started(Broker(root, port + i * 10, extra, name=f"{name}-{i}"))
    etcd = EtcdClient([f"http://127.0.0.1:{etcd_port}"])
    try:
        async with trio.open_nursery() as nursery:
            client = RemotingClient(nursery)
            while (state := await master_of(etcd, name)) is None or len(state.sync_state_set) < 3:
                await trio.sleep(0.05)
            acked, n = [], 0
            for _ in range(200):
                key = f"k{n}"
                n += 1
                try:  # a loaded machine can delay a lease refresh into a failover of its own
                    response = await client.invoke(state.master.addr, send_request(key), 5)
                except (RemotingError, OSError):  # OSError: see remoting/connection.py getpeername
                    response = None
                if response is not None and response.code == 0:
                    acked.append(key)
                elif (now := await master_of(etcd, name)) is not None:
                    state = now
            brokers[state.master.broker_id].proc.kill()
            killed = time.monotonic()
            old = state.master.broker_id
            while True:
                state = await master_of(etcd, name)
                if state is not None and state.master.broker_id != old:
                    key = f"k{n}"
                    n += 1
                    try:
                        response = await client.invoke(state.master.addr, send_request(key), 5)
                    except (
                        RemotingError,
                        OSError,
                    ):  # OSError: see remoting/connection.py getpeername
                        response = None
                    if response is not None and response.code == 0:
                        acked.append(key)
                        break
                await trio.sleep(0.01)
            elapsed = time.monotonic() - killed
            stored = await stored_keys(client, state.master.addr)
            nursery.cancel_scope.cancel()
    finally:
        await etcd.aclose()
        for broker in brokers.values():
            if broker.proc.poll() is None:
                broker.stop()
    lost = sum(1 for k in acked if k not in stored)
    duplicated = sum(1 for k in acked if stored.count(k) > 1)
    return elapsed, lost, duplicated


def failover_times(root: Path, etcd_port: int) -> None:
    times, lost, duplicated = [], 0, 0
    for run in range(RUNS):
        elapsed, run_lost, run_dup = trio.run(one_failover, root, run, etcd_port)
        times.append(elapsed)
        lost, duplicated = lost + run_lost, duplicated + run_dup
        print(f"run {run}: {elapsed:.2f} s to the first acked send, lost {run_lost}", flush=True)
    print(
        f"kill -9 -> first acked send on the new master (lease {HEART_BEAT_MS / 1000:g} s, "
        f"{RUNS} runs): median {statistics.median(times):.2f} s, max {max(times):.2f} s; "
        f"acked messages lost {lost}, duplicated {duplicated}",
        flush=True,
    )


async def wait_in_sync(etcd_port: int, name: str, members: int) -> None:
    """Controller mode: a SYNC send counts only SyncStateSet members (broker/ha/service.py),
    and the slave joins it a report or two after it connects; measured before that, every send
    would be refused (and loadgen counts refusals in its rate)."""
    etcd = EtcdClient([f"http://127.0.0.1:{etcd_port}"])
    try:
        while (state := await master_of(etcd, name)) is None or len(state.sync_state_set) < members:
            await trio.sleep(0.05)
    finally:
        await etcd.aclose()


def throughput(root: Path, etcd_port: int, controller: bool, round_no: int) -> float:
    tag = f"{'on' if controller else 'off'}{round_no}"
    port = 24000 + round_no * 100 + (50 if controller else 0)
    if controller:
        extra = member_extra(1, etcd_port).replace("brokerName=bench", f"brokerName=tp{tag}")
        slave_extra = extra.replace("brokerId=1", "brokerId=2")
    else:
        extra = member_extra(0, etcd_port, controller=False)
        slave_extra = f"brokerId=1\nbrokerRole=SLAVE\nhaMasterAddress=127.0.0.1:{port + 1}\n"
    master = started(Broker(root, port, extra, name=f"tp-master-{tag}"))
    slave = started(Broker(root, port + 10, slave_extra, name=f"tp-slave-{tag}"))
    try:
        wait_slave(master, slave)
        if controller:
            trio.run(wait_in_sync, etcd_port, f"tp{tag}", 2)
        frames = [[send_frame("TpSync", (w + q) % QUEUES) for q in range(QUEUES)] for w in range(8)]
        label = f"sync send 8 conns, controller {'on' if controller else 'off'}"
        return measure(master, label, frames, 1)[0]
    finally:
        slave.stop()
        master.stop()


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="bench-failover-"))
    etcd_port = 23900
    etcd = start_etcd(root, etcd_port)
    try:
        rates: dict[bool, list[float]] = {True: [], False: []}
        for round_no in range(3):
            for controller in (False, True):
                rates[controller].append(throughput(root, etcd_port, controller, round_no))
        on, off = statistics.mean(rates[True]), statistics.mean(rates[False])
        print(f"send throughput, controller mode on / off: {on / off:.2f}", flush=True)
        if RUNS:  # BENCH_FAILOVER_RUNS=0: throughput only
            failover_times(root, etcd_port)
    finally:
        etcd.terminate()
        etcd.wait(10)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
