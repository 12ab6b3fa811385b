"""CONTROLLER_PROMISE (ours, auto-failover): a master that lost etcd asks this broker, a member
of its SyncStateSet, for a promise not to campaign (broker/election/promises.py). The header
is checked here (remoting/controller_wire.py); the decision is the elector's."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from broker.election.promises import PromiseRequest
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from remoting.controller_wire import ControllerPromiseRequestHeader, ControllerPromiseResponseHeader
from remoting.errors import RequestError
from remoting.serde import decode_header, encode_header_fields

if TYPE_CHECKING:
    from broker.controller import BrokerController


class ControllerPromiseProcessor:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker

    def register(self, server: Any) -> None:
        server.register(RequestCode.CONTROLLER_PROMISE, self.promise)

    async def promise(self, connection: Any, request: RemotingCommand) -> RemotingCommand:
        header = decode_header(ControllerPromiseRequestHeader, request.ext_fields)
        # Imported here: every broker registers this processor, few run in controller mode,
        # and the elector's modules were ~7 % of each broker's start-up CPU.
        from broker.election.elector import Elector

        elector = self.broker.elector
        if not isinstance(elector, Elector):
            raise RequestError(ResponseCode.SYSTEM_ERROR, "this broker is not in controller mode")
        if header.broker_name != self.broker.config.broker_name:
            raise RequestError(
                ResponseCode.SYSTEM_ERROR,
                f"brokerName={header.broker_name!r:.80}: this broker is of "
                f"{self.broker.config.broker_name!r}",
            )
        answer = await elector.promise(
            PromiseRequest(header.epoch, header.master_broker_id, header.promise_millis)
        )
        fields = encode_header_fields(ControllerPromiseResponseHeader(answer.granted_ms))
        return request.make_response(remark=answer.reason, ext_fields=fields)
