"""Every violation a spec expects at its default bounds has a checked-in trace that still replays."""
import os

import pytest

from isrcheck.checker.trace import is_lasso, load, replay, replay_lasso, spec_for
from isrcheck.specs import SPECS

ROOT = os.path.join(os.path.dirname(__file__), "..", "counterexamples")

EXPECTED = [(name, inv) for name, cls in SPECS.items() for inv, v in cls.expected.items() if v == "violated"]


@pytest.mark.parametrize("name, invariant", EXPECTED)
def test_expected_violation_has_a_replaying_trace(name, invariant):
    path = os.path.join(ROOT, name, f"{invariant}.itf.json")
    assert os.path.exists(path), f"missing {path}: run isrcheck check --spec {name} --all"
    trace = load(path)
    assert (trace.spec, trace.invariant) == (name, invariant)
    result = replay(spec_for(trace, path), trace)
    assert result.ok, result.message


LASSOS = [(name, prop) for name, cls in SPECS.items() for prop, v in cls.liveness_expected()[0].items()
          if v == "violated"]


@pytest.mark.parametrize("name, prop", LASSOS)
def test_expected_liveness_violation_has_a_replaying_lasso(name, prop):
    path = os.path.join(ROOT, name, f"{prop}.itf.json")
    assert os.path.exists(path), f"missing {path}: run isrcheck check --spec {name} --all"
    trace = load(path)
    assert (trace.spec, trace.invariant) == (name, prop) and is_lasso(trace)
    result = replay_lasso(spec_for(trace, path), trace)
    assert result.ok, result.message


def test_no_stray_traces():
    expected = {(n, i) for n, i in EXPECTED + LASSOS}
    for spec_dir in os.listdir(ROOT):
        for f in os.listdir(os.path.join(ROOT, spec_dir)):
            assert (spec_dir, f.removesuffix(".itf.json")) in expected, f"stray trace {spec_dir}/{f}"
