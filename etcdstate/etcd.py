"""EtcdClient: the etcd v3 calls controller mode and mqadmin need (KV get/put/delete,
transactions that compare revisions, leases), over etcd's JSON gateway (``POST /v3/...``) with
httpx on Trio.

Why the gateway and httpx: every etcd v3 server since 3.3 serves it on the client port, no
generated gRPC stubs or asyncio bridge are needed, and httpx runs on Trio (through anyio)
with connection reuse and timeouts. The request and reply shapes live in etcd_json.py (pure);
this module only moves them, with a deadline on every call and a bound on every reply.

Endpoints (``controllerEtcdEndpoints``) are tried in turn, starting with the last one that
answered; EtcdUnavailable means none did.
"""

from __future__ import annotations

import logging
from typing import Any

import orjson

from etcdstate import etcd_json as J
from etcdstate.etcd_json import (
    Compare,
    EtcdError,
    EtcdProtocolError,
    EtcdUnavailable,
    KeyValue,
    Op,
    TxnResult,
)

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 2.0
MAX_REPLY_BYTES = 4 * 1024 * 1024

__all__ = ["EtcdClient", "EtcdError", "EtcdProtocolError", "EtcdUnavailable", "KeyValue"]


class EtcdClient:
    def __init__(self, endpoints: list[str], *, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        if not endpoints:
            raise ValueError("no etcd endpoint")
        self.endpoints = [e.rstrip("/") for e in endpoints]
        self._current = 0
        # Imported here: every mqadmin run and broker start imports this module, and httpx
        # (~50-80 ms of start-up CPU) is needed only where etcd is used
        import httpx

        self._http = httpx.AsyncClient(timeout=timeout_s, trust_env=False)
        self._transport_errors = (httpx.HTTPError, OSError)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _call(self, path: str, request: dict[str, Any]) -> object:
        body = orjson.dumps(request)
        errors = []
        for i in range(len(self.endpoints)):
            index = (self._current + i) % len(self.endpoints)
            url = f"{self.endpoints[index]}/v3/{path}"
            try:
                reply = await self._post(url, body)
            except self._transport_errors as exc:
                errors.append(f"{self.endpoints[index]}: {type(exc).__name__} {exc}")
                continue
            self._current = index
            return reply
        raise EtcdUnavailable(f"no etcd endpoint answered: {'; '.join(errors)}")

    async def _post(self, url: str, body: bytes) -> object:
        async with self._http.stream("POST", url, content=body) as response:
            data = bytearray()
            async for chunk in response.aiter_bytes():
                data += chunk
                if len(data) > MAX_REPLY_BYTES:
                    raise EtcdProtocolError(f"etcd reply from {url} over {MAX_REPLY_BYTES} bytes")
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            raise EtcdProtocolError(
                f"etcd reply from {url} is not JSON (HTTP {response.status_code})"
            ) from None

    # ------------------------------------------------------------------------ KV

    async def get(self, key: bytes) -> KeyValue | None:
        kvs = J.range_reply(await self._call("kv/range", J.range_request(key)))
        return kvs[0] if kvs else None

    async def get_prefix(self, prefix: bytes) -> list[KeyValue]:
        return J.range_reply(await self._call("kv/range", J.range_request(prefix, prefix=True)))

    async def put(self, key: bytes, value: bytes, *, lease: int = 0) -> int:
        """The store's revision after the put."""
        return J.revision(await self._call("kv/put", J.put_request(key, value, lease)))

    async def delete(self, key: bytes) -> int:
        return J.revision(await self._call("kv/deleterange", {"key": J.b64(J.check_key(key))}))

    async def txn(
        self, compare: list[Compare], success: list[Op], failure: list[Op] | None = None
    ) -> TxnResult:
        request = J.txn_request(compare, success, failure or [])
        return J.txn_reply(await self._call("kv/txn", request))

    # ------------------------------------------------------------------------ leases

    async def lease_grant(self, ttl_s: int) -> tuple[int, int]:
        """(lease id, TTL etcd granted: it may raise a TTL below its minimum)."""
        return J.lease_grant_reply(await self._call("lease/grant", {"TTL": str(ttl_s)}))

    async def lease_keepalive(self, lease_id: int) -> int:
        """Refresh once; the TTL left, 0 when the lease is gone."""
        return J.lease_keepalive_reply(await self._call("lease/keepalive", {"ID": str(lease_id)}))

    async def lease_revoke(self, lease_id: int) -> None:
        try:
            J.check_error(await self._call("lease/revoke", {"ID": str(lease_id)}))
        except EtcdUnavailable:
            raise
        except EtcdError as exc:  # already expired: nothing left to revoke
            log.debug("revoke lease %d: %s", lease_id, exc)
