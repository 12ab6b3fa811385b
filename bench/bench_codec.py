"""Codec: encode + decode of a SEND_MESSAGE_V2 request with a 1 KiB body, frames/s on one core."""

from __future__ import annotations

import time

from remoting import headers, serde
from remoting.codes import RequestCode, SerializeType
from remoting.command import RemotingCommand, decode_command, encode_command_bytes
from remoting.frame import FrameDecoder

BODY = b"x" * 1024


def _request(serialize_type: int, queue_id: int = 1) -> RemotingCommand:
    header = headers.SendMessageRequestHeaderV2(
        a="PG-bench",
        b="BenchTopic",
        c="TBW102",
        d=4,
        e=queue_id,
        f=0,
        g=1_700_000_000_000,
        h=0,
        i="KEYS\x01k-1\x02TAGS\x01TagA\x02UNIQ_KEY\x010A0B0C0D00002A9F0000000000000001\x02WAIT\x01true",
        j=0,
        k=False,
        m=False,
    )
    command = RemotingCommand.request(
        RequestCode.SEND_MESSAGE_V2, serde.encode_header_fields(header), BODY
    )
    command.serialize_type = serialize_type
    return command


def run(serialize_type: int, seconds: float = 2.0) -> float:
    request = _request(serialize_type)
    decoder = FrameDecoder()
    count = 0
    deadline = time.perf_counter() + seconds
    start = time.perf_counter()
    while time.perf_counter() < deadline:
        for _ in range(1000):
            decoder.receive_data(encode_command_bytes(request))
            command = decode_command(decoder.next_frame())
            serde.decode_header(headers.SendMessageRequestHeaderV2, command.ext_fields)
        count += 1000
    return count / (time.perf_counter() - start)


def main() -> None:
    for name, kind in (("JSON", SerializeType.JSON), ("ROCKETMQ", SerializeType.ROCKETMQ)):
        rate = run(kind)
        print(
            f"SEND_MESSAGE_V2 1 KiB, {name:8s} header: encode+decode+header structure {rate:,.0f} frames/s (target >= 100,000)"
        )


if __name__ == "__main__":
    main()
