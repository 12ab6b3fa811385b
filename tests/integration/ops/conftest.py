"""One local SparkSession for every Spark test (start-up costs seconds)."""

from __future__ import annotations

import shutil

import pytest


@pytest.fixture(scope="session")
def spark():
    pytest.importorskip("pyspark", reason="pyspark is not installed (pip install '.[spark]')")
    if shutil.which("java") is None:
        pytest.skip(
            "no `java` on PATH: Spark needs Java 17 or 21 "
            "(Debian: apt-get install openjdk-17-jre-headless; `make test` does it as root)"
        )
    from ops.spark.session import spark_session

    session = spark_session("local[2]", quiet=True)
    yield session
    session.stop()
