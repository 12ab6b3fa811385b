"""What mqcluster asks the layout's running processes over the wire (pure Trio calls, run from
mqcluster's synchronous code): broker runtime info, and a KV entry on every NameServer."""

from __future__ import annotations

import trio

from deploy.manifest import Manifest
from remoting.body import KVTable
from remoting.client import RemotingClient
from remoting.codes import RequestCode
from remoting.command import RemotingCommand
from remoting.errors import RemotingError
from remoting.serde import decode_body


def put_kv_everywhere(manifest: Manifest, namespace: str, key: str, value: str) -> list[str]:
    """PUT_KV_CONFIG on every NameServer of the layout; the ones that accepted it."""
    names = [p.addr for p in manifest.processes if p.role == "namesrv"]

    async def main() -> list[str]:
        done = []
        async with RemotingClient.open() as client:
            for addr in names:
                request = RemotingCommand.request(
                    RequestCode.PUT_KV_CONFIG, {"namespace": namespace, "key": key, "value": value}
                )
                try:
                    response = await client.invoke(addr, request, 3.0)
                except (RemotingError, OSError):
                    continue
                if response.code == 0:
                    done.append(addr)
        return done

    return trio.run(main)


def runtime_infos(addrs: list[str], timeout_s: float = 2.0) -> dict[str, dict[str, str]]:
    """GET_BROKER_RUNTIME_INFO from each address that answers."""

    async def main() -> dict[str, dict[str, str]]:
        out: dict[str, dict[str, str]] = {}
        async with RemotingClient.open() as client:
            for addr in addrs:
                request = RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO, {})
                try:
                    response = await client.invoke(addr, request, timeout_s)
                except (RemotingError, OSError):
                    continue
                if response.code == 0:
                    out[addr] = decode_body(KVTable, response.body).table
        return out

    return trio.run(main)
