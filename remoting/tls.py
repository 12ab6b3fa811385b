"""TLS for remoting and HA connections: the standard library's ``ssl`` through Trio's SSLStream.

* ``server_context`` / ``client_context`` build ``ssl.SSLContext`` objects from RocketMQ's keys
  (remoting/tls_config.py). Files that cannot be loaded stop start-up naming the key.
* ``TlsServer.accept`` decides what a freshly accepted connection is, as Netty's
  HandshakeHandler in a Java server does: it peeks at the first byte without taking it (a TLS
  ClientHello starts with 0x16, a RocketMQ frame's length or an HA report with 0x00), then hands
  back the plain stream (permissive), or the SSLStream after its handshake, or None after
  closing a connection the mode refuses. A server in ``disabled`` mode has no TlsServer and
  never peeks: its plain connections pay nothing.
* ``connect`` is the client's side: the handshake over a connected stream, within a deadline.

Plain and TLS connections part here: a plain one keeps the server's fast paths (one epoll task
reads all, a native thread writes replies on the descriptor), which cannot carry TLS; a TLS one
is a ``TlsConnection`` (remoting/tls_connection.py) with a reader task and writes through the
SSLStream.
"""

from __future__ import annotations

import logging
import socket
import ssl
from pathlib import Path

import attrs
import trio

from remoting.log_limit import log_limited, peer_warnings
from remoting.settings import ConfigError, bad_value
from remoting.tls_config import TlsKeys, TlsMode, from_file

log = logging.getLogger(__name__)

HANDSHAKE_MAGIC = 0x16  # TLS record type "handshake": the first byte of every ClientHello
HANDSHAKE_TIMEOUT_S = 10.0  # Netty's SslHandler default
MIN_VERSION = ssl.TLSVersion.TLSv1_2


# ----------------------------------------------------------------------------- contexts


def _readable(key: str, path: Path) -> None:
    try:
        with open(path, "rb"):
            pass
    except OSError as exc:
        raise bad_value(key, path, exc.strerror or str(exc)) from None


def _load_chain(
    context: ssl.SSLContext, side: str, cert: Path, key: Path, password: str | None
) -> None:
    _readable(f"tls.{side}.certPath", cert)
    _readable(f"tls.{side}.keyPath", key)
    try:
        # "" rather than None: with None, OpenSSL prompts on the terminal for an encrypted key
        context.load_cert_chain(cert, key, password or "")
    except ssl.SSLError as exc:
        raise ConfigError(
            f"tls.{side}.certPath={str(cert)!r} with tls.{side}.keyPath={str(key)!r}: "
            f"cannot load them: {_reason(exc)} (PEM certificate chain and private key "
            f"that belong together; tls.{side}.keyPassword if the key is encrypted)"
        ) from None


def _load_trust(context: ssl.SSLContext, key: str, path: Path | None, purpose: ssl.Purpose) -> None:
    if path is None:
        context.load_default_certs(purpose)
        return
    _readable(key, path)
    try:
        context.load_verify_locations(cafile=path)
    except ssl.SSLError as exc:
        raise bad_value(key, path, f"no PEM certificates in it: {_reason(exc)}") from None


def _reason(exc: ssl.SSLError) -> str:
    if isinstance(exc, ssl.SSLCertVerificationError):
        return f"certificate verify failed: {exc.verify_message}"
    return exc.reason or exc.strerror or str(exc)


def server_context(keys: TlsKeys) -> ssl.SSLContext:
    """The server side: our certificate, and client certificates asked for and verified when
    ``tls.server.need.client.auth`` is optional or require."""
    if keys.tls_server_cert_path is None or keys.tls_server_key_path is None:
        raise ConfigError(
            "TLS needs tls.server.certPath and tls.server.keyPath (PEM); this server does not "
            "make a self-signed certificate as RocketMQ's test mode does"
        )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = MIN_VERSION
    _load_chain(
        context,
        "server",
        keys.tls_server_cert_path,
        keys.tls_server_key_path,
        keys.tls_server_key_password,
    )
    auth = keys.client_auth
    if auth != "none":
        context.verify_mode = ssl.CERT_REQUIRED if auth == "require" else ssl.CERT_OPTIONAL
        _load_trust(
            context,
            "tls.server.trustCertPath",
            keys.tls_server_trust_cert_path,
            ssl.Purpose.CLIENT_AUTH,
        )
    return context


