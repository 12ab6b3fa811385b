"""Listening ports that an outgoing connection can steal.

Linux hands every outgoing connection a port from ``net.ipv4.ip_local_port_range`` (32768-60999
by default) unless the port is listed in ``net.ipv4.ip_local_reserved_ports``. A server port in
that range is free only while nobody else happens to hold it: while a broker restarts, any
client socket on the machine may take its port, and the restart fails with "Address already in
use". SO_REUSEADDR (set on every listener here, by Trio) does not help: Linux lets a bind share
a port only when both sockets set it, and client sockets do not.

The parsing is pure; ``ephemeral_conflicts`` reads the two sysctls and returns what it found.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import attrs

PORT_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
RESERVED_PORTS = Path("/proc/sys/net/ipv4/ip_local_reserved_ports")


@attrs.frozen
class EphemeralRange:
    first: int
    last: int
    reserved: frozenset[int] = frozenset()

    def steals(self, port: int) -> bool:
        return self.first <= port <= self.last and port not in self.reserved

    def advice(self, what: str, port: int) -> str:
        return (
            f"{what} {port} lies in the kernel's ephemeral port range {self.first}-{self.last} "
            f"(net.ipv4.ip_local_port_range): an outgoing connection may take it while the "
            f"server is down, and a restart then fails with 'Address already in use'; use a "
            f"port below {self.first} or add it to net.ipv4.ip_local_reserved_ports"
        )


def parse_port_range(text: str) -> tuple[int, int]:
    first, last = (int(part) for part in text.split())
    return first, last


def parse_reserved_ports(text: str) -> frozenset[int]:
    """The sysctl's syntax: ``8080,9000-9010`` (empty when nothing is reserved)."""
    ports: set[int] = set()
    for item in text.replace("\n", "").split(","):
        item = item.strip()
        if not item:
            continue
        low, _, high = item.partition("-")
        ports.update(range(int(low), int(high or low) + 1))
    return frozenset(ports)


def read_ephemeral_range() -> EphemeralRange | None:
    """This machine's range, or None where the kernel does not say (not Linux)."""
    try:
        first, last = parse_port_range(PORT_RANGE.read_text())
    except (OSError, ValueError):
        return None
    try:
        reserved = parse_reserved_ports(RESERVED_PORTS.read_text())
    except (OSError, ValueError):
        reserved = frozenset()
    return EphemeralRange(first, last, reserved)


def ephemeral_conflicts(
    ports: Iterable[tuple[str, int]], span: EphemeralRange | None = None
) -> list[str]:
    """One line of advice per ``(what, port)`` that the kernel may give to a client socket."""
    span = span if span is not None else read_ephemeral_range()
    if span is None:
        return []
    return [span.advice(what, port) for what, port in ports if port and span.steals(port)]
