"""Real RocketMQ clusters for tests: ``mqnamesrv`` and ``mqbroker`` processes on free ports, with
stores in a temporary directory (rocketmq_testing/cluster.py), and the pytest plugin that hands
them to tests (rocketmq_testing/plugin.py, loaded through the ``pytest11`` entry point).

A package of its own because it sits on top of everything else: it runs the servers the way
deploy/ does and talks to them with the client, and nothing else may import it."""

from rocketmq_testing.cluster import BrokerInfo, ClusterError, RocketMQCluster
from rocketmq_testing.layouts import LAYOUTS, LayoutError

__all__ = ["LAYOUTS", "BrokerInfo", "ClusterError", "LayoutError", "RocketMQCluster"]
