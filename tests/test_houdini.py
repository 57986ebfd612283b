"""Automatic lemmas (checker.houdini): what they prove, and that a wrong guess never becomes a proof.

The cross-check runs the auto-lemma proof for every invariant a spec expects to hold and
compares the outcome with the record below (PROVED): an invariant proved that is not listed,
or listed and not proved, fails the test. Unproved ones must fail honestly, with a
counterexample to induction against the lemmas found. One Houdini run per spec takes 3-17 s
of CPU, so by default the cross-check covers SPECS_CHECKED (well under a minute);
ISRCHECK_HOUDINI_SPECS=all covers every spec (about 5 minutes of CPU; benchmarks/houdini_reach.py
prints the same per invariant with CPU times).
"""
import os
import subprocess
import sys

import numpy as np
import pytest

from checker.houdini import Candidate, discover, mine, prove_invariant, reachable_states
from specs import SPECS

#: per spec, the expected-holds invariants the auto-lemma proof (k=1, default bounds) proves;
#: every other expected-holds invariant is "not-inductive" (mined facts relate two cells at most)
PROVED = {
    "hw-truncation": set(),
    "kip-101": set(),
    "kip-279": set(),
    "kip-320": {"single-leader-per-epoch", "leader-in-isr", "lemma-down-forgets", "lemma-epochs",
                "lemma-zk-current", "lemma-leader-from-request", "lemma-exposed-on-later-leaders",
                "lemma-follower-prefix", "lemma-fetched-prefix", "lemma-remote-leo", "lemma-history",
                "lemma-records-unique", "lemma-epoch-table", "lemma-epoch-leader-has-its-records",
                "lemma-leader-isr-is-its-request", "lemma-next-leader-from-previous-isr",
                "lemma-offline-leader-failed", "lemma-down-means-crashed",
                "lemma-isr-grows-only-under-its-leader"},
    "no-isr-fencing": set(),
    "zombie-controller": set(),
    "acks-1": set(),
    "unclean-election": set(),
    "kafka-7128": {"log-matching"},
    "async-isr": set(),
    "kip-497": set(),
    "last-replica-standing": set(),
    "kip-966": set(),
    "tla-truncate-to-hw": {"type-ok"},
    "tla-kip101": {"type-ok"},
    "tla-kip279": {"type-ok"},
    "tla-kip320-first-try": {"type-ok"},
    "tla-kip320": {"type-ok"},
}
SPECS_CHECKED = ["kip-320", "acks-1", "tla-kip320"]
_CHOSEN = sorted(SPECS) if os.environ.get("ISRCHECK_HOUDINI_SPECS") == "all" else SPECS_CHECKED

_found = {}


def found(name):
    """One discovery per spec, with every invariant as a candidate (the expected-violated ones too)."""
    if name not in _found:
        spec = SPECS[name]()
        _found[name] = (spec, discover(spec, list(spec.invariants)))
    return _found[name]


def test_the_record_covers_every_spec():
    assert set(PROVED) == set(SPECS)
    for name, proved in PROVED.items():
        assert proved <= {n for n, v in SPECS[name].expected.items() if v == "holds"}, name


@pytest.mark.parametrize("name", _CHOSEN)
def test_auto_lemmas_prove_exactly_the_recorded_invariants(name):
    spec, lemmas = found(name)
    assert lemmas.search_complete and lemmas.rounds > 0
    assert all(c.invariant for c in lemmas.dropped_initially)      # mined facts hold initially
    outcome = {}
    for inv in [n for n, v in spec.expected.items() if v == "holds"]:
        result = prove_invariant(spec, inv, lemmas)
        outcome[inv] = result.verdict
        if result.verdict != "proved":       # an honest failure: a counterexample to induction, not a refutation
            assert result.verdict == "not-inductive" and result.failing == inv, (inv, result.reason)
            assert len(result.steps) == 2
    assert {inv for inv, v in outcome.items() if v == "proved"} == PROVED[name]


