"""NameServer: GET_ROUTEINFO_BY_TOPIC over loopback, 1 and 8 client connections (one process
each), against a real mqnamesrv with 2 registered brokers and 100 topics. Printed, never
asserted."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from bench import loadgen
from bench.bench_broker import frame
from remoting.body import RegisterBrokerBody, TopicConfig, TopicConfigSerializeWrapper
from remoting.codes import RequestCode
from remoting.command import RemotingCommand
from remoting.serde import encode_body

DURATION_S = float(os.environ.get("BENCH_SECONDS", "5"))


def register(addr: tuple[str, int], name: str, port: int) -> socket.socket:
    """Registers like a broker; the connection must stay open (closing it unregisters)."""
    topics = {
        f"Topic{i}": TopicConfig(topic_name=f"Topic{i}", read_queue_nums=8, write_queue_nums=8)
        for i in range(100)
    }
    body = encode_body(
        RegisterBrokerBody(
            topic_config_serialize_wrapper=TopicConfigSerializeWrapper(topic_config_table=topics)
        )
    )
    request = RemotingCommand.request(
        RequestCode.REGISTER_BROKER,
        {
            "brokerName": name,
            "brokerAddr": f"127.0.0.1:{port}",
            "clusterName": "Bench",
            "haServerAddr": f"127.0.0.1:{port + 1}",
            "brokerId": "0",
            "compressed": "false",
            "bodyCrc32": "0",
        },
        body,
    )
    sock = socket.create_connection(addr)
    sock.sendall(frame(request))
    code, _ = loadgen.read_frame(sock, bytearray())
    assert code == 0, code
    return sock


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="bench-ns-"))
    (root / "ns.conf").write_text(
        f"listenPort=0\nlistenHost=127.0.0.1\nkvConfigPath={root}/kv.json\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "namesrv", "-c", str(root / "ns.conf")],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        for line in proc.stdout:  # type: ignore[union-attr]
            if line.startswith("READY"):
                port = int(line.split("port=")[1].split()[0])
                break
        addr = ("127.0.0.1", port)
        brokers = [register(addr, "broker-a", 10911), register(addr, "broker-b", 10921)]
        ps = psutil.Process(proc.pid)
        frames = [
            frame(
                RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": f"Topic{i}"})
            )
            for i in range(100)
        ]
        loadgen.run(addr, [frames], duration_s=1)
        for conns in (1, 8):
            cpu0 = sum(ps.cpu_times()[:2])
            t0 = time.perf_counter()
            results = loadgen.run(addr, [frames] * conns, duration_s=DURATION_S)
            elapsed = time.perf_counter() - t0
            cpu = (sum(ps.cpu_times()[:2]) - cpu0) / elapsed * 100
            requests = sum(r.requests for r in results)
            wall = max(r.elapsed_s for r in results)
            lat = [x for r in results for x in r.latencies_us]
            print(
                f"GET_ROUTEINFO_BY_TOPIC, {conns} connection(s): {requests / wall:>9,.0f} req/s  "
                f"p50 {loadgen.percentile(lat, 0.5)} us  p99 {loadgen.percentile(lat, 0.99)} us  "
                f"namesrv CPU {cpu:.0f}%  errors {sum(r.errors for r in results)}",
                flush=True,
            )
        for sock in brokers:
            sock.close()
    finally:
        proc.terminate()
        proc.wait(30)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
