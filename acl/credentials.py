"""An access key and secret key that sign outgoing requests (Java's AclClientRPCHook): the
Python client, mqadmin, and a broker calling NameServers and its master all use this."""

from __future__ import annotations

import attrs

from acl.signature import (
    ACCESS_KEY,
    SECURITY_TOKEN,
    SIGNATURE,
    SIGNER_SKIPS,
    Signer,
    content_prefix,
)
from remoting.command import RemotingCommand


@attrs.frozen
class SessionCredentials:
    access_key: str
    secret_key: str = attrs.field(repr=False)
    security_token: str | None = attrs.field(default=None, repr=False)
    _signer: Signer = attrs.field(
        init=False,
        repr=False,
        eq=False,
        default=attrs.Factory(lambda s: Signer(s.secret_key), takes_self=True),
    )

    def sign(self, command: RemotingCommand) -> None:
        """Add AccessKey (and SecurityToken) and the Signature over the request as it will be
        sent; call it last, after every extField is set."""
        fields = command.ext_fields
        if fields is None:
            fields = command.ext_fields = {}
        fields[ACCESS_KEY] = self.access_key
        if self.security_token is not None:
            fields[SECURITY_TOKEN] = self.security_token
        prefix = content_prefix(fields, SIGNER_SKIPS)
        fields[SIGNATURE] = self._signer.sign(prefix, command.body).decode("ascii")
