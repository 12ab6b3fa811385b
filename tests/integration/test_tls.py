"""TLS between real processes: NameServers and brokers with RocketMQ's tls.* keys, our client
and mqadmin over TLS, plain clients refused by enforcing servers and served by permissive ones,
client certificates required and checked, a broker registering with a TLS NameServer, and
start-up refusing TLS settings it cannot use. (HA over TLS: test_tls_ha.py.)"""

from __future__ import annotations

import os
import ssl
import subprocess
from pathlib import Path

import pytest
import trio

from client.admin import AdminClient
from client.lite_pull import LitePullConsumer
from client.message import Message
from client.producer import Producer
from remoting.client import RemotingClient
from remoting.errors import RemotingConnectError
from remoting.tls import client_context
from remoting.tls_config import TlsKeys
from tests.harness import ServerProcess, python_module
from tests.integration.brokerkit import (
    broker_conf,
    call,
    route_request,
    start_broker,
    start_namesrv,
    wait_for_route,
)
from tests.integration.hakit import wait_until
from tests.tlskit import (
    client_cert_keys,
    properties_file,
    requiring_client_certs,
    server_keys,
    verifying_keys,
)

TIMEOUT_S = 30.0


def tls_client(cert: Path, key: Path) -> ssl.SSLContext:
    """Our client's context presenting ``cert``."""
    return client_context(TlsKeys(tls_client_cert_path=cert, tls_client_key_path=key))


async def produce_and_consume(namesrv: str, context: ssl.SSLContext, topic: str) -> None:
    """20 messages through our producer, back exactly once through our lite pull consumer."""
    async with Producer.open(namesrv, "PG-tls", ssl_context=context) as producer:
        for i in range(20):
            await producer.send(Message(topic, f"m{i}".encode(), keys=f"k{i}"))
    async with LitePullConsumer.open(namesrv, "CG-tls", ssl_context=context) as consumer:
        await consumer.assign(await consumer.fetch_queues(topic))
        got: list[str] = []
        with trio.fail_after(TIMEOUT_S):
            while len(got) < 20:
                got += [m.keys for m in await consumer.poll(timeout_s=1)]
    assert sorted(got) == sorted(f"k{i}" for i in range(20))


async def plain_refused(addr: str, context: ssl.SSLContext | None = None) -> str:
    async with RemotingClient.open(ssl_context=context) as client:
        with pytest.raises(RemotingConnectError) as failed, trio.fail_after(TIMEOUT_S):
            await call(client, addr, route_request("TBW102"))
    return str(failed.value)


async def logged(server: ServerProcess, text: str) -> None:
    """The server's log has ``text`` (written by another process: polled, with a deadline)."""

    async def found() -> bool:
        return text in server.log_path.read_text()

    await wait_until(found, TIMEOUT_S, f"{text!r} in {server.name}'s log")


def mqadmin(namesrv: str, *args: str, env: dict[str, str] | None = None):
    return subprocess.run(
        python_module("client.mqadmin", *args, "-n", namesrv),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, **(env or {})},
    )


@pytest.fixture
def enforcing(processes, tmp_path, certs):
    ns = start_namesrv(processes, tmp_path, **server_keys(certs))
    # useTLS unset: tls.server.mode=enforcing puts the broker's registration on TLS (Java's)
    conf = broker_conf(tmp_path, namesrvAddr=ns.addr, **server_keys(certs))
    return ns, start_broker(processes, conf)


async def test_enforcing_serves_our_client_over_tls_and_refuses_plain(enforcing, certs) -> None:
    ns, broker = enforcing
    async with RemotingClient.open(ssl_context=client_context()) as client:
        # the broker registered with the TLS-only NameServer: its route is there
        await wait_for_route(client, ns.addr, "TBW102", bool)
    await produce_and_consume(ns.addr, client_context(), "TlsTopic")
    for server in (ns, broker):
        assert "closed" in await plain_refused(server.addr)
        await logged(server, "a plain connection on a TLS-only port (tls.server.mode=enforcing)")


