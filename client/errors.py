"""Client exceptions, named as RocketMQ users know them."""

from __future__ import annotations


class MQClientError(Exception):
    """A client-side failure (no route, bad argument, every retry failed)."""


class MQBrokerError(MQClientError):
    """The broker answered with an error code."""

    def __init__(self, code: int, remark: str | None, broker: str = "") -> None:
        super().__init__(f"broker {broker} answered code {code}: {remark or ''}".strip())
        self.code = code
        self.remark = remark
