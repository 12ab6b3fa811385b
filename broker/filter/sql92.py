"""compile_sql92: expression text in, a reusable per-message matcher out.

What the broker does with it mirrors ExpressionMessageFilter.isMatchedByCommitLog (4.9.x): the
message's properties (all Strings) are the evaluation context, and only a Boolean TRUE result
lets the message through; unknown, FALSE and any evaluation failure all filter it out.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

import attrs

from broker.filter.closures import Condition, condition
from broker.filter.parser import parse

# SelectorParser keeps 100 compiled expressions; pulls for one subscription reuse one text.
CACHE_SIZE = 128


@attrs.frozen
class Sql92Expression:
    text: str
    _condition: Condition = attrs.field(repr=False, eq=False)

    def evaluate(self, properties: Mapping[str, str]) -> bool | None:
        """Java's evaluate(): True, False or None (unknown). Raises FilterEvaluationError where
        Java throws (e.g. `a > 5` with a = "x")."""
        return self._condition(properties)

    def matches(self, properties: Mapping[str, str]) -> bool:
        """Whether the broker delivers the message. Never raises: like Java's catch Throwable
        around evaluate(), any failure means "no match"."""
        try:
            return self._condition(properties) is True
        except Exception:
            return False


@functools.lru_cache(maxsize=CACHE_SIZE)
def compile_sql92(text: str) -> Sql92Expression:
    """Parse, check and compile `text`; raises FilterSyntaxError if RocketMQ would refuse it.
    Refusals are not cached: a client repeating a bad subscription pays one parse each time."""
    return Sql92Expression(text, condition(parse(text)))
