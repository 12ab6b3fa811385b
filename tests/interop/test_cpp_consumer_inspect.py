"""The broker forwards GET_CONSUMER_RUNNING_INFO to an official C++ consumer and relays its
answer (what ``mqadmin consumerStatus`` and the dashboard show), as Java's broker does."""

from __future__ import annotations

import pytest
import trio

from client.admin import AdminClient
from client.message import Message
from client.producer import Producer
from tests.interop.cppkit import start_driver
from tests.kits.brokerkit import broker_conf, start_broker, start_namesrv

pytestmark = pytest.mark.interop


async def test_a_cpp_consumer_answers_running_info_through_the_broker(processes, tmp_path) -> None:
    ns = start_namesrv(processes, tmp_path)
    start_broker(processes, broker_conf(tmp_path, namesrvAddr=ns.addr))
    async with Producer.open(ns.addr, "CppInspectPG") as producer:
        await producer.send(Message("CppInspect", b"hello", keys="k0"))
    out, stop = tmp_path / "consumer.jsonl", tmp_path / "stop"
    driver = start_driver(
        "consume", "--ns", ns.addr, "--topic", "CppInspect", "--group", "CppInspectCG",
        "--expect", "2", "--timeout", "120", "--stop-file", str(stop),
        log=tmp_path / "consumer.log", out=out,
    )  # fmt: skip
    try:
        with trio.fail_after(60):
            while "k0" not in out.read_text():
                await trio.sleep(0.1)  # the driver's events arrive in a file
        async with AdminClient.open(ns.addr) as admin:
            connection = await admin.consumer_connection("CppInspectCG")
            (member,) = connection.connection_set
            info = await admin.consumer_running_info("CppInspectCG", member.client_id)
        assert info.properties["PROP_CONSUME_TYPE"] == "CONSUME_PASSIVELY"
        assert "CppInspect" in {s.topic for s in info.subscription_set}
        assert any(mq.topic == "CppInspect" for mq in info.mq_table)
    finally:
        stop.touch()
        try:
            await trio.to_thread.run_sync(driver.wait, 60)
        finally:
            driver.kill()
