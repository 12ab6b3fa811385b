"""5.x topic attributes: UPDATE_AND_CREATE_TOPIC's ``attributes`` (+message.type=FIFO) kept
with the topic config across a restart, answered by GET_TOPIC_CONFIG (what the Proxy reads to
check sends), refused when malformed; mqadmin updateTopic -a sets them."""

from __future__ import annotations

import json

from remoting.client import RemotingClient
from remoting.codes import RequestCode
from remoting.command import RemotingCommand
from remoting.headers import CreateTopicRequestHeader
from remoting.serde import encode_header_fields
from tests.kits.brokerkit import broker_conf, call, start_broker, start_namesrv
from tests.kits.clikit import assert_refused, run_cli


def create(topic: str, attributes: str | None) -> RemotingCommand:
    header = CreateTopicRequestHeader(
        topic=topic,
        default_topic="TBW102",
        read_queue_nums=4,
        write_queue_nums=4,
        perm=6,
        topic_filter_type="SINGLE_TAG",
        attributes=attributes,
    )
    return RemotingCommand.request(
        RequestCode.UPDATE_AND_CREATE_TOPIC, encode_header_fields(header)
    )


def get_config(topic: str) -> RemotingCommand:
    return RemotingCommand.request(RequestCode.GET_TOPIC_CONFIG, {"topic": topic})


async def test_message_type_is_kept_and_answered(processes, tmp_path) -> None:
    ns = start_namesrv(processes, tmp_path)
    conf = broker_conf(tmp_path, namesrvAddr=ns.addr)
    broker = start_broker(processes, conf)
    async with RemotingClient.open() as client:
        assert (await call(client, broker.addr, create("Fifo", "+message.type=FIFO"))).code == 0
        assert (await call(client, broker.addr, create("Plain", None))).code == 0
        # an update without attributes keeps them
        assert (await call(client, broker.addr, create("Fifo", None))).code == 0
        for bad in ("+message.type=SOMETIMES", "+colour=red", "message.type=FIFO", "+a=1,+a=2"):
            response = await call(client, broker.addr, create("Bad", bad))
            assert response.code == 1, bad
        assert (await call(client, broker.addr, get_config("Bad"))).code == 17
        plain = json.loads((await call(client, broker.addr, get_config("Plain"))).body)
        assert "attributes" not in plain
    done = run_cli(
        "client.mqadmin",
        "updateTopic",
        "-n",
        ns.addr,
        "-b",
        broker.addr,
        "-t",
        "Delayed",
        "-a",
        "+message.type=DELAY",
    )
    assert done.returncode == 0, done.stderr
    refused = run_cli(
        "client.mqadmin",
        "updateTopic",
        "-n",
        ns.addr,
        "-b",
        broker.addr,
        "-t",
        "Delayed",
        "-a",
        "+message.type=LATER",
    )
    assert_refused(refused, "value is not in set")
    broker.terminate()
    broker = start_broker(processes, conf, "broker-again")
    async with RemotingClient.open() as client:
        fifo = json.loads((await call(client, broker.addr, get_config("Fifo"))).body)
        assert fifo["attributes"] == {"message.type": "FIFO"} and fifo["topicName"] == "Fifo"
        delayed = json.loads((await call(client, broker.addr, get_config("Delayed"))).body)
        assert delayed["attributes"] == {"message.type": "DELAY"}
        assert (await call(client, broker.addr, create("Fifo", "-message.type"))).code == 0
        fifo = json.loads((await call(client, broker.addr, get_config("Fifo"))).body)
        assert "attributes" not in fifo
