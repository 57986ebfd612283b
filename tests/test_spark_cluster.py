"""The Spark engine on a standalone cluster whose workers share nothing with the driver but the workdir (each in
network and mount namespaces of its own), reached through the installed ``isrcheck`` script: the local engine's
answers through a lost worker and a lost driver; and the Spark options a user can get wrong.

Every answer is compared with the local engine's. The cluster is started for its one test and always torn down.
"""
from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

# a user's spec from a file: its private module exists on the driver only, so its class must travel by value
TEAM = '''
from isrcheck.specs.hw_truncation import HwTruncation


class TeamHw(HwTruncation):
    """hw-truncation as a team names it."""
    name = "team-hw"
'''
#: at --replicas 2 --max-epochs 1: 8,190 states, 18 levels; strong-isr violated, the other holds
INVARIANTS = ["no-committed-loss", "strong-isr"]


@pytest.fixture(scope="module")
def team_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("team") / "team_versions.py"
    path.write_text(TEAM)
    return path


def _wait_for(predicate, what, timeout=120):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.2)


# ---------------------------------------------------------------------------------------------
# a standalone master and two workers that share nothing but the declared workdir
# ---------------------------------------------------------------------------------------------
#: RFC 2544's benchmarking range: addresses of this machine's own test hosts, routed nowhere
TEST_NET = "198.18"
#: what runs in a worker's namespaces first: its own /tmp, a home in it (not a mount over the real home, which may
#: hold the Python installation), the installation's paths that lie under /tmp (``ISRCHECK_KEEP``, colon-separated:
#: a checkout and its venv made with ``mktemp -d``) bound back into it, then the worker
PRIVATE = ('mkdir -p /run/isrcheck-tmp && mount --bind /tmp /run/isrcheck-tmp && '
           'mount -t tmpfs -o size=8g,mode=1777 isrcheck-private /tmp && mkdir -m 700 /tmp/home && '
           'IFS=: && for p in $ISRCHECK_KEEP; do mkdir -p "$p" && mount --bind "/run/isrcheck-tmp${p#/tmp}" "$p" '
           '|| exit 1; done && HOME=/tmp/home exec "$@"')
#: the paths the workers need that a private /tmp would hide
KEEP = ":".join(sorted({os.path.realpath(p) for p in (sys.prefix, os.path.dirname(os.path.dirname(__file__)))
                        if os.path.realpath(p).startswith("/tmp/")}))


