"""A 5.x consumer's settings merged with its subscription group (consumeMessageOrderly makes
it FIFO, retryMaxTimes + 1 its attempts), and the proxy's cache of group configs."""

from __future__ import annotations

import asyncio

from proxy.apis import definition_pb2 as pb
from proxy.config import ProxyConfig
from proxy.group_config import GroupConfigs
from proxy.settings import merge_settings
from remoting.body import SubscriptionGroupConfig

CONFIG = ProxyConfig(namesrv_addr="a:1")


def consumer(fifo: bool | None = None) -> pb.Settings:
    subscription = pb.Subscription(group=pb.Resource(name="G"))
    if fifo is not None:
        subscription.fifo = fifo
    return pb.Settings(client_type=pb.ClientType.SIMPLE_CONSUMER, subscription=subscription)


def test_the_group_decides_fifo_and_attempts() -> None:
    orderly = SubscriptionGroupConfig(
        group_name="G", consume_message_orderly=True, retry_max_times=3
    )
    merged = merge_settings(consumer(), CONFIG, orderly)
    assert merged.subscription.fifo
    assert merged.backoff_policy.max_attempts == 4
    # 5.x's default group retry policy: 1 s, 5 s, 10 s, ... 2 h
    delays = [d.seconds for d in merged.backoff_policy.customized_backoff.next]
    assert delays[:4] == [1, 5, 10, 30] and delays[-1] == 7200 and len(delays) == 18
    # a group that is not orderly overrides what the client said, as RocketMQ's Proxy does
    plain = SubscriptionGroupConfig(group_name="G")
    assert not merge_settings(consumer(fifo=True), CONFIG, plain).subscription.fifo
    # no config known: the client's own word stands
    assert merge_settings(consumer(fifo=True), CONFIG, None).subscription.fifo
    assert merge_settings(consumer(), CONFIG, None).backoff_policy.max_attempts == 17
    for retries, attempts in [(-5, 1), (2**31 - 1, 2**31 - 1)]:
        hostile = SubscriptionGroupConfig(group_name="G", retry_max_times=retries)
        assert merge_settings(consumer(), CONFIG, hostile).backoff_policy.max_attempts == attempts


def test_cache_refreshes_and_keeps_the_last_config_when_a_fetch_fails() -> None:
    now = [0.0]
    answers: list[object] = []
    asked: list[str] = []

    async def fetch(group: str):
        asked.append(group)
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    configs = GroupConfigs(fetch, refresh_s=20, max_groups=2, clock=lambda: now[0])
    first = SubscriptionGroupConfig(group_name="G")
    second = SubscriptionGroupConfig(group_name="G", consume_message_orderly=True)

    async def scenario() -> None:
        answers.append(first)
        assert await configs.get("G") is first
        assert await configs.get("G") is first and asked == ["G"]  # cached
        now[0] = 21
        answers.append(OSError("broker gone"))
        assert await configs.get("G") is first  # the last one known
        answers.append(second)
        assert await configs.get("G") is second
        answers.extend([None, None])
        await configs.get("H")
        await configs.get("I")  # past max_groups: G, the least recently asked, is forgotten
        answers.append(first)
        assert await configs.get("G") is first and asked[-1] == "G"

    asyncio.run(scenario())
