"""RocketMQ's TLS keys (4.9's TlsSystemConfig) as config fields, and where their values come from.

Java reads them from JVM system properties (``-Dtls.server.mode=enforcing``) and from the file
``tls.config.file`` names (default ``/etc/rocketmq/tls.properties``), whose values win over the
properties' except for ``tls.server.mode`` and ``tls.enable``, which only the properties set.
Our processes have no JVM: the same keys, spelled the same, go in ``broker.conf`` or
``namesrv.conf`` (``TlsKeys`` is a base of BrokerConfig and NamesrvConfig), and the file is read
as Java reads it, when TLS is used at all. Each value is typed and checked like every other key
(remoting/settings.py); a bad one in the file is refused naming the file and the key.

Where ours differs from Java (README "TLS" says so too):

- ``tls.server.mode`` defaults to ``disabled``, not ``permissive``: a server nobody configured
  for TLS does not offer it. Java's permissive default serves TLS with a self-signed
  certificate it makes at start (test mode); ours needs ``tls.server.certPath`` and
  ``tls.server.keyPath`` for any mode but disabled, and says so at start.
- ``tls.test.mode.enable`` (default true, as Java) means only that a client does not verify the
  server's certificate. Certificates that are configured are always used: Java's test mode
  ignores them (its server swaps in a self-signed one, its client presents none).
- A server that asks for client certificates (``tls.server.need.client.auth`` optional or
  require) verifies them, against ``tls.server.trustCertPath`` or the system's CAs; Java with
  ``tls.server.authClient=false`` (its default) accepts any certificate, which authenticates no
  one. Unknown ``tls.server.mode`` or ``tls.server.need.client.auth`` values are refused;
  Java falls back to permissive and none without a word.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Mapping
from pathlib import Path

import attrs

from remoting import properties
from remoting.settings import ConfigError, bad_value, keyed_fields, read_fields

log = logging.getLogger(__name__)

DEFAULT_TLS_CONFIG_FILE = Path("/etc/rocketmq/tls.properties")  # Java's default
CLIENT_AUTH = ("none", "optional", "require")
# Java reads these two from system properties only, never from tls.config.file.
NOT_FROM_FILE = frozenset({"tls.server.mode", "tls.enable"})


class TlsMode(enum.Enum):
    """Java's TlsMode; members are named as the key's values are spelled."""

    disabled = "disabled"  # a TLS handshake is refused (the connection closed)
    permissive = "permissive"  # TLS and plain clients on the same port, told by the first byte
    enforcing = "enforcing"  # only TLS: a plain connection is closed


def _client_auth(_: object, attribute: attrs.Attribute, value: str) -> None:
    # Java's parseClientAuthMode ignores case (and reads anything else as none, which we refuse)
    if value.strip().lower() not in ("", *CLIENT_AUTH):
        raise ValueError(f"expected one of {', '.join(CLIENT_AUTH)}")


def _key(name: str) -> dict[str, str]:
    return {"wire": name}


@attrs.frozen(kw_only=True)
class TlsKeys:
    """The keys, under Java's names and with Java's defaults but the two the docstring names."""

    tls_server_mode: TlsMode = attrs.field(
        default=TlsMode.disabled, metadata=_key("tls.server.mode")
    )
    # Whether clients (ours, a broker's own connections) use TLS; unset: Java's default.
    tls_enable: bool | None = attrs.field(default=None, metadata=_key("tls.enable"))
    tls_config_file: Path | None = attrs.field(default=None, metadata=_key("tls.config.file"))
    tls_test_mode_enable: bool = attrs.field(default=True, metadata=_key("tls.test.mode.enable"))
    tls_server_need_client_auth: str = attrs.field(
        default="none", validator=_client_auth, metadata=_key("tls.server.need.client.auth")
    )
    tls_server_key_path: Path | None = attrs.field(
        default=None, metadata=_key("tls.server.keyPath")
    )
    tls_server_key_password: str | None = attrs.field(
        default=None, repr=False, metadata=_key("tls.server.keyPassword")
    )
    tls_server_cert_path: Path | None = attrs.field(
        default=None, metadata=_key("tls.server.certPath")
    )
    tls_server_auth_client: bool = attrs.field(
        default=False, metadata=_key("tls.server.authClient")
    )
    tls_server_trust_cert_path: Path | None = attrs.field(
        default=None, metadata=_key("tls.server.trustCertPath")
    )
    tls_client_key_path: Path | None = attrs.field(
        default=None, metadata=_key("tls.client.keyPath")
    )
    tls_client_key_password: str | None = attrs.field(
        default=None, repr=False, metadata=_key("tls.client.keyPassword")
    )
    tls_client_cert_path: Path | None = attrs.field(
        default=None, metadata=_key("tls.client.certPath")
    )
    tls_client_auth_server: bool = attrs.field(
        default=False, metadata=_key("tls.client.authServer")
    )
    tls_client_trust_cert_path: Path | None = attrs.field(
        default=None, metadata=_key("tls.client.trustCertPath")
    )

    @property
    def client_auth(self) -> str:
        return self.tls_server_need_client_auth.strip().lower() or "none"

    @property
    def verifies_server(self) -> bool:
        """Java's client verifies the server's chain only outside test mode with authServer."""
        return not self.tls_test_mode_enable and self.tls_client_auth_server


attrs.resolve_types(TlsKeys)  # read_fields parses by the fields' types, not their strings

SECRET_TLS_FIELDS = frozenset({"tls_server_key_password", "tls_client_key_password"})


def tls_keys_last(cls: type) -> list[attrs.Attribute]:
    """A config class's fields with the inherited TLS keys after its own (``-p`` lists)."""
    return sorted(attrs.fields(cls), key=lambda attribute: attribute.inherited)


