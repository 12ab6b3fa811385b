"""TLS on mqproxy's gRPC port (RocketMQ's tls.* keys): the SDK with tls_enable=True, trusting
our test CA, sends through it; a plaintext SDK does not get in; permissive is refused at start
in one line (grpcio serves one or the other on a port)."""

from __future__ import annotations

import json
import subprocess

import pytest

from client.admin import AdminClient
from remoting.body import TopicConfig
from remoting.tls import client_context
from tests.harness import ProcessPool, python_module
from tests.integration.proxy.proxykit import create_topic, run_sdk, start_proxy
from tests.kits.brokerkit import broker_conf, start_broker, start_namesrv
from tests.kits.tlskit import server_keys


@pytest.mark.slow  # its own proxy and two SDK runs (~7 s); permissive's refusal stays default
async def test_sdk_over_tls(proxy_cluster, certs, tmp_path) -> None:
    ns, _, _ = proxy_cluster
    pool = ProcessPool(tmp_path / "logs")
    try:
        proxy = start_proxy(
            pool, tmp_path, ns.addr, **{k: str(v) for k, v in server_keys(certs).items()}
        )
        await create_topic(ns.addr, "TlsT")
        job = {
            "op": "send",
            "endpoints": f"127.0.0.1:{proxy.port}",
            "topic": "TlsT",
            "mode": "sync",
            "timeout": 5,
            "messages": [{"body": "secret"}],
        }
        # grpc's default roots: the SDK has no option of its own for a CA
        trusted = {"GRPC_DEFAULT_SSL_ROOTS_FILE_PATH": str(certs.ca)}
        over_tls = await run_sdk({**job, "tls": True}, trusted)
        assert over_tls[0]["ok"], over_tls
        plaintext = await run_sdk(job)
        assert not plaintext[0]["ok"]
    finally:
        pool.stop_all()


def test_permissive_is_refused_in_one_line(certs, tmp_path) -> None:
    conf = tmp_path / "rmq-proxy.json"
    keys = {k: str(v) for k, v in server_keys(certs, mode="permissive").items()}
    conf.write_text(json.dumps({"namesrvAddr": "127.0.0.1:9876", **keys}))
    done = subprocess.run(
        python_module("proxy", "-pc", str(conf)), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "mqproxy: tls.server.mode=permissive is not available on the gRPC port (TLS and "
        "plaintext on one port): use enforcing or disabled"
    ]


@pytest.mark.slow  # its own TLS NameServer and broker; the TLS client is tested in remoting
async def test_proxy_reaches_tls_only_brokers_with_tls_enable(processes, certs, tmp_path) -> None:
    """tls.enable=true: the proxy's own remoting connections (NameServer, broker) are TLS."""
    ns = start_namesrv(processes, tmp_path, **server_keys(certs))
    start_broker(processes, broker_conf(tmp_path, namesrvAddr=ns.addr, **server_keys(certs)))
    proxy = start_proxy(processes, tmp_path, ns.addr, **{"tls.enable": "true"})
    async with AdminClient.open(ns.addr, ssl_context=client_context()) as admin:
        config = TopicConfig(topic_name="ViaTls", read_queue_nums=2, write_queue_nums=2)
        for addr in (await admin.masters("TestCluster")).values():
            await admin.create_topic(addr, config)
    sent = await run_sdk(
        {
            "op": "send",
            "endpoints": f"127.0.0.1:{proxy.port}",
            "topic": "ViaTls",
            "mode": "sync",
            "messages": [{"body": "over tls"}],
        }
    )
    assert sent[0]["ok"], sent
