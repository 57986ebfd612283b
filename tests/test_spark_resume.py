"""A Spark run whose driver was killed resumes with ``--resume DIR`` to the local engine's answers, through the
installed script (``--checkpoint DIR`` snapshots it at job boundaries)."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

# 8,190 states in 18 levels; strong-isr is violated at level 10, after the first snapshot (the first job chains
# levels 1-7), no-committed-loss holds
CHECK = ["check", "--spec", "hw-truncation", "--replicas", "2", "--max-epochs", "1", "--invariant", "strong-isr",
         "--invariant", "no-committed-loss", "--format", "json", "--no-progress"]
SPARK = ["--engine", "spark", "--master", "local[2]", "--partitions", "2"]


def _run(args, cwd, **kw):
    return subprocess.run([shutil.which("isrcheck"), *CHECK, *args], capture_output=True, text=True, cwd=cwd,
                          timeout=300, **kw)


@pytest.mark.long
def test_driver_killed_then_resumed(tmp_path):
    snap = tmp_path / "snap"
    first = subprocess.Popen([shutil.which("isrcheck"), *CHECK, *SPARK, "--checkpoint", str(snap),
                              "--checkpoint-every", "0", "--out", "killed"], cwd=tmp_path,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    manifest = snap / "spark-snapshot.json"
    try:
        deadline = time.monotonic() + 240
        while not manifest.exists() and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert manifest.exists(), "no snapshot was written"
        os.killpg(first.pid, signal.SIGKILL)              # the driver and its JVM, mid-run
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
        first.wait(timeout=60)
    snapshot_depth = json.loads(manifest.read_text())["state"]["depth"]
    assert 1 < snapshot_depth < 18
    assert not (tmp_path / "killed").exists()             # killed before the violation at level 10 was found

    resumed = _run([*SPARK, "--resume", str(snap), "--out", "resumed"], tmp_path)
    local = _run(["--out", "local"], tmp_path)
    assert resumed.returncode == local.returncode == 1, resumed.stderr
    a, b = json.loads(resumed.stdout), json.loads(local.stdout)
    for key in ("verdicts", "distinct_states", "transitions", "depth", "complete", "never_fired", "trace_lengths"):
        assert a[key] == b[key], key
    traces = [json.loads((tmp_path / r["trace_files"]["strong-isr"]).read_text()) for r in (a, b)]
    for t in traces:
        t["#meta"].pop("engine")
    assert traces[0] == traces[1]


def test_resume_needs_a_spark_snapshot(tmp_path):
    run = _run([*SPARK, "--resume", str(tmp_path)], tmp_path)
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert run.stderr.strip() == f"isrcheck: error: --resume {tmp_path}: no Spark snapshot there (spark-snapshot.json missing)"


def test_damaged_snapshot_is_refused(tmp_path):
    """A snapshot is checked before anything is resumed from it: an edited manifest (its digest), a forged one
    whose digest was recomputed (its counters' ranges), a FIFO in its place (never waited on) and a frontier file
    with one byte changed (its digest, checked by the task reading it) are each one line and exit 2, with no
    trace written."""
    from isrcheck.checker.exhaustive.checkpoint import manifest_digest
    snap = tmp_path / "snap"
    first = _run([*SPARK, "--checkpoint", str(snap), "--checkpoint-every", "0", "--out", "first"], tmp_path)
    assert first.returncode == 1, first.stderr
    manifest = snap / "spark-snapshot.json"
    good = json.loads(manifest.read_text())
    frontier = next((snap / "frontier").glob("level-*/part-*.npz"))

    def refused(expected):
        run = _run([*SPARK, "--resume", str(snap), "--out", "resumed"], tmp_path, stdin=subprocess.DEVNULL)
        assert run.returncode == 2 and len(run.stderr.strip().splitlines()) == 1, run.stderr[-3000:]
        assert run.stderr.startswith("isrcheck: error: --resume ") and expected in run.stderr, run.stderr
        assert not (tmp_path / "resumed").exists()

    edited = {**good, "state": {**good["state"], "transitions": good["state"]["transitions"] + 1}}
    manifest.write_text(json.dumps(edited))
    refused("spark-snapshot.json does not match its digest (edited or damaged)")
    forged = {**good, "state": {**good["state"], "level_start": good["state"]["level_start"][:-1] + [10 ** 12]}}
    forged["digest"] = manifest_digest(forged)
    manifest.write_text(json.dumps(forged))
    refused("'level_start' is not each level's first state number")
    manifest.unlink()
    os.mkfifo(manifest)
    refused("not a regular file")
    manifest.unlink()
    manifest.write_text(json.dumps(good))
    data = bytearray(frontier.read_bytes())
    data[len(data) // 2] ^= 0xFF
    frontier.write_bytes(bytes(data))
    refused(f"{frontier.relative_to(snap)} does not match its digest (edited or damaged)")
