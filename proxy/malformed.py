"""The one place undecodable request bytes are caught: a server interceptor wraps every
method's protobuf decoder, and a request that does not parse ends its call with gRPC status
INTERNAL, "Invalid protobuf byte sequence", as grpc-java's protobuf marshaller (RocketMQ's
Proxy) answers; grpcio's own answer would be UNKNOWN with a Python traceback's text."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc
from google.protobuf.message import DecodeError

MALFORMED = object()
DETAILS = "Invalid protobuf byte sequence"

# An admission check on every decoded request message (the ACL, proxy/access.py): None lets
# it through, else the reason the call ends with PERMISSION_DENIED.
Admit = Callable[[Any, Any], "str | None"]


async def _refuse(request: Any, context: Any, admit: Admit | None) -> None:
    if request is MALFORMED:
        await context.abort(grpc.StatusCode.INTERNAL, DETAILS)
    if admit is not None:
        refusal = admit(request, context)
        if refusal is not None:
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, refusal)


def _safe(decode: Callable[[bytes], Any]) -> Callable[[bytes], Any]:
    def safe(data: bytes) -> Any:
        try:
            return decode(data)
        except (DecodeError, RecursionError):
            return MALFORMED

    return safe


async def _checked_stream(
    requests: AsyncIterator[Any], context: Any, admit: Admit | None
) -> AsyncIterator[Any]:
    async for request in requests:
        await _refuse(request, context, admit)
        yield request


def _wrap(handler: grpc.RpcMethodHandler, admit: Admit | None) -> grpc.RpcMethodHandler:
    safe = _safe(handler.request_deserializer)
    out = handler.response_serializer
    if handler.unary_unary is not None:
        inner_uu = handler.unary_unary

        async def unary_unary(request: Any, context: Any) -> Any:
            await _refuse(request, context, admit)
            return await inner_uu(request, context)

        return grpc.unary_unary_rpc_method_handler(unary_unary, safe, out)
    if handler.unary_stream is not None:
        inner_us = handler.unary_stream

        async def unary_stream(request: Any, context: Any) -> AsyncIterator[Any]:
            await _refuse(request, context, admit)
            async for response in inner_us(request, context):
                yield response

        return grpc.unary_stream_rpc_method_handler(unary_stream, safe, out)
    if handler.stream_stream is not None:
        inner_ss = handler.stream_stream

        async def stream_stream(requests: Any, context: Any) -> AsyncIterator[Any]:
            async for response in inner_ss(_checked_stream(requests, context, admit), context):
                yield response

        return grpc.stream_stream_rpc_method_handler(stream_stream, safe, out)
    return handler  # no stream-unary method in MessagingService


class MalformedRequests(grpc.aio.ServerInterceptor):
    def __init__(self, admit: Admit | None = None) -> None:
        self.admit = admit

    async def intercept_service(
        self, continuation: Callable[[Any], Any], details: grpc.HandlerCallDetails
    ) -> grpc.RpcMethodHandler | None:
        handler = await continuation(details)
        if handler is None or handler.request_deserializer is None:
            return handler
        return _wrap(handler, self.admit)
