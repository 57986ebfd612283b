"""The Spark engine with executors in their own processes: ``local-cluster`` (separate executor JVMs and Python
workers, real serialization), an executor killed mid-run, and a standalone master and worker started from
pyspark's own scripts, reached through the installed ``isrcheck`` script.

Every answer is compared with the local engine's. One ``local-cluster[2,1,1024]`` context serves the module (an
executor JVM costs seconds to start) and one search on it both ships a user's spec class and survives a lost
executor; the standalone cluster is started for its one test and always torn down.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import threading
import time

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from isrcheck.checker import registry                                      # noqa: E402
from isrcheck.checker.bfs import search                                    # noqa: E402
from isrcheck.checker.spark_engine import spark_context, spark_search      # noqa: E402
from test_spark import assert_same                                         # noqa: E402

# a user's spec from a file: its private module exists on the driver only, so its class must travel by value
TEAM = '''
from isrcheck.specs.hw_truncation import HwTruncation


class TeamHw(HwTruncation):
    """hw-truncation as a team names it."""
    name = "team-hw"
'''
BOUNDS = dict(replicas=2, max_epochs=1)          # 8,190 states, 18 levels; strong-isr violated, the other holds
INVARIANTS = ["no-committed-loss", "strong-isr"]


@pytest.fixture(scope="module")
def team_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("team") / "team_versions.py"
    path.write_text(TEAM)
    return path


@pytest.fixture(scope="module")
def cluster():
    if shutil.which("java") is None:
        pytest.fail("the Spark engine needs Java 17+ on PATH")
    context, created = spark_context("local-cluster[2,1,1024]", partitions=2,
                                     conf={"spark.executor.memory": "512m", "spark.driver.memory": "512m"})
    assert created, "another SparkContext is active"
    try:
        yield context
    finally:
        context.stop()


def _executor_pids(sc):
    """This application's executor JVMs (children of the driver JVM, named by the application id)."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as fh:
                    cmd = fh.read().split(b"\0")
            except OSError:
                continue
            if b"org.apache.spark.executor.CoarseGrainedExecutorBackend" in cmd and sc.applicationId.encode() in cmd:
                pids.append(int(entry))
    return sorted(pids)


@pytest.mark.long
def test_local_cluster_same_as_local_through_a_lost_executor(cluster, team_file, tmp_path):
    """Separate executor processes: the spec's class from a user's file (by value), the workdir, the accumulator,
    three partitions on two executors; and an executor JVM (with its Python workers) killed after the first job
    (levels 1-7, chained): its cached level and shuffle files are gone, the worker starts another executor, Spark
    recomputes the lost partitions from their lineage (the levels' files are rewritten, identical), and the answers
    are the local engine's. One search serves both (an executor's loss costs a new JVM: tens of seconds here)."""
    spec = registry.resolve(f"{team_file}:TeamHw")(**BOUNDS)
    assert len(_executor_pids(cluster)) == 2
    local = search(spec, INVARIANTS)
    assert set(local.violations) == {"strong-isr"} and local.complete
    killed = []

    def progress(**kw):
        if not killed:
            pid = _executor_pids(cluster)[0]
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    result = spark_search(spec, INVARIANTS, partitions=3, workdir=str(tmp_path), progress=progress)
    assert killed
    assert_same(local, result)
    assert killed[0] not in _executor_pids(cluster)


# ---------------------------------------------------------------------------------------------
# a standalone master and worker, reached through the installed script
# ---------------------------------------------------------------------------------------------
def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(predicate, what, timeout=90):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.5)


@pytest.fixture
def standalone(tmp_path):
    """A master and a worker (2 cores, 1 GB) on 127.0.0.1 on free ports; both killed at the end, whatever happens."""
    import pyspark
    spark_class = os.path.join(os.path.dirname(pyspark.__file__), "bin", "spark-class")
    port, worker_log = _free_port(), tmp_path / "worker.log"
    procs = []

    def start(args, log):
        with open(log, "w") as fh:
            procs.append(subprocess.Popen([spark_class, *args], stdout=fh, stderr=subprocess.STDOUT,
                                          start_new_session=True, env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}))

    try:
        start(["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
               "--webui-port", str(_free_port())], tmp_path / "master.log")
        _wait_for(lambda: socket.socket().connect_ex(("127.0.0.1", port)) == 0, "the master")
        start(["org.apache.spark.deploy.worker.Worker", f"spark://127.0.0.1:{port}", "--host", "127.0.0.1",
               "--cores", "2", "--memory", "1g", "--webui-port", str(_free_port()),
               "--work-dir", str(tmp_path / "work")], worker_log)
        _wait_for(lambda: "Successfully registered with master" in worker_log.read_text(), "the worker")
        yield f"spark://127.0.0.1:{port}"
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


