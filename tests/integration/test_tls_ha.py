"""Replication over TLS (``haUseTLS=true``, ours: RocketMQ's HA channel is plain): a SYNC_MASTER
and its slave replicate byte for byte with client certificates both ways (and register and
sync config over TLS), and the master's HA port refuses a plain slave and a slave without a
certificate it trusts."""

from __future__ import annotations

from remoting.client import RemotingClient
from remoting.tls import client_context
from remoting.tls_config import TlsKeys
from tests.integration.brokerkit import broker_conf, call, send_request, start_broker, start_namesrv
from tests.integration.hakit import (
    commit_log_bytes,
    produce_batches,
    slaves_of,
    start_pair,
    wait_converged,
    wait_topic_on_slave,
    wait_until,
)
from tests.tlskit import (
    Certs,
    client_cert_keys,
    requiring_client_certs,
    server_keys,
    verifying_keys,
)

TIMEOUT_S = 30.0


def ha_tls(certs: Certs) -> dict[str, object]:
    """Both ends of a pair: the master's HA port wants a certificate from our CA, the slave
    presents one and checks the master's."""
    return {
        "haUseTLS": "true",
        "tls.server.certPath": certs.server_cert,
        "tls.server.keyPath": certs.server_key,
        **requiring_client_certs(certs),
        **client_cert_keys(certs),
        **verifying_keys(certs),
    }


async def wait_slave_connected(client: RemotingClient, master: str) -> None:
    async def connected() -> bool:
        return len(await slaves_of(client, master)) > 0

    await wait_until(connected, TIMEOUT_S, "a slave to connect over TLS")


async def test_a_sync_master_replicates_over_tls(processes, tmp_path, certs) -> None:
    # Every channel on TLS: registration (useTLS follows enforcing), the slave's config sync
    # from the master's remoting port, and replication (haUseTLS).
    namesrv = start_namesrv(processes, tmp_path, **server_keys(certs))
    everything = {**ha_tls(certs), "tls.server.mode": "enforcing"}
    pair = start_pair(
        processes, tmp_path, namesrv.addr, role="SYNC_MASTER", syncFlushTimeout=5000, **everything
    )
    with_cert = {"tls_client_cert_path": certs.client_cert, "tls_client_key_path": certs.client_key}
    async with RemotingClient.open(ssl_context=client_context(TlsKeys(**with_cert))) as client:
        await wait_slave_connected(client, pair.master.addr)
        # every batch is answered only once the slave acked it over the TLS channel
        await produce_batches(client, pair.master.addr, "OverTls", 20_000)
        end = await wait_converged(client, pair.master.addr, pair.slave.addr)
        assert commit_log_bytes(pair.slave_store, 0, end) == commit_log_bytes(
            pair.master_store, 0, end
        )
        [slave] = await slaves_of(client, pair.master.addr)
        assert slave["ackOffset"] == end and slave["inSync"]
        await wait_topic_on_slave(client, pair.slave.addr, "OverTls")  # the config sync


async def test_the_tls_ha_port_refuses_plain_and_unknown_slaves(processes, tmp_path, certs) -> None:
    namesrv = start_namesrv(processes, tmp_path)
    master_conf = broker_conf(
        tmp_path, namesrvAddr=namesrv.addr, brokerRole="ASYNC_MASTER", **ha_tls(certs)
    )
    master = start_broker(processes, master_conf, "master")
    plain = broker_conf(tmp_path, namesrvAddr=namesrv.addr, brokerId=1, brokerRole="SLAVE")
    start_broker(processes, plain, "plain-slave")
    stranger = {
        **ha_tls(certs),
        "tls.client.certPath": certs.stranger_cert,
        "tls.client.keyPath": certs.stranger_key,
    }
    stranger_conf = broker_conf(
        tmp_path, namesrvAddr=namesrv.addr, brokerId=2, brokerRole="SLAVE", **stranger
    )
    start_broker(processes, stranger_conf, "stranger-slave")

    async def logged(text: str) -> bool:
        return text in master.log_path.read_text()

    await wait_until(
        lambda: logged("a plain connection on a TLS-only port (haUseTLS=true)"),
        TIMEOUT_S,
        "the plain slave's refusal",
    )
    await wait_until(
        lambda: logged("TLS handshake failed, closing: certificate verify failed"),
        TIMEOUT_S,
        "the stranger slave's refusal",
    )
    async with RemotingClient.open() as client:
        response = await call(client, master.addr, send_request("Kept", b"x"))
        assert response.code == 0
        assert await slaves_of(client, master.addr) == []
