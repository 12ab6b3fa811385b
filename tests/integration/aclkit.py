"""Old import path of tests/kits/aclkit.py, kept while branches written before the move (fuzz,
console, metrics) still import it; delete once none does."""

from tests.kits.aclkit import *  # noqa: F403