@pytest.mark.parametrize("name", _CHOSEN)
def test_every_lemma_found_holds_in_every_reachable_state(name):
    """z3 kept only inductive candidates: the exhaustive engine must agree that each one is an invariant."""
    spec, lemmas = found(name)
    rows, _ = reachable_states(spec)
    initial = spec.initial_row()[:, None]
    for c in lemmas.survivors:
        assert c.holds(spec, initial).all() and c.holds(spec, rows).all(), c.describe(spec)


@pytest.mark.parametrize("name", _CHOSEN)
def test_an_expected_violation_is_never_proved(name):
    spec, lemmas = found(name)
    violated = [n for n, v in spec.expected.items() if v == "violated"]
    assert violated
    for inv in violated:
        assert not lemmas.survived(inv), inv
        assert prove_invariant(spec, inv, lemmas).verdict in ("not-inductive", "refuted"), inv


def test_houdini_drops_the_wrong_guesses_of_a_truncated_search():
    spec = SPECS["acks-1"]()
    everything, complete = reachable_states(spec)
    assert complete
    shallow, complete = reachable_states(spec, max_depth=6)
    assert not complete and shallow.shape[1] < everything.shape[1]
    wrong = [c for c in mine(spec, shallow) if not c.holds(spec, everything).all()]
    assert wrong                                        # the truncated search guessed facts that are false
    lemmas = discover(spec, max_depth=6)
    assert not lemmas.search_complete
    assert not set(wrong) & set(lemmas.survivors) and set(wrong) <= set(lemmas.dropped)
    for c in lemmas.survivors:
        assert c.holds(spec, everything).all(), c.describe(spec)


def test_candidates_read_in_kafka_terms_and_evaluate_like_the_spec():
    spec = SPECS["acks-1"]()
    lay = spec.layout
    leo0, up1 = lay.column("leo", (0,)), lay.column("up", (1,))
    pair = Candidate(((leo0, 2), (up1, 0)))
    assert pair.describe(spec) == "not (leo[0] = 2 and up[1] = False)"
    assert Candidate(((leo0, 2),)).describe(spec) == "leo[0] != 2"
    rows = np.repeat(spec.initial_row()[:, None], 3, axis=1)
    rows[leo0, 1:] = 2
    rows[up1] = [1, 0, 1]
    assert pair.holds(spec, rows).tolist() == [True, False, True]
    assert Candidate(invariant="leader-in-isr").holds(spec, rows).all()


# --- command line --------------------------------------------------------------------------
def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "checker.cli", *args], capture_output=True, text=True)


def test_cli_prove_auto_lemmas_proves_and_reports_what_it_found():
    r = run_cli("prove", "--spec", "tla-kip320", "--invariant", "type-ok", "--auto-lemmas")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "proved for every depth" in r.stdout and "found automatically" in r.stdout
    assert "reachable states, Houdini" in r.stdout and "s CPU" in r.stdout


def test_cli_prove_auto_lemmas_not_proved_prints_the_counterexample_to_induction():
    r = run_cli("prove", "--spec", "tla-kip320", "--invariant", "strong-isr", "--auto-lemmas")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "not inductive" in r.stdout and "strong-isr fails in state 1" in r.stdout


def test_cli_prove_auto_lemmas_out_of_z3_time_is_unknown_and_exits_3():
    r = run_cli("prove", "--spec", "acks-1", "--invariant", "strong-isr", "--auto-lemmas", "--z3-timeout", "0.5")
    assert r.returncode == 3, r.stdout + r.stderr
    assert "unknown: Houdini: time limit reached" in r.stdout


def test_cli_prove_auto_lemmas_with_a_lemma_is_a_usage_error():
    r = run_cli("prove", "--spec", "kip-320", "--invariant", "no-committed-loss", "--auto-lemmas",
                "--lemma", "lemma-epochs")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--auto-lemmas" in r.stderr