def client_context(keys: TlsKeys | None = None) -> ssl.SSLContext:
    """The client side, as Java's: the server's chain verified only outside test mode with
    ``tls.client.authServer=true`` (against ``tls.client.trustCertPath`` or the system's CAs),
    never its host name (Netty 4.1 does not either); our certificate presented when
    ``tls.client.certPath`` and ``keyPath`` name one."""
    keys = keys if keys is not None else TlsKeys()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = MIN_VERSION
    context.check_hostname = False
    if keys.verifies_server:
        _load_trust(
            context,
            "tls.client.trustCertPath",
            keys.tls_client_trust_cert_path,
            ssl.Purpose.SERVER_AUTH,
        )
    else:
        context.verify_mode = ssl.CERT_NONE
    cert, key = keys.tls_client_cert_path, keys.tls_client_key_path
    if (cert is None) != (key is None):
        raise ConfigError("tls.client.certPath and tls.client.keyPath must be set together")
    if cert is not None and key is not None:
        _load_chain(context, "client", cert, key, keys.tls_client_key_password)
    return context


# ----------------------------------------------------------------------------- server side


def tls_server(keys: TlsKeys) -> TlsServer | None:
    """A server's TLS from its keys (``tls.config.file`` read here): None when disabled."""
    if keys.tls_server_mode is TlsMode.disabled:
        return None
    keys = from_file(keys)
    log.info(
        "TLS: tls.server.mode=%s, client certificates %s",
        keys.tls_server_mode.value,
        keys.client_auth,
    )
    return TlsServer(keys.tls_server_mode, server_context(keys))


@attrs.frozen
class TlsServer:
    """How a server with TLS treats a new connection (``mode`` permissive or enforcing)."""

    mode: TlsMode
    context: ssl.SSLContext
    # what a refusal of a plain connection names as the reason
    setting: str = "tls.server.mode=enforcing"

    def __attrs_post_init__(self) -> None:
        assert self.mode is not TlsMode.disabled, "a disabled server has no TlsServer"

    async def accept(
        self, stream: trio.SocketStream, peer: str, first_byte_timeout_s: float
    ) -> trio.SocketStream | trio.SSLStream[trio.SocketStream] | None:
        """The stream to serve (plain, or TLS after its handshake), or None: the connection
        was closed (refused by the mode, a failed handshake, nothing sent in time)."""
        first = await first_byte(stream, first_byte_timeout_s)
        if first is None:
            await stream.aclose()
            return None
        if first != HANDSHAKE_MAGIC:
            if self.mode is TlsMode.permissive:
                return stream
            _warn(peer, "a plain connection on a TLS-only port (%s), closing", self.setting)
            await stream.aclose()
            return None
        secured = trio.SSLStream(stream, self.context, server_side=True)
        problem = await handshake(secured)
        if problem is not None:
            _warn(peer, "TLS handshake failed, closing: %s", problem)
            await close_quietly(secured)
            return None
        return secured


def _warn(peer: str, message: str, detail: str) -> None:
    host = peer.rpartition(":")[0]
    log_limited(log, peer_warnings, host, logging.WARNING, f"{message}: peer=%s", detail, peer)


async def first_byte(stream: trio.SocketStream, timeout_s: float) -> int | None:
    """The connection's first byte, left in the socket for whoever reads next; None when the
    peer closed or sent nothing within ``timeout_s``."""
    with trio.move_on_after(timeout_s):
        try:
            data = await stream.socket.recv(1, socket.MSG_PEEK)
        except OSError:
            return None
        return data[0] if data else None
    return None


async def handshake(stream: trio.SSLStream[trio.SocketStream]) -> str | None:
    """None once the handshake is done, else what went wrong."""
    try:
        with trio.fail_after(HANDSHAKE_TIMEOUT_S):
            await stream.do_handshake()
    except trio.TooSlowError:
        return f"no handshake within {HANDSHAKE_TIMEOUT_S:g} s"
    except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
        cause = exc.__cause__
        if isinstance(cause, ssl.SSLError):
            return _reason(cause)
        return repr(cause or exc)
    return None


async def close_quietly(stream: trio.abc.AsyncResource) -> None:
    """Close, sending TLS's close_notify if the peer takes it at once; never raises."""
    with trio.CancelScope(shield=True), trio.move_on_after(1.0):
        try:
            await stream.aclose()
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass
    if isinstance(stream, trio.SSLStream):
        # aclose timed out: still let go of the descriptor
        stream.transport_stream.socket.close()


# ----------------------------------------------------------------------------- client side


class TlsHandshakeError(OSError):
    """The server's TLS handshake failed: certificates, or a server without TLS."""


async def connect(
    stream: trio.SocketStream, context: ssl.SSLContext, host: str
) -> trio.SSLStream[trio.SocketStream]:
    """The TLS side of a connected ``stream``; TlsHandshakeError naming the cause if the
    handshake fails (the stream is closed then)."""
    secured = trio.SSLStream(stream, context, server_hostname=host)
    problem = await handshake(secured)
    if problem is not None:
        await close_quietly(secured)
        raise TlsHandshakeError(f"TLS handshake failed: {problem}")
    return secured
