"""Ports for test brokers. A NameServer binds port 0 and says which port it got; a broker
cannot: its address (``brokerIP1:listenPort``) is in its registration and in every msgId it
hands out before it could tell anyone, and it also binds listenPort - 2 (the VIP channel) and
listenPort + 1 (HA). So a broker gets a block of four ports chosen here, and the cluster
starts it, and when a port of the block was taken between the choice and the bind (another
test, another program), the broker exits saying "Address already in use" and the cluster
starts it again on a fresh block. The probe below only makes that retry rare; it is not what
makes the scheme safe.

Blocks lie below the kernel's ephemeral range (remoting/ports.py): a broker restarted by a test
must find its old ports free, and an outgoing connection could otherwise take one meanwhile."""

from __future__ import annotations

import random
import socket
from collections.abc import Collection

from remoting.ports import read_ephemeral_range

BLOCK = 4  # listenPort - 2 (VIP), listenPort - 1 (unused, as RocketMQ leaves it), listenPort, HA
LOWEST = 10000
HIGHEST = 65535


def candidate_range() -> tuple[int, int]:
    """First and last possible block start outside the ephemeral range."""
    span = read_ephemeral_range()
    if span is None:
        return LOWEST, 30000
    if span.first - BLOCK > LOWEST + 1000:
        return LOWEST, span.first - BLOCK
    if span.last + 1 + 1000 < HIGHEST - BLOCK:
        return span.last + 1, HIGHEST - BLOCK
    return LOWEST, HIGHEST - BLOCK  # no room outside it: any port, and the restart warning


def _free(port: int) -> bool:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as Trio's listeners
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def broker_listen_port(avoid: Collection[int] = (), attempts: int = 200) -> int:
    """A listenPort whose block (listenPort - 2 .. listenPort + 1) looked free just now."""
    low, high = candidate_range()
    for _ in range(attempts):
        base = random.randint(low, high)
        block = range(base, base + BLOCK)
        if any(port in avoid for port in block):
            continue
        if all(_free(port) for port in (base, base + 2, base + 3)):
            return base + 2
    raise RuntimeError(f"no free block of {BLOCK} ports found in {low}-{high + BLOCK}")


def block_of(listen_port: int) -> range:
    return range(listen_port - 2, listen_port + 2)
