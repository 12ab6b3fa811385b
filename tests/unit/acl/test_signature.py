"""Signatures as RocketMQ 4.9 computes them (AclClientRPCHook, PlainAccessValidator.parse)."""

from __future__ import annotations

import base64
import hashlib
import hmac

from acl.credentials import SessionCredentials
from acl.signature import SERVER_SKIPS, Signer, content_prefix, signature_matches
from remoting.command import RemotingCommand


def test_a_known_vector() -> None:
    # printf 'abc' | openssl dgst -sha1 -hmac 12345678 -binary | base64
    assert Signer("12345678").sign(b"ab", b"c") == b"BOigG5+Fiv0354g5bQuwOUOPMp0="


def test_content_is_the_sorted_values_without_the_signature_then_the_body() -> None:
    fields = {"b": "2", "a": "1", "Signature": "x", "AccessKey": "ak", "_UNIQUE_KEY_QUERY": "true"}
    assert content_prefix(fields, SERVER_SKIPS) == b"ak12"  # "AccessKey" < "a" < "b"
    assert content_prefix(fields, frozenset({"Signature"})) == b"aktrue12"  # "_" < "a"
    assert content_prefix(None, SERVER_SKIPS) == b""


def test_a_signed_command_verifies_with_the_same_secret_only() -> None:
    command = RemotingCommand.request(10, {"topic": "T", "queueId": "3"}, b"body")
    SessionCredentials("RocketMQ", "12345678").sign(command)
    fields = command.ext_fields
    assert fields is not None and fields["AccessKey"] == "RocketMQ"
    expected = base64.b64encode(
        hmac.new(b"12345678", b"RocketMQ3T" + b"body", hashlib.sha1).digest()
    )
    assert fields["Signature"] == expected.decode()
    prefix = content_prefix(fields, SERVER_SKIPS)
    assert signature_matches(Signer("12345678").sign(prefix, b"body"), fields["Signature"])
    assert not signature_matches(Signer("12345679").sign(prefix, b"body"), fields["Signature"])
    assert not signature_matches(Signer("12345678").sign(prefix, b"bodY"), fields["Signature"])
    assert not signature_matches(Signer("12345678").sign(prefix, b"body"), None)


def test_credentials_never_show_the_secret() -> None:
    credentials = SessionCredentials("RocketMQ", "s3cr3t-value", "token-value")
    assert "s3cr3t" not in repr(credentials) and "token-value" not in repr(credentials)
    assert "s3cr3t" not in repr(Signer("s3cr3t-value"))
