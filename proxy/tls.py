"""TLS on the gRPC port and to the brokers, from RocketMQ's ``tls.*`` keys (the same keys and
checks as mqbroker and mqnamesrv: remoting/tls_config.py, remoting/tls.py).

The gRPC port serves TLS with ``tls.server.mode=enforcing`` and plaintext with ``disabled``
(our default, as for our other servers). RocketMQ's Proxy also has ``permissive``, TLS and
plaintext on one port told apart by the first bytes; grpcio's server cannot do that, so
``permissive`` is refused at start rather than quietly serving one of the two. Connections to
NameServers and brokers use TLS when ``tls.enable=true`` (the gRPC port's mode says nothing
about the brokers')."""

from __future__ import annotations

import ssl

import grpc

from remoting.settings import ConfigError
from remoting.tls import client_context, server_context
from remoting.tls_config import TlsKeys, TlsMode, from_file, tls_keys


def effective_keys(config: TlsKeys) -> TlsKeys:
    """The TLS keys with ``tls.config.file`` read over them, as the other servers do."""
    keys = tls_keys(config)
    if keys.tls_server_mode is TlsMode.disabled and keys.tls_enable is not True:
        return keys
    return from_file(keys)


def grpc_server_credentials(keys: TlsKeys) -> grpc.ServerCredentials | None:
    """None: plaintext. ConfigError names the key that cannot be used."""
    if keys.tls_server_mode is TlsMode.disabled:
        return None
    if keys.tls_server_mode is TlsMode.permissive:
        raise ConfigError(
            "tls.server.mode=permissive is not available on the gRPC port (TLS and plaintext on "
            "one port): use enforcing or disabled"
        )
    server_context(keys)  # the files readable, the key the certificate's: else the key named
    if keys.tls_server_key_password:
        raise ConfigError(
            "tls.server.keyPassword: the gRPC server takes an unencrypted PEM key "
            "(openssl pkey -in key.pem -out plain.pem)"
        )
    assert keys.tls_server_cert_path is not None and keys.tls_server_key_path is not None
    chain = (keys.tls_server_key_path.read_bytes(), keys.tls_server_cert_path.read_bytes())
    auth = keys.client_auth
    roots = None
    if auth != "none" and keys.tls_server_trust_cert_path is not None:
        roots = keys.tls_server_trust_cert_path.read_bytes()
    if auth != "none" and roots is None:
        raise ConfigError(
            "tls.server.need.client.auth needs tls.server.trustCertPath on the gRPC port "
            "(the CAs client certificates are checked against)"
        )
    return grpc.ssl_server_credentials([chain], roots, require_client_auth=auth == "require")


def remoting_context(keys: TlsKeys) -> ssl.SSLContext | None:
    """The client side towards NameServers and brokers, None for plaintext."""
    return client_context(keys) if keys.tls_enable else None
