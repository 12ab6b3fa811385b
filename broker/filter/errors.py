"""The two ways a SQL92 filter can fail: when it is compiled, and when one message is tested."""

from __future__ import annotations


class FilterSyntaxError(ValueError):
    """RocketMQ would refuse this expression (Java: MQFilterException from SelectorParser.parse).

    The broker answers such a subscription with SUBSCRIPTION_PARSE_FAILED; the message names
    the problem and, where there is one, the 1-based character position.
    """


class FilterEvaluationError(Exception):
    """Evaluating against one message hit what Java throws for (a NumberFormatException or a
    ClassCastException inside ComparisonExpression). ExpressionMessageFilter logs it and the
    message does not match; `Sql92Expression.matches` does the same without the log."""
