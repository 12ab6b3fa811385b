"""RemotingServer's authorize hook: asked before a processor runs, never for a code without
one; a refusal is the answer and the processor never sees the request."""

from __future__ import annotations

from remoting.codes import ResponseCode
from remoting.command import RemotingCommand
from remoting.server import RemotingServer


def test_a_refusal_replaces_the_processor_and_unknown_codes_skip_the_hook() -> None:
    seen: list[int] = []
    asked: list[int] = []

    def processor(connection: object, request: RemotingCommand) -> RemotingCommand:
        seen.append(request.code)
        return request.make_response()

    def authorize(connection: object, request: RemotingCommand) -> RemotingCommand | None:
        asked.append(request.code)
        if request.code == 17:
            return request.error_response(ResponseCode.NO_PERMISSION, "no")
        return None

    server = RemotingServer(
        "127.0.0.1", 0, processors={10: processor, 17: processor}, authorize=authorize
    )
    allowed = server.handle_request(None, RemotingCommand.request(10))  # type: ignore[arg-type]
    refused = server.handle_request(None, RemotingCommand.request(17))  # type: ignore[arg-type]
    unknown = server.handle_request(None, RemotingCommand.request(999))  # type: ignore[arg-type]
    assert allowed.code == ResponseCode.SUCCESS and refused.code == ResponseCode.NO_PERMISSION
    assert unknown.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    assert seen == [10] and asked == [10, 17]
