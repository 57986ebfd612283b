"""Protocol versions with one fence missing (GitHub issue 5), their fixes, and the benign split brain.

Each broken version must show its expected violations at its default bounds (``isrcheck gate`` checks
every spec's verdicts there, in CI after the suite) and have a replaying counterexample; each fix must hold, at the broken
version's bounds, every invariant it claims; the options the fencing specs
added to the model must leave the four original versions exactly as they were.
"""
import os

import pytest

from isrcheck.checker.exhaustive.bfs import search
from isrcheck.checker.traces.trace import load, replay, spec_for
from isrcheck.specs import SPECS

ROOT = os.path.join(os.path.dirname(__file__), "..", "counterexamples")

BROKEN = ["no-isr-fencing", "zombie-controller", "acks-1", "unclean-election", "kafka-7128",
          "async-isr", "last-replica-standing"]
FIXED = ["kip-497", "kip-966"]
MINE = BROKEN + FIXED

#: broken version -> (the version with the fence, bounds to change from the broken version's defaults),
#: and the invariant the missing fence breaks
FIX_OF = {
    "no-isr-fencing": ("kip-320", {}, "no-committed-loss"),
    "zombie-controller": ("kip-320", {}, "single-leader-per-epoch"),   # kip-320 + controller_failover=1
    "acks-1": ("kip-320", {"acks_all": 1}, "no-committed-loss"),
    "unclean-election": ("kip-320", {"unclean": 0}, "no-committed-loss"),
    "kafka-7128": ("kip-320", {}, "no-committed-loss"),                # kip-320 + fetch_response_loss=1
    "async-isr": ("kip-497", {}, "no-committed-loss"),
    "last-replica-standing": ("kip-966", {"elr": 1}, "no-committed-loss"),
}

#: distinct states of the original versions at their default bounds (the fencing options add none; counts since
#: issue 17's version-exact model; kip-320's 776,274 grew with the explicit leader-epoch cache)
ORIGINAL_COUNTS = {"hw-truncation": 776_044, "kip-101": 899_108, "kip-279": 899_108, "kip-320": 809_320}

_specs, _results = {}, {}


def make(name, **bounds):
    """A spec instance (memoized: loading one runs its z3 declaration checks)."""
    key = (name, tuple(sorted({**SPECS[name].defaults, **bounds}.items())))
    if key not in _specs:
        _specs[key] = SPECS[name](**bounds)
    return _specs[key]


def run(name, **bounds):
    """Exhaustive search of every invariant of a spec (memoized: several tests share a search)."""
    spec = make(name, **bounds)
    key = (name, tuple(sorted(spec.bounds.items())))
    if key not in _results:
        _results[key] = (spec, search(spec, list(spec.invariants)))
    return _results[key]


@pytest.mark.parametrize("name", MINE)
def test_declarations(name):
    cls = SPECS[name]
    spec = make(name)
    assert set(cls.expected) == set(spec.invariants), "every invariant needs an expected verdict"
    assert cls.summary and cls.references
    assert all(inv in cls.expected_why for inv, v in cls.expected.items() if v == "violated")
    if name in BROKEN:
        assert isinstance(cls.missing_fence, str) and cls.missing_fence.strip()
    else:
        assert cls.missing_fence is None


EXPECTED_VIOLATIONS = [(n, inv) for n in MINE for inv, v in SPECS[n].expected.items() if v == "violated"]


@pytest.mark.parametrize("name, invariant", EXPECTED_VIOLATIONS)
def test_counterexample_replays(name, invariant):
    path = os.path.join(ROOT, name, f"{invariant}.itf.json")
    trace = load(path)
    assert (trace.spec, trace.invariant) == (name, invariant)
    key = (name, tuple(sorted(trace.bounds.items())))
    if key not in _specs:
        _specs[key] = spec_for(trace, path)
    result = replay(_specs[key], trace)
    assert result.ok, result.message


@pytest.mark.parametrize("broken", BROKEN)
def test_the_fence_restores_what_its_absence_breaks(broken):
    """The version with the fence, at the broken version's default bounds, holds every invariant it claims."""
    fixed, change, headline = FIX_OF[broken]
    bounds = {**make(broken).bounds, **change}
    spec, result = run(fixed, **bounds)
    assert SPECS[broken].expected[headline] == "violated"
    assert spec.expected[headline] == "holds"
    assert result.complete
    claimed = [inv for inv, v in spec.expected.items() if v == "holds"]
    assert {inv: result.verdicts[inv] for inv in claimed} == {inv: "holds" for inv in claimed}


def test_controller_epoch_check_fences_the_zombie_controller():
    """kip-320 with a controller failover: brokers check the controller epoch, the zombie's request is never applied."""
    spec, result = run("kip-320", **make("zombie-controller").bounds)
    assert spec.bounds["controller_failover"] == 1
    assert result.complete
    assert result.verdicts["single-leader-per-epoch"] == "holds"
    assert "controller_failover" not in result.never_fired
    assert "apply_stale_leader_and_isr" in result.never_fired
    _, broken = run("zombie-controller")
    assert "apply_stale_leader_and_isr" not in broken.never_fired


def test_split_brain_is_benign_with_fencing():
    """kip-320: states where two replicas believe they lead exist, and no such state costs a committed record."""
    spec, result = run("kip-320")
    assert result.complete
    assert result.verdicts["single-acting-leader"] == "violated"
    assert result.verdicts["no-committed-loss"] == "holds"
    steps = result.violations["single-acting-leader"].steps
    last = steps[-1][1]
    leaders = [r for r in spec.REPLICAS if spec.layout.decode(last)["leader"][r] == r]
    assert len(leaders) == 2


def test_every_version_shows_the_split_brain():
    for name in list(ORIGINAL_COUNTS) + MINE:
        assert SPECS[name].expected["single-acting-leader"] == "violated", name


@pytest.mark.parametrize("name", sorted(ORIGINAL_COUNTS))
def test_original_versions_unchanged(name):
    """The fencing options default to off: no new field, action or state in the four original versions."""
    spec, result = run(name)
    added_fields = {"q_controller_epoch", "req_controller_epoch", "controller_epoch_seen", "zreq_epoch",
                    "zreq_leader", "zreq_isr", "alter_pending", "pending_isr", "q_elr", "unclean_shutdown"}
    assert not added_fields & set(spec.layout.fields)
    added_actions = {"controller_failover", "apply_stale_leader_and_isr", "alter_isr", "fetch_response_lost"}
    assert not added_actions & {a.name for a in spec.actions}
    assert result.complete
    assert result.distinct_states == ORIGINAL_COUNTS[name]
