"""The fuzzer's hints: shortest counterexamples at small bounds, mapped onto the replicas a run lets act."""
from __future__ import annotations

from isrcheck.checker.fuzzing import fuzz_hints
from isrcheck.checker.fuzzing.fuzz import _Fuzzer
from isrcheck.model import backends
from isrcheck.specs import SPECS


def test_the_small_instance_lowers_the_bounds_and_keeps_the_options():
    spec = SPECS["kafka-3.9"](replicas=5, max_epochs=8, max_crashes=3, unclean=1)
    small = fuzz_hints.small_instance(spec)
    assert (small.bounds["replicas"], small.bounds["max_epochs"], small.bounds["max_crashes"]) == (2, 3, 1)
    assert small.bounds["unclean"] == 1                      # an option is the spec's, not the default
    assert fuzz_hints.small_instance(SPECS["kafka-3.9"]()) is None      # nothing smaller than the defaults


def _replay(spec, ids):
    model = backends.compiled(spec)
    r = model.initial
    for i in ids:
        assert i in model.enabled(r), spec.actions[i].label
        r = model.step(r, i)
    return model, r


def test_a_hint_is_a_shortest_counterexample_at_small_bounds_under_any_renaming_of_its_replicas():
    spec = SPECS["kip-101"](replicas=4)
    small, steps = fuzz_hints.hints(spec, ["no-committed-loss", "hw-monotonic"])
    assert set(steps) == {"no-committed-loss", "hw-monotonic"}
    assert len(steps["no-committed-loss"]) == 15             # as the exhaustive engine's saved trace
    index = fuzz_hints.instance_index(small)
    for onto in ([0, 1], [1, 0]):
        ids = fuzz_hints.mapped(small, small, steps["no-committed-loss"], index, onto)
        assert len(ids) == 15
        model, r = _replay(small, ids)
        assert not model.holds(r, "no-committed-loss")
    big = fuzz_hints.mapped(small, spec, steps["no-committed-loss"], fuzz_hints.instance_index(spec), [3, 1])
    named = {x for i in big for p, x in spec.actions[i].params.items()
             if spec.actions[i].fn.__isrcheck_action__[p] == spec.replica_domain}
    assert len(big) == 15 and {1, 3} <= named and not named & {0, 2}


def test_a_choice_of_no_replica_stays_none_at_more_replicas():
    small, spec = SPECS["kafka-3.5"](), SPECS["kafka-3.5"](replicas=5)
    step = ("controlled_shutdown", {"r": 0, "l": small.NONE})
    (i,) = fuzz_hints.mapped(small, spec, [step], fuzz_hints.instance_index(spec), [3, 1])
    assert spec.actions[i].params == {"r": 3, "l": spec.NONE}


def _fuzz(guided, seed=7):
    fz = _Fuzzer(SPECS["kafka-3.9"](replicas=3), ["no-committed-loss"], 60, seed, 120, True, None, 30, 0.0, "compiled")
    if guided:
        fz.HINT_SESSION, fz.GUIDED = 0, 1          # every run follows a hint, from the first session on
    fz.search()
    return fz


def test_runs_that_follow_a_hint_find_its_violation_at_more_replicas_and_repeat_under_a_seed():
    a, b = _fuzz(True), _fuzz(True)
    rec = a.found["no-committed-loss"]
    assert rec["runs"] <= 30 and "no-committed-loss" not in _fuzz(False).found   # unguided: hundreds of runs
    assert (a.runs, a.transitions, rec["first"]) == (b.runs, b.transitions, b.found["no-committed-loss"]["first"])
    model, r = _replay(a.spec, rec["first"])
    assert not model.holds(r, "no-committed-loss")


def _guided(spec, name, runs):
    fz = _Fuzzer(spec, [name], 60, 3, 120, True, None, runs, 0.0, "compiled")
    fz.HINT_SESSION, fz.GUIDED = 0, 1              # every run follows a hint, from the first session on
    fz.search()
    return fz


