"""RocketMQ's SQL92 message-property filter (the `filter` module of RocketMQ 4.9.x), pure.

    expr = compile_sql92("a > 5 AND b = 'x'")   # FilterSyntaxError if RocketMQ would refuse it
    expr.matches({"a": "6", "b": "x"})          # True; never raises

lexer -> parser (+ rules: Java's compile-time checks) -> nodes -> closures (+ comparison,
java_text: Java's conversions) -> sql92 (the cached entry point).
"""

from broker.filter.errors import FilterEvaluationError, FilterSyntaxError
from broker.filter.sql92 import Sql92Expression, compile_sql92

__all__ = ["FilterEvaluationError", "FilterSyntaxError", "Sql92Expression", "compile_sql92"]
