"""ProxyError: a request refused with an ``apache.rocketmq.v2.Code``, and the mapping of what
brokers and our remoting client raise onto those codes, as RocketMQ's Proxy answers them
(ResponseBuilder.buildStatus, GrpcProxyException)."""

from __future__ import annotations

from client.errors import MQBrokerError, MQClientError
from proxy.apis import definition_pb2 as pb
from remoting.codes import ResponseCode
from remoting.errors import RemotingTimeoutError

# ResponseBuilder.RESPONSE_CODE_MAPPING; every other broker code is INTERNAL_SERVER_ERROR.
_BROKER_CODES = {
    ResponseCode.SUCCESS: pb.Code.OK,
    ResponseCode.SYSTEM_BUSY: pb.Code.TOO_MANY_REQUESTS,
    ResponseCode.REQUEST_CODE_NOT_SUPPORTED: pb.Code.NOT_IMPLEMENTED,
    ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST: pb.Code.CONSUMER_GROUP_NOT_FOUND,
    ResponseCode.TOPIC_NOT_EXIST: pb.Code.TOPIC_NOT_FOUND,
}


class ProxyError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def status_of(exc: BaseException) -> pb.Status:
    """The Status an SDK gets for ``exc`` (ResponseBuilder.buildStatus(Throwable))."""
    if isinstance(exc, ProxyError):
        return pb.Status(code=exc.code, message=exc.message)
    if isinstance(exc, MQBrokerError):
        code = _BROKER_CODES.get(exc.code, pb.Code.INTERNAL_SERVER_ERROR)
        return pb.Status(code=code, message=exc.remark or "")
    if isinstance(exc, RemotingTimeoutError):
        return pb.Status(code=pb.Code.PROXY_TIMEOUT, message=str(exc))
    if isinstance(exc, MQClientError):
        return pb.Status(code=pb.Code.INTERNAL_SERVER_ERROR, message=str(exc))
    return pb.Status(code=pb.Code.INTERNAL_SERVER_ERROR, message=f"{type(exc).__name__}: {exc}")


def ok() -> pb.Status:
    return pb.Status(code=pb.Code.OK, message="OK")