async def test_mqadmin_over_tls(enforcing, certs, tmp_path) -> None:
    ns, broker = enforcing
    done = await trio.to_thread.run_sync(mqadmin, ns.addr, "clusterList", "--json", "--tls")
    assert done.returncode == 0, done.stderr
    assert broker.addr in done.stdout
    done = await trio.to_thread.run_sync(
        lambda: mqadmin(ns.addr, "clusterList", env={"ROCKETMQ_TLS_ENABLE": "true"})
    )
    assert done.returncode == 0, done.stderr
    plain = await trio.to_thread.run_sync(mqadmin, ns.addr, "clusterList")
    assert plain.returncode == 1 and len(plain.stderr.strip().splitlines()) == 1
    assert "--tls" in plain.stderr  # the hint: the server may take only TLS
    # Java's -Dtls.config.file: a client that verifies the server, against the right CA or not
    good = properties_file(tmp_path / "good.properties", verifying_keys(certs))
    other_ca = certs.stranger_cert.with_name("other-ca.pem")
    bad = properties_file(tmp_path / "bad.properties", verifying_keys(certs, other_ca))
    done = await trio.to_thread.run_sync(mqadmin, ns.addr, "clusterList", "--tls-config", str(good))
    assert done.returncode == 0, done.stderr
    done = await trio.to_thread.run_sync(mqadmin, ns.addr, "clusterList", "--tls-config", str(bad))
    assert done.returncode == 1 and "certificate verify failed" in done.stderr
    assert "Traceback" not in done.stderr


async def test_permissive_serves_plain_and_tls_clients(processes, tmp_path, certs) -> None:
    ns = start_namesrv(processes, tmp_path, **server_keys(certs, "permissive"))
    conf = broker_conf(
        tmp_path, namesrvAddr=ns.addr, useTLS="true", **server_keys(certs, "permissive")
    )
    start_broker(processes, conf)
    async with RemotingClient.open() as client:
        await wait_for_route(client, ns.addr, "TBW102", bool)  # registered over TLS
    await produce_and_consume(ns.addr, client_context(), "TlsMixed")
    async with Producer.open(ns.addr, "PG-plain") as producer:  # plain, same ports
        result = await producer.send(Message("TlsMixed", b"plain", keys="plain"))
    assert result.status.name == "SEND_OK"


async def test_client_certificates_are_required_and_checked(processes, tmp_path, certs) -> None:
    # Certificates as Java takes them: in the file tls.config.file names.
    keys = {**server_keys(certs), **requiring_client_certs(certs), **client_cert_keys(certs)}
    del keys["tls.server.mode"]  # never read from the file, as in Java
    tls_file = properties_file(tmp_path / "tls.properties", keys)
    common = {"tls.server.mode": "enforcing", "tls.config.file": tls_file}
    ns = start_namesrv(processes, tmp_path, **common)
    broker = start_broker(processes, broker_conf(tmp_path, namesrvAddr=ns.addr, **common))
    with_cert = tls_client(certs.client_cert, certs.client_key)
    async with RemotingClient.open(ssl_context=with_cert) as client:
        await wait_for_route(client, ns.addr, "TBW102", bool)  # the broker's certificate passed
    async with AdminClient.open(ns.addr, ssl_context=with_cert) as admin:
        assert broker.addr in (await admin.masters()).values()  # the NameServer
        assert (await admin.runtime_info(broker.addr))["brokerRole"] == "ASYNC_MASTER"
    for context in (client_context(), tls_client(certs.stranger_cert, certs.stranger_key)):
        for server in (ns, broker):
            await plain_refused(server.addr, context)
    await logged(broker, "TLS handshake failed, closing: PEER_DID_NOT_RETURN_A_CERTIFICATE")
    await logged(broker, "TLS handshake failed, closing: certificate verify failed")


@pytest.mark.parametrize(
    ("keys", "expected"),
    [
        ({"tls.server.mode": "enforcing"}, "needs tls.server.certPath and tls.server.keyPath"),
        (
            {"tls.server.mode": "permissive", "tls.server.certPath": "/nonexistent/server.pem",
             "tls.server.keyPath": "/nonexistent/server.key"},
            "bad value for tls.server.certPath='/nonexistent/server.pem': No such file",
        ),
        ({"tls.server.mode": "strict"}, "bad value for tls.server.mode='strict'"),
        ({"useTLS": "true", "tls.config.file": "/nonexistent/tls.properties"}, "no such file"),
    ],
    ids=["no-certificate", "missing-file", "bad-mode", "missing-tls-config-file"],
)  # fmt: skip
def test_start_up_refuses_tls_settings_it_cannot_use(tmp_path, keys, expected) -> None:
    conf = broker_conf(tmp_path, **keys)
    done = subprocess.run(
        python_module("broker", "-c", str(conf)), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("mqbroker: ") and expected in last, done.stderr
    assert "Traceback" not in done.stderr
