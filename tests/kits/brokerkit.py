"""Starting real ``mqbroker`` processes and speaking to them the way clients do: raw
RemotingCommands over TCP, so the tests pin the wire behaviour, not a client library's."""

from __future__ import annotations

import socket
import uuid
from pathlib import Path

import trio

from remoting import message as codec
from remoting import properties
from remoting.body import KVTable, TopicRouteData
from remoting.client import RemotingClient
from remoting.codes import RequestCode
from remoting.command import RemotingCommand, decode_command
from remoting.frame import FrameDecoder
from remoting.headers import PullMessageRequestHeader, SendMessageRequestHeaderV2
from remoting.serde import decode_body, encode_header_fields
from tests.harness import (
    ProcessPool,
    ServerProcess,
    ServerProcessError,
    free_port_block,
    python_module,
)

TIMEOUT_S = 10.0


def read_replies(sock: socket.socket, decoder: FrameDecoder, count: int) -> list[RemotingCommand]:
    """The next ``count`` commands on a blocking client socket, through the connection's own
    ``decoder`` (bytes of a later frame stay in it for the next call)."""
    replies: list[RemotingCommand] = []
    while len(replies) < count:
        data = sock.recv(65536)
        assert data, "the broker closed the connection"
        decoder.receive_data(data)
        replies += [decode_command(f) for f in decoder.frames()]
    return replies


# Confs whose ports broker_conf chose: start_broker may move them when the block was taken.
_MOVABLE: set[Path] = set()
_PORT_RETRIES = 5


def broker_conf(tmp_path: Path, name: str = "broker-a", **overrides: object) -> Path:
    """A broker.conf for a test broker on free ports (listenPort - 2 is the VIP port)."""
    base = free_port_block(4)
    values: dict[str, object] = {
        "brokerClusterName": "TestCluster",
        "brokerName": name,
        "brokerId": 0,
        "brokerIP1": "127.0.0.1",
        "listenPort": base + 2,
        "haListenPort": base + 3,
        "storePathRootDir": tmp_path / f"store-{name}-{overrides.get('brokerId', 0)}",
        "mappedFileSizeCommitLog": 16 * 1024 * 1024,
        "mappedFileSizeConsumeQueue": 6000 * 20,
        # RocketMQ's index file is 420 MB, its 20 MB of hash slots allocated up front: a suite
        # starting ~100 brokers would need ~2 GB of disk. 4 MB indexes the same way.
        "maxHashSlotNum": 50_000,
        "maxIndexNum": 200_000,
        "flushConsumerOffsetInterval": 1000,
        # a slave copies topics and offsets every 0.5 s, not 10: tests wait for that copy
        "slaveSynchronizeInterval": 500,
    }
    values.update(overrides)
    path = tmp_path / f"{name}-{values['brokerId']}.conf"
    path.write_text("".join(f"{k}={v}\n" for k, v in values.items()))
    if "listenPort" not in overrides and "haListenPort" not in overrides:
        _MOVABLE.add(path)
    return path


def start_broker(
    processes: ProcessPool, conf: Path, name: str = "broker", *extra: str
) -> ServerProcess:
    """Start ``mqbroker -c conf``. A broker cannot bind port 0 (its VIP and HA ports are
    listenPort - 2 and + 1, as in RocketMQ), so broker_conf probes a free block and the broker
    binds it later: another test or another suite on the machine may take it in between. When
    the broker then exits saying the address is in use, the conf gets a new block and the broker
    starts again; a test never sees the race (tests/README.md, "Ports")."""
    argv = python_module("broker", "-c", str(conf), *extra)
    for attempt in range(_PORT_RETRIES):
        try:
            return processes.start(name, argv)
        except ServerProcessError as exc:
            if conf not in _MOVABLE or not _port_taken(exc) or attempt == _PORT_RETRIES - 1:
                raise
            _move_ports(conf)
    raise AssertionError("unreachable")


def _port_taken(exc: ServerProcessError) -> bool:
    return "cannot start" in str(exc) and "in use" in str(exc)


def _move_ports(conf: Path) -> None:
    base = free_port_block(4)
    changes = {"listenPort": str(base + 2), "haListenPort": str(base + 3)}
    conf.write_text(properties.with_changes(conf.read_text(), changes))


def start_cluster(
    processes: ProcessPool, root: Path, **broker_overrides: object
) -> tuple[ServerProcess, ServerProcess]:
    """A NameServer and one master registered with it: (namesrv, broker)."""
    ns = start_namesrv(processes, root)
    return ns, start_broker(processes, broker_conf(root, namesrvAddr=ns.addr, **broker_overrides))


