"""The broker's TLS wiring: which of its servers and connections use TLS, from its config.

- ``listenPort`` and the VIP port: ``tls.server.mode`` (remoting/tls.py).
- Its own connections to NameServers and, as a slave, to its master's remoting port (config
  sync): ``useTLS``, as RocketMQ's BrokerStartup sets NettyClientConfig.useTLS.
- The HA port and a slave's HA connection: ``haUseTLS`` (ours; RocketMQ's HA is plain). A
  master's HA port then refuses plain slaves; certificates are the ``tls.server.*`` and
  ``tls.client.*`` ones.

Certificates are loaded here, at start: a missing or bad file stops start-up naming its key.
"""

from __future__ import annotations

import logging
import ssl

import attrs

from broker.config import BrokerConfig
from remoting.tls import TlsServer, client_context, server_context
from remoting.tls_config import TlsMode, client_uses_tls, from_file, tls_keys

log = logging.getLogger(__name__)


@attrs.frozen
class BrokerTls:
    server: TlsServer | None = None  # listenPort and the VIP port
    client: ssl.SSLContext | None = None  # NameServers, a slave's sync from its master
    ha_server: TlsServer | None = None  # a master's HA port
    ha_client: ssl.SSLContext | None = None  # a slave's HA connection


def broker_tls(config: BrokerConfig, *, is_slave: bool) -> BrokerTls:
    """ConfigError (naming the key) when a certificate, key or CA file cannot be used."""
    keys = tls_keys(config)
    serves = keys.tls_server_mode is not TlsMode.disabled
    dials = client_uses_tls(keys, config.use_tls)
    ha_serves = config.ha_use_tls and not is_slave
    ha_dials = config.ha_use_tls and is_slave
    if not (serves or dials or ha_serves or ha_dials):
        return BrokerTls()
    keys = from_file(keys)
    server = server_context(keys) if serves or ha_serves else None
    client = client_context(keys) if dials or ha_dials else None
    if client is not None and not keys.verifies_server:
        log.warning(
            "TLS: this broker does not verify the certificates of the servers it connects to "
            "(tls.test.mode.enable=true or tls.client.authServer=false, RocketMQ's defaults): "
            "set tls.test.mode.enable=false, tls.client.authServer=true and "
            "tls.client.trustCertPath to verify them"
        )
    log.info(
        "TLS: tls.server.mode=%s, client certificates %s; own connections %s; HA %s",
        keys.tls_server_mode.value,
        keys.client_auth,
        "TLS" if dials else "plain",
        "TLS" if config.ha_use_tls else "plain",
    )
    return BrokerTls(
        server=TlsServer(keys.tls_server_mode, server) if serves and server else None,
        client=client if dials else None,
        ha_server=TlsServer(TlsMode.enforcing, server, "haUseTLS=true")
        if ha_serves and server
        else None,
        ha_client=client if ha_dials else None,
    )