class IsolatedCluster:
    """A standalone master on a bridge in this network namespace and workers each in a network namespace of its
    own (a veth pair into the bridge) and a mount namespace with a private /tmp (Spark's work and shuffle
    directories) and home: only the workdir, outside both, is shared with the driver."""

    def __init__(self, logs):
        import pyspark
        self.spark_class = os.path.join(os.path.dirname(pyspark.__file__), "bin", "spark-class")
        self.tag, self.logs = uuid.uuid4().hex[:6], logs
        used = subprocess.run(["ip", "-4", "route"], capture_output=True, text=True, check=True).stdout
        self.net = next(f"{TEST_NET}.{n}" for n in random.sample(range(1, 255), 254) if f"{TEST_NET}.{n}." not in used)
        self.bridge, self.driver_ip, self.port = f"isrb{self.tag}", f"{self.net}.1", None
        self.spaces, self.master = [], None

    def _ip(self, *args):
        subprocess.run(["ip", *args], check=True, capture_output=True)

    def up(self, workers=2):
        self._ip("link", "add", self.bridge, "type", "bridge")
        self._ip("addr", "add", f"{self.driver_ip}/24", "dev", self.bridge)
        self._ip("link", "set", self.bridge, "up")
        with socket.socket() as s:
            s.bind((self.driver_ip, 0))
            self.port = s.getsockname()[1]
        log = self.logs / "master.log"
        with open(log, "w") as fh:
            self.master = subprocess.Popen(
                [self.spark_class, "org.apache.spark.deploy.master.Master", "--host", self.driver_ip, "--port",
                 str(self.port), "--webui-port", "0"], stdout=fh, stderr=subprocess.STDOUT, start_new_session=True,
                env={**os.environ, "SPARK_LOCAL_IP": self.driver_ip})
        _wait_for(lambda: socket.socket().connect_ex((self.driver_ip, self.port)) == 0, "the master")
        for w in range(workers):
            space, host, peer = f"isrc{self.tag}{w}", f"isrh{self.tag}{w}", f"isrp{self.tag}{w}"
            self._ip("netns", "add", space)
            self.spaces.append(space)
            self._ip("link", "add", host, "type", "veth", "peer", "name", peer)
            self._ip("link", "set", peer, "netns", space)
            self._ip("link", "set", host, "master", self.bridge)
            self._ip("link", "set", host, "up")
            self._ip("-n", space, "link", "set", "lo", "up")
            self._ip("-n", space, "addr", "add", f"{self.net}.{2 + w}/24", "dev", peer)
            self._ip("-n", space, "link", "set", peer, "up")
            self.start_worker(w)

    @property
    def url(self):
        return f"spark://{self.driver_ip}:{self.port}"

    def start_worker(self, w):
        ip, log = f"{self.net}.{2 + w}", self.logs / f"worker-{w}.log"
        with open(log, "a") as fh:
            mark = fh.tell()
            worker = subprocess.Popen(
                ["ip", "netns", "exec", self.spaces[w], "unshare", "--mount", "--propagation", "private", "--", "sh",
                 "-c", PRIVATE, "sh", self.spark_class, "org.apache.spark.deploy.worker.Worker", self.url, "--host", ip,
                 "--cores", "1", "--memory", "1g", "--webui-port", "0", "--work-dir", "/tmp/work"],
                stdout=fh, stderr=subprocess.STDOUT, start_new_session=True,
                env={**os.environ, "SPARK_LOCAL_IP": ip, "ISRCHECK_KEEP": KEEP})
        _wait_for(lambda: "Successfully registered with master" in log.read_text()[mark:] or worker.poll() is not None,
                  f"worker {w}")
        assert worker.poll() is None, log.read_text()[mark:][-3000:]

    def kill_worker(self, w):
        """Every process in the worker's network namespace: the worker, its executor and Python workers."""
        pids = subprocess.run(["ip", "netns", "pids", self.spaces[w]], capture_output=True, text=True).stdout.split()
        for pid in pids:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass
        return len(pids)

    def down(self):
        for w in range(len(self.spaces)):
            self.kill_worker(w)
        if self.master is not None and self.master.poll() is None:
            os.killpg(self.master.pid, signal.SIGKILL)
            self.master.wait()
        for space in self.spaces:
            subprocess.run(["ip", "netns", "del", space], capture_output=True)
        subprocess.run(["ip", "link", "del", self.bridge], capture_output=True)


@pytest.fixture
def isolated_cluster(tmp_path):
    missing = ("root (it makes network and mount namespaces)" if os.geteuid() != 0 else
               "iproute2 (ip) and util-linux (unshare)" if not (shutil.which("ip") and shutil.which("unshare")) else
               None)
    if missing:
        why = f"the isolated Spark cluster test needs {missing}; .ci/run runs it as root and installs iproute2"
        if os.environ.get("CI", "").lower() == "true":          # CI never passes a cluster test it did not run
            pytest.fail(f"{why} (CI=true: not skipped)")
        pytest.skip(why)
    cluster = IsolatedCluster(tmp_path)
    try:
        cluster.up()
        yield cluster
    finally:
        cluster.down()


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


def _same_answers(remote, local, cwd):
    assert remote["engine"] == "spark"
    for key in ("verdicts", "distinct_states", "transitions", "depth", "complete", "budget_hit", "never_fired",
                "trace_lengths", "bounds"):
        assert remote[key] == local[key], key
    assert set(remote["trace_files"]) == set(local["trace_files"]) == {"strong-isr"}
    assert _trace(cwd / remote["trace_files"]["strong-isr"]) == _trace(cwd / local["trace_files"]["strong-isr"])


