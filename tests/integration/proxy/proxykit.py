"""mqproxy in tests: starting it before a NameServer + broker, running the official RocketMQ 5
Python SDK (its own environment, .venv-sdk5) as a child process, and raw gRPC calls for the
requests no well-behaved SDK sends."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

import grpc
import pytest
import trio

from client.admin import AdminClient
from proxy.apis import definition_pb2 as pb
from proxy.apis import service_pb2_grpc
from remoting.body import TopicConfig
from remoting.client import RemotingClient
from remoting.codes import RequestCode
from remoting.command import RemotingCommand
from tests.harness import ProcessPool, ServerProcess, python_module
from tests.kits.brokerkit import call, wait_for_route

ROOT = Path(__file__).resolve().parents[3]
SDK_PYTHON = ROOT / ".venv-sdk5" / "bin" / "python"
DRIVER = Path(__file__).with_name("sdk5_driver.py")
SDK_TIMEOUT_S = 120.0
CLUSTER = "TestCluster"


def need_sdk() -> None:
    if not SDK_PYTHON.exists():
        pytest.skip(
            f"the RocketMQ 5 SDK's environment {SDK_PYTHON.parent.parent} is missing: `make install` "
            "creates it from tests/integration/proxy/sdk5-requirements.txt (PyPI)"
        )


def start_proxy(
    processes: ProcessPool, root: Path, namesrv: str, name: str = "proxy", **keys: Any
) -> ServerProcess:
    conf = root / f"{name}.json"
    values = {
        "rocketMQClusterName": CLUSTER,
        "namesrvAddr": namesrv,
        "grpcServerPort": 0,
        "grpcServerHost": "127.0.0.1",
        "proxyMode": "cluster",
        **keys,
    }
    conf.write_text(json.dumps(values))
    return processes.start(name, python_module("proxy", "-pc", str(conf)))


async def create_topic(
    namesrv: str, topic: str, queues: int = 4, message_type: str | None = None
) -> None:
    """``topic`` on every master of the cluster; ``message_type``: its 5.x message.type
    (NORMAL when none, as RocketMQ reads a topic without the attribute)."""
    attributes = f"+message.type={message_type}" if message_type else None
    async with AdminClient.open(namesrv) as admin, RemotingClient.open() as client:
        config = TopicConfig(topic_name=topic, read_queue_nums=queues, write_queue_nums=queues)
        for addr in (await admin.masters(CLUSTER)).values():
            await admin.create_topic(addr, config, attributes)
        await wait_for_route(client, namesrv, topic, bool)


async def run_sdk(job: dict[str, Any], env: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """The SDK driver's result lines for one job; its stderr is shown when it fails."""
    need_sdk()
    with trio.fail_after(SDK_TIMEOUT_S):
        done = await trio.run_process(
            [str(SDK_PYTHON), str(DRIVER), json.dumps(job)],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
            env={**os.environ, **(env or {})},
        )
    if done.returncode != 0:
        raise AssertionError(
            f"SDK driver failed ({done.returncode}):\n{done.stderr.decode()[-4000:]}"
        )
    return [json.loads(line) for line in done.stdout.decode().splitlines() if line.startswith("{")]


def stub(proxy: ServerProcess) -> service_pb2_grpc.MessagingServiceStub:
    channel = grpc.insecure_channel(proxy.addr)
    return service_pb2_grpc.MessagingServiceStub(channel)


METADATA = (("x-mq-client-id", "raw-grpc-test@1"),)


def raw_message(topic: str, body: bytes = b"raw", **system: Any) -> pb.Message:
    system.setdefault("message_id", uuid.uuid4().hex.upper())
    props = pb.SystemProperties(**system)
    return pb.Message(topic=pb.Resource(name=topic), system_properties=props, body=body)


async def in_thread(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """A blocking grpc call, off the Trio loop."""
    return await trio.to_thread.run_sync(lambda: fn(*args, timeout=30, **kwargs))


async def start_group_at_zero(broker, group: str, topic: str, queues: int = 4) -> None:
    """A new pop group starts at the end of each queue (the Proxy pops with ConsumeInitMode
    MAX); tests that want every message sent before the consumer started commit offset 0."""
    async with RemotingClient.open() as client:
        for queue_id in range(queues):
            fields = {
                "consumerGroup": group,
                "topic": topic,
                "queueId": str(queue_id),
                "commitOffset": "0",
            }
            request = RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, fields)
            response = await call(client, broker.addr, request)
            assert response.code == 0, response.remark
