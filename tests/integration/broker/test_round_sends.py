"""Rounds of sync sends (several lock-step raw-socket senders, each writing its send before the
broker reads any: the selector finds them ready together and hands the round to the broker's
round processor, which answers a round of plain sends in C, broker/processor/send_plain.py
``round_front``) against real brokers, each round answered exactly as a broker without it
answers it: one broker of each kind (the second with ROCKETMQ_TRIO_PURE_STORE=1, where the
round processor is ``plain_round``), the same rounds to both, the replies compared field by
field but the message ids. Each sender writes to a queue of its own, so that the order a round
takes its connections in does not decide the offsets. With ACL on and off, the broker made
read-only and writable again at run time (UPDATE_BROKER_CONFIG brokerPermission), and odd sends
in a round: a DELAY property, a queue id the topic lacks, a topic not in the table, V1
headers."""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

from acl.credentials import SessionCredentials
from remoting.client import RemotingClient
from remoting.codes import RequestCode
from remoting.command import RemotingCommand, encode_command_bytes
from remoting.frame import FrameDecoder
from tests.integration.broker.test_lone_sends import _v1_of, both, seen, send, start_pair, update
from tests.kits.aclkit import ADMIN, USER, acl_home
from tests.kits.brokerkit import read_replies

SENDERS = 4  # the topic's queues: one each
Make = Callable[[int, int], RemotingCommand]  # (sender, n) -> its request


class Senders:
    """Lock-step raw-socket senders to one broker."""

    def __init__(self, addr: str) -> None:
        host, port = addr.rsplit(":", 1)
        self.socks = []
        for _ in range(SENDERS):
            sock = socket.create_connection((host, int(port)), timeout=30)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.socks.append(sock)
        self.decoders = [FrameDecoder() for _ in self.socks]

    def round(self, requests: list[RemotingCommand]) -> list[tuple[Any, ...]]:
        """Every sender's request written, then every reply read: each seen."""
        for sock, request in zip(self.socks, requests, strict=True):
            sock.sendall(encode_command_bytes(request))
        return [
            seen(read_replies(sock, decoder, 1)[0])
            for sock, decoder in zip(self.socks, self.decoders, strict=True)
        ]

    def close(self) -> None:
        for sock in self.socks:
            sock.close()


def rounds(sides: list[Senders], make: Make, n: int, who: SessionCredentials | None) -> Any:
    """The same round to each broker: the replies seen equal, and returned."""
    got = []
    for side in sides:
        requests = [make(sender, n) for sender in range(SENDERS)]
        if who is not None:
            for request in requests:
                who.sign(request)
        got.append(side.round(requests))
    assert got[0] == got[1]
    return got[0]


def plain(topic: str) -> Make:
    return lambda sender, n: send(topic, n * SENDERS + sender, sender)


def with_odd(topic: str, odd: Make) -> Make:
    """Plain sends with one odd send in the middle of the round."""
    return lambda sender, n: odd(sender, n) if sender == 1 else plain(topic)(sender, n)


async def run_rounds(addrs: tuple[str, str], topic: str, who: SessionCredentials | None) -> None:
    admin = ADMIN if who is not None else None
    async with RemotingClient.open() as client:
        code, *_ = await both(client, addrs, lambda: send(topic, 10**6), who)  # auto-created
        assert code == 0
        sides = [Senders(addr) for addr in addrs]
        try:
            for n in range(1, 9):
                replies = rounds(sides, plain(topic), n, who)
                assert [r[0] for r in replies] == [0] * SENDERS, replies
                assert [r[2]["queueId"] for r in replies] == [str(s) for s in range(SENDERS)]
            odd = {
                "delay": lambda s, n: send(topic, n * SENDERS + s, s, DELAY="2"),
                "no queue": lambda s, n: send(topic, n * SENDERS + s, 9),
                "v1": lambda s, n: RemotingCommand.request(
                    RequestCode.SEND_MESSAGE, *_v1_of(send(topic, n * SENDERS + s, s))
                ),
            }
            for n, make in enumerate(odd.values(), start=20):
                rounds(sides, with_odd(topic, make), n, who)
            assert (await both(client, addrs, update("brokerPermission", "4"), admin))[0] == 0
            refused = rounds(sides, plain(topic), 30, who)
            assert all(r[0] != 0 and "forbidden" in r[1] for r in refused), refused
            assert (await both(client, addrs, update("brokerPermission", "6"), admin))[0] == 0
            for n in range(31, 35):
                assert [r[0] for r in rounds(sides, plain(topic), n, who)] == [0] * SENDERS
        finally:
            for side in sides:
                side.close()


async def test_rounds_of_sends_are_answered_as_without_the_round_in_c(processes, tmp_path) -> None:
    await run_rounds(start_pair(processes, tmp_path), "Rounds", None)


async def test_rounds_with_acl_on_are_checked_as_without_the_round_in_c(
    processes, tmp_path
) -> None:
    home = acl_home(tmp_path)
    addrs = start_pair(processes, tmp_path, aclEnable="true", rocketmqHome=home)
    await run_rounds(addrs, "Allowed", USER)