@pytest.mark.long
def test_isolated_workers_through_a_lost_worker_and_a_lost_driver(isolated_cluster, team_file, tmp_path):
    """``--engine spark --master spark://...`` on workers that share nothing with the driver but the workdir
    (in /var/tmp here: each worker has a /tmp and a home of its own): a workdir only the driver sees is refused
    (exit 2, one line); a run that loses a worker (every process in its namespace killed after the first levels)
    ends with the local engine's answers and traces; so does a run whose driver was killed after a snapshot,
    resumed with ``--resume``. Levels of 400 states or more are decided on (fingerprint, tag) records
    (``--decide-from``), so both kinds of level run on the cluster. The executors' Python is the script's own
    (python3 on PATH here is not)."""
    cluster = isolated_cluster
    env = {k: v for k, v in os.environ.items() if k != "PYSPARK_PYTHON"}
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep)
                                  if not os.path.exists(os.path.join(p, "isrcheck")))
    env["SPARK_LOCAL_IP"] = cluster.driver_ip
    isrcheck = shutil.which("isrcheck")
    common = [isrcheck, "check", "--spec", f"{team_file}:TeamHw", "--replicas", "2", "--max-epochs", "1",
              "--format", "json"] + [a for name in INVARIANTS for a in ("--invariant", name)]
    spark = ["--engine", "spark", "--master", cluster.url, "--partitions", "2", "--decide-from", "400"]
    shared = tempfile.mkdtemp(prefix="isrcheck-cluster-", dir="/var/tmp")
    try:
        driver_only = tmp_path / "driver-only"
        refused = subprocess.run(common + spark + ["--no-progress", "--workdir", str(driver_only), "--out", "x"],
                                 capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
        assert refused.returncode == 2, refused.stderr[-3000:]
        assert refused.stderr.startswith("isrcheck: error: --workdir: the executors do not share it with the driver")
        assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr[-3000:]
        local = _check(common[2:] + ["--no-progress", "--out", "local"], tmp_path, env)

        run = subprocess.Popen(common + spark + ["--workdir", os.path.join(shared, "run"), "--out", "lost-worker"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=env)
        err = []
        reader = threading.Thread(target=lambda: err.extend(iter(run.stderr.readline, "")), daemon=True)
        reader.start()
        _wait_for(lambda: re.search(r"depth \d+", "".join(err)) or run.poll() is not None, "the first levels")
        assert cluster.kill_worker(0) >= 2 and run.poll() is None        # the worker and its executor, mid-run
        out = run.communicate(timeout=600)[0]
        reader.join(timeout=10)
        assert run.returncode == 1, "".join(err)[-3000:]
        remote = json.loads(out)
        _same_answers(remote, local, tmp_path)
        assert any("materialize: apply" in m["stage_cpu_seconds"] for m in remote["levels"])

        cluster.start_worker(0)
        snap = os.path.join(shared, "snap")
        killed = subprocess.Popen(common + spark + ["--no-progress", "--checkpoint", snap, "--checkpoint-every", "0",
                                                    "--out", "killed"], cwd=tmp_path, env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            _wait_for(lambda: os.path.exists(os.path.join(snap, "spark-snapshot.json")) or killed.poll() is not None,
                      "a snapshot", timeout=300)
            os.killpg(killed.pid, signal.SIGKILL)
        finally:
            if killed.poll() is None:
                os.killpg(killed.pid, signal.SIGKILL)
            killed.wait()
        assert json.load(open(os.path.join(snap, "spark-snapshot.json")))["state"]["depth"] < local["depth"]
        resumed = _check(common[2:] + spark + ["--no-progress", "--resume", snap, "--out", "resumed"], tmp_path, env)
        _same_answers(resumed, local, tmp_path)
    finally:
        shutil.rmtree(shared, ignore_errors=True)


def test_master_must_be_a_spark_master_url(tmp_path):
    run = subprocess.run([shutil.which("isrcheck"), "check", "--spec", "kip-320", "--invariant", "log-matching",
                          "--engine", "spark", "--master", "bogus://x"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and run.stderr.startswith("isrcheck: error: --master 'bogus://x': not a Spark master "
                                                         "URL (local, "), run.stderr
    assert len(run.stderr.strip().splitlines()) == 1


def test_cluster_master_needs_a_workdir(tmp_path):
    """Executors on other machines read and write the run's files: without --workdir (or --checkpoint) on storage
    they share, the run is refused before Spark starts."""
    run = subprocess.run([shutil.which("isrcheck"), "check", "--spec", "kip-320", "--invariant", "log-matching",
                          "--engine", "spark", "--master", "spark://127.0.0.1:7077"], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 2 and run.stderr.strip() == (
        "isrcheck: error: --master spark://127.0.0.1:7077: executors on other machines need --workdir DIR (or "
        "--checkpoint DIR) on storage that the driver and every executor share"), run.stderr


def test_workdir_is_for_spark_only(tmp_path):
    run = subprocess.run([shutil.which("isrcheck"), "check", "--spec", "kip-320", "--invariant", "log-matching",
                          "--workdir", str(tmp_path)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and run.stderr.strip() == (
        "isrcheck: error: --workdir does nothing with --engine local (it is for --engine spark)"), run.stderr


#: kip-101 at its defaults, whose native kernels tests/test_workers.py compiles too (once per machine, then cached):
#: 193,918 states in 15 levels expanded before the three invariants are violated
NATIVE_INVARIANTS = ["no-committed-loss", "strong-isr", "hw-monotonic"]
NATIVE = ["--spec", "kip-101", "--format", "json", "--no-progress", "--kernels", "native",
          *[a for name in NATIVE_INVARIANTS for a in ("--invariant", name)]]


@pytest.mark.long
def test_native_kernels_in_the_executors(tmp_path):
    """``--engine spark --kernels native`` on ``local[2]``: every level expands on the native kernels in the Python
    workers, and the report's answers and the trace files are the local engine's (on the native kernels too).
    The JVM's logging settings are read from a private file in the run's workdir, gone at the end: a link planted
    where an earlier version wrote them (``$TMPDIR/isrcheck-spark-log4j2.properties``) is left alone."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    (tmp / "isrcheck-spark-log4j2.properties").symlink_to(victim)
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "TMPDIR": str(tmp)}
    local = _check(NATIVE + ["--out", "local"], tmp_path, env)
    run = subprocess.run([shutil.which("isrcheck"), "check", *NATIVE, "--out", "spark", "--engine", "spark",
                          "--master", "local[2]", "--partitions", "2"], capture_output=True, text=True, cwd=tmp_path,
                         env=env, timeout=300)
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr
    assert "log4j" not in run.stderr                    # quiet: the settings were read
    assert victim.read_text() == "keep me" and sorted(p.name for p in tmp.iterdir()) == [
        "isrcheck-spark-log4j2.properties"]             # the run's workdir and its files are gone
    remote = json.loads(run.stdout)
    assert remote["engine"] == "spark" and remote["distinct_states"] > 100_000
    for key in ("verdicts", "distinct_states", "transitions", "depth", "complete", "budget_hit", "trace_lengths"):
        assert remote[key] == local[key], key
    assert [m["kernels"] for m in remote["levels"]] == ["native"] * len(remote["levels"])
    assert set(remote["trace_files"]) == set(local["trace_files"]) == set(NATIVE_INVARIANTS)
    for name, path in local["trace_files"].items():
        assert _trace(tmp_path / remote["trace_files"][name]) == _trace(tmp_path / path), name