def tls_keys(config: TlsKeys) -> TlsKeys:
    """Just the TLS keys of a BrokerConfig or NamesrvConfig."""
    return TlsKeys(**{a.name: getattr(config, a.name) for a in attrs.fields(TlsKeys)})


def client_uses_tls(keys: TlsKeys, use_tls: bool | None = None) -> bool:
    """Java's NettyClientConfig.useTLS for a broker: ``useTLS`` if set, else ``tls.enable`` if
    set, else whether the server side is enforcing."""
    if use_tls is not None:
        return use_tls
    if keys.tls_enable is not None:
        return keys.tls_enable
    return keys.tls_server_mode is TlsMode.enforcing


def from_file(keys: TlsKeys) -> TlsKeys:
    """``keys`` with what ``tls.config.file`` says over them, as Java reads it. A file the key
    names must be readable; Java's default path is read only if it exists."""
    path = keys.tls_config_file
    named = path is not None
    path = path if path is not None else DEFAULT_TLS_CONFIG_FILE
    try:
        found = properties.load(path)
    except FileNotFoundError:
        if named:
            raise bad_value("tls.config.file", path, "no such file") from None
        return keys
    except (OSError, properties.PropertiesError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise bad_value("tls.config.file", path, reason) from None
    log.info("TLS settings read from %s", path)
    return merge_file(keys, found, str(path))


def merge_file(keys: TlsKeys, text: Mapping[str, str], source: str) -> TlsKeys:
    """Pure: the file's values over ``keys``; ``source`` names the file in errors."""
    ignored = {key for key in text if key in NOT_FROM_FILE}
    if ignored:
        log.warning(
            "%s: %s ignored (as in RocketMQ, only broker.conf/namesrv.conf set them)",
            source,
            ", ".join(sorted(ignored)),
        )
    wanted = {k: v for k, v in text.items() if k not in ignored}
    try:
        values, unknown = read_fields((TlsKeys,), wanted, frozenset())
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from None
    if unknown:
        log.warning("%s: unknown keys ignored: %s", source, ", ".join(sorted(unknown)))
    try:
        return attrs.evolve(keys, **values[TlsKeys])
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"{source}: {exc}") from None


def tls_key_names() -> frozenset[str]:
    return frozenset(keyed_fields(TlsKeys))
