"""mqproxy's cost: the official RocketMQ 5 Python SDK (rocketmq-python-client, through mqproxy)
next to our 4.x client (direct to the broker), same run, same NameServer + broker, rounds
alternated: 1 KiB sync sends from one sender, the SDK's async sends, and receive+ack (the
SDK's SimpleConsumer over pop vs our push consumer over pull). Each figure with the CPU the
proxy and the broker spent per message (psutil, whole processes). Printed, never asserted."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import trio

from client.consumer import ConsumeStatus, PushConsumer
from client.message import Message
from client.producer import Producer
from remoting.body import ConsumeFromWhere

REPO = Path(__file__).resolve().parents[1]
SDK = REPO / ".venv-sdk5" / "bin" / "python"
DRIVER = REPO / "tests" / "integration" / "proxy" / "sdk5_driver.py"
COUNT = int(os.environ.get("BENCH_PROXY_MESSAGES", "3000"))
ROUNDS = int(os.environ.get("BENCH_PROXY_ROUNDS", "2"))
BODY = b"x" * 1024


def start(argv: list[str]) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, cwd=REPO)
    for line in proc.stdout:  # type: ignore[union-attr]
        if line.startswith("READY"):
            return proc, f"127.0.0.1:{line.split('port=')[1].split()[0]}"
    raise RuntimeError(f"{argv} did not start")


def cluster(root: Path) -> tuple[list[subprocess.Popen], str, str]:
    (root / "ns.conf").write_text(
        f"listenPort=0\nlistenHost=127.0.0.1\nkvConfigPath={root}/kv.json\n"
    )
    ns, ns_addr = start([sys.executable, "-m", "namesrv", "-c", str(root / "ns.conf")])
    (root / "broker.conf").write_text(
        f"brokerName=bench\nbrokerIP1=127.0.0.1\nlistenPort=26921\nnamesrvAddr={ns_addr}\n"
        f"storePathRootDir={root}/store\nmappedFileSizeCommitLog={256 * 1024 * 1024}\n"
    )
    broker, _ = start(
        [sys.executable, "-m", "broker", "-c", str(root / "broker.conf"), "--log-level", "WARNING"]
    )
    (root / "rmq-proxy.json").write_text(
        json.dumps({"namesrvAddr": ns_addr, "grpcServerPort": 0, "grpcServerHost": "127.0.0.1"})
    )
    proxy, proxy_addr = start(
        [
            sys.executable,
            "-m",
            "proxy",
            "-pc",
            str(root / "rmq-proxy.json"),
            "--log-level",
            "WARNING",
        ]
    )
    return [proxy, broker, ns], ns_addr, proxy_addr


class Cpu:
    """CPU seconds (user + system) the proxy and the broker spend between start and stop."""

    def __init__(self, procs: dict[str, subprocess.Popen]) -> None:
        self.procs = {name: psutil.Process(p.pid) for name, p in procs.items()}

    def sample(self) -> dict[str, float]:
        return {name: sum(p.cpu_times()[:2]) for name, p in self.procs.items()}


def line(label: str, count: int, seconds: float, cpu: dict[str, float]) -> float:
    rate = count / seconds
    per = "  ".join(f"{name} {secs / count * 1e6:,.0f} us/msg" for name, secs in cpu.items())
    print(f"{label:<46} {rate:>8,.0f} msg/s   {per}", flush=True)
    return rate


def sdk(job: dict) -> float:
    out = subprocess.run([str(SDK), str(DRIVER), json.dumps(job)], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"the SDK driver failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])["seconds"]


async def ours_send(ns: str, topic: str) -> float:
    async with Producer.open(ns, "BenchPG") as producer:
        await producer.send(Message(topic, BODY))
        started = time.perf_counter()
        for _ in range(COUNT):
            await producer.send(Message(topic, BODY))
        return time.perf_counter() - started


async def ours_consume(ns: str, topic: str, group: str) -> float:
    done = trio.Event()
    seen = 0
    started = time.perf_counter()

    def listener(msgs) -> ConsumeStatus:
        nonlocal seen
        seen += len(msgs)
        if seen >= COUNT:
            done.set()
        return ConsumeStatus.CONSUME_SUCCESS

    async with PushConsumer.open(
        ns,
        group,
        listener,
        {topic: "*"},
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
    ):
        await done.wait()
        return time.perf_counter() - started


def measure(cpu: Cpu, label: str, run) -> tuple[float, dict[str, float]]:
    before = cpu.sample()
    try:
        seconds = run()
    except RuntimeError as exc:  # an SDK run that failed (e.g. timeouts on a loaded machine)
        print(f"{label:<46} failed: {str(exc)[-300:]}", flush=True)
        return 0.0, {}
    after = cpu.sample()
    used = {k: after[k] - before[k] for k in before}
    return line(label, COUNT, seconds, used), used


def update_topic(ns: str, topic: str) -> None:
    argv = ["-m", "client.mqadmin", "updateTopic", "-n", ns, "-c", "DefaultCluster", "-t", topic]
    subprocess.run([sys.executable, *argv], capture_output=True, check=True)


def main() -> None:
    if not SDK.exists():
        print(f"skipped: {SDK} missing (make install creates it)")
        return
    root = Path(tempfile.mkdtemp(prefix="bench-proxy-"))
    procs, ns, proxy = cluster(root)
    try:
        cpu = Cpu({"proxy": procs[0], "broker": procs[1]})
        print(f"{COUNT:,} messages of 1 KiB per figure, {ROUNDS} rounds alternated")
        for r in range(ROUNDS):
            ours_topic, sdk_topic = f"Direct{r}", f"ViaProxy{r}"
            for topic in (ours_topic, sdk_topic):
                update_topic(ns, topic)
            measure(
                cpu, "4.x client direct: sync send", lambda t=ours_topic: trio.run(ours_send, ns, t)
            )
            measure(
                cpu,
                "5.x SDK via mqproxy: sync send",
                lambda t=sdk_topic: sdk(
                    {
                        "op": "bench_send",
                        "endpoints": proxy,
                        "topic": t,
                        "size": 1024,
                        "count": COUNT,
                        "mode": "sync",
                    }
                ),
            )
            measure(
                cpu,
                "5.x SDK via mqproxy: async send",
                lambda t=sdk_topic: sdk(
                    {
                        "op": "bench_send",
                        "endpoints": proxy,
                        "topic": t,
                        "size": 1024,
                        "count": COUNT,
                        "mode": "async",
                    }
                ),
            )
            measure(
                cpu,
                "4.x push consumer direct: consume",
                lambda t=ours_topic, g=f"Ours{r}": trio.run(ours_consume, ns, t, g),
            )

            # the SDK's group starts at the end of each queue (ConsumeInitMode.MAX): start it
            # at 0 the way an operator would, by committing offset 0 for each queue first
            async def at_zero(t=sdk_topic, g=f"Sdk{r}") -> None:
                from remoting.client import RemotingClient
                from remoting.codes import RequestCode
                from remoting.command import RemotingCommand

                async with RemotingClient.open() as client:
                    for q in range(8):
                        fields = {
                            "consumerGroup": g,
                            "topic": t,
                            "queueId": str(q),
                            "commitOffset": "0",
                        }
                        await client.invoke(
                            "127.0.0.1:26921",
                            RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, fields),
                            5,
                        )

            trio.run(at_zero)
            measure(
                cpu,
                "5.x SDK SimpleConsumer via mqproxy: receive+ack",
                lambda t=sdk_topic, g=f"Sdk{r}": sdk(
                    {
                        "op": "bench_receive",
                        "endpoints": proxy,
                        "topic": t,
                        "group": g,
                        "count": COUNT,
                    }
                ),
            )
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(30)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
