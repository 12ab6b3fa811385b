"""The frames the fuzzer starts from (pure, but for reading the captures).

Every request the official C++ client sent in the captures (tests/data/interop-frames), in its
own JSON and re-encoded as a ROCKETMQ binary header, and requests of the codes no capture holds,
built with our encoders: batch sends, broker registrations (plain and compressed), KV config,
locks, subscription groups, client checks.
"""

from __future__ import annotations

import json

import attrs

from namesrv.register_body import encode_compressed
from remoting import message as codec
from remoting.body import (
    CheckClientRequestBody,
    ConsumerData,
    DataVersion,
    HeartbeatData,
    LockBatchRequestBody,
    MessageQueue,
    ProducerData,
    RegisterBrokerBody,
    SubscriptionData,
    SubscriptionGroupConfig,
    TopicConfig,
    TopicConfigSerializeWrapper,
)
from remoting.codes import CURRENT_VERSION, RequestCode, SerializeType
from remoting.command import RemotingCommand, decode_command, encode_command_bytes
from remoting.frame import FrameDecoder
from remoting.serde import encode_body
from tests.conftest import INTEROP_FRAMES
from tests.fuzz.values import ADMIN_GROUP

C = RequestCode
NAMESRV_CODES = frozenset(range(100, 107)) | {205, 206, 216, 219, 224, 304, 311, 312, 313}
NAMESRV_CODES |= {318, 319, 322, 327}


@attrs.frozen
class Seed:
    name: str
    namesrv: bool  # meant for the NameServer (else the broker)
    frame: bytes

    def command(self) -> RemotingCommand:
        decoder = FrameDecoder()
        decoder.receive_data(self.frame)
        frame = decoder.next_frame()
        assert frame is not None
        return decode_command(frame)


def captured() -> list[Seed]:
    out = []
    for index in sorted(INTEROP_FRAMES.glob("cpp/*/frames.json")):
        for entry in json.loads(index.read_text()):
            if entry["dir"] != "in":
                continue
            path = index.parent / entry["file"]
            name = f"{index.parent.name}/{entry['file']}"
            out.append(Seed(name, entry["code"] in NAMESRV_CODES, path.read_bytes()))
    return out


def as_rocketmq(seed: Seed) -> Seed:
    command = seed.command()
    command.serialize_type = SerializeType.ROCKETMQ
    return Seed(seed.name + "@rocketmq", seed.namesrv, encode_command_bytes(command))


def request(code: int, fields: dict[str, object], body: bytes = b"") -> bytes:
    command = RemotingCommand.request(code, {k: str(v) for k, v in fields.items()}, body)
    command.version = CURRENT_VERSION
    return encode_command_bytes(command)


def synthetic(topic: str, group: str) -> list[Seed]:
    """Requests of the codes the captures lack, naming the fuzz topic and group."""
    mq = MessageQueue(topic=topic, broker_name="broker-a", queue_id=0)
    subscription = SubscriptionData(topic=topic)
    consumer = ConsumerData(group_name=group, subscription_data_set=[subscription])
    heartbeat = HeartbeatData(
        client_id="fuzz@1",
        producer_data_set=[ProducerData(group_name="FuzzP")],
        consumer_data_set=[consumer],
    )
    lock = LockBatchRequestBody(consumer_group=group, client_id="fuzz@1", mq_set=[mq])
    wrapper = TopicConfigSerializeWrapper(
        topic_config_table={topic: TopicConfig(topic_name=topic)},
        data_version=DataVersion(counter=1, timestamp=1),
    )
    register = RegisterBrokerBody(topic_config_serialize_wrapper=wrapper)
    fake = {"brokerName": "fuzz-fake", "brokerAddr": "127.0.0.1:1", "clusterName": "FuzzC"}
    batch = codec.encode_batch_body([(0, b"b1", "KEYS\x01k1"), (0, b"b2", "TAGS\x01t")])
    send = {"a": "FuzzP", "b": topic, "c": "TBW102", "d": 4, "e": 0, "f": 0, "g": 1, "h": 0}
    send |= {"i": "WAIT\x01true\x02UNIQ_KEY\x01FUZZ"}
    broker = {
        "send-batch": request(C.SEND_BATCH_MESSAGE, {**send, "m": "true"}, batch),
        "send-reply": request(C.SEND_REPLY_MESSAGE_V2, send, b"reply"),
        "heartbeat": request(C.HEART_BEAT, {}, encode_body(heartbeat)),
        "lock": request(C.LOCK_BATCH_MQ, {}, encode_body(lock)),
        "unlock": request(C.UNLOCK_BATCH_MQ, {}, encode_body(lock)),
        "check-client": request(
            C.CHECK_CLIENT_CONFIG,
            {},
            encode_body(CheckClientRequestBody(group=group, subscription_data=subscription)),
        ),
        "subscription-group": request(
            C.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
            {},
            encode_body(SubscriptionGroupConfig(group_name=ADMIN_GROUP)),
        ),
    }
    namesrv = {
        "register": request(
            C.REGISTER_BROKER,
            {**fake, "haServerAddr": "127.0.0.1:2", "brokerId": 0},
            encode_body(register),
        ),
        "register-compressed": request(
            C.REGISTER_BROKER,
            {**fake, "haServerAddr": "127.0.0.1:2", "brokerId": 0, "compressed": "true"},
            encode_compressed(register),
        ),
        "query-data-version": request(
            C.QUERY_DATA_VERSION, {**fake, "brokerId": 0}, encode_body(wrapper.data_version)
        ),
        "put-kv": request(C.PUT_KV_CONFIG, {"namespace": "FUZZ", "key": "k", "value": "v"}),
        "wipe-perm": request(C.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "fuzz-fake"}),
        "topics-by-cluster": request(C.GET_TOPICS_BY_CLUSTER, {"cluster": "FuzzC"}),
    }
    return [Seed(f"synthetic/{k}", False, v) for k, v in broker.items()] + [
        Seed(f"synthetic/{k}", True, v) for k, v in namesrv.items()
    ]


def corpus(topic: str, group: str) -> list[Seed]:
    seeds = captured() + synthetic(topic, group)
    return seeds + [as_rocketmq(seed) for seed in seeds]


def bodies_by_code(seeds: list[Seed]) -> dict[int, bytes]:
    """A plausible body per code (the first seed's), for header-field cases."""
    out: dict[int, bytes] = {}
    for seed in seeds:
        command = seed.command()
        out.setdefault(command.code, bytes(command.body))
    return out
