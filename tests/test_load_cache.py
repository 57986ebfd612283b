"""The load checks' verdict kept across processes (model/load_cache.py): a second process building the same
spec skips z3, a change to any source the spec runs re-checks it, and a record that does not fit is ignored."""
import json
import os
import subprocess
import sys

import pytest
import z3

from isrcheck.checker.command_line.registry import resolve
from isrcheck.model import Field
from isrcheck.model import load_cache, native, spec as spec_module

COUNTER = '''
from isrcheck.model import Field, Spec, action, invariant

from steps import bump


class Counter(Spec):
    name = "counter"

    def configure(self, bounds):
        self.CELLS = range(2)

    def fields(self):
        return [Field("x", 0, 3, (2,))]

    @action(i="CELLS")
    def inc(self, s, i):
        s.require(s.x[i] < 3)
        s.x[i] = bump(s.x[i])

    @action(i="CELLS", j="CELLS")
    def move(self, s, i, j):
        s.require(i != j)              # no instance with i == j: the load checks drop them
        s.require((s.x[i] > 0) & (s.x[j] < 3))
        s.x[i] = s.x[i] - 1
        s.x[j] = s.x[j] + 1

    @invariant("bounded")
    def bounded(self, s):
        return s.x[0] <= 3
'''
STEPS = "def bump(v):\n    return v + 1\n"

# builds the spec in a fresh process: did it import z3, and what did it keep?
PROBE = """
import json, sys
from isrcheck.checker.command_line.registry import resolve
from isrcheck.model import Field
spec = resolve("counter.py:Counter")()
print(json.dumps({"z3": "z3" in sys.modules, "kept": [[a.label, list(a.written)] for a in spec.actions]}))
"""
KEPT = [["inc(i=0)", [0]], ["inc(i=1)", [1]], ["move(i=0, j=1)", [0, 1]], ["move(i=1, j=0)", [0, 1]]]
# an instance only z3 can tell is disabled: a record that leaves it out is not taken on trust
GUARDED = """
from counter import Counter
from isrcheck.model import action


class Guarded(Counter):
    name = "guarded"

    @action(i="CELLS")
    def reset(self, s, i):
        s.require(s.x[i] > 5)          # enabled in no well-typed state (x is 0..3)
        s.x[i] = 0
"""


@pytest.fixture
def team(tmp_path):
    (tmp_path / "counter.py").write_text(COUNTER)
    (tmp_path / "steps.py").write_text(STEPS)
    return tmp_path


def env(team):
    return {**os.environ, "ISRCHECK_CACHE_DIR": str(team / "cache")}


def isrcheck(team, *args):
    return subprocess.run(["isrcheck", *args], capture_output=True, text=True, cwd=team, env=env(team), timeout=120)


def check(team):
    run = isrcheck(team, "check", "--spec", "counter.py:Counter", "--invariant", "bounded", "--format", "json",
                   "--no-progress", "--out", "out", "--coverage")
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def probe(team):
    run = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, cwd=team, env=env(team),
                         timeout=120)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def records(team):
    return sorted((team / "cache" / "kernels").glob("load-*.json"))


def test_a_second_process_takes_the_verdict_without_z3_and_checks_the_same(team):
    first = check(team)
    assert first["distinct_states"] == 16 and first["verdicts"] == {"bounded": "holds"}
    [record] = records(team)
    assert json.loads(record.read_text())["kept"] == KEPT
    assert probe(team) == {"z3": False, "kept": KEPT}         # the verdict was taken: z3 was never imported
    second = check(team)
    for key in ("distinct_states", "transitions", "depth", "verdicts", "coverage"):
        assert second[key] == first[key], key
    record.unlink()
    assert probe(team) == {"z3": True, "kept": KEPT}          # no record: the checks ran, and kept the same


@pytest.mark.parametrize("changed, source", [("counter.py", COUNTER.replace("bump(s.x[i])", "s.x[i] + 2")),
                                             ("steps.py", STEPS.replace("v + 1", "v + 2"))], ids=["spec", "helper"])
def test_a_changed_source_is_checked_again_and_refused_when_invalid(team, changed, source):
    check(team)
    (team / changed).write_text(source)      # the spec's own file, or a module its action calls
    run = isrcheck(team, "check", "--spec", "counter.py:Counter", "--invariant", "bounded")
    assert run.returncode == 2, run.stdout + run.stderr
    assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr, run.stderr
    assert "action inc(i=0): may write x[0] outside 0..3" in run.stderr
    assert len(records(team)) == 1            # the failed load wrote nothing


