"""The NameServer's scan for silent brokers on trio's MockClock (autojump): the controller's
loop and the route table's expiry together, over two virtual minutes."""

from __future__ import annotations

import trio

from namesrv.config import NamesrvConfig
from namesrv.controller import NamesrvController
from tests.unit.namesrv.test_route_info import reg, tc, topics


def virtual_ms() -> int:
    return int(trio.current_time() * 1000)


async def test_a_broker_silent_for_120_s_leaves_the_routes_at_the_next_scan(
    autojump_clock, tmp_path
) -> None:
    config = NamesrvConfig(kv_config_path=tmp_path / "kv.json")
    controller = NamesrvController(config, clock=virtual_ms)
    routes, start = controller.routes, trio.current_time()
    routes.register_broker(reg(wrapper=topics(tc("T"))))
    gone_at: list[float] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(controller._scan_loop)
        with trio.fail_after(600):  # virtual seconds
            while routes.pickup_topic_route_data("T") is not None:
                await trio.sleep(1)
        gone_at.append(trio.current_time() - start)
        nursery.cancel_scope.cancel()
    # expired after 120 s (brokerChannelExpiredTime), found by the scan every 10 s
    assert 120 < gone_at[0] <= 120 + config.scan_not_active_broker_interval / 1000 + 1


async def test_a_broker_that_keeps_registering_stays(autojump_clock, tmp_path) -> None:
    controller = NamesrvController(
        NamesrvConfig(kv_config_path=tmp_path / "kv.json"), clock=virtual_ms
    )
    routes = controller.routes
    async with trio.open_nursery() as nursery:
        nursery.start_soon(controller._scan_loop)
        for _ in range(20):  # 10 minutes, a registration every 30 s as brokers do
            routes.register_broker(reg(wrapper=topics(tc("T"))))
            await trio.sleep(30)
        nursery.cancel_scope.cancel()
    assert routes.pickup_topic_route_data("T") is not None
