"""The ACL check at the request-dispatch boundary: RemotingServer calls an ``AclHook`` with
every request that has a processor, before the processor, and sends its refusal instead
(NO_PERMISSION, Java's remark shape) when there is one. Nothing is stored or changed for a
refused request; a refused oneway request gets no answer, as every oneway request."""

from __future__ import annotations

import logging
import time
from typing import Any, Protocol

from acl.address import parse_host
from acl.errors import Refusal
from acl.rules import AclRules
from acl.signature import ACCESS_KEY
from acl.table import MessageLookup
from acl.validator import validate
from remoting.codes import ResponseCode
from remoting.command import RemotingCommand

log = logging.getLogger(__name__)

_ADDR = "acl.addr"  # the peer's address, parsed once per connection
_MISSING = object()
LOG_WINDOW_S = 10.0


class RulesSource(Protocol):
    rules: AclRules


class AclHook:
    def __init__(self, source: RulesSource, lookup: MessageLookup | None = None) -> None:
        self.source = source
        self.lookup = lookup
        self.refused = 0
        self._window_start = -LOG_WINDOW_S
        self._quiet = 0

    def __call__(self, connection: Any, request: RemotingCommand) -> RemotingCommand | None:
        addr = connection.attributes.get(_ADDR, _MISSING)
        if addr is _MISSING:
            addr = connection.attributes[_ADDR] = parse_host(connection.peer.rpartition(":")[0])
        refusal = validate(self.source.rules, request, addr, self.lookup)  # type: ignore[arg-type]
        if refusal is None:
            return None
        self.refused += 1
        self._log(connection.peer, request, refusal)
        return request.error_response(ResponseCode.NO_PERMISSION, refusal.remark)

    def _log(self, peer: str, request: RemotingCommand, refusal: Refusal) -> None:
        """One line per refusal, at most one per LOG_WINDOW_S (then a count): a client retrying
        with a wrong key must not flood the log. Never the signature or a secret."""
        now = time.monotonic()
        if now - self._window_start < LOG_WINDOW_S:
            self._quiet += 1
            return
        if self._quiet:
            log.warning("ACL: %d more refusals in the last %.0f s", self._quiet, LOG_WINDOW_S)
        self._window_start, self._quiet = now, 0
        log.warning(
            "ACL refused: peer=%s code=%d accessKey=%s reason=%s",
            peer,
            request.code,
            request.ext(ACCESS_KEY),
            refusal.message,
        )