def _kept(text, change, sign):
    """The record with its kept instances changed, its checksum left as it was or made to match."""
    record = json.loads(text)
    record["kept"] = change(record["kept"])
    if sign:
        record["check"] = load_cache._check(record["key"], record["kept"])
    return json.dumps(record)


@pytest.fixture
def build(team, monkeypatch):
    """Build the counter spec in this process as a new one would: (kept instances, z3 solvers made)."""
    monkeypatch.setattr(spec_module, "_CHECKED", {})
    monkeypatch.chdir(team)
    solvers = []
    real = z3.Solver
    monkeypatch.setattr(z3, "Solver", lambda *a, **kw: solvers.append(1) or real(*a, **kw))

    def run(ref="counter.py:Counter"):
        spec_module._CHECKED.clear()
        solvers.clear()
        spec = resolve(ref)()
        return [[a.label, list(a.written)] for a in spec.actions], len(solvers)
    (team / "cache").mkdir()
    monkeypatch.setattr(native, "cache_dir", lambda: str(team / "cache"))
    return run


def test_in_process_a_record_is_taken_without_a_solver(build):
    assert build() == (KEPT, 1)
    assert build() == (KEPT, 0)


@pytest.mark.parametrize("corrupt", [
    lambda text: text[:len(text) // 2],
    lambda text: _kept(text, lambda kept: kept[:1], sign=False),
    lambda text: _kept(text, lambda kept: kept[:3], sign=True),
    lambda text: _kept(text, lambda kept: kept + [["ghost(i=0)", [0]]], sign=True),
    lambda text: _kept(text, lambda kept: [[kept[0][0], [9]], kept[1]], sign=True),
    lambda text: _kept(text, lambda kept: [kept[0], kept[0]], sign=True),
    lambda text: _kept(text, lambda kept: {"inc(i=0)": [0]}, sign=True),
    lambda text: "[" * 100_000 + "]" * 100_000,
    lambda text: "\x00\xff not json",
    lambda text: json.dumps({**json.loads(text), "format": 0}),
    lambda text: json.dumps({**json.loads(text), "key": "0" * 64}),
], ids=["truncated", "dropped", "dropped-resigned", "unknown-instance", "column-out-of-range", "twice", "not-a-list", "nested", "binary",
        "format", "other-key"])
def test_a_record_that_does_not_fit_is_ignored_and_rewritten(team, build, corrupt):
    build()
    [record] = (team / "cache").glob("load-*.json")
    record.write_text(corrupt(record.read_text()), errors="surrogateescape")
    assert build() == (KEPT, 1)               # checked again, not trusted
    assert build() == (KEPT, 0)               # the record was rewritten


def test_a_record_path_that_is_no_file_is_ignored(team, build):
    build()
    [record] = (team / "cache").glob("load-*.json")
    record.unlink()
    os.mkfifo(record)                         # opening it must not wait for a writer
    assert build() == (KEPT, 1)
    assert build() == (KEPT, 0)               # replaced by a record
    record.unlink()
    record.mkdir()
    assert build() == (KEPT, 1)
    assert build() == (KEPT, 1)               # nothing can be written there: checked every time


def test_a_record_leaving_out_an_instance_only_z3_drops_is_not_used(team, build):
    (team / "guarded.py").write_text(GUARDED)
    assert build("guarded.py:Guarded") == (KEPT, 1)
    [record] = (team / "cache").glob("load-*.json")
    assert json.loads(record.read_text())["kept"] == KEPT
    assert build("guarded.py:Guarded") == (KEPT, 1)         # checked again: reset's dropping is not on trust


def test_an_unwritable_cache_checks_every_time(team, build, monkeypatch):
    (team / "file").write_text("")
    monkeypatch.setattr(native, "cache_dir", lambda: str(team / "file" / "kernels"))   # no directory can be made
    assert build() == (KEPT, 1)
    assert build() == (KEPT, 1)


def test_a_local_class_is_never_keyed():
    class Local(spec_module.Spec):
        name = "local"

        def fields(self):
            return [Field("x", 0, 1)]

    assert load_cache.digest(Local()) is None
