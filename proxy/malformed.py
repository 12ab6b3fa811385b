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


def _safe(decode: Callable[[bytes], Any]) -> Callable[[bytes], Any]:
    def safe(data: bytes) -> Any:
        try:
            return decode(data)
        except (DecodeError, RecursionError):
            return MALFORMED

    return safe


async def _checked_stream(requests: AsyncIterator[Any], context: Any) -> AsyncIterator[Any]:
    async for request in requests:
        if request is MALFORMED:
            await context.abort(grpc.StatusCode.INTERNAL, DETAILS)
        yield request


def _wrap(handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
    safe = _safe(handler.request_deserializer)
    out = handler.response_serializer
    if handler.unary_unary is not None:
        inner_uu = handler.unary_unary

        async def unary_unary(request: Any, context: Any) -> Any:
            if request is MALFORMED:
                await context.abort(grpc.StatusCode.INTERNAL, DETAILS)
            return await inner_uu(request, context)

        return grpc.unary_unary_rpc_method_handler(unary_unary, safe, out)
    if handler.unary_stream is not None:
        inner_us = handler.unary_stream

        async def unary_stream(request: Any, context: Any) -> AsyncIterator[Any]:
            if request is MALFORMED:
                await context.abort(grpc.StatusCode.INTERNAL, DETAILS)
            async for response in inner_us(request, context):
                yield response

        return grpc.unary_stream_rpc_method_handler(unary_stream, safe, out)
    if handler.stream_stream is not None:
        inner_ss = handler.stream_stream

        async def stream_stream(requests: Any, context: Any) -> AsyncIterator[Any]:
            async for response in inner_ss(_checked_stream(requests, context), context):
                yield response

        return grpc.stream_stream_rpc_method_handler(stream_stream, safe, out)
    return handler  # no stream-unary method in MessagingService


class MalformedRequests(grpc.aio.ServerInterceptor):
    async def intercept_service(
        self, continuation: Callable[[Any], Any], details: grpc.HandlerCallDetails
    ) -> grpc.RpcMethodHandler | None:
        handler = await continuation(details)
        if handler is None or handler.request_deserializer is None:
            return handler
        return _wrap(handler)
