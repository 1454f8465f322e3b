"""The pipeline on a real Spark standalone cluster: a master and a worker started from
PySpark's own ``spark-class`` on loopback, the audit run against them with ``--master
spark://...`` and through the docs' ``spark-submit`` line, its tables compared with local
mode's. Inputs are real recordings: Apache Kafka Connect 4.2.0's capture and golden
transcripts recorded against a real coordinator."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RECORDINGS = [ROOT / "fixtures" / "recorded" / "apache-connect-4.2.0-sessioned-CONN-INC-01.pcap",
              *(ROOT / "fixtures" / "golden" / f"{n}.jsonl" for n in ("CLS-JOIN-31", "CLS-SYNC-11",
                                                                      "C848-HB-HND-13"))]
TABLES = ("exchanges", "rounds", "violations")
START_S = 120.0  # a JVM's start on a loaded 2-core machine


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spark_home() -> Path:
    import pyspark
    return Path(pyspark.__file__).parent


def _loopback_env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_HOME": str(_spark_home()),
           "SPARK_CONF_DIR": "", **extra}
    env.pop("PYSPARK_GATEWAY_PORT", None)
    return env


def _wait_for(log: Path, pattern: str, proc: subprocess.Popen, what: str) -> None:
    deadline = time.monotonic() + START_S
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace") if log.exists() else ""
        if re.search(pattern, text):
            return
        if proc.poll() is not None:
            pytest.fail(f"{what} exited {proc.returncode}: {text[-800:]}")
        time.sleep(0.5)
    pytest.fail(f"{what} not ready in {START_S:.0f} s: {log.read_text(errors='replace')[-800:]}")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A standalone master and one worker (1 core) on 127.0.0.1; stopped at the end. The
    worker's executors run this interpreter with this checkout first on the path."""
    d = tmp_path_factory.mktemp("cluster")
    port = _free_port()
    url = f"spark://127.0.0.1:{port}"
    spark_class = str(_spark_home() / "bin" / "spark-class")
    env = _loopback_env(PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    procs: list[subprocess.Popen] = []
    try:
        with open(d / "master.log", "w") as out:
            procs.append(subprocess.Popen(
                [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                 "--port", str(port), "--webui-port", str(_free_port())],
                env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True))
        _wait_for(d / "master.log", r"I have been elected leader", procs[0], "the master")
        with open(d / "worker.log", "w") as out:
            procs.append(subprocess.Popen(
                [spark_class, "org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1",
                 "--port", str(_free_port()), "--webui-port", str(_free_port()), "--cores", "1",
                 "--memory", "1g", "--work-dir", str(d / "work")],
                env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True))
        _wait_for(d / "worker.log", r"Successfully registered with master", procs[1], "the worker")
        yield url, d
    finally:
        for p in reversed(procs):  # each by its own process group: the JVM and what it forked
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(10)


def _table(wh: Path, name: str) -> list[tuple]:
    """A warehouse table's rows, sorted, as plain values (read by pyarrow: no Spark)."""
    import pyarrow.parquet as pq
    t = pq.read_table(wh / name)
    cols = sorted(c for c in t.column_names if c not in ("source_kind", "day"))  # partition keys
    return sorted((tuple(repr(r[c]) for c in cols) for r in t.to_pylist()))


def _audit_locally(spark, wh: Path) -> None:
    from conformance.cli import main
    assert main(["audit", *map(str, RECORDINGS), "--warehouse", str(wh)]) == 0


def test_audit_on_a_standalone_cluster_matches_local_mode(spark, cluster, tmp_path):
    url, _ = cluster
    _audit_locally(spark, tmp_path / "local")
    out = subprocess.run([sys.executable, "-m", "conformance.cli", "audit", *map(str, RECORDINGS),
                          "--master", url, "--warehouse", str(tmp_path / "cluster")],
                         env=_loopback_env(PYTHONPATH=str(ROOT)), cwd=tmp_path,
                         capture_output=True, text=True, timeout=1800)
    assert out.returncode == 0, out.stderr[-2000:]
    assert f"Spark {spark.version} on {url}\n" in out.stderr  # where it runs
    assert "Traceback" not in out.stderr + out.stdout
    for name in TABLES:
        local, remote = _table(tmp_path / "local", name), _table(tmp_path / "cluster", name)
        assert local == remote, name
    assert len(_table(tmp_path / "local", "exchanges")) > 20 and _table(tmp_path / "local", "rounds")


def _not_the_project(folder: str, names: list[str]) -> set[str]:
    """What a copy of the checkout leaves out: caches and environments anywhere, and the run
    output folders at its root only (``conformance/reports/`` is the suite's own package)."""
    left = set(shutil.ignore_patterns(".git", ".venv", "env", "*.tar.gz", "__pycache__")(folder, names))
    return left | ({"site", "reports"} & set(names) if Path(folder) == ROOT else set())


def test_docs_spark_submit_line_runs_on_the_cluster(spark, cluster, tmp_path):
    """docs/pipeline.md's lines, as written, with its placeholders (master, inputs,
    warehouse) filled in: a packed virtual environment shipped with --archives."""
    url, _ = cluster
    if shutil.which("spark-submit") is None and not (Path(sys.executable).parent / "spark-submit").exists():
        pytest.fail("spark-submit is not on the path (it comes with pyspark)")
    block = re.search(r"```sh\n(python -m venv env.*?)```", (ROOT / "docs" / "pipeline.md").read_text(),
                      re.S)
    assert block, "docs/pipeline.md has no spark-submit block"
    script = block.group(1).replace("spark://host:7077", url).replace(
        "hdfs:///captures/", " ".join(map(str, RECORDINGS))).replace(
        "hdfs:///conformance/wh", str(tmp_path / "wh"))
    script = script.replace("python -m venv env", f"{sys.executable} -m venv env", 1)
    _audit_locally(spark, tmp_path / "local")
    shutil.copytree(ROOT, tmp_path / "src", ignore=_not_the_project)
    env = _loopback_env(PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]))
    env.pop("PYTHONPATH", None)  # the executors get the project from the shipped environment only
    env.pop("PYSPARK_PYTHON", None)
    env.pop("PYSPARK_DRIVER_PYTHON", None)
    out = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=tmp_path / "src", env=env,
                         capture_output=True, text=True, timeout=2400)
    assert out.returncode == 0, (out.stdout[-1500:], out.stderr[-2500:])
    said = out.stdout + out.stderr  # spark-submit passes the driver's stderr to its own stdout
    assert f"conformance audit: Spark {spark.version} on {url}\n" in said and "local[" not in said
    for name in TABLES:
        assert _table(tmp_path / "local", name) == _table(tmp_path / "wh", name), name


def test_failed_job_is_one_line_with_sparks_cause(cluster, tmp_path):
    """The executors' Python does not exist on the workers (PYSPARK_PYTHON naming the packed
    environment without shipping it, --archives forgotten): the job fails, and the screen
    has one line with Spark's own cause and no stack trace."""
    url, _ = cluster
    out = subprocess.run([sys.executable, "-m", "conformance.cli", "audit", str(RECORDINGS[1]),
                          "--master", url, "--warehouse", str(tmp_path / "wh")],
                         env=_loopback_env(PYTHONPATH=str(ROOT), PYSPARK_PYTHON="./env/bin/python"),
                         cwd=tmp_path, capture_output=True, text=True, timeout=1800)
    assert out.returncode == 2, (out.stdout[-1000:], out.stderr[-2000:])
    err = [ln for ln in out.stderr.splitlines() if not ln.startswith("conformance audit: Spark ")]
    assert len(err) == 1, out.stderr[-3000:]
    assert err[0].startswith("conformance audit: ") and "./env/bin/python" in err[0], err[0]
    assert "Traceback" not in out.stderr and "\tat " not in out.stderr
