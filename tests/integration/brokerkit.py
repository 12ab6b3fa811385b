"""Old import path of tests/kits/brokerkit.py, kept while branches written before the move (fuzz,
console, metrics) still import it; delete once none does."""

from tests.kits.brokerkit import *  # noqa: F403
