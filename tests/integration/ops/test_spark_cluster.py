"""The job on a real Spark standalone cluster: a master and two workers started on 127.0.0.1 from
pyspark's own jars, the backup (several segments) named by a file:// URI every worker reads.
Run as ``make reconcile SPARK_MASTER=...`` runs it (the driver ships the code as a zip) and
through ``spark-submit --py-files`` with the packaged zip, it gives the report and the bundle,
byte for byte, that local mode gives."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ops.spark.package import build_zip
from tests.kits.clikit import REPO
from tests.kits.reconcilekit import need_spark
from tests.kits.storekit import build_master, copy_store, cut_slave, record_offsets

pytestmark = pytest.mark.spark
MASTER_URL = re.compile(r"Starting Spark master at (spark://127\.0\.0\.1:\d+)")


def spark_home() -> Path:
    return Path(need_spark().__file__).parent


def cluster_env(home: Path, tmp: Path) -> dict[str, str]:
    return {
        **os.environ,
        "SPARK_HOME": str(home),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
        "SPARK_DAEMON_MEMORY": "256m",
        "SPARK_WORKER_DIR": str(tmp / "work"),
        # The REST submission server would take the fixed port 6066.
        "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
    }


def poll(log: Path, pattern: str, what: str, proc: subprocess.Popen, timeout_s=120.0) -> str:
    """Another process's log has no event to await: poll it, with a deadline."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        match = re.search(pattern, log.read_text(errors="replace"))
        if match:
            return match.group(match.lastindex or 0)
        if proc.poll() is not None:
            raise AssertionError(f"{what} exited {proc.returncode}: {log.read_text()[-2000:]}")
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """spark://127.0.0.1:<port> with two one-core workers; every process stopped by its pid."""
    home = spark_home()
    tmp = tmp_path_factory.mktemp("spark-cluster")
    env = cluster_env(home, tmp)
    spark_class = str(home / "bin" / "spark-class")
    procs: list[subprocess.Popen] = []

    def start(name: str, *args: str) -> tuple[subprocess.Popen, Path]:
        log = tmp / f"{name}.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen([spark_class, *args], stdout=out, stderr=subprocess.STDOUT,
                                    env=env, start_new_session=True)  # fmt: skip
        procs.append(proc)
        return proc, log

    try:
        master, log = start("master", "org.apache.spark.deploy.master.Master",
                            "--host", "127.0.0.1", "--port", "0", "--webui-port", "0")  # fmt: skip
        url = poll(log, MASTER_URL.pattern, "the Spark master", master)
        for n in (1, 2):
            worker, log = start(f"worker{n}", "org.apache.spark.deploy.worker.Worker",
                                "--host", "127.0.0.1", "--port", "0", "--webui-port", "0",
                                "--cores", "1", "--memory", "1g", url)  # fmt: skip
            poll(log, r"Successfully registered with master", f"worker {n}", worker)
        yield url, env
    finally:
        for proc in reversed(procs):
            if proc.poll() is None:
                os.killpg(proc.pid, 15)
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)
                proc.wait()


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("stores")
    build_master(root / "master", 1200)  # 64 KiB segments: ten of them
    copy_store(root / "master", root / "slave")
    cut_slave(root / "slave", record_offsets(root / "master")[300])
    return root / "master" / "commitlog", root / "slave"


def comparable(out: Path) -> tuple[dict, dict[str, bytes]]:
    report = json.loads((out / "report.json").read_text())
    for volatile in ("bundle", "backups", "slaveStore"):
        report.pop(volatile, None)
    bundle = {p.name: p.read_bytes() for p in (out / "bundle").iterdir() if p.name.isdigit()}
    return report, bundle


def job(*argv: str, env: dict[str, str], cwd: Path = REPO) -> subprocess.CompletedProcess:
    """A run on a loaded 2-core machine takes minutes (JVMs for the driver and two executors)."""
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=600, env=env,
                          cwd=cwd, check=False)  # fmt: skip


def job_args(backup: Path, slave: Path, out: Path) -> list[str]:
    return ["run", "--backup", f"file://{backup}", "--slave-store", str(slave), "--out", str(out),
            "--split-mb", "1"]  # fmt: skip


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_a_standalone_cluster_gives_local_modes_report_and_bundle(cluster, stores, tmp_path):
    url, env = cluster
    backup, slave = stores
    python = [sys.executable, "-m", "ops.spark"]
    local = job(*python, *job_args(backup, slave, tmp_path / "local"), "--master", "local[2]",
                env=env)  # fmt: skip
    assert local.returncode == 0, local.stderr
    expected = comparable(tmp_path / "local")
    assert len(expected[1]) >= 5  # a multi-segment bundle

    direct = job(*python, *job_args(backup, slave, tmp_path / "direct"), "--master", url,
                 env=env)  # fmt: skip
    assert direct.returncode == 0, direct.stderr
    assert comparable(tmp_path / "direct") == expected

    package = build_zip(tmp_path / "rocketmq-trio.zip")
    submitted = job(
        str(Path(env["SPARK_HOME"]) / "bin" / "spark-submit"), "--master", url,
        "--py-files", str(package), str(REPO / "ops" / "spark" / "__main__.py"),
        *job_args(backup, slave, tmp_path / "submitted"), env=env, cwd=tmp_path,
    )  # fmt: skip
    assert submitted.returncode == 0, submitted.stderr[-3000:]
    assert comparable(tmp_path / "submitted") == expected


def test_the_job_zip_holds_the_code_the_executors_import(tmp_path) -> None:
    """Cheap check for the default suite: the zip imports the reader and the data source's
    parser without the project installed (python -S: no site-packages, no editable install)."""
    package = build_zip(tmp_path / "job.zip")
    probe = (
        "import sys; sys.path.insert(0, sys.argv[1]); "
        "import ops.spark.segments as s; print(s.__file__)"
    )
    done = subprocess.run([sys.executable, "-S", "-c", probe, str(package)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().startswith(str(package))


def test_make_reconcile_passes_spark_master_through() -> None:
    def planned(*extra: str) -> str:
        done = subprocess.run(
            ["make", "-n", "-s", "reconcile", "MASTER_BACKUP=/b", "SLAVE_STORE=/s", "OUT=/o",
             f"STAMP={REPO / 'Makefile'}", *extra],
            cwd=REPO, capture_output=True, text=True, timeout=60, check=True,
        )  # fmt: skip
        return " ".join(done.stdout.replace("\\\n", " ").split())

    assert planned("SPARK_MASTER=spark://h:7077").endswith(
        "-m ops.spark run --backup /b --slave-store /s --out /o --master spark://h:7077"
    )
    assert planned().endswith("--out /o")
