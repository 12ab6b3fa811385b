"""A transactional half the SDK never resolved: the broker's check-back reaches the SDK's
TransactionChecker through mqproxy (RecoverOrphanedTransactionCommand on its Telemetry
stream), and its answer commits the message (EndTransaction from a server check)."""

from __future__ import annotations

import pytest

from tests.integration.proxy.proxykit import create_topic, run_sdk, start_proxy
from tests.kits.brokerkit import start_cluster
from tests.kits.consumekit import consume_until


@pytest.fixture(scope="module")
def checking_cluster(module_processes, tmp_path_factory):
    root = tmp_path_factory.mktemp("proxy-tx")
    # a half older than 1 s is checked every second (RocketMQ: 6 s and 60 s)
    ns, broker = start_cluster(
        module_processes, root, transactionTimeOut=1000, transactionCheckInterval=1000
    )
    return ns, broker, start_proxy(module_processes, root, ns.addr)


@pytest.mark.slow  # its own cluster (fast check-backs), ~20 s; commit and rollback stay in the default suite
async def test_an_undecided_half_is_checked_by_the_sdk_and_committed(checking_cluster) -> None:
    ns, _, proxy = checking_cluster
    await create_topic(ns.addr, "TxCheck", message_type="TRANSACTION")
    lines = await run_sdk(
        {
            "op": "send",
            "endpoints": f"127.0.0.1:{proxy.port}",
            "topic": "TxCheck",
            "mode": "transaction",
            "commit": None,
            "check_commits": True,
            "await_check_s": 30,
            "messages": [{"body": "undecided", "tag": "T"}],
        }
    )
    [sent] = [line for line in lines if "ok" in line]
    checks = [line for line in lines if "checked" in line]
    assert sent["ok"] and checks, lines
    assert checks[0]["checked"] == sent["message_id"]
    assert (checks[0]["topic"], checks[0]["body"]) == ("TxCheck", "undecided")
    got = await consume_until(ns.addr, "TxCheckCG", "TxCheck", lambda m: len(m) >= 1)
    assert [m.body for m in got] == [b"undecided"]
    assert got[0].properties["UNIQ_KEY"] == sent["message_id"]
