"""Property: a scanned PULL_MESSAGE through the plain pass (broker/processor/pull_plain.py, via
``PullMessageProcessor.handle``) and through the reference (``process`` with the header decoded
from extFields) give the same reply bytes or the same refusal, commit the same offsets, count
the same store and broker stats (which also says the store was read once: a found pull's one
call, broker/store/reads_found.py, reads without ``store.get_message``) and hold the same
pulls, for hostile header values and broker states (permissions, role, slave reads, unknown and
disabled groups, unreadable topics, filters, offsets out of range).

One broker (a controller built in this process, its store loaded and holding tagged messages
in two queues) answers each drawn pull twice, once per path; its side-effect calls are
recorded, not made, so both paths see the same state."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker.client_manager import ClientChannelInfo
from broker.config import load_broker_config
from broker.controller import BrokerController
from broker.processor.message_filter import ExpressionMessageFilter
from broker.store.config import BrokerRole
from broker.store.types import MessageExtBrokerInner
from remoting.body import ConsumerData, SubscriptionData, SubscriptionGroupConfig, TopicConfig
from remoting.codec_native import native
from remoting.codes import RequestCode
from remoting.command import (
    EncodedReply,
    RemotingCommand,
    decode_declined,
    encode_command_bytes,
)
from remoting.errors import RequestError
from remoting.frame import Frame, FrameDecoder
from remoting.header_codec import plain_decoder
from remoting.headers import PullMessageRequestHeader

pytestmark = pytest.mark.skipif(native is None, reason="the plain pass takes scanned headers")

SUB_VERSION = 5
_reference_header = plain_decoder(PullMessageRequestHeader)


class _Connection:
    peer = "127.0.0.1:40000"
    attributes: dict = {}

    def send_nowait(self, request: object) -> None:
        pass  # the consumer group's change notice

    def defer(self, request: object) -> None:
        pass


@pytest.fixture(scope="module")
def broker() -> Any:
    root = Path(tempfile.mkdtemp(prefix="pull-plain-"))
    config, store_config = load_broker_config(
        {
            "brokerName": "b",
            "brokerIP1": "127.0.0.1",
            "storePathRootDir": str(root),
            "mappedFileSizeCommitLog": str(8 * 1024 * 1024),
            "maxTransferCountOnMessageInMemory": "32",
        },
        warn=False,
    )
    controller = BrokerController(config, store_config)
    controller.load()
    topics = controller.topics
    topics.update(TopicConfig(topic_name="T", read_queue_nums=4, write_queue_nums=4))
    topics.update(TopicConfig(topic_name="W", read_queue_nums=4, write_queue_nums=4, perm=2))
    controller.groups.update(SubscriptionGroupConfig(group_name="Off", consume_enable=False))
    controller.groups.update(
        SubscriptionGroupConfig(group_name="G", broker_id=3, which_broker_when_consume_slowly=7)
    )
    for i in range(40):
        for queue_id in (0, 1):
            controller.store.put_message(
                MessageExtBrokerInner(
                    topic="T", queue_id=queue_id, body=b"m%d" % i,
                    properties={"TAGS": "TagA" if i % 3 else "TagB"},
                    born_host=(b"\x7f\x00\x00\x01", 40000),
                )
            )  # fmt: skip
    while controller.store.reput.do_reput(1024):
        pass
    info = ClientChannelInfo(
        channel=_Connection(), client_id="127.0.0.1@t", language="JAVA", version=409,
        last_update=0,
    )  # fmt: skip
    sub = SubscriptionData(topic="T", sub_string="TagA", sub_version=SUB_VERSION)
    controller.clients.register_consumer(
        info, ConsumerData(group_name="G", subscription_data_set=[sub])
    )
    yield controller
    controller.store.shutdown()
    shutil.rmtree(root, ignore_errors=True)


def _scanned(ext: dict[str, Any]) -> RemotingCommand:
    request = RemotingCommand.request(RequestCode.PULL_MESSAGE, ext)
    request.opaque = 77
    item = FrameDecoder().whole_command(encode_command_bytes(request))
    return decode_declined(item) if type(item) is Frame else item


def _outcome(run: Any) -> tuple[Any, ...]:
    try:
        reply = run()
    except RequestError as exc:
        return ("refused", exc.code, exc.remark)
    if type(reply) is EncodedReply:
        return ("reply", b"".join(bytes(b) for b in reply.buffers))
    if type(reply) is RemotingCommand:
        return ("reply", encode_command_bytes(reply))
    return ("other", reply)


def _comparable(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """A SQL92 filter is compiled per pull (equal filters are not equal objects)."""
    return tuple(
        ("sql", a.expression.__class__) if type(a) is ExpressionMessageFilter else a for a in args
    )


def _recording(broker: Any, calls: list[Any]) -> dict[str, Any]:
    """Instance attributes that record the side effects (and the store's reads) in ``calls``."""
    store_get = type(broker.store).get_message.__get__(broker.store)

    def get_message(*args: Any, **kwargs: Any) -> Any:
        calls.append(("get", _comparable(args), kwargs))
        return store_get(*args, **kwargs)

    def suspended(*args: Any) -> str:
        calls.append(("hold", _comparable(args[2:])))
        return "held"

    return {
        "store.get_message": get_message,
        "offsets.commit": lambda *args: calls.append(("commit", args)),
        "pull_processor._suspended": suspended,
    }


def _counters(broker: Any) -> tuple[Any, ...]:
    """The stats a pull counts in: the store's found/miss/transferred and the broker's get
    items (the one-call path counts in them without on_get)."""
    stats = broker.store.stats
    return (
        stats.get_message_times_total_found,
        stats.get_message_times_total_miss,
        stats.get_message_transferred_msg_count,
        {key: (item.value, item.times) for key, item in broker.stats.items.items()},
    )


def _delta(before: tuple[Any, ...], after: tuple[Any, ...]) -> tuple[Any, ...]:
    items = {
        key: (value - before[3].get(key, (0, 0))[0], times - before[3].get(key, (0, 0))[1])
        for key, (value, times) in after[3].items()
    }
    counts = tuple(a - b for a, b in zip(after[:3], before[:3], strict=True))
    return (*counts, {k: v for k, v in items.items() if v != (0, 0)})


def _reads(calls: list[Any]) -> list[Any]:
    """The calls but the general read: the one-call path (reads_found.pull_found) reads
    without it; the stats deltas say it read once, as the reference did."""
    return [c for c in calls if c[0] != "get"]


def _patched(broker: Any, patches: dict[str, Any]) -> None:
    for path, value in patches.items():
        owner_name, name = path.split(".")
        setattr(getattr(broker, owner_name), name, value)


def _unpatched(broker: Any, patches: dict[str, Any]) -> None:
    for path in patches:
        owner_name, name = path.split(".")
        vars(getattr(broker, owner_name)).pop(name, None)


numbers = st.one_of(st.integers(-2, 70), st.sampled_from([2**31 - 1, -(2**31), 2**40]))
pulls = st.fixed_dictionaries(
    {
        "consumerGroup": st.sampled_from(["G"] * 8 + ["Off", "New", "Nobody"]),
        "topic": st.sampled_from(["T"] * 8 + ["W", "U"]),
        "queueId": st.sampled_from([0, 1] * 4 + [-1, 2, 4]),
        "queueOffset": numbers,
        "maxMsgNums": st.sampled_from([0, 1, 5, 32, 40, -1]),
        "sysFlag": st.integers(0, 15),
        "commitOffset": st.sampled_from([-1, 0, 0, 7, 2**40]),
        "suspendTimeoutMillis": st.sampled_from([0, 15000]),
        "subVersion": st.sampled_from([0, SUB_VERSION, SUB_VERSION, SUB_VERSION + 1]),
    },
    optional={
        "subscription": st.sampled_from(["*", "TagA", "TagA || TagB", "TagB", " ", "||", "a=1"]),
        "expressionType": st.sampled_from(["TAG", "TAG", "TAG", "SQL92", "X"]),
        "bname": st.just("b"),
    },
)
states = st.fixed_dictionaries(
    {
        "broker_permission": st.sampled_from([6] * 6 + [2, 4]),
        "slave_read_enable": st.booleans(),
        "slave": st.booleans(),
        "offset_check_in_slave": st.booleans(),
        "enable_property_filter": st.booleans(),
        # 0: every message but the last counts as on disk (suggest the slave)
        "memory_threshold": st.sampled_from([0, 1 << 40]),
    }
)


def _apply(broker: Any, state: dict[str, Any]) -> dict[str, Any]:
    """Set the drawn state as UPDATE_BROKER_CONFIG does (in place); the old values."""
    config, store_config = broker.config, broker.store_config
    role = BrokerRole.SLAVE if state["slave"] else BrokerRole.ASYNC_MASTER
    values = {
        (config, "broker_permission"): state["broker_permission"],
        (config, "slave_read_enable"): state["slave_read_enable"],
        (config, "enable_property_filter"): state["enable_property_filter"],
        (store_config, "broker_role"): role,
        (store_config, "offset_check_in_slave"): state["offset_check_in_slave"],
        (broker.store.reader, "memory_threshold"): state["memory_threshold"],
    }
    old = {key: getattr(*key) for key in values}
    for (owner, name), value in values.items():
        object.__setattr__(owner, name, value)
    return old


def _restore(old: dict[str, Any]) -> None:
    for (owner, name), value in old.items():
        object.__setattr__(owner, name, value)


@settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ext=pulls, state=states, as_numbers=st.booleans())
def test_the_plain_pass_answers_as_the_reference(broker, ext, state, as_numbers) -> None:
    ext = {k: (v if as_numbers and type(v) is int else str(v)) for k, v in ext.items()}
    old = _apply(broker, state)
    processor = broker.pull_processor
    connection = _Connection()
    plain_calls: list[Any] = []
    reference_calls: list[Any] = []
    try:
        patches = _recording(broker, plain_calls)
        _patched(broker, patches)
        request = _scanned(ext)
        before = _counters(broker)
        plain = _outcome(lambda: processor.handle(connection, request))
        plain_counted = _delta(before, _counters(broker))
        _unpatched(broker, patches)
        patches = _recording(broker, reference_calls)
        _patched(broker, patches)
        request = _scanned(ext)

        def reference() -> Any:
            header = _reference_header(request.ext_fields)
            return processor.process(connection, request, header, allow_suspend=True)

        before = _counters(broker)
        expected = _outcome(reference)
        reference_counted = _delta(before, _counters(broker))
        _unpatched(broker, patches)
    finally:
        _unpatched(broker, _recording(broker, []))
        _restore(old)
    assert plain == expected
    if any(call[0] == "get" for call in plain_calls):  # the general read, as the reference's
        assert plain_calls == reference_calls
    else:
        assert _reads(plain_calls) == _reads(reference_calls)
    assert plain_counted == reference_counted


