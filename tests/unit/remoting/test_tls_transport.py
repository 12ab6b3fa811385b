"""TLS on the Trio transport over real loopback sockets: the three server modes, client
certificates, the client's verification of the server, big and pipelined replies, and what a
certificate file that cannot be used says. Servers run with their fast paths on (the selector,
and the sender thread when built): plain connections keep them, TLS ones must not touch them."""

from __future__ import annotations

import logging
import ssl
from pathlib import Path

import attrs
import pytest
import trio
import trio.testing

from remoting.client import RemotingClient
from remoting.command import RemotingCommand
from remoting.connection import Connection
from remoting.errors import RemotingConnectError
from remoting.server import RemotingServer
from remoting.settings import ConfigError
from remoting.tls import TlsServer, client_context, server_context
from remoting.tls_config import TlsKeys, TlsMode
from remoting.tls_connection import StreamWrites
from remoting.writes import WRITE_HIGH_WATER
from tests.kits.clikit import echoed
from tests.kits.tlskit import KEY_PASSWORD, Certs

ECHO = 1001
TIMEOUT_S = 5.0


def echo(connection: Connection, request: RemotingCommand) -> RemotingCommand:
    fields = {"secure": str(connection.secure).lower(), "v": request.ext("v", "")}
    return request.make_response(ext_fields=fields, body=request.body)


def server_keys(certs: Certs, **more: object) -> TlsKeys:
    return TlsKeys(
        tls_server_cert_path=certs.server_cert, tls_server_key_path=certs.server_key, **more
    )


def requiring_client_certs(certs: Certs) -> TlsKeys:
    return server_keys(
        certs, tls_server_need_client_auth="require", tls_server_trust_cert_path=certs.ca
    )


def client_keys(certs: Certs, *, cert: bool = False, stranger: bool = False, **more) -> TlsKeys:
    pair: dict[str, object] = {}
    if cert:
        pair = {"tls_client_cert_path": certs.client_cert, "tls_client_key_path": certs.client_key}
    if stranger:
        pair = {
            "tls_client_cert_path": certs.stranger_cert,
            "tls_client_key_path": certs.stranger_key,
        }
    return TlsKeys(**pair, **more)  # type: ignore[arg-type]


async def serve(nursery: trio.Nursery, keys: TlsKeys | None, mode: TlsMode) -> str:
    tls = TlsServer(mode, server_context(keys)) if keys is not None else None
    server = RemotingServer("127.0.0.1", 0, processors={ECHO: echo}, tls=tls)
    port = await nursery.start(server.run)
    return f"127.0.0.1:{port}"


async def ask(addr: str, context: ssl.SSLContext | None, body: bytes = b"hi") -> RemotingCommand:
    async with RemotingClient.open(ssl_context=context) as client:
        with trio.fail_after(TIMEOUT_S):
            request = RemotingCommand.request(ECHO, {"v": "1"}, body)
            return await client.invoke(addr, request, TIMEOUT_S)


async def refused(addr: str, context: ssl.SSLContext | None) -> str:
    async with RemotingClient.open(ssl_context=context) as client:
        with pytest.raises(RemotingConnectError) as failed, trio.fail_after(TIMEOUT_S):
            await client.invoke(addr, RemotingCommand.request(ECHO, {}), TIMEOUT_S)
    return str(failed.value)


async def test_permissive_serves_tls_and_plain_clients_on_one_port(certs: Certs) -> None:
    async with trio.open_nursery() as nursery:
        addr = await serve(nursery, server_keys(certs), TlsMode.permissive)
        secured = await ask(addr, client_context())
        plain = await ask(addr, None)
        assert (secured.code, secured.ext("secure"), secured.body) == (0, "true", b"hi")
        assert (plain.code, plain.ext("secure"), plain.body) == (0, "false", b"hi")
        nursery.cancel_scope.cancel()


async def test_enforcing_closes_plain_connections_and_says_why(certs: Certs, caplog) -> None:
    async with trio.open_nursery() as nursery:
        addr = await serve(nursery, server_keys(certs), TlsMode.enforcing)
        with caplog.at_level(logging.WARNING, logger="remoting.tls"):
            reason = await refused(addr, None)
        assert "closed" in reason
        assert "a plain connection on a TLS-only port (tls.server.mode=enforcing)" in caplog.text
        assert (await ask(addr, client_context())).ext("secure") == "true"
        nursery.cancel_scope.cancel()


async def test_a_server_without_tls_refuses_a_handshake_and_says_why(caplog) -> None:
    async with trio.open_nursery() as nursery:
        addr = await serve(nursery, None, TlsMode.disabled)
        with caplog.at_level(logging.WARNING, logger="remoting.connection"):
            reason = await refused(addr, client_context())
        assert "TLS handshake failed" in reason
        assert "a TLS handshake on a port without TLS (tls.server.mode=disabled)" in caplog.text
        assert (await ask(addr, None)).code == 0
        nursery.cancel_scope.cancel()


async def test_required_client_certificates_are_checked_against_the_ca(certs: Certs) -> None:
    async with trio.open_nursery() as nursery:
        addr = await serve(nursery, requiring_client_certs(certs), TlsMode.enforcing)
        await refused(addr, client_context(client_keys(certs)))  # none presented
        await refused(addr, client_context(client_keys(certs, stranger=True)))  # another CA's
        served = await ask(addr, client_context(client_keys(certs, cert=True)))
        assert served.ext("secure") == "true"
        nursery.cancel_scope.cancel()


