"""Stops through the installed console script: SIGINT/SIGTERM, --max-memory, and kill -9 then --resume.

Every command stops with exit 3, a partial report, and every counterexample found
so far on disk and replayable. The signal is sent once the run shows it has
started working (a trace file or a progress line), so the tests stay fast.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from isrcheck.specs import SPECS

ROOT = Path(__file__).resolve().parents[1]
BIG = ["--spec", "kip-320", "--replicas", "3", "--set", "min_isr=2"]     # ~10^8 states: still going when signalled


class Run:
    """An isrcheck process whose output is read as it comes (killed at the end of the test if still running)."""
    started = []

    def __init__(self, args, cwd, env=None):
        self.p = subprocess.Popen(["isrcheck", *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, env=env)
        Run.started.append(self.p)
        self.out, self.err = [], []
        self.readers = [threading.Thread(target=lambda f=f, into=into: into.extend(iter(f.readline, "")), daemon=True)
                        for f, into in ((self.p.stdout, self.out), (self.p.stderr, self.err))]
        for r in self.readers:
            r.start()

    def wait_for(self, ready, timeout=90):
        """Until ``ready(stderr so far)`` is true; fails if the process ended first."""
        end = time.monotonic() + timeout
        while not ready("".join(self.err)):
            assert self.p.poll() is None, f"ended before the signal: {''.join(self.err)[-2000:]}"
            assert time.monotonic() < end, "never got ready"
            time.sleep(0.02)

    def stop(self, sig, timeout=60):
        self.p.send_signal(sig)
        self.p.wait(timeout=timeout)          # a hang fails the test (and the fixture kills the process)
        for r in self.readers:
            r.join(timeout=10)
        return self.p.returncode, "".join(self.out), "".join(self.err)


@pytest.fixture(autouse=True)
def _no_leftover_process():
    yield
    while Run.started:
        p = Run.started.pop()
        if p.poll() is None:
            p.kill()
            p.wait()


def exists(path):
    return lambda _err: Path(path).is_file()


def saying(pattern):
    return lambda err: re.search(pattern, err) is not None


def replays(path, cwd):
    r = subprocess.run(["isrcheck", "replay", str(path)], cwd=cwd, capture_output=True, text=True, timeout=60)
    return r.returncode == 0 and "reproduces" in r.stdout


def assert_stopped(code, out, err, sig):
    name = signal.Signals(sig).name
    assert code == 3, (code, out[-2000:], err[-2000:])
    assert "Traceback" not in err and "Traceback" not in out, err[-3000:]
    assert name in out + err


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_check_local_stops_on_signal_and_keeps_traces(tmp_path, sig):
    trace = tmp_path / "out" / "kip-320" / "single-acting-leader.itf.json"
    run = Run(["check", *BIG, "--all", "--out", "out", "--format", "json"], tmp_path)
    run.wait_for(exists(trace))
    code, out, err = run.stop(sig)
    assert_stopped(code, out, err, sig)
    report = json.loads(out)
    assert report["budget_hit"] == signal.Signals(sig).name and not report["complete"]
    assert report["verdicts"]["single-acting-leader"] == "violated"
    assert "unknown" in report["verdicts"].values()          # the rest was not decided
    assert report["distinct_states"] > 1 and report["depth"] >= 1
    assert report["trace_files"]["single-acting-leader"] == str(Path("out", "kip-320", "single-acting-leader.itf.json"))
    assert replays(trace, tmp_path)
    assert not list(tmp_path.rglob("*.tmp-*"))              # no half-written file


def test_check_bmc_stops_on_sigterm_without_solver_error(tmp_path):
    trace = tmp_path / "out" / "kip-101" / "single-acting-leader.itf.json"
    run = Run(["check", "--engine", "bmc", "--spec", "kip-101", "--invariant", "single-acting-leader",
               "--invariant", "log-matching", "--depth", "40", "--out", "out"], tmp_path)
    run.wait_for(exists(trace))
    code, out, err = run.stop(signal.SIGTERM)
    assert_stopped(code, out, err, signal.SIGTERM)
    assert "stopped by SIGTERM: no violation of" in out
    assert re.search(r"single-acting-leader\s+violated", out) and re.search(r"log-matching\s+unknown", out)
    for found in (tmp_path / "out" / "kip-101").iterdir():
        assert replays(found, tmp_path), found


def test_fuzz_stops_on_sigint_and_keeps_traces(tmp_path):
    folder = tmp_path / "out" / "kip-101"
    run = Run(["fuzz", "--spec", "kip-101", "--all", "--budget", "120s", "--seed", "3", "--out", "out"], tmp_path)
    run.wait_for(lambda _err: folder.is_dir() and any(folder.glob("*.itf.json")))
    code, out, err = run.stop(signal.SIGINT)
    assert_stopped(code, out, err, signal.SIGINT)
    assert "stopped by SIGINT" in out
    saved = sorted(folder.glob("*.itf.json"))
    assert saved and all(replays(f, tmp_path) for f in saved)
    for f in saved:                                          # the report names each one
        assert str(f.relative_to(tmp_path)) in out


def test_prove_k_induction_stops_on_sigterm(tmp_path):
    run = Run(["prove", "--spec", "kip-320", "--invariant", "no-committed-loss", "--replicas", "3"], tmp_path)
    run.wait_for(saying(r"prove: induction step \(z3\)"))          # a signal during the z3 call
    code, out, err = run.stop(signal.SIGTERM)
    assert_stopped(code, out, err, signal.SIGTERM)
    assert out.startswith("unknown: ") and "proved" not in out


def test_prove_auto_lemmas_stops_on_sigint(tmp_path):
    run = Run(["prove", "--spec", "kip-320", "--invariant", "no-committed-loss", "--auto-lemmas"], tmp_path)
    run.wait_for(saying(r"depth \d+"))
    code, out, err = run.stop(signal.SIGINT)
    assert_stopped(code, out, err, signal.SIGINT)
    assert out.startswith("unknown: ") and "lemmas" in out


#: a gate whose first search (3.9M states) outlasts the signal, and more searches after it; not every spec, whose
#: building (each checked on z3 before any search) alone takes 10 s of CPU
GATE_SPECS = ["kafka-7128", "kip-101"]


def test_gate_stops_on_sigterm_instead_of_going_on(tmp_path):
    run = Run(["gate", *GATE_SPECS, "--out", str(tmp_path / "gate-out"),
               "--counterexamples", str(ROOT / "counterexamples")], tmp_path)
    run.wait_for(saying(r"gate: \[1/\d+\] \S+: searching"))
    code, out, err = run.stop(signal.SIGTERM)
    assert_stopped(code, out, err, signal.SIGTERM)
    assert "gate stopped: stopped by SIGTERM while searching" in out
    checked = re.findall(r"gate: \[(\d+)/(\d+)\] \S+: stopped by SIGTERM", err)
    assert len(checked) == 1 and int(checked[0][0]) < int(checked[0][1])        # it did not go on
    assert "gate passed" not in out and "gate FAILED" not in out


def test_gate_sarif_says_the_run_was_stopped(tmp_path):
    run = Run(["gate", *GATE_SPECS, "--out", str(tmp_path / "gate-out"),
               "--counterexamples", str(ROOT / "counterexamples"), "--format", "sarif", "--output", "gate.sarif"],
              tmp_path)
    run.wait_for(saying(r"gate: \[1/\d+\] \S+: searching"))
    code, out, err = run.stop(signal.SIGINT)
    assert_stopped(code, out, err, signal.SIGINT)
    invocation = json.loads((tmp_path / "gate.sarif").read_text())["runs"][0]["invocations"][0]
    assert invocation == {"executionSuccessful": False, "exitCode": 3}


def test_minimize_stops_on_sigterm_and_saves_what_it_has(tmp_path):
    source = ROOT / "counterexamples" / "kip-101" / "no-committed-loss.itf.json"
    trace = tmp_path / "t.itf.json"
    trace.write_bytes(source.read_bytes())
    run = Run(["minimize", str(trace), "--output", "min.itf.json"], tmp_path)
    run.wait_for(saying("minimize: 16 states"))
    code, out, err = run.stop(signal.SIGTERM)
    assert_stopped(code, out, err, signal.SIGTERM)
    assert "the shortest trace found so far is saved" in out
    assert replays(tmp_path / "min.itf.json", tmp_path)


@pytest.mark.long
def test_spark_stops_on_sigterm_and_cleans_up(tmp_path):
    """The run's own temporary directory (under a TMPDIR of its own: other tests' Spark runs make theirs in /tmp
    meanwhile) is gone when it exits, and no task still running can make it again."""
    pytest.importorskip("pyspark")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    run = Run(["check", "--engine", "spark", *BIG, "--all", "--out", "out", "--partitions", "2"], tmp_path,
              env={**os.environ, "TMPDIR": str(tmp)})
    run.wait_for(saying(r"depth \d+"), timeout=180)
    assert [p for p in tmp.glob("isrcheck-spark-*") if p.is_dir()]           # the run's workdir, while it runs
    code, out, err = run.stop(signal.SIGTERM, timeout=120)
    assert_stopped(code, out, err, signal.SIGTERM)
    assert "Py4J" not in err and "stopped by SIGTERM" in out
    time.sleep(2)                                   # what the Spark workers left running could write meanwhile
    assert not [p for p in tmp.glob("isrcheck-spark-*") if p.is_dir()]
    for found in (tmp_path / "out").rglob("*.itf.json"):
        assert replays(found, tmp_path)


def test_max_memory_stops_a_three_replica_search(tmp_path):
    r = subprocess.run(["isrcheck", "check", *BIG, "--all", "--max-memory", "200M", "--out", "out", "--format",
                        "json", "--no-progress"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 3, (r.stdout[-2000:], r.stderr[-2000:])
    report = json.loads(r.stdout)
    assert report["budget_hit"] == "memory limit 200 MB" and not report["complete"]
    assert report["distinct_states"] > 1000 and report["depth"] > 1
    assert report["peak_memory_bytes"] < 400 * 2 ** 20          # it stopped near the limit, not far beyond
    for inv, path in report["trace_files"].items():
        assert replays(tmp_path / path, tmp_path), inv


@pytest.mark.parametrize("size", ["lots", "nan", "1e400", "0", "-5M", "10"])
def test_max_memory_rejects_junk(tmp_path, size):
    r = subprocess.run(["isrcheck", "gate", "--max-memory", size], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 2 and "--max-memory" in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not (tmp_path / "gate-counterexamples").exists()


# 2.8M states, 35 levels; every invariant by name, not --all, whose liveness checks (not resumable) would cost
# the uninterrupted run more than its search
MID = ["check", "--spec", "kip-279", "--max-epochs", "5", "--format", "json",
       *[arg for inv in SPECS["kip-279"].expected for arg in ("--invariant", inv)]]


def _check(cwd, *extra):
    return subprocess.run(["isrcheck", *MID, *extra], cwd=cwd, capture_output=True, text=True, timeout=300)


def _snapshot_depth(folder):
    try:
        return json.loads((folder / "snapshot.json").read_text())["counters"]["depth"]
    except (OSError, ValueError, KeyError):
        return 0


def test_kill_9_then_resume_equals_an_uninterrupted_run(tmp_path):
    ref = _check(tmp_path, "--out", "ref", "--no-progress")
    assert ref.returncode == 1, ref.stderr
    want = json.loads(ref.stdout)
    ck = tmp_path / "ck"
    run = Run([*MID, "--out", "res", "--checkpoint", str(ck), "--checkpoint-every", "0"], tmp_path)
    run.wait_for(lambda _err: _snapshot_depth(ck) >= 20)
    run.p.kill()                                              # kill -9: no chance to clean up
    run.p.wait(timeout=30)
    assert run.p.returncode == -signal.SIGKILL
    (ck / "depth-99-deadbeef").mkdir()                        # a snapshot cut short by a crash, and a half manifest
    (ck / "depth-99-deadbeef" / "visited.npy").write_bytes(b"\x93NUMPY")
    (ck / ".snapshot.json.tmp-1").write_text('{"vers')

    resumed = _check(tmp_path, "--out", "res", "--resume", str(ck), "--checkpoint-every", "0")
    assert resumed.returncode == 1, resumed.stderr
    assert "Traceback" not in resumed.stderr and re.search(r"snapshot \d+ s ago", resumed.stderr)
    got = json.loads(resumed.stdout)
    for key in ("verdicts", "distinct_states", "transitions", "depth", "complete", "never_fired", "trace_lengths",
                "coverage"):
        assert got[key] == want[key], key
    assert set(got["trace_files"]) == set(want["trace_files"]) and want["trace_files"]
    for inv in want["trace_files"]:
        assert (tmp_path / "res" / "kip-279" / f"{inv}.itf.json").read_bytes() == \
            (tmp_path / "ref" / "kip-279" / f"{inv}.itf.json").read_bytes(), inv
    left = sorted(p.name for p in ck.iterdir())              # the crash's leftovers are cleared by new snapshots
    assert len(left) == 2 and left[1] == "snapshot.json" and left[0].startswith("depth-") and "deadbeef" not in left[0]


@pytest.mark.parametrize("change, words", [
    (["--spec", "kip-279", "--all", "--max-crashes", "2"], "bounds"),
    (["--spec", "kip-320", "--all"], "spec"),
    (["--spec", "kip-279", "--invariant", "no-committed-loss"], "invariants"),
    (["--spec", "kip-279", "--all", "--symmetry"], "symmetry"),
    ("version", "version"),
    ("damage", "damaged"),
])
def test_resume_refuses_another_search(tmp_path, change, words):
    ck = tmp_path / "ck"
    first = subprocess.run(["isrcheck", "check", "--spec", "kip-279", "--all", "--checkpoint", str(ck),
                            "--checkpoint-every", "0", "--max-depth", "8", "--out", "o", "--no-progress"],
                           cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert first.returncode in (1, 3) and (ck / "snapshot.json").is_file(), first.stderr
    manifest = json.loads((ck / "snapshot.json").read_text())
    if change == "version":
        manifest["version"] = "0.0.1"
        (ck / "snapshot.json").write_text(json.dumps(manifest))
    elif change == "damage":
        visited = ck / manifest["snapshot"] / "visited.npy"
        data = bytearray(visited.read_bytes())
        data[-1] ^= 1
        visited.write_bytes(bytes(data))
    search = change if isinstance(change, list) else ["--spec", "kip-279", "--all"]
    r = subprocess.run(["isrcheck", "check", *search, "--resume", str(ck), "--out", "o"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, (change, r.stdout[-500:], r.stderr)
    assert len(r.stderr.strip().splitlines()) == 1 and words in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("flag, path, words", [
    ("--checkpoint", "a-file", "cannot create it"),
    ("--resume", "missing", "not a writable directory"),
    ("--resume", "empty", "no snapshot there"),
])
def test_checkpoint_folder_problems_are_one_line_before_any_work(tmp_path, flag, path, words):
    (tmp_path / "a-file").write_text("x")
    (tmp_path / "empty").mkdir()
    r = subprocess.run(["isrcheck", "check", "--spec", "kip-101", "--all", flag, path, "--out", "o"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and words in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not (tmp_path / "o").exists()


def test_memory_error_is_exit_3_with_the_partial_report(tmp_path):
    """An allocation that fails (here: an address-space limit below --max-memory) stops the search like a budget."""
    import resource

    def small_address_space():
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
    r = subprocess.run(["isrcheck", "check", *BIG, "--all", "--max-memory", "64G", "--out", "out", "--format",
                        "json", "--no-progress"], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                       preexec_fn=small_address_space)
    assert r.returncode == 3, (r.stdout[-2000:], r.stderr[-2000:])
    assert "Traceback" not in r.stderr
    report = json.loads(r.stdout)
    assert report["budget_hit"] == "out of memory (MemoryError)" and report["depth"] > 1
    assert report["verdicts"]["single-acting-leader"] == "violated"
    assert replays(tmp_path / report["trace_files"]["single-acting-leader"], tmp_path)
