"""The master's side of promises (promises.py) over remoting: while its lease refresh is
overdue it asks every other SyncStateSet member for a promise not to campaign, and the
member's side: answering CONTROLLER_PROMISE.

The asking runs every ``POLL_S`` for members without a promise good for three quarters of
``W`` (the lease's TTL), so a refusal seen just as etcd went down is asked again at once, and a
held promise is renewed well before it ends. The fence itself is the elector's guard
(Elector.writable_until), not this loop: a slow answer can never keep writes open.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable

import trio

from broker.election.promises import PromiseAnswer, PromiseRequest, PromiseTable
from etcdstate.group import Member
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from remoting.controller_wire import ControllerPromiseRequestHeader, ControllerPromiseResponseHeader
from remoting.errors import RemotingError
from remoting.serde import decode_header, encode_header_fields

log = logging.getLogger(__name__)

ASK_TIMEOUT_S = 1.0

# (member's address, the request) -> the member's answer; raises RemotingError/OSError.
Ask = Callable[[str, ControllerPromiseRequestHeader], Awaitable[PromiseAnswer]]


def promise_request(broker_name: str, request: PromiseRequest) -> RemotingCommand:
    header = ControllerPromiseRequestHeader(
        broker_name, request.epoch, request.master_id, request.millis
    )
    return RemotingCommand.request(RequestCode.CONTROLLER_PROMISE, encode_header_fields(header))


def promise_answer(response: RemotingCommand) -> PromiseAnswer:
    """A member's response, checked: anything but SUCCESS with a valid header is a refusal."""
    if response.code != ResponseCode.SUCCESS:
        return PromiseAnswer(0, f"code {response.code}: {response.remark or ''}"[:200])
    try:
        header = decode_header(ControllerPromiseResponseHeader, response.ext_fields)
    except RemotingError as exc:
        return PromiseAnswer(0, f"bad answer: {exc}"[:200])
    return PromiseAnswer(header.promise_millis, (response.remark or "")[:200])


class PromiseSeeker:
    """Keeps the master's PromiseTable filled while its lease refresh is overdue."""

    def __init__(
        self,
        table: PromiseTable,
        *,
        broker_name: str,
        promise_s: float,
        clock: Callable[[], float],
        invoke: Callable[[str, RemotingCommand, float], Awaitable[RemotingCommand]],
    ) -> None:
        self.table = table
        self.broker_name = broker_name
        self.promise_s = promise_s
        self.clock = clock
        self.invoke = invoke
        self.refusals: dict[int, str] = {}  # member -> why it did not promise, for the status

    def due(self, members: dict[int, Member], others: frozenset[int]) -> list[int]:
        now = self.clock()
        renew_before = now + 0.75 * self.promise_s
        return sorted(m for m in others if self.table.until.get(m, -math.inf) < renew_before)

    async def ask_round(
        self, epoch: int, me: int, members: dict[int, Member], others: frozenset[int]
    ) -> None:
        request = PromiseRequest(epoch, me, int(self.promise_s * 1000))
        async with trio.open_nursery() as nursery:
            for member_id in self.due(members, others):
                member = members.get(member_id)
                if member is None:
                    self.refusals[member_id] = "address unknown (never seen alive)"
                    continue
                nursery.start_soon(self._ask, member_id, member.addr, request)

    async def _ask(self, member_id: int, addr: str, request: PromiseRequest) -> None:
        sent_at = self.clock()
        try:
            response = await self.invoke(
                addr, promise_request(self.broker_name, request), ASK_TIMEOUT_S
            )
        except (RemotingError, OSError, trio.TooSlowError) as exc:
            self.refusals[member_id] = f"unreachable: {type(exc).__name__}"
            return
        answer = promise_answer(response)
        if answer.granted_ms <= 0:
            if self.refusals.get(member_id) != answer.reason:
                log.warning("controller: member %d gives no promise: %s", member_id, answer.reason)
            self.refusals[member_id] = answer.reason
            return
        self.refusals.pop(member_id, None)
        self.table.record(member_id, sent_at, answer.granted_ms / 1000)
