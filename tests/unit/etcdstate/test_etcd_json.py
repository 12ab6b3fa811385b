"""The etcd JSON gateway's shapes: what we send, and every reply checked in one place."""

from __future__ import annotations

import base64

import pytest

from etcdstate import etcd_json as J


def test_prefix_end_follows_etcd():
    assert J.prefix_end(b"/a/") == b"/a0"
    assert J.prefix_end(b"a\xff") == b"b"
    assert J.prefix_end(b"\xff\xff") == b"\x00"


def test_txn_request_shapes():
    request = J.txn_request(
        [J.Compare.mod_revision(b"k", 7), J.Compare.absent(b"m"), J.Compare.value_is(b"v", b"x")],
        [J.Put(b"k", b"1", lease=5), J.Delete(b"m")],
        [J.Range(b"k")],
    )
    assert request["compare"] == [
        {"key": "aw==", "target": "MOD", "result": "EQUAL", "mod_revision": "7"},
        {"key": "bQ==", "target": "CREATE", "result": "EQUAL", "create_revision": "0"},
        {"key": "dg==", "target": "VALUE", "result": "EQUAL", "value": "eA=="},
    ]
    assert request["success"][0] == {"request_put": {"key": "aw==", "value": "MQ==", "lease": "5"}}
    assert request["failure"] == [{"request_range": {"key": "aw=="}}]


def test_zero_fields_left_out_by_the_gateway_read_as_zero():
    result = J.txn_reply({"header": {"revision": "9"}, "responses": [{"response_range": {}}]})
    assert result == J.TxnResult(False, 9, [[]])
    kv = J.key_value({"key": base64.b64encode(b"k").decode()})
    assert kv == J.KeyValue(b"k", b"", 0, 0, 0, 0)


@pytest.mark.parametrize(
    "reply, message",
    [
        ([], "the reply is not an object"),
        ({"kvs": {}}, "kvs is not a list"),
        ({"kvs": [{"key": "!!"}]}, "key is not base64"),
        ({"kvs": [{"key": "aw==", "mod_revision": "-1"}]}, "mod_revision=-1 out of range"),
        ({"kvs": [{"key": "aw==", "version": "x"}]}, "version is not an integer"),
        ({"kvs": [{"key": "aw==", "version": True}]}, "version is not an integer"),
        ({"kvs": [{"key": "A" * 2000}]}, "key is not base64 of at most 1024 bytes"),
    ],
)
def test_malformed_replies_are_refused_naming_the_field(reply, message):
    with pytest.raises(J.EtcdProtocolError, match=message):
        J.range_reply(reply)


def test_an_etcd_error_is_an_error_not_data():
    with pytest.raises(J.EtcdError, match="requested lease not found"):
        J.lease_keepalive_reply({"error": "x", "message": "requested lease not found", "code": 5})
    assert J.lease_keepalive_reply({"result": {"ID": "1"}}) == 0
    assert J.lease_keepalive_reply({"result": {"ID": "1", "TTL": "3"}}) == 3


def test_our_own_keys_and_values_are_bounded():
    with pytest.raises(ValueError, match="etcd key of 0 bytes"):
        J.put_request(b"", b"v")
    with pytest.raises(ValueError, match="etcd value of"):
        J.put_request(b"k", b"v" * (J.MAX_VALUE_BYTES + 1))
