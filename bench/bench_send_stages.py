"""The send path's stages in one process, without sockets: µs per 1 KiB message for each stage
of a SEND_MESSAGE_V2 (frame split, JSON header, the custom header, properties, the store put
alone and in groups of 48 (what one 64 KiB read holds), the response and its encoding). The
broker's CPU per message over loopback minus their sum is the I/O, the event loop and the
checks these leave out (bench_broker; docs/scaling.md uses both)."""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.bench_codec import _request
from broker.processor.send import put_result_response
from broker.store.config import MessageStoreConfig
from broker.store.message_store import DefaultMessageStore
from broker.store.types import MessageExtBrokerInner
from remoting import message as codec
from remoting.codes import SerializeType
from remoting.command import decode_command, encode_command, encode_command_bytes
from remoting.frame import FrameDecoder
from remoting.send_header import decode_send_header

GROUP = 48
ROUNDS = 20_000


def per_call_us(fn: Callable[[], object], rounds: int = ROUNDS) -> float:
    fn()
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        for _ in range(rounds):
            fn()
        best = min(best, (time.perf_counter() - started) / rounds * 1e6)
    return best


def main() -> None:
    request = _request(SerializeType.JSON)
    frame_bytes = encode_command_bytes(request)
    burst = frame_bytes * GROUP
    decoder = FrameDecoder()

    def split() -> None:
        decoder.receive_data(burst)
        while decoder.next_frame() is not None:
            pass

    decoder.receive_data(frame_bytes)
    frame = decoder.next_frame()
    command = decode_command(frame)
    header = decode_send_header(command.ext_fields, True)
    properties = codec.string_to_properties(header.properties)

    def inner() -> MessageExtBrokerInner:
        return MessageExtBrokerInner(
            topic=header.topic,
            queue_id=header.queue_id,
            body=command.body,
            properties=dict(properties),
            flag=header.flag,
            sys_flag=header.sys_flag,
            born_timestamp=header.born_timestamp,
            born_host=(b"\x7f\x00\x00\x01", 40000),
        )

    root = Path(tempfile.mkdtemp(prefix="bench-stages-"))
    store = DefaultMessageStore(
        MessageStoreConfig(store_path_root_dir=root, mapped_file_size_commit_log=1 << 30),
        store_host=("127.0.0.1", 10911),
    )
    store.load()
    try:
        msgs = [inner() for _ in range(GROUP)]
        result = store.put_message(inner())
        rows = [
            ("frame split (per frame of a 48-frame read)", per_call_us(split, 500) / GROUP),
            ("JSON command header decode", per_call_us(lambda: decode_command(frame))),
            (
                "SEND_MESSAGE_V2 header decode",
                per_call_us(lambda: decode_send_header(command.ext_fields, True)),
            ),
            (
                "properties string parse",
                per_call_us(lambda: codec.string_to_properties(header.properties)),
            ),
            ("message object", per_call_us(inner)),
            ("store put, one message", per_call_us(lambda: store.put_message(msgs[0]), 5000)),
            (
                f"store put, groups of {GROUP} (per message)",
                per_call_us(lambda: store.put_message_group(msgs), 200) / GROUP,
            ),
            ("response command", per_call_us(lambda: put_result_response(command, result))),
            (
                "response encode",
                per_call_us(lambda: encode_command(put_result_response(command, result)))
                - per_call_us(lambda: put_result_response(command, result)),
            ),
        ]
    finally:
        store.shutdown()
        shutil.rmtree(root, ignore_errors=True)
    for label, us in rows:
        print(f"{label:<44} {us:6.2f} us", flush=True)


if __name__ == "__main__":
    main()