def test_a_hint_that_stalls_at_more_replicas_is_lifted_there_by_the_steps_that_clear_the_extra_replica(monkeypatch):
    spec, name = SPECS["kafka-14617"](replicas=3), "consistent-reads"
    small, steps = fuzz_hints.hints(spec, [name])
    monkeypatch.setattr(fuzz_hints, "hints", lambda spec, names: (small, steps))      # the same search, once
    hint = fuzz_hints.mapped(small, spec, steps[name], fuzz_hints.instance_index(spec), [0, 1])
    fz = _Fuzzer(spec, [name], 60, 3, 120, True, None, 30, 0.0, "compiled")
    allowed, eager = fz._instances([1] * len(fz.kinds), [1, 1, 0])
    model = fz.model
    path = fuzz_hints.lift(model, fz._archive(2)[2], allowed, eager, hint, model.invariant(name), 120)
    _, r = _replay(spec, path)
    assert not model.holds(r, name)
    rest = iter(path)
    assert all(i in rest for i in hint)                        # the hint's steps, in order, among others
    extra = [spec.actions[i] for i in path if not eager[i]]
    assert len(extra) > len(hint)                              # steps of replicas 0 and 1 the hint does not have
    # runs that follow the hint as it is do not break the invariant; runs that follow the lifted path do
    found = _guided(spec, name, 30).found
    assert found[name]["runs"] <= 5
    monkeypatch.setattr(fuzz_hints, "lift", lambda model, enabled, allowed, eager, hint, holds, max_steps, nodes: hint)
    assert name not in _guided(spec, name, 30).found


def test_shadows_repeat_each_step_of_the_replica_they_shadow():
    spec = SPECS["kafka-3.5"](replicas=5)
    index = fuzz_hints.instance_index(spec)
    steps = [("fetch", {"f": 1, "l": 0}), ("produce", {"l": 0}), ("fence_broker", {"r": 1, "l": spec.NONE})]
    ids = [index[(n, tuple(sorted(p.items())))] for n, p in steps]
    got = [(spec.actions[i].name, spec.actions[i].params) for i in fuzz_hints.shadowed(spec, ids, index, 1, [3, 4])]
    assert got == [("fetch", {"f": 1, "l": 0}), ("fetch", {"f": 3, "l": 0}), ("fetch", {"f": 4, "l": 0}),
                   ("produce", {"l": 0}), ("fence_broker", {"r": 1, "l": spec.NONE}),
                   ("fence_broker", {"r": 3, "l": spec.NONE}), ("fence_broker", {"r": 4, "l": spec.NONE})]


def test_a_hint_that_does_not_lift_gives_way_to_a_counterexample_without_one_of_its_actions():
    # kafka-3.5's shortest loss at 2 replicas (a controlled shutdown leaves the follower alone in the ISR) spends
    # all 4 leader epochs; at 5, each ISR shrink that keeps the leader costs another, so no path along it clears
    # the three extra replicas within the bound. Without controlled shutdowns the search at small bounds finds
    # the leader shrinking the ISR to itself and losing the record in a hard crash: with the extra replicas
    # fetching as the follower does, they leave the ISR in that same shrink, and the loss fits in 4 epochs.
    spec, name = SPECS["kafka-3.5"](replicas=5), "no-committed-loss"
    fz = _Fuzzer(spec, [name, "consistent-reads"], 60, 1, 120, True, None, 250, 0.0, "compiled")
    fz.HINT_SESSION, fz.GUIDED = 0, 1              # every run follows a hint, from the first session on
    fz.search()
    assert set(fz.hints) == {name, "consistent-reads"}
    assert fz.hints["consistent-reads"][1] == 2                     # lifted with the others passive
    steps, named = fz.hints[name]
    assert named == 5 and "controlled_shutdown" not in {n for n, _ in steps}
    assert {p["f"] for n, p in steps if n == "fetch"} == {1, 2, 3, 4}
    for inv, (path, _) in fz.hints.items():
        _, r = _replay(spec, fuzz_hints.mapped(spec, spec, path, fz.instances, list(range(5))))
        assert not fz.model.holds(r, inv)
    assert name in fz.found                                          # runs that follow it find the loss
    unguided = _Fuzzer(spec, [name], 60, 1, 120, True, None, 250, 0.0, "compiled", hints=False)
    unguided.search()
    assert name not in unguided.found
