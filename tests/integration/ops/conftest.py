"""One local SparkSession for every Spark test (start-up costs seconds)."""

from __future__ import annotations

import pytest

from tests.kits.reconcilekit import need_spark


@pytest.fixture(scope="session")
def spark():
    need_spark()
    from ops.spark.session import spark_session

    session = spark_session("local[2]", quiet=True)
    yield session
    session.stop()