async def test_optional_client_certificates_may_be_absent_but_not_wrong(certs: Certs) -> None:
    keys = attrs.evolve(requiring_client_certs(certs), tls_server_need_client_auth="Optional")
    async with trio.open_nursery() as nursery:
        addr = await serve(nursery, keys, TlsMode.enforcing)
        assert (await ask(addr, client_context(client_keys(certs)))).code == 0
        await refused(addr, client_context(client_keys(certs, stranger=True)))
        nursery.cancel_scope.cancel()


async def test_the_client_verifies_the_server_only_when_asked_as_java_s(certs: Certs) -> None:
    other_ca = certs.stranger_cert.with_name("other-ca.pem")
    verify = {"tls_test_mode_enable": False, "tls_client_auth_server": True}
    async with trio.open_nursery() as nursery:
        addr = await serve(nursery, server_keys(certs), TlsMode.enforcing)
        trusting = client_keys(certs, tls_client_trust_cert_path=certs.ca, **verify)
        assert (await ask(addr, client_context(trusting))).code == 0
        wrong = client_keys(certs, tls_client_trust_cert_path=other_ca, **verify)
        assert "certificate verify failed" in await refused(addr, client_context(wrong))
        # test mode (Java's default) and authServer=false both trust any server
        for keys in (client_keys(certs, tls_client_trust_cert_path=other_ca), TlsKeys()):
            assert (await ask(addr, client_context(keys))).code == 0
        nursery.cancel_scope.cancel()


async def test_big_and_pipelined_replies_arrive_whole(certs: Certs) -> None:
    bodies = [bytes([i]) * size for i, size in enumerate((0, 1, 16_383, 16_385, 3 << 20))]
    async with trio.open_nursery() as nursery:
        addr = await serve(nursery, server_keys(certs), TlsMode.enforcing)
        async with RemotingClient.open(ssl_context=client_context()) as client:
            replies: dict[int, RemotingCommand] = {}

            async def one(i: int, body: bytes) -> None:
                request = RemotingCommand.request(ECHO, {"v": str(i)}, body)
                replies[i] = await client.invoke(addr, request, TIMEOUT_S)

            with trio.fail_after(TIMEOUT_S * 2):
                async with trio.open_nursery() as calls:
                    for i, body in enumerate(bodies * 4):
                        calls.start_soon(one, i, body)
        assert len(replies) == len(bodies) * 4
        for i, reply in replies.items():
            assert reply.ext("v") == str(i) and reply.body == bodies[i % len(bodies)]
        nursery.cancel_scope.cancel()


async def test_stream_writes_hold_reading_while_the_peer_does_not_read() -> None:
    ours, theirs = trio.testing.memory_stream_pair()
    errors: list[str] = []
    writes = StreamWrites(ours, errors.append, lambda: None)  # type: ignore[arg-type]
    chunk = b"x" * (1 << 20)
    for _ in range(WRITE_HIGH_WATER // len(chunk) + 1):
        writes.queue([chunk])
    assert not writes.drained.is_set()  # the reader pauses here
    async with trio.open_nursery() as nursery:
        nursery.start_soon(writes.run)
        writes.flush()
        received = 0
        with trio.fail_after(TIMEOUT_S):
            while received < writes.queued or not writes.drained.is_set():
                received += len(await theirs.receive_some(1 << 20))
            await writes.drained.wait()
        assert writes.queued == 0 and not errors
        nursery.cancel_scope.cancel()


def test_a_server_needs_a_certificate_and_a_key_that_load(certs: Certs, tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as refused:
        server_context(TlsKeys())
    assert "tls.server.certPath and tls.server.keyPath" in str(refused.value)
    missing = tmp_path / "nope.pem"
    with pytest.raises(ConfigError) as refused:
        server_context(attrs.evolve(server_keys(certs), tls_server_cert_path=missing))
    assert echoed("tls.server.certPath", missing) in str(refused.value)
    assert "No such file" in str(refused.value)
    with pytest.raises(ConfigError) as refused:  # the client's key with the server's cert
        server_context(attrs.evolve(server_keys(certs), tls_server_key_path=certs.client_key))
    assert "cannot load them" in str(refused.value)
    with pytest.raises(ConfigError) as refused:
        keys = server_keys(certs, tls_server_need_client_auth="require")
        server_context(attrs.evolve(keys, tls_server_trust_cert_path=certs.server_key))
    assert "tls.server.trustCertPath" in str(refused.value)


def test_an_encrypted_key_needs_its_password(certs: Certs) -> None:
    keys = attrs.evolve(server_keys(certs), tls_server_key_path=certs.server_key_encrypted)
    server_context(attrs.evolve(keys, tls_server_key_password=KEY_PASSWORD))
    for password in ("wrong", None):  # None: refused, never a prompt on the terminal
        with pytest.raises(ConfigError) as refused:
            server_context(attrs.evolve(keys, tls_server_key_password=password))
        assert "tls.server.keyPassword" in str(refused.value)
        assert "wrong" not in str(refused.value)


def test_a_client_certificate_needs_its_key(certs: Certs) -> None:
    with pytest.raises(ConfigError) as refused:
        client_context(TlsKeys(tls_client_cert_path=certs.client_cert))
    assert "tls.client.certPath and tls.client.keyPath must be set together" in str(refused.value)
