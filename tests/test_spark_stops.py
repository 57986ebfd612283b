"""Spark runs stopped by a signal to their whole process group (a terminal's Ctrl-C, a supervisor's SIGTERM),
through the installed script, while Spark starts or mid-search: exit 3, a report saying "stopped by", no
traceback, and no process of the run left once isrcheck has exited. (A signal to isrcheck alone:
tests/test_stops.py.)
"""
from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
import uuid

import pytest

from test_stops import BIG

pytest.importorskip("pyspark")


def _processes_of(mark):
    """The pids of the processes whose environment carries ``mark`` (the run's, and every process it started)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/environ", "rb") as fh:
                    if mark.encode() in fh.read():
                        found.append(int(entry))
            except OSError:
                continue
    return found


def _java_started(mark):
    for pid in _processes_of(mark):
        try:
            with open(f"/proc/{pid}/comm") as fh:
                if fh.read().strip() == "java":
                    return True
        except OSError:
            continue
    return False


@pytest.mark.parametrize("sig, when", [(signal.SIGTERM, "starting"), (signal.SIGINT, "searching")])
def test_spark_stops_with_a_report_and_leaves_no_process(tmp_path, sig, when):
    """To the whole process group: isrcheck alone receives it (the JVM has a session of its own) and stops the
    search and Spark in order."""
    mark = f"isrcheck-test-{uuid.uuid4().hex}"
    p = subprocess.Popen(["isrcheck", "check", "--engine", "spark", *BIG, "--invariant", "no-committed-loss",
                          "--out", "out", "--partitions", "2"], cwd=tmp_path, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True,
                         env={**os.environ, "ISRCHECK_TEST_RUN": mark})
    err = []
    reader = threading.Thread(target=lambda: err.extend(iter(p.stderr.readline, "")), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 180
        ready = (lambda: _java_started(mark)) if when == "starting" else (lambda: "depth" in "".join(err))
        while not ready():
            assert p.poll() is None and time.monotonic() < deadline, "".join(err)[-2000:]
            time.sleep(0.05)
        os.killpg(p.pid, sig)
        out = p.stdout.read()
        p.wait(timeout=120)
        reader.join(timeout=10)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    err = "".join(err)
    assert p.returncode == 3, (out[-1000:], err[-2000:])
    assert f"stopped by {sig.name}" in out, out[-1000:]
    assert "Traceback" not in err and "py4j" not in err.lower(), err[-2000:]
    time.sleep(1)
    left = _processes_of(mark)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, "processes of the run left behind"