def _check(args, cwd, env):
    run = subprocess.run([shutil.which("isrcheck"), "check", *args], capture_output=True, text=True, cwd=cwd,
                         env=env, timeout=300)
    assert run.returncode == 1, run.stderr             # strong-isr is violated
    assert "Traceback" not in run.stderr, run.stderr
    return json.loads(run.stdout)


def _trace(path):
    trace = json.loads(path.read_text())
    assert trace["#meta"].pop("engine") in ("local", "spark")
    return trace


@pytest.mark.long
def test_standalone_cluster_through_the_script(standalone, team_file, tmp_path):
    """``--engine spark --master spark://...``: the JSON report's answers and the trace files are the local
    engine's. The executors' Python must be the script's own (python3 on PATH here is not)."""
    env = {k: v for k, v in os.environ.items() if k != "PYSPARK_PYTHON"}
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep)
                                  if not os.path.exists(os.path.join(p, "isrcheck")))
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    common = ["--spec", f"{team_file}:TeamHw", "--replicas", "2", "--max-epochs", "1", "--format", "json",
              "--no-progress"] + [a for name in INVARIANTS for a in ("--invariant", name)]
    results = {}

    def run(engine, extra):
        results[engine] = _check(common + ["--engine", engine, "--out", engine, *extra], tmp_path, env)

    # the local engine runs while the Spark application starts
    spark = threading.Thread(target=run, args=("spark", ["--master", standalone, "--partitions", "2",
                                                         "--workdir", str(tmp_path / "shared")]))
    spark.start()
    run("local", [])
    spark.join()
    local, remote = results["local"], results["spark"]
    assert remote["engine"] == "spark"
    for key in ("verdicts", "distinct_states", "transitions", "depth", "complete", "budget_hit", "never_fired",
                "trace_lengths", "bounds"):
        assert remote[key] == local[key], key
    assert set(remote["trace_files"]) == set(local["trace_files"]) == {"strong-isr"}
    assert local["levels"] is None
    assert (tmp_path / "shared" / "levels" / "level-00002").is_dir()          # a given workdir is kept
    assert [m["level"] for m in remote["levels"]] == list(range(1, len(remote["levels"]) + 1))
    assert all(m["shuffle_write_bytes"] > 0 and m["python_jvm_bytes"] > 0 for m in remote["levels"])
    assert (_trace(tmp_path / remote["trace_files"]["strong-isr"])
            == _trace(tmp_path / local["trace_files"]["strong-isr"]))


def test_workdir_is_for_spark_only(tmp_path):
    run = subprocess.run([shutil.which("isrcheck"), "check", "--spec", "kip-320", "--invariant", "log-matching",
                          "--workdir", str(tmp_path)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and run.stderr.strip() == "isrcheck: error: --workdir is for --engine spark", run.stderr


#: kip-101 at its defaults, whose native kernels tests/test_workers.py compiles too (once per machine, then cached):
#: 193,918 states in 15 levels expanded before the three invariants are violated
NATIVE_INVARIANTS = ["no-committed-loss", "strong-isr", "hw-monotonic"]
NATIVE = ["--spec", "kip-101", "--format", "json", "--no-progress", "--kernels", "native",
          *[a for name in NATIVE_INVARIANTS for a in ("--invariant", name)]]


@pytest.mark.long
def test_native_kernels_in_the_executors(tmp_path):
    """``--engine spark --kernels native`` on ``local[2]``: every level expands on the native kernels in the Python
    workers, and the report's answers and the trace files are the local engine's (on the native kernels too)."""
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    local = _check(NATIVE + ["--out", "local"], tmp_path, env)
    remote = _check(NATIVE + ["--out", "spark", "--engine", "spark", "--master", "local[2]", "--partitions", "2"],
                    tmp_path, env)
    assert remote["engine"] == "spark" and remote["distinct_states"] > 100_000
    for key in ("verdicts", "distinct_states", "transitions", "depth", "complete", "budget_hit", "trace_lengths"):
        assert remote[key] == local[key], key
    assert [m["kernels"] for m in remote["levels"]] == ["native"] * len(remote["levels"])
    assert set(remote["trace_files"]) == set(local["trace_files"]) == set(NATIVE_INVARIANTS)
    for name, path in local["trace_files"].items():
        assert _trace(tmp_path / remote["trace_files"][name]) == _trace(tmp_path / path), name
