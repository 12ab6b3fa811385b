"""Pop helpers for tests: the requests and receipts of client/pop.py, sent to a broker."""

from __future__ import annotations

from client.pop import (
    Popped,
    ack_request,
    change_invisible_request,
    pop_request,
)
from client.pop import receipts as _receipts
from remoting.client import RemotingClient
from remoting.command import RemotingCommand
from tests.kits.brokerkit import call

__all__ = ["Popped", "ack_request", "change_invisible_request", "pop", "pop_request", "receipts"]


def receipts(response: RemotingCommand, broker_name: str = "broker-a") -> list[Popped]:
    return _receipts(response, broker_name)


async def pop(client: RemotingClient, addr: str, topic: str, group: str, **kwargs) -> list[Popped]:
    return receipts(await call(client, addr, pop_request(topic, group, **kwargs)))


async def pop_until(
    client: RemotingClient, addr: str, topic: str, group: str, count: int, **kwargs
) -> list[Popped]:
    """Pop with long polling until ``count`` messages came (each pop waits up to poll_ms)."""
    kwargs.setdefault("poll_ms", 3000)
    out: list[Popped] = []
    while len(out) < count:
        out += await pop(client, addr, topic, group, **kwargs)
    return out
