"""The harness hands out ports without a check-then-use race (tests/README.md, "Ports")."""

from __future__ import annotations

import socket

import pytest

from remoting import properties
from tests.harness import ServerProcessError
from tests.kits.brokerkit import broker_conf, start_broker, start_namesrv


def test_a_namesrv_binds_port_0_and_reports_the_port_it_got(processes, tmp_path) -> None:
    ns = start_namesrv(processes, tmp_path)
    assert ns.port and properties.load(tmp_path / "namesrv.conf")["listenPort"] == "0"


def test_a_broker_whose_block_was_taken_moves_to_another_and_starts(processes, tmp_path) -> None:
    conf = broker_conf(tmp_path)
    first = int(properties.load(conf)["listenPort"])
    with socket.socket() as thief:  # what another suite on the machine may do meanwhile
        thief.bind(("127.0.0.1", first))
        thief.listen()
        broker = start_broker(processes, conf)
    assert broker.port != first and broker.port == int(properties.load(conf)["listenPort"])
    assert "in use" in broker.log_path.read_text()  # the first attempt failed on the bind


def test_ports_a_test_chose_itself_are_never_moved(processes, tmp_path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        conf = broker_conf(tmp_path, listenPort=port)
        with pytest.raises(ServerProcessError, match="in use"):
            start_broker(processes, conf)
