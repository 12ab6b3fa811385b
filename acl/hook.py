"""The ACL check at the request-dispatch boundary: RemotingServer calls an ``AclHook`` with
every request that has a processor, before the processor, and sends its refusal instead
(NO_PERMISSION, Java's remark shape) when there is one. Nothing is stored or changed for a
refused request; a refused oneway request gets no answer, as every oneway request."""

from __future__ import annotations

from typing import Any, Protocol

from acl.address import parse_host
from acl.refusal_log import RefusalLog
from acl.rules import AclRules
from acl.signature import ACCESS_KEY
from acl.table import MessageLookup
from acl.validator import validate
from remoting.codes import ResponseCode
from remoting.command import RemotingCommand

_ADDR = "acl.addr"  # the peer's address, parsed once per connection
_MISSING = object()


class RulesSource(Protocol):
    rules: AclRules


class AclHook:
    def __init__(self, source: RulesSource, lookup: MessageLookup | None = None) -> None:
        self.source = source
        self.lookup = lookup
        self.refused = 0
        self._log = RefusalLog()  # one line per reason per window: never the signature or a secret

    def __call__(self, connection: Any, request: RemotingCommand) -> RemotingCommand | None:
        addr = connection.attributes.get(_ADDR, _MISSING)
        if addr is _MISSING:
            addr = connection.attributes[_ADDR] = parse_host(connection.peer.rpartition(":")[0])
        refusal = validate(self.source.rules, request, addr, self.lookup)  # type: ignore[arg-type]
        if refusal is None:
            return None
        self.refused += 1
        self._log(connection.peer, request.code, request.ext(ACCESS_KEY), refusal.message)
        return request.error_response(ResponseCode.NO_PERMISSION, refusal.remark)
