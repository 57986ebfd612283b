"""How the ``isrcheck`` script ends (checker/command_line/launch.py): at once once the command has its exit code,
with standard output whole, the ``atexit`` functions run and threads that are no daemons waited for."""
from __future__ import annotations

import json
import os
import shutil
import subprocess

SPEC = '''
import atexit, os, threading, time
from isrcheck.specs.tla.kip320_first_try import TlaKip320FirstTry


class Mine(TlaKip320FirstTry):
    name = "mine"


atexit.register(lambda: open("atexit.mark", "w").write("ran"))
if os.environ.get("LATE_THREAD"):
    threading.Thread(target=lambda: (time.sleep(0.3), open("thread.mark", "w").write("ran"))).start()
'''


def isrcheck(*args, cwd, env=None):
    return subprocess.run([shutil.which("isrcheck"), *args], capture_output=True, text=True, timeout=120, cwd=cwd,
                          env={**os.environ, **(env or {})})


def test_the_exit_code_output_atexit_functions_and_threads_all_survive_the_quick_end(tmp_path):
    (tmp_path / "mine.py").write_text(SPEC)
    args = ["check", "--spec", "mine.py:Mine", "--invariant", "strong-isr", "--max-epochs", "2", "--no-progress",
            "--format", "json", "--out", "traces"]
    r = isrcheck(*args, cwd=tmp_path)
    assert r.returncode == 1, r.stderr                      # the known violation of the first try at KIP-320
    report = json.loads(r.stdout[r.stdout.index("{"):])     # the whole report reached the pipe
    assert report["verdicts"]["strong-isr"] == "violated" and (tmp_path / "atexit.mark").read_text() == "ran"
    assert isrcheck("show", *[str(p) for p in (tmp_path / "traces").rglob("*.itf.json")], "--spec", "mine.py:Mine",
                    cwd=tmp_path).returncode == 0
    assert not (tmp_path / "thread.mark").exists()
    r = isrcheck(*args, cwd=tmp_path, env={"LATE_THREAD": "1"})
    assert r.returncode == 1 and (tmp_path / "thread.mark").read_text() == "ran"
