"""Every violation a spec expects, at its defaults or another configuration, has a checked-in trace found at
exactly that configuration's bounds and still replaying there."""
import os

import pytest

from isrcheck.checker.gating.gate_results import trace_path
from isrcheck.checker.traces.trace import is_lasso, load, replay, replay_lasso, spec_for
from isrcheck.model.configuration import configurations
from isrcheck.specs import SPECS

ROOT = os.path.join(os.path.dirname(__file__), "..", "counterexamples")

EXPECTED = [(name, conf, inv) for name, cls in SPECS.items() for conf, c in configurations(cls).items()
            for inv, v in c.expected.items() if v == "violated"]
_specs = {}


@pytest.mark.parametrize("name, conf, invariant", EXPECTED)
def test_expected_violation_has_a_replaying_trace_at_its_bounds(name, conf, invariant):
    path = trace_path(ROOT, name, conf, invariant)
    assert os.path.exists(path), f"missing {path}: run isrcheck gate --update-traces {name}"
    trace = load(path)
    assert (trace.spec, trace.invariant) == (name, invariant)
    if (name, conf) not in _specs:
        _specs[name, conf] = SPECS[name](**configurations(SPECS[name])[conf].bounds)
    spec = _specs[name, conf]
    assert trace.bounds == spec.bounds, f"{path} was found at other bounds than configuration {conf}'s"
    result = replay(spec, trace)
    assert result.ok, result.message


LASSOS = [(name, conf, prop) for name, cls in SPECS.items() for conf, c in configurations(cls).items()
          for prop, v in c.liveness.items() if v == "violated"]


@pytest.mark.parametrize("name, conf, prop", LASSOS)
def test_expected_liveness_violation_has_a_replaying_lasso(name, conf, prop):
    path = trace_path(ROOT, name, conf, prop)
    assert os.path.exists(path), f"missing {path}: run isrcheck gate --update-traces {name}"
    trace = load(path)
    assert (trace.spec, trace.invariant) == (name, prop) and is_lasso(trace)
    spec = spec_for(trace, path)
    assert spec.bounds == SPECS[name](**configurations(SPECS[name])[conf].bounds).bounds, \
        f"{path} was found at other bounds than configuration {conf}'s"
    result = replay_lasso(spec, trace)
    assert result.ok, result.message


def test_no_stray_traces():
    expected = {os.path.normpath(trace_path(ROOT, *key)) for key in EXPECTED}
    expected |= {os.path.normpath(trace_path(ROOT, *key)) for key in LASSOS}
    for top, _, files in os.walk(ROOT):
        for f in files:
            assert os.path.normpath(os.path.join(top, f)) in expected, f"stray trace {os.path.join(top, f)}"