def test_a_found_pull_takes_the_plain_pass(broker) -> None:
    """The common pull (a known group, its heartbeat's subscription, messages to return) is
    answered by the plain pass: no header object is built (fails when it goes to process)."""
    ext = {
        "consumerGroup": "G", "topic": "T", "queueId": "0", "queueOffset": "0",
        "maxMsgNums": "32", "sysFlag": "3", "commitOffset": "4",
        "suspendTimeoutMillis": "15000", "subVersion": str(SUB_VERSION),
        "expressionType": "TAG",
    }  # fmt: skip
    processor = broker.pull_processor
    processor.handle(_Connection(), _scanned(ext))  # the group's first found pull: its stats items
    request = _scanned(ext)
    assert request.header_values is not None
    vars(processor)["process"] = lambda *args, **kwargs: pytest.fail("went to process")
    vars(processor)["after_get"] = lambda *args, **kwargs: pytest.fail("went to after_get")
    vars(broker.store)["get_message"] = lambda *args, **kwargs: pytest.fail("read twice")
    try:
        reply = processor.handle(_Connection(), request)
    finally:
        vars(processor).pop("process")
        vars(processor).pop("after_get")
        vars(broker.store).pop("get_message")
    assert type(reply) is EncodedReply and reply.code == 0
    assert b'"remark":"FOUND"' in bytes(reply.buffers[0])
