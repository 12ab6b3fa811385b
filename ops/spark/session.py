"""A SparkSession set up the way this job needs it: local[*] by default, loopback only, the
workers on this interpreter (so they import the project), the commitlog source registered."""

from __future__ import annotations

import os
import sys
from pathlib import Path

LOG_CONFIG = Path(__file__).with_name("log4j2.properties")


def spark_session(
    master: str | None = None,
    app: str = "rocketmq-reconcile",
    quiet: bool = False,
    shuffle_partitions: int = 8,
    progress: bool = False,
):
    """``progress``: Spark's console progress bars (off in local mode unless asked for: they
    would interleave with the job's own lines; under spark-submit Spark's setting stands)."""
    # Under spark-submit (it starts this driver with PYSPARK_GATEWAY_PORT) the cluster manager
    # and addresses come from spark-submit; run directly, it is local mode on loopback.
    if not master and not os.environ.get("PYSPARK_GATEWAY_PORT"):
        master = "local[*]"
    local = bool(master and master.startswith("local"))
    if local:  # on a cluster the executors must reach the driver: Spark's own address choice
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from ops.spark.datasource import CommitLogDataSource

    builder = SparkSession.builder.appName(app)
    if master:
        builder = builder.master(master)
    if local:
        builder = builder.config("spark.driver.host", "127.0.0.1")
    builder = builder.config("spark.sql.session.timeZone", "UTC")
    if progress or local:
        builder = builder.config("spark.ui.showConsoleProgress", str(progress).lower())
    if local:
        # 200 shuffle partitions (Spark's default) cost more than the joins themselves here.
        builder = builder.config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        if not os.environ.get("PYSPARK_GATEWAY_PORT"):
            # The JVM only moves Arrow batches and joins here; Python parses. On a small
            # machine C2's compiler threads took a core from the parsers for seconds: C1 alone
            # parsed 1 GiB 25% faster on local[2]. (Under spark-submit the JVM is already up.)
            builder = builder.config("spark.driver.extraJavaOptions", _local_java_options())
    if quiet:
        builder = builder.config("spark.ui.enabled", "false")
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    if master and not local and not os.environ.get("PYSPARK_GATEWAY_PORT"):
        _ship_code(spark)
    spark.dataSource.register(CommitLogDataSource)
    return spark


def _local_java_options() -> str:
    """C1 only (see above) and our log configuration: errors only, so Spark's start-up
    warnings stay out of the job's lines."""
    options = os.environ.get("RECONCILE_JAVA_OPTIONS", "-XX:TieredStopAtLevel=1")
    return f"{options} -Dlog4j2.configurationFile={LOG_CONFIG.as_uri()}"


def _ship_code(spark) -> None:
    """Connected to a cluster directly (not through spark-submit's --py-files): the executors
    get the job's code as a zip, so they need only Python, pyarrow and the job's libraries."""
    import atexit
    import shutil
    import tempfile

    from ops.spark.package import build_zip

    folder = Path(tempfile.mkdtemp(prefix="mqreconcile-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)  # served until the driver ends
    spark.sparkContext.addPyFile(str(build_zip(folder / "rocketmq_trio_job.zip")))
