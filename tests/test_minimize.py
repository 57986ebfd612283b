"""Delta debugging of counterexamples: never longer, keeps the violation, reaches the known shortest."""
from __future__ import annotations

import random

import pytest

from isrcheck.checker.exhaustive.bfs import search
from isrcheck.checker.traces.minimize import Minimized, minimize
from isrcheck.checker.traces.trace import from_steps, load, replay, save
from isrcheck.specs import SPECS
from isrcheck.model import backends

SEED = 20240611


@pytest.fixture(scope="module")
def shortest():
    """The exhaustive engine's shortest hw-truncation and kip-101 no-committed-loss counterexamples (2 replicas)."""
    out = {}
    for name in ("hw-truncation", "kip-101"):
        spec = SPECS[name]()
        out[name] = (spec, search(spec, ["no-committed-loss"]).violations["no-committed-loss"].steps)
    return out


def _violates_exactly_at_end(model, ids, invariant="no-committed-loss"):
    r = model.initial
    for i in ids:
        if not model.holds(r, invariant) or i not in model.enabled(r):
            return False
        r = model.step(r, i)
    return not model.holds(r, invariant)


def _padded(spec, steps, rng, inserts):
    """The trace with random enabled actions inserted wherever the violation survives them.

    Built on the compiled model for speed; the padded trace is then checked on the scalar backend.
    """
    model = backends.compiled(spec)
    ids = [a.id for a, _ in steps[1:]]
    added = tries = 0
    while added < inserts and tries < 100 * inserts:
        tries += 1
        k = rng.randrange(len(ids) + 1)
        r = model.initial
        for i in ids[:k]:
            r = model.step(r, i)
        enabled = model.enabled(r)
        if not enabled:
            continue
        candidate = ids[:k] + [rng.choice(enabled)] + ids[k:]
        if _violates_exactly_at_end(model, candidate):
            ids, added = candidate, added + 1
    actions = [spec.actions[i] for i in ids]
    trace = from_steps(spec, "no-committed-loss", "test", _engine_steps(spec, actions))
    assert replay(spec, trace).ok
    return actions


def _engine_steps(spec, actions):
    steps = [(None, backends.scalar(spec).initial_row())]
    for a in actions:
        steps.append((a, backends.scalar(spec).step(steps[-1][1], a)))
    return steps


def _check(spec, result, invariant="no-committed-loss"):
    assert isinstance(result, Minimized)
    assert result[0][0] is None and all(a is not None for a, _ in result[1:])
    assert result.after == len(result) - 1 <= result.before
    trace = from_steps(spec, invariant, "minimize", list(result))
    assert replay(spec, trace).ok


def test_minimize_reaches_the_shortest_from_a_padded_trace(shortest):
    spec, steps = shortest["hw-truncation"]
    assert len(steps) - 1 == 11
    padded = _padded(spec, steps, random.Random(SEED), 19)
    assert len(padded) == 30
    result = minimize(spec, padded, "no-committed-loss")
    _check(spec, result)
    assert (result.before, result.after) == (30, 11)
    assert result.reduction == (30, 11)


def test_minimize_on_the_scalar_backend(shortest):
    spec, steps = shortest["hw-truncation"]
    padded = _padded(spec, steps, random.Random(SEED + 1), 4)
    result = minimize(spec, padded, "no-committed-loss", backend="scalar")
    _check(spec, result)
    assert (result.before, result.after) == (15, 11)


@pytest.mark.parametrize("seed", range(4))
def test_minimize_never_lengthens_and_keeps_the_violation(shortest, seed):
    spec, steps = shortest["kip-101"]
    rng = random.Random(SEED + seed)
    padded = _padded(spec, steps, rng, rng.randrange(5, 20))
    result = minimize(spec, padded, "no-committed-loss")
    _check(spec, result)
    assert result.before == len(padded)
    assert result.after <= result.before
    assert result.after == len(steps) - 1        # BFS's 15 steps: nothing shorter exists


def test_minimize_keeps_a_shortest_trace_as_short(shortest):
    for spec, steps in shortest.values():
        result = minimize(spec, steps, "no-committed-loss", backend="scalar")
        _check(spec, result)
        assert result.after == result.before == len(steps) - 1


def test_minimize_accepts_every_trace_form(shortest, tmp_path):
    spec, steps = shortest["hw-truncation"]
    padded = _padded(spec, steps, random.Random(SEED + 9), 6)
    engine_steps = _engine_steps(spec, padded)
    trace = from_steps(spec, "no-committed-loss", "test", engine_steps)
    path = save(trace, str(tmp_path / "t.itf.json"))
    forms = [padded, engine_steps, trace, load(path), [(a.name, dict(a.params)) for a in padded]]
    results = [minimize(spec, f, None if f is trace or not isinstance(f, list) else "no-committed-loss",
                        ) for f in forms]
    labels = {tuple(a.label for a, _ in r[1:]) for r in results}
    assert len(labels) == 1
    assert all(r.after == 11 for r in results)


def test_minimize_cuts_at_the_first_violation(shortest):
    spec, steps = shortest["hw-truncation"]
    actions = [a for a, _ in steps[1:]]
    row = steps[-1][1]
    extra = backends.scalar(spec).enabled(row)[:3]                 # steps after the violation
    result = minimize(spec, actions + extra, "no-committed-loss", reduce=False)
    assert (result.before, result.after) == (len(actions) + len(extra), len(actions))
    _check(spec, result)


