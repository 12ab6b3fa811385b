"""Property: whatever header values a producer sends, each send is refused or stored as a record
recovery reads back. Hypothesis draws sends with hostile values in any SEND_MESSAGE(_V2) field
(numbers past 32 and 64 bits, the store's own sysFlag bits, names that are paths, odd property
strings); a real broker answers them, is killed with SIGKILL or stopped cleanly, restarts, and
must serve every acknowledged message by its offset and, where it went to its own queue, from
that queue. Bounded for CI: a handful of examples of a few dozen sends each."""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from remoting import message as codec
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from tests.kits.brokerkit import broker_conf, call, pull_request, send_request, start_broker

STORED = {ResponseCode.SUCCESS, ResponseCode.FLUSH_DISK_TIMEOUT, ResponseCode.SLAVE_NOT_AVAILABLE}
V1_NAME = dict(
    a="producerGroup", b="topic", c="defaultTopic", d="defaultTopicQueueNums", e="queueId",
    f="sysFlag", g="bornTimestamp", h="flag", i="properties", j="reconsumeTimes", k="unitMode",
    l="maxReconsumeTimes",
)  # fmt: skip

HOSTILE_NUMBERS = [
    2**31 - 1, 2**31, 2**31 + 4, 2**32 + 16, -(2**31) - 1, 2**63, -1,
    0x10, 0x20, 0x30, 0x301, 0x4, 0x8, 0xC, 0x1, 0x40, 0x80,
]  # fmt: skip
numbers = st.one_of(
    st.integers(-(2**70), 2**70).map(str),
    st.sampled_from(HOSTILE_NUMBERS).map(str),
    st.sampled_from(["", "x", " 7", "1_0", "0x10", "9" * 30]),
)
names = st.sampled_from([
    "T1", "T2", "%RETRY%G", "../x", "", "a/b", "x\x00", "T" * 128, "TBW102", "BenchmarkTest",
    "SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRANS_HALF_TOPIC", "%DLQ%G",
])  # fmt: skip
property_values = st.sampled_from(["true", "false", "1", "3", "-1", "0", "2147483648", "a"])
properties = st.dictionaries(
    st.sampled_from(["TAGS", "KEYS", "DELAY", "TRAN_MSG", "WAIT", "REAL_TOPIC", "REAL_QID", "x"]),
    property_values | names,
    max_size=4,
).map(codec.properties_to_string) | st.text(max_size=20)
FIELD_VALUES = {
    "a": names, "b": names, "c": names, "d": numbers, "e": numbers, "f": numbers, "g": numbers,
    "h": numbers, "i": properties, "j": numbers, "k": st.sampled_from(["true", "x"]),
    "l": numbers,
}  # fmt: skip
# One or two hostile fields a send: enough of them are stored to test recovery.
changes = st.lists(
    st.sampled_from(sorted(FIELD_VALUES)).flatmap(lambda k: st.tuples(st.just(k), FIELD_VALUES[k])),
    max_size=2,
).map(dict)
sends = st.lists(st.tuples(st.booleans(), changes), min_size=5, max_size=40)
examples = itertools.count()


def hostile_send(body: bytes, v1: bool, fields: dict[str, str]) -> RemotingCommand:
    request = send_request(
        "T1", body, code=RequestCode.SEND_MESSAGE if v1 else RequestCode.SEND_MESSAGE_V2
    )
    request.ext_fields.update({V1_NAME[k] if v1 else k: v for k, v in fields.items()})
    return request


async def send_all(addr: str, drawn: list, tag: int) -> dict[int, tuple[bytes, str]]:
    """phys offset -> (body, topic sent to) of every acknowledged send."""
    acked = {}
    async with RemotingClient.open() as client:
        for i, (v1, fields) in enumerate(drawn):
            body = f"p{tag}-{i}".encode()
            response = await call(client, addr, hostile_send(body, v1, fields))
            if response.code in STORED:
                phys = codec.decode_offset_msg_id(response.ext("msgId")).phys_offset
                acked[phys] = (body, fields.get("b", "T1"))
            else:
                assert response.remark, response  # a refusal always says why
    return acked


async def check_recovered(addr: str, acked: dict[int, tuple[bytes, str]]) -> None:
    async with RemotingClient.open() as client:
        for phys, (body, topic) in acked.items():
            view = RemotingCommand.request(RequestCode.VIEW_MESSAGE_BY_ID, {"offset": str(phys)})
            response = await call(client, addr, view)
            assert response.code == ResponseCode.SUCCESS, (phys, body, response.remark)
            (message,) = codec.decode_messages(response.body, decompress=False)
            assert message.body == body
            if message.topic != topic or codec.transaction_type(message.sys_flag) in (0x4, 0xC):
                continue  # delayed, half or dead-lettered: not in the queue it was sent to
            pull = pull_request(message.topic, message.queue_id, message.queue_offset, max_nums=1)
            pulled = await call(client, addr, pull)
            assert pulled.code == ResponseCode.SUCCESS, (message.topic, pulled.remark)
            assert codec.decode_messages(pulled.body, decompress=False)[0].body == body


@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(drawn=sends, kill=st.booleans())
async def test_any_send_is_refused_or_recovers(processes, tmp_path, drawn, kill) -> None:
    tag = next(examples)
    (tmp_path / f"example-{tag}").mkdir()
    conf = broker_conf(tmp_path / f"example-{tag}")
    broker = start_broker(processes, conf, f"broker-{tag}")
    acked = await send_all(broker.addr, drawn, tag)
    if kill:
        broker.kill()
    else:
        assert broker.terminate() == 0
    again = start_broker(processes, conf, f"broker-{tag}-again")
    await check_recovered(again.addr, acked)
    assert again.terminate() == 0
    for process in (broker, again):
        assert "Traceback" not in process.log_path.read_text(errors="replace")
