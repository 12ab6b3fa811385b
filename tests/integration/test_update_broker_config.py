"""``mqadmin updateBrokerConfig`` against a real broker started with ``-c``: a change takes
effect at once where the broker reads it as it works, reaches the NameServer when it is the
broker's permission, lands in the -c file, and a bad key or value is refused by name."""

from __future__ import annotations

import trio

from remoting.client import RemotingClient
from remoting.codes import ResponseCode
from tests.client.test_mqadmin import as_json, mqadmin
from tests.integration.brokerkit import (
    broker_conf,
    call,
    send_request,
    start_broker,
    start_namesrv,
    wait_for_route,
)


async def test_a_broker_made_read_only_at_run_time_refuses_sends_and_says_so(
    processes, tmp_path
) -> None:
    ns = start_namesrv(processes, tmp_path)
    conf = broker_conf(tmp_path, namesrvAddr=ns.addr)
    broker = start_broker(processes, conf)

    def admin(*args: str):
        return trio.to_thread.run_sync(lambda: as_json(ns, *args, "-b", broker.addr))

    async with RemotingClient.open() as client:
        assert (await call(client, broker.addr, send_request("Perm", b"x"))).code == 0
        await wait_for_route(client, ns.addr, "Perm", bool)

        done = await admin("updateBrokerConfig", "-k", "brokerPermission", "-v", "4")
        assert done["brokers"][broker.addr] == "applied: brokerPermission"
        refused = await call(client, broker.addr, send_request("Perm", b"y"))
        assert refused.code == ResponseCode.NO_PERMISSION
        # re-registered at once: the NameServer routes the topic read-only
        await wait_for_route(client, ns.addr, "Perm", lambda r: r and r.queue_datas[0].perm == 4)
        assert "brokerPermission=4" in conf.read_text().splitlines()
        shown = await admin("getBrokerConfig")
        assert "brokerPermission=4" in shown[broker.addr].splitlines()

        done = await admin("updateBrokerConfig", "-k", "listenPort", "-v", "1234")
        assert done["brokers"][broker.addr] == "stored, applied at the next start: listenPort"
        await admin("updateBrokerConfig", "-k", "brokerPermission", "-v", "6")
        assert (await call(client, broker.addr, send_request("Perm", b"z"))).code == 0
        assert "listenPort=1234" in conf.read_text().splitlines()


def test_a_bad_value_or_an_unknown_key_is_refused_by_name(processes, tmp_path) -> None:
    ns = start_namesrv(processes, tmp_path)
    conf = broker_conf(tmp_path, namesrvAddr=ns.addr)
    broker = start_broker(processes, conf)
    before = conf.read_text()
    bad = mqadmin(
        ns, "updateBrokerConfig", "-b", broker.addr, "-k", "brokerPermission", "-v", "9", ok=False
    )
    assert "brokerPermission='9'" in bad.stderr
    unknown = mqadmin(
        ns, "updateBrokerConfig", "-b", broker.addr, "-k", "brokerPermision", "-v", "4", ok=False
    )
    assert "unknown broker config key(s): brokerPermision" in unknown.stderr
    assert conf.read_text() == before  # nothing written for a refused change