def test_minimize_rejects_a_trace_that_does_not_violate(shortest):
    spec, steps = shortest["hw-truncation"]
    actions = [a for a, _ in steps[1:-1]]          # stops one step short
    with pytest.raises(ValueError, match="does not violate"):
        minimize(spec, actions, "no-committed-loss")
    first_apply = next(a for a in actions if a.name == "apply_leader_and_isr")
    disabled = [first_apply] + actions            # a LeaderAndIsr applied before any was sent
    with pytest.raises(ValueError):
        minimize(spec, disabled, "no-committed-loss")
    with pytest.raises(ValueError, match="no invariant"):
        minimize(spec, actions, "no-such-invariant")
    with pytest.raises(ValueError, match="no action"):
        minimize(spec, [("no_such_action", {})], "no-committed-loss")


# A fuzzed kafka-4.0 single-acting-leader trace that dropping steps cannot shorten: the leader crashes, is fenced,
# restarts and is elected again. The shortest (5 steps) fences the leader while it is up, which no subset of these
# steps does.
LONG_WAY = [("elect_leader", {"l": 0}), ("crash", {"r": 0}), ("apply_metadata", {"r": 1, "k": 0}),
            ("fence_broker", {"r": 0, "l": 1}), ("apply_metadata", {"r": 1, "k": 0}), ("restart", {"r": 0}),
            ("unfence_broker", {"r": 0}), ("apply_metadata", {"r": 0, "k": 0}), ("apply_metadata", {"r": 1, "k": 0}),
            ("fetch", {"f": 0, "l": 1}), ("alter_partition", {"l": 1}), ("apply_metadata", {"r": 0, "k": 0}),
            ("apply_metadata", {"r": 1, "k": 0}), ("elect_leader", {"l": 0}), ("apply_metadata", {"r": 0, "k": 0})]


@pytest.fixture(scope="module")
def kraft():
    spec = SPECS["kafka-4.0"]()
    return spec, len(search(spec, ["single-acting-leader"]).violations["single-acting-leader"].steps) - 1


def test_the_neighbourhood_search_shortens_what_dropping_steps_cannot(kraft, monkeypatch):
    from isrcheck.checker.traces import minimize as m
    spec, shortest = kraft
    assert shortest == 5
    cap = m.SHORTCUT_STEPS
    monkeypatch.setattr(m, "EXPLORE_STEPS", 1)           # no search from the initial state: the trace's neighbourhood
    monkeypatch.setattr(m, "SHORTCUT_STEPS", 1)          # and no neighbourhood either: ddmin, parameters, pairs
    assert minimize(spec, LONG_WAY, "single-acting-leader").reduction == (15, 15)
    monkeypatch.setattr(m, "SHORTCUT_STEPS", cap)
    results = [minimize(spec, LONG_WAY, "single-acting-leader") for _ in range(2)]
    for r in results:
        _check(spec, r, "single-acting-leader")
        assert r.reduction == (15, shortest)
    assert [a.label for a, _ in results[0][1:]] == [a.label for a, _ in results[1][1:]]


def test_explore_finds_a_shortest_within_its_cap_and_stops_at_it(shortest):
    from isrcheck.checker.traces.shortcuts import explore
    spec, steps = shortest["hw-truncation"]
    inv = spec.invariants["no-committed-loss"]
    backend = backends.compiled(spec).backend()
    path = explore(backend, inv)
    assert len(path) == len(steps) - 1 == 11
    assert _violates_exactly_at_end(backends.compiled(spec), path)
    assert explore(backend, inv, cap=1000) is None                 # a violation 11 steps deep needs more transitions
    along = [tuple(int(v) for v in row) for _, row in minimize(spec, [spec.actions[i] for i in path],
                                                                "no-committed-loss", backend=backend)]
    near = explore(backend, inv, along=along, depth=1, cap=1000)      # one step off the trace: far fewer states
    assert len(near) == 11 and _violates_exactly_at_end(backends.compiled(spec), near)


def test_explore_and_minimize_honour_the_deadline(shortest, kraft):
    from isrcheck.checker.traces.shortcuts import explore
    spec, _ = shortest["hw-truncation"]
    inv = spec.invariants["no-committed-loss"]
    calls = []

    class Counting:
        def __init__(self, backend):
            self.backend = backend

        def __getattr__(self, name):
            return getattr(self.backend, name)

        def successors(self, row):
            calls.append(row)
            return self.backend.successors(row)
    assert explore(Counting(backends.compiled(spec).backend()), inv, out_of_time=lambda: len(calls) > 0) is None
    assert len(calls) == 256                         # it looks at the clock every 256 states
    spec, _ = kraft
    ticks = iter(range(10**6))
    result = minimize(spec, LONG_WAY, "single-acting-leader", time_limit=0, clock=lambda: next(ticks))
    _check(spec, result, "single-acting-leader")
    assert result.reduction == (15, 15)             # out of time at once: the input, replayed


def test_isrcheck_minimize_finds_the_short_way(kraft, tmp_path):
    """The installed script: a trace dropping steps cannot shorten comes out as the shortest, and replays."""
    import json
    import subprocess
    spec, shortest = kraft
    actions = [backends.action_named(spec, name, params) for name, params in LONG_WAY]
    save(from_steps(spec, "single-acting-leader", "fuzz", _engine_steps(spec, actions)), str(tmp_path / "t.itf.json"))
    r = subprocess.run(["isrcheck", "minimize", "t.itf.json"], capture_output=True, text=True, cwd=tmp_path,
                       timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"16 → {shortest + 1} states: t.min.itf.json" in r.stdout
    assert len(json.loads((tmp_path / "t.min.itf.json").read_text())["states"]) == shortest + 1
    r = subprocess.run(["isrcheck", "replay", "t.min.itf.json"], capture_output=True, text=True, cwd=tmp_path,
                       timeout=120)
    assert r.returncode == 0 and f"violated at step {shortest}" in r.stdout, r.stdout + r.stderr