def send_request(
    topic: str,
    body: bytes,
    *,
    tags: str | None = None,
    keys: str | None = None,
    queue_id: int = 0,
    group: str = "PG",
    properties: dict[str, str] | None = None,
    code: int = RequestCode.SEND_MESSAGE_V2,
    batch: bool = False,
    reconsume_times: int | None = None,
    max_reconsume_times: int | None = None,
) -> RemotingCommand:
    props = {"UNIQ_KEY": uuid.uuid4().hex.upper(), "WAIT": "true"}
    if tags:
        props["TAGS"] = tags
    if keys:
        props["KEYS"] = keys
    props.update(properties or {})
    header = SendMessageRequestHeaderV2(
        a=group,
        b=topic,
        c="TBW102",
        d=4,
        e=queue_id,
        f=0,
        g=1_700_000_000_000,
        h=0,
        i=codec.properties_to_string(props),
        j=reconsume_times,
        l=max_reconsume_times,
        m=batch,
    )
    fields = encode_header_fields(header)
    if code == RequestCode.SEND_MESSAGE:
        fields = encode_header_fields(header.to_v1())
    return RemotingCommand.request(code, fields, body)


def pull_request(
    topic: str,
    queue_id: int,
    offset: int,
    *,
    group: str = "CG",
    max_nums: int = 32,
    subscription: str = "*",
    suspend_ms: int = 0,
    commit_offset: int = 0,
    expression_type: str | None = None,
) -> RemotingCommand:
    sys_flag = 0x4 | (0x2 if suspend_ms else 0) | (0x1 if commit_offset else 0)
    header = PullMessageRequestHeader(
        consumer_group=group,
        topic=topic,
        queue_id=queue_id,
        queue_offset=offset,
        max_msg_nums=max_nums,
        sys_flag=sys_flag,
        commit_offset=commit_offset,
        suspend_timeout_millis=suspend_ms,
        sub_version=0,
        subscription=subscription,
        expression_type=expression_type,
    )
    return RemotingCommand.request(RequestCode.PULL_MESSAGE, encode_header_fields(header))


async def call(
    client: RemotingClient, addr: str, request: RemotingCommand, timeout_s: float = TIMEOUT_S
) -> RemotingCommand:
    return await client.invoke(addr, request, timeout_s)


async def pull_all(
    client: RemotingClient, addr: str, topic: str, queue_id: int, **kwargs: object
) -> list[codec.MessageExt]:
    """Every message of a queue from offset 0, following nextBeginOffset."""
    out: list[codec.MessageExt] = []
    offset = 0
    while True:
        response = await call(client, addr, pull_request(topic, queue_id, offset, **kwargs))
        if response.code != 0:
            return out
        out += codec.decode_messages(response.body)
        offset = int(response.ext("nextBeginOffset"))


async def wait_until_runtime_info(
    client: RemotingClient, addr: str, key: str, value: str, timeout_s: float = 10
) -> None:
    """Poll GET_BROKER_RUNTIME_INFO until its ``key`` reads ``value`` (bounded): how a test
    sees a broker's state move, e.g. held pulls (pullHeldCount) or waiting pops
    (popPollingCount)."""
    with trio.fail_after(timeout_s):
        while True:
            info = await call(
                client, addr, RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO)
            )
            if decode_body(KVTable, info.body).table.get(key) == value:
                return
            await trio.sleep(0.02)


def start_namesrv(
    processes: ProcessPool, tmp_path: Path, name: str = "namesrv", **overrides: object
) -> ServerProcess:
    values: dict[str, object] = {
        "listenPort": 0,
        "listenHost": "127.0.0.1",
        "kvConfigPath": tmp_path / f"{name}-kv" / "kvConfig.json",
    }
    values.update(overrides)
    conf = tmp_path / f"{name}.conf"
    conf.write_text("".join(f"{k}={v}\n" for k, v in values.items()))
    return processes.start(name, python_module("namesrv", "-c", str(conf)))


def route_request(topic: str) -> RemotingCommand:
    return RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})


async def wait_for_route(client, addr, topic, predicate) -> TopicRouteData:
    """Poll the NameServer (bounded) until the topic's route satisfies ``predicate``."""
    with trio.fail_after(20):
        while True:
            response = await call(client, addr, route_request(topic))
            route = decode_body(TopicRouteData, response.body) if response.code == 0 else None
            if predicate(route):
                return route
            await trio.sleep(0.05)
