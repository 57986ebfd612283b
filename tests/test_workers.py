"""`check --workers N`: the exhaustive search gives the same counts, verdicts, state numbers and traces for any N,
on the numpy kernels and on the native ones (the compiled kernels, model/c_kernels.py, where there is a C
compiler), through the installed `isrcheck` script.

Small chunks make a level many chunks, so the workers really expand ahead of the chunk being deduplicated.
The native run compiles kip-101's kernels once per machine (about 20 s of CPU; then they load from the cache).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

INVARIANTS = ["no-committed-loss", "strong-isr", "hw-monotonic"]
# what the run's speed and memory decide (the compiled kernels' visited set is a table from the start, numpy's a
# sorted array while small: bytes per state differ), not its answers
VARYING = {"seconds", "states_per_second", "peak_memory_bytes", "bytes_per_state", "trace_file", "trace_files"}


def check(tmp_path, name, *args, cwd=None, env=None):
    out = tmp_path / name
    cmd = ["isrcheck", "check", "--spec", "kip-101", "--format", "json", "--out", str(out), "--no-progress",
           "--chunk", "4096", *[x for i in INVARIANTS for x in ("--invariant", i)], *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=cwd, env=env)
    assert proc.returncode in (0, 1, 3), proc.stderr
    report = json.loads(proc.stdout)
    traces = {n: open(os.path.join(cwd or ".", p)).read() for n, p in report["trace_files"].items()}
    return proc.returncode, {k: v for k, v in report.items() if k not in VARYING}, traces


@pytest.mark.parametrize("kernels", ["numpy", "native"])
def test_workers_give_identical_results(tmp_path, kernels):
    one = check(tmp_path, "one", "--workers", "1", "--kernels", kernels)
    two = check(tmp_path, "two", "--workers", "2", "--kernels", kernels)
    code, report, traces = one
    assert code == 1 and report["distinct_states"] > 4096 * 8         # a violation, over many chunks
    assert traces and all(json.loads(t)["states"] for t in traces.values())      # counterexamples were written
    assert one == two


def test_native_and_numpy_kernels_agree(tmp_path):
    assert check(tmp_path, "numpy", "--kernels", "numpy") == check(tmp_path, "native", "--kernels", "native")


def without_a_compiler(tmp_path):
    """The environment of a machine with no C compiler: none on the PATH (only the installed scripts' directory,
    which holds isrcheck), no $CC; and one whose $CC cannot run."""
    scripts = os.path.dirname(shutil.which("isrcheck"))
    env = {k: v for k, v in os.environ.items() if k != "CC"}
    assert not any(shutil.which(cc, path=scripts) for cc in ("cc", "gcc", "clang"))
    return {**env, "PATH": scripts}, {**env, "CC": str(tmp_path / "no-such-cc")}


def test_without_a_c_compiler_the_search_runs_on_numba_with_the_same_answers(tmp_path):
    """The compiled kernels are optional: with no C compiler, or one that cannot run, `--kernels native` searches on
    numba's kernels and gives the compiled kernels' counts, verdicts, state numbers and traces; only
    `--fingerprint 96`, which needs them, is refused, in one line with exit 2."""
    none, broken = without_a_compiler(tmp_path)
    cut = ("--kernels", "native", "--max-states", "150000")
    compiled = check(tmp_path, "compiled", *cut, "--workers", "2")
    assert compiled[1]["distinct_states"] >= 150_000 and compiled[2]        # many chunks, traces written
    assert compiled == check(tmp_path, "none", *cut, "--workers", "2", env=none)
    assert compiled == check(tmp_path, "broken", *cut, env=broken)
    code = ("from isrcheck.checker.exhaustive.bfs import Search; from isrcheck.specs import SPECS; "
            "s = Search(SPECS['kip-101'](), ['log-matching'], kernels='native'); s.run(max_states=20000); "
            "print(s.compiled is None, s.native is not None, s.compile_failed)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=none)
    assert proc.stdout.split() == ["True", "True", "True"], proc.stderr         # numba's kernels, none compiled
    for env in (none, broken):
        r = subprocess.run(["isrcheck", "check", "--spec", "kip-101", "--invariant", "log-matching",
                            "--fingerprint", "96", "--no-progress"], capture_output=True, text=True, timeout=60, env=env)
        assert r.returncode == 2 and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
        assert "--fingerprint 96 needs the compiled kernels" in r.stderr


def test_workers_from_the_settings_file_and_user_mistakes(tmp_path):
    (tmp_path / "isrcheck.toml").write_text("[check]\nworkers = 2\n")
    code, report, traces = check(tmp_path, "settings", cwd=tmp_path)
    # the report names where its settings came from; the flag's run has none
    assert report.pop("settings") == [{"kind": "options", "from": "isrcheck.toml", "values": {"workers": 2}}]
    flag_code, flag_report, flag_traces = check(tmp_path, "flag", "--workers", "1", cwd=tmp_path)
    assert flag_report.pop("settings", []) == []
    assert (code, report, traces) == (flag_code, flag_report, flag_traces)
    for bad in ("0", "two"):
        proc = subprocess.run(["isrcheck", "check", "--spec", "kip-101", "--workers", bad], capture_output=True,
                              text=True, timeout=60)
        assert proc.returncode == 2 and "--workers" in proc.stderr and "Traceback" not in proc.stderr


def test_small_runs_stay_on_numpy_and_unwritable_cache_dirs_fall_back(tmp_path):
    """A small search never loads numba (what the suite's dozens of checks rely on), and the kernel cache
    goes to a temporary directory when neither ISRCHECK_CACHE_DIR nor the XDG cache can be created."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    code = ("import sys; from isrcheck.checker.exhaustive.bfs import search; from isrcheck.checker.engine.budget import Budget; "
            "from isrcheck.specs import SPECS; "
            "from isrcheck.model.native import cache_dir; "
            "r = search(SPECS['kip-101'](), ['log-matching'], budget=Budget(max_states=20000)); "
            "print(r.distinct_states, 'numba' in sys.modules, cache_dir())")
    env = {**os.environ, "ISRCHECK_CACHE_DIR": str(blocker / "x"), "XDG_CACHE_HOME": str(blocker / "y")}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    states, numba_loaded, directory = proc.stdout.split()
    assert int(states) >= 20000 and numba_loaded == "False"
    assert not directory.startswith(str(blocker)) and os.access(directory, os.W_OK)


