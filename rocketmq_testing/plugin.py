"""The pytest plugin (entry point ``pytest11: rocketmq``): real RocketMQ clusters as fixtures.

- ``rocketmq_cluster``: a cluster for one test (layout and broker.conf keys from the
  ``@pytest.mark.rocketmq(layout=..., broker_conf={...})`` marker), stopped after it;
- ``rocketmq_cluster_factory``: ``factory(layout="single", broker_conf=None)``, as many as the
  test wants, each stopped after it;
- ``rocketmq_cluster_session``: one cluster for the whole run, seen by each test with names of
  its own (rocketmq_testing/views.py);
- ``rocketmq_cluster_trio``: ``rocketmq_cluster`` for Trio tests (pytest-trio), its calls
  awaited.

A cluster's directory sits in the test's ``tmp_path``; it is deleted when the test passed and
kept (logs, configs, stores) when it failed. Every teardown stops what it started, failing test
or not; an interrupted run stops the rest at exit, and a server whose test process died stops
itself (rocketmq_testing/spawn.py). Imports stay inside the fixtures: a pytest run that uses
none of them pays nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from rocketmq_testing.cluster import RocketMQCluster
    from rocketmq_testing.server import SparePool
    from rocketmq_testing.views import SessionCluster, TrioCluster

Factory = Callable[..., "RocketMQCluster"]
_FAILED = pytest.StashKey[bool]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("rocketmq", "RocketMQ test clusters (rocketmq_testing)")
    group.addoption(
        "--rocketmq-no-spares",
        action="store_true",
        help="start every server process when its cluster starts, rather than taking one "
        "spawned (and imported) in advance; spares inherit the environment of their spawn",
    )
    parser.addini(
        "rocketmq_session_layout",
        "layout of the rocketmq_cluster_session cluster (default: single)",
        default="single",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "rocketmq(layout='single', broker_conf=None): the layout (single, pair, pair-sync, "
        "2m-2s-async, 2m-2s-sync) and broker.conf keys of the rocketmq_cluster fixture",
    )


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.failed:
        item.stash[_FAILED] = True
    return report


_POOL = pytest.StashKey["SparePool | None"]()
FIXTURES = frozenset(
    {
        "rocketmq_cluster",
        "rocketmq_cluster_factory",
        "rocketmq_cluster_session",
        "rocketmq_cluster_trio",
    }
)


def _pool(config: pytest.Config) -> SparePool | None:
    if config.getoption("rocketmq_no_spares"):
        return None
    if _POOL not in config.stash:
        from rocketmq_testing.server import SparePool

        config.stash[_POOL] = SparePool()
    return config.stash[_POOL]


def pytest_collection_finish(session: pytest.Session) -> None:
    """When a collected test uses a cluster, the first one's processes start importing now,
    while pytest sets up and runs the tests before it."""
    if any(FIXTURES & set(getattr(item, "fixturenames", ())) for item in session.items):
        pool = _pool(session.config)
        if pool is not None:
            pool.refill(["namesrv", "broker"])


def pytest_unconfigure(config: pytest.Config) -> None:
    pool = config.stash.get(_POOL, None)
    if pool is not None:
        pool.close()


@pytest.fixture(scope="session")
def rocketmq_spares(request: pytest.FixtureRequest) -> SparePool | None:
    """Server processes spawned ahead of the clusters that will use them (None: off)."""
    return _pool(request.config)


@pytest.fixture
def rocketmq_cluster_factory(
    request: pytest.FixtureRequest, tmp_path: Path, rocketmq_spares: SparePool | None
) -> Iterator[Factory]:
    """``factory(layout="single", broker_conf=None)`` starts a cluster; all are stopped after
    the test (docs/testing.md)."""
    from rocketmq_testing.cluster import RocketMQCluster

    started: list[RocketMQCluster] = []

    def factory(
        layout: str = "single", broker_conf: Mapping[str, object] | None = None
    ) -> RocketMQCluster:
        base = tmp_path / f"rocketmq-{len(started)}"
        cluster = RocketMQCluster.start(base, layout, broker_conf, spares=rocketmq_spares)
        started.append(cluster)
        return cluster

    try:
        yield factory
    finally:
        keep = request.node.stash.get(_FAILED, False)
        for cluster in reversed(started):
            cluster.stop(remove_files=not keep)


def _marker_kwargs(request: pytest.FixtureRequest) -> dict[str, Any]:
    marker = request.node.get_closest_marker("rocketmq")
    if marker is None:
        return {}
    if marker.args:
        raise pytest.UsageError("@pytest.mark.rocketmq takes keywords: layout=, broker_conf=")
    return dict(marker.kwargs)


@pytest.fixture
def rocketmq_cluster(
    request: pytest.FixtureRequest, rocketmq_cluster_factory: Factory
) -> RocketMQCluster:
    """A running cluster for this test: ``@pytest.mark.rocketmq(layout=, broker_conf=)``."""
    return rocketmq_cluster_factory(**_marker_kwargs(request))


@pytest.fixture(scope="session")
def _rocketmq_shared_cluster(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    rocketmq_spares: SparePool | None,
) -> Iterator[RocketMQCluster]:
    from rocketmq_testing.cluster import RocketMQCluster

    layout = str(request.config.getini("rocketmq_session_layout"))
    base = tmp_path_factory.mktemp("rocketmq-session")
    cluster = RocketMQCluster.start(base, layout, spares=rocketmq_spares)
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def rocketmq_cluster_session(_rocketmq_shared_cluster: RocketMQCluster) -> SessionCluster:
    """The run's shared cluster; ``topic(name)``/``group(name)`` are unique to this test."""
    from rocketmq_testing.views import SessionCluster

    return SessionCluster(_rocketmq_shared_cluster)


@pytest.fixture
async def rocketmq_cluster_trio(
    request: pytest.FixtureRequest, rocketmq_cluster_factory: Factory
) -> AsyncIterator[TrioCluster]:
    """``rocketmq_cluster`` for Trio tests: its calls are awaited."""
    import functools

    import trio

    from rocketmq_testing.views import TrioCluster

    start = functools.partial(rocketmq_cluster_factory, **_marker_kwargs(request))
    cluster = await trio.to_thread.run_sync(start)
    async with TrioCluster.open(cluster) as trio_cluster:
        yield trio_cluster
