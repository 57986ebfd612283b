"""ITF both ways: the typed form (checker/traces/itf_types.py) written by `check --itf typed` and `show --format itf`,
read back by `replay` and `show`, and round-tripped through itf-py, the ITF library on PyPI: written typed, read
with itf-py, written back with itf-py (integers as #bigint, sets in any order), and replayed by the installed
``isrcheck`` script."""
import json
import os
import subprocess
import sys

import pytest

itf_py = pytest.importorskip("itf_py", reason="itf-py needs Python 3.11+")

REPO = os.path.join(os.path.dirname(__file__), "..")
SCRIPT = os.path.join(os.path.dirname(sys.executable), "isrcheck")
CX = os.path.join(REPO, "counterexamples")
TRACES = [os.path.join(CX, "kip-101", "no-committed-loss.itf.json"),       # Kafka model
          os.path.join(CX, "kip-320", "isr-regrows.itf.json"),             # a liveness lasso
          os.path.join(CX, "tla-kip101", "strong-isr.itf.json")]           # a TLA port


def isrcheck(*args):
    return subprocess.run([SCRIPT, *args], capture_output=True, text=True, timeout=120)


def through_itf_py(src, dst):
    """Read ``src`` with itf-py and write what itf-py emits to ``dst``."""
    trace = itf_py.trace_from_json(json.load(open(src)))
    json.dump(itf_py.trace_to_json(trace), open(dst, "w"))


@pytest.mark.parametrize("path", TRACES, ids=lambda p: os.path.relpath(p, CX))
def test_typed_round_trip_through_itf_py_replays(path, tmp_path):
    typed = tmp_path / "typed.itf.json"
    r = isrcheck("show", path, "--format", "itf", "--output", str(typed))
    assert r.returncode == 0, r.stderr
    back = tmp_path / "back.itf.json"
    through_itf_py(typed, back)
    text = back.read_text()
    assert '"#bigint"' in text and '"#set"' in text            # itf-py's own encodings
    for trace in (typed, back):
        r = isrcheck("replay", str(trace), "--format", "json")
        assert r.returncode == 0, r.stdout + r.stderr
        assert json.loads(r.stdout)["reproduces"] is True
    assert isrcheck("show", str(back)).stdout.splitlines()[1:] == isrcheck("show", path).stdout.splitlines()[1:]


def test_compact_round_trip_through_itf_py_replays(tmp_path):
    back = tmp_path / "back.itf.json"
    through_itf_py(TRACES[0], back)
    assert isrcheck("replay", str(back)).returncode == 0


def test_typed_values_come_from_the_field_declarations(tmp_path):
    r = isrcheck("check", "--spec", "kip-101", "--invariant", "no-committed-loss", "--itf", "typed",
                 "--out", str(tmp_path), "--no-progress", "--format", "json")
    assert r.returncode == 1, r.stderr
    data = json.load(open(json.loads(r.stdout)["trace_file"]))
    first, last = data["states"][0], data["states"][-1]
    assert first["q_isr"] == {"#set": ["r0", "r1"]}                     # the ISR: a set of replicas
    assert first["leader"] == ["none", "none"] and first["q_leader"] == "none"    # no leader: explicit
    assert last["leader"][1] == "r1" and last["isr"][1]["#set"] == ["r0", "r1"]
    assert first["leo"] == [0, 0] and first["req_sent"] == [False] * 4   # counters and plain flags stay as they are
    compact = json.load(open(os.path.join(CX, "kip-101", "no-committed-loss.itf.json")))
    assert compact["states"][0]["leader"] == [2, 2] and compact["states"][0]["q_isr"] == [True, True]
    assert isrcheck("replay", json.loads(r.stdout)["trace_file"]).returncode == 0


def test_the_default_form_is_the_smaller(tmp_path):
    """Compact stays the default because it is smaller (12,847 against 14,192 bytes for kip-101's loss)."""
    for path in TRACES:
        typed = tmp_path / "typed.itf.json"
        assert isrcheck("show", path, "--format", "itf", "--output", str(typed)).returncode == 0
        assert os.path.getsize(path) < os.path.getsize(typed), path


@pytest.mark.parametrize("edit, words", [
    (lambda s: s.update(q_leader="r7"), "'r7' is not a replica name (r0..r1 or 'none')"),
    (lambda s: s.update(q_isr={"#set": ["none"]}), "'none' is not a replica name (r0..r1)"),
    (lambda s: s.update(leo=["r0", 0]), "a string, not an integer"),
])
def test_bad_typed_values_are_one_line_exit_2(edit, words, tmp_path):
    typed = tmp_path / "typed.itf.json"
    assert isrcheck("show", TRACES[0], "--format", "itf", "--output", str(typed)).returncode == 0
    data = json.load(open(typed))
    edit(data["states"][3])
    typed.write_text(json.dumps(data))
    r = isrcheck("replay", str(typed))
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and words in r.stderr, r.stderr