def test_workers_insert_into_the_table_group_by_group_with_the_same_results(monkeypatch):
    """The visited table from the first state: chunks insert into its shard groups at once, each group in chunk
    order, and number, parent and trace every state as one worker does (small chunks: many at once)."""
    import numpy as np
    from isrcheck.checker.exhaustive import visited
    from isrcheck.checker.exhaustive.bfs import Search
    from isrcheck.specs import SPECS
    monkeypatch.setattr(visited, "TABLE_FROM", 0)
    monkeypatch.setattr(visited, "TABLE_LOADED_FROM", 0)
    spec = SPECS["kip-101"]()
    runs = []
    for workers in (1, 2):
        s = Search(spec, INVARIANTS, chunk=2048, workers=workers, kernels="numpy")
        r = s.run(max_states=90000)
        level_start, parents, actions = s.tree
        runs.append((r.distinct_states, r.transitions, r.depth, r.verdicts,
                     {n: (v.state_id, [(a and a.label, row.tobytes()) for a, row in v.steps])
                      for n, v in r.violations.items()},
                     level_start, np.concatenate(parents).tobytes(), np.concatenate(actions).tobytes()))
    assert runs[0][0] >= 90000 and runs[0][4]           # many chunks, violations with traces
    assert runs[0] == runs[1]


def test_no_room_for_the_native_kernels_under_an_address_space_limit():
    """Under ulimit -v with less room than numba and the kernels take, "auto" must stay on numpy: stop.room_for sees
    the address-space limit as it sees --max-memory (numba's import there fails, or its scipy's OpenBLAS spins)."""
    code = ("import resource; from isrcheck.checker.engine import stop; from isrcheck.checker.exhaustive.bfs import NATIVE_MEMORY; "
            "print(stop.room_for(NATIVE_MEMORY), end=' '); "
            "resource.setrlimit(resource.RLIMIT_AS, (stop._virtual_bytes() + (200 << 20), resource.RLIM_INFINITY)); "
            "print(stop.room_for(1 << 20), stop.room_for(NATIVE_MEMORY))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.split() == ["True", "True", "False"], proc.stderr
