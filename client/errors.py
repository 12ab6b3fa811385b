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


def sole_exception(group: BaseExceptionGroup) -> BaseException | None:
    """The one exception a (nested) group holds, or None when it holds several."""
    found: list[BaseException] = []
    pending: list[BaseException] = [group]
    while pending and len(found) < 2:
        exc = pending.pop()
        if isinstance(exc, BaseExceptionGroup):
            pending.extend(exc.exceptions)
        else:
            found.append(exc)
    return found[0] if len(found) == 1 else None
