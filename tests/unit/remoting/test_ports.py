"""Server ports an outgoing connection could take while the server is down."""

from __future__ import annotations

import pytest

from broker.config import listening_ports, load_broker_config
from remoting.ports import (
    EphemeralRange,
    ephemeral_conflicts,
    parse_port_range,
    parse_reserved_ports,
)

LINUX_DEFAULT = EphemeralRange(32768, 60999)


def test_the_sysctls_parse_as_the_kernel_writes_them() -> None:
    assert parse_port_range("32768\t60999\n") == (32768, 60999)
    assert parse_reserved_ports("\n") == frozenset()
    assert parse_reserved_ports("8080,40000-40002\n") == {8080, 40000, 40001, 40002}
    with pytest.raises(ValueError):
        parse_port_range("32768\n")


def test_only_unreserved_ports_inside_the_range_are_flagged() -> None:
    span = EphemeralRange(32768, 60999, frozenset({40912}))
    found = ephemeral_conflicts(
        [("listenPort", 40911), ("haListenPort", 40912), ("a", 10911), ("b", 0), ("c", 60999)],
        span,
    )
    assert [line.split(" lies")[0] for line in found] == ["listenPort 40911", "c 60999"]
    assert "32768-60999" in found[0] and "ip_local_reserved_ports" in found[0]


def test_a_broker_names_all_three_of_its_ports() -> None:
    broker, store = load_broker_config({"listenPort": "40911"})
    found = ephemeral_conflicts(listening_ports(broker, store), LINUX_DEFAULT)
    assert [line.split(" lies")[0] for line in found] == [
        "listenPort 40911",
        "haListenPort 40912",
        "the VIP port (listenPort - 2) 40909",
    ]
    broker, store = load_broker_config({})  # RocketMQ's defaults sit below the range
    assert ephemeral_conflicts(listening_ports(broker, store), LINUX_DEFAULT) == []
