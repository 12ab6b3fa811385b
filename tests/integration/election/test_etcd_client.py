"""EtcdClient against a real single-member etcd: KV, compare-on-revision transactions,
leases (a key bound to a lease goes when the lease does) and endpoint failover."""

from __future__ import annotations

import pytest
import trio

from etcdstate.etcd import EtcdClient, EtcdUnavailable
from etcdstate.etcd_json import Compare, Delete, EtcdLeaseNotFound, Put, Range
from tests.kits.etcdkit import EtcdMember, module_etcd  # noqa: F401 (fixture)
from tests.kits.hakit import wait_until


@pytest.fixture
async def client(module_etcd: EtcdMember, request: pytest.FixtureRequest):  # noqa: F811
    etcd = EtcdClient([module_etcd.endpoint])
    try:
        yield etcd
    finally:
        await etcd.aclose()


def key(request: pytest.FixtureRequest, name: str) -> bytes:
    return f"/test/{request.node.name}/{name}".encode()


async def test_put_get_delete_and_prefix(client: EtcdClient, request: pytest.FixtureRequest):
    a, b = key(request, "a"), key(request, "b")
    assert await client.get(a) is None
    first = await client.put(a, b"1")
    await client.put(b, b"\x00\xff binary")
    kv = await client.get(a)
    assert kv is not None and kv.value == b"1" and kv.mod_revision == first
    listed = await client.get_prefix(key(request, ""))
    assert [(k.key, k.value) for k in listed] == [(a, b"1"), (b, b"\x00\xff binary")]
    await client.delete(a)
    assert await client.get(a) is None


async def test_txn_compares_the_revision_read(client: EtcdClient, request: pytest.FixtureRequest):
    k = key(request, "epoch")
    created = await client.txn([Compare.absent(k)], [Put(k, b"1")], [Range(k)])
    assert created.succeeded
    again = await client.txn([Compare.absent(k)], [Put(k, b"x")], [Range(k)])
    assert not again.succeeded and again.ranges[0][0].value == b"1"
    seen = again.ranges[0][0].mod_revision
    won = await client.txn([Compare.mod_revision(k, seen)], [Put(k, b"2")])
    lost = await client.txn([Compare.mod_revision(k, seen)], [Put(k, b"3")])
    assert won.succeeded and not lost.succeeded
    assert (await client.get(k)).value == b"2"
    assert (await client.txn([Compare.value_is(k, b"2")], [Delete(k)])).succeeded
    assert await client.get(k) is None


async def test_a_key_on_a_lease_goes_with_it(client: EtcdClient, request: pytest.FixtureRequest):
    k = key(request, "master")
    lease, ttl = await client.lease_grant(2)
    assert ttl >= 2
    await client.put(k, b"me", lease=lease)
    assert (await client.get(k)).lease == lease
    assert await client.lease_keepalive(lease) > 0
    await client.lease_revoke(lease)
    assert await client.get(k) is None
    assert await client.lease_keepalive(lease) == 0
    await client.lease_revoke(lease)  # twice is harmless
    with pytest.raises(EtcdLeaseNotFound):  # a put on a gone lease: the elector starts again
        await client.put(k, b"me", lease=lease)


async def test_an_unrefreshed_lease_expires(client: EtcdClient, request: pytest.FixtureRequest):
    k = key(request, "master")
    lease, _ = await client.lease_grant(2)
    await client.put(k, b"me", lease=lease)

    async def gone() -> bool:
        return await client.get(k) is None

    await wait_until(gone, 15, "the lease's key to expire")
    assert await client.lease_keepalive(lease) == 0


async def test_endpoints_are_tried_in_turn(
    module_etcd: EtcdMember,  # noqa: F811
    request: pytest.FixtureRequest,
):
    dead = "http://127.0.0.1:1"  # nothing listens on port 1
    etcd = EtcdClient([dead, module_etcd.endpoint])
    try:
        await etcd.put(key(request, "k"), b"v")
        assert (await etcd.get(key(request, "k"))).value == b"v"
    finally:
        await etcd.aclose()
    nobody = EtcdClient([dead], timeout_s=1)
    try:
        with pytest.raises(EtcdUnavailable, match="no etcd endpoint answered"):
            with trio.fail_after(10):
                await nobody.get(b"/k")
    finally:
        await nobody.aclose()
