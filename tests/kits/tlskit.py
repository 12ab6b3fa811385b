"""Throwaway certificates for TLS tests, made with the ``openssl`` command (no Python crypto
package needed): a CA, a server certificate and a client certificate it signed, and a second
CA that signed nothing we trust (for "wrong CA" cases). EC P-256 keys: quick to make."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import attrs
import pytest

OPENSSL = shutil.which("openssl")

needs_openssl = pytest.mark.skipif(
    OPENSSL is None,
    reason="no openssl command on PATH: the TLS tests make their certificates with it (apt-get install openssl)",
)


@attrs.frozen
class Certs:
    ca: Path  # trusted CA certificate
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    stranger_cert: Path  # a client certificate from another CA
    stranger_key: Path
    server_key_encrypted: Path  # server_key, PKCS#8 encrypted with KEY_PASSWORD


KEY_PASSWORD = "s3cret-pass"


def _openssl(*args: str | Path, cwd: Path) -> None:
    assert OPENSSL is not None
    subprocess.run([OPENSSL, *map(str, args)], cwd=cwd, check=True, capture_output=True, timeout=60)


def _key(path: Path, cwd: Path) -> None:
    _openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", path, cwd=cwd)


def _ca(name: str, cwd: Path) -> tuple[Path, Path]:
    key, cert = cwd / f"{name}.key", cwd / f"{name}.pem"
    _key(key, cwd)
    _openssl("req", "-x509", "-new", "-key", key, "-days", "2", "-subj", f"/CN={name}",
             "-out", cert, cwd=cwd)  # fmt: skip
    return cert, key


def _signed(name: str, ca: tuple[Path, Path], cwd: Path) -> tuple[Path, Path]:
    key, csr, cert = cwd / f"{name}.key", cwd / f"{name}.csr", cwd / f"{name}.pem"
    _key(key, cwd)
    _openssl("req", "-new", "-key", key, "-subj", f"/CN={name}", "-out", csr, cwd=cwd)
    ext = cwd / f"{name}.ext"
    ext.write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    _openssl("x509", "-req", "-in", csr, "-CA", ca[0], "-CAkey", ca[1], "-CAcreateserial",
             "-days", "2", "-extfile", ext, "-out", cert, cwd=cwd)  # fmt: skip
    return cert, key


def make_certs(folder: Path) -> Certs:
    folder.mkdir(parents=True, exist_ok=True)
    ca = _ca("test-ca", folder)
    server = _signed("server", ca, folder)
    client = _signed("client", ca, folder)
    stranger = _signed("stranger", _ca("other-ca", folder), folder)
    encrypted = folder / "server-encrypted.key"
    _openssl("pkcs8", "-topk8", "-in", server[1], "-v2", "aes-256-cbc",
             "-passout", f"pass:{KEY_PASSWORD}", "-out", encrypted, cwd=folder)  # fmt: skip
    return Certs(ca[0], *server, *client, *stranger, encrypted)


@pytest.fixture(scope="session")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    if OPENSSL is None:
        pytest.skip(
            "no openssl command on PATH: the TLS tests make their certificates with it (apt-get install openssl)"
        )
    return make_certs(tmp_path_factory.mktemp("certs"))


def server_keys(certs: Certs, mode: str = "enforcing", **more: object) -> dict[str, object]:
    """broker.conf / namesrv.conf lines for a TLS server with our certificate."""
    return {
        "tls.server.mode": mode,
        "tls.server.certPath": certs.server_cert,
        "tls.server.keyPath": certs.server_key,
        **more,
    }


def requiring_client_certs(certs: Certs) -> dict[str, object]:
    return {"tls.server.need.client.auth": "require", "tls.server.trustCertPath": certs.ca}


def client_cert_keys(certs: Certs) -> dict[str, object]:
    return {"tls.client.certPath": certs.client_cert, "tls.client.keyPath": certs.client_key}


def verifying_keys(certs: Certs, ca: Path | None = None) -> dict[str, object]:
    """A client that checks the server's chain (RocketMQ's defaults do not)."""
    return {
        "tls.test.mode.enable": "false",
        "tls.client.authServer": "true",
        "tls.client.trustCertPath": ca or certs.ca,
    }


def properties_file(path: Path, keys: dict[str, object]) -> Path:
    path.write_text("".join(f"{k}={v}\n" for k, v in keys.items()))
    return path
