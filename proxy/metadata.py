"""What a gRPC call says about its caller: the client id the SDKs send as metadata (checked
here, once) and the peer address."""

from __future__ import annotations

from typing import Any

from proxy.apis import definition_pb2 as pb
from proxy.errors import ProxyError

CLIENT_ID = "x-mq-client-id"
MAX_CLIENT_ID = 512


def peer_address(context: Any) -> str:
    """``ipv4:127.0.0.1:5000`` -> ``127.0.0.1:5000``."""
    peer = context.peer() or ""
    kind, _, rest = peer.partition(":")
    return rest if kind in ("ipv4", "ipv6") else ""


def client_id(context: Any) -> str:
    for key, value in context.invocation_metadata() or ():
        if key == CLIENT_ID and isinstance(value, str):
            if not value or len(value) > MAX_CLIENT_ID or not value.isprintable():
                break
            return value
    raise ProxyError(pb.Code.CLIENT_ID_REQUIRED, "x-mq-client-id is missing or malformed")
