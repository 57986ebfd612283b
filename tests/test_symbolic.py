"""The symbolic engines: bounded model checking against the exhaustive engine, and k-induction.

Every expected violation of every spec, at its default bounds, must be found by BMC at exactly the
length of the exhaustive engine's shortest counterexample, with a trace that replays. For the suite's
10-minute budget BMC unrolls at most BMC_SUITE_DEPTH levels here: the violations within them are found at
their exact length and none of the deeper ones before (BMC's cost doubles with about each level: hw-truncation
takes 10 s of CPU at 10 levels, 59 s at 11). benchmarks/bmc_vs_bfs.py checks every spec to its full depth:
kafka-7128 (3 replicas, three 16-state violations: 108, 79 and 174 s of CPU), kafka-2.0.1 (15 and 17
states: 200 s), kafka-14617 (15 states, KRaft: 117 s), kip-101, kip-279 and hw-truncation (14-16 states:
102, 93 and 52 s), last-replica-standing and tla-kip320-first-try (20-26 s each at 12 levels).
"""
import os
import subprocess
import sys
import time

import numpy as np
import pytest
import z3

from isrcheck.checker.traces import trace as tr
from isrcheck.checker.exhaustive.bfs import search
from isrcheck.checker.symbolic.bmc import bmc
from isrcheck.checker.engine.budget import Budget
from isrcheck.checker.symbolic.cnf import BitBlaster, CnfUnrolling
from isrcheck.checker.symbolic.induction import prove
from isrcheck.checker.symbolic.unrolling import Unrolling
from isrcheck.specs import SPECS
from test_conformance import random_rows, walk_rows     # the conformance test's sample of states
from isrcheck.model import backends

def _violated(spec):
    return [name for name, verdict in spec.expected.items() if verdict == "violated"]


#: levels BMC unrolls in the suite, where the full depth would not fit in its time (see the docstring)
BMC_SUITE_DEPTH = 10


#: the specs BMC is compared with the exhaustive engine on in the suite: one for each part of the models that
#: the unrolling encodes differently (the ZooKeeper-era base, leader epochs, the ISR's lag clocks, reassignment,
#: KRaft without and with ELR, the TLA+ family); every spec's transition relation is compared with the other
#: backends state by state in tests/test_conformance.py. ISRCHECK_BMC_SPECS=all compares every spec.
BMC_SPECS = sorted(SPECS) if os.environ.get("ISRCHECK_BMC_SPECS") == "all" else [
    "hw-truncation", "kip-279", "kafka-0.9", "no-reassignment-bump", "kafka-3.9", "kafka-4.0",
    "tla-kip320-first-try"]


@pytest.mark.long
@pytest.mark.parametrize("name", BMC_SPECS)
def test_bmc_finds_expected_violations_at_the_exhaustive_depth(name):
    spec = SPECS[name]()
    invariants = _violated(spec)
    assert invariants                      # every spec expects some violation (at least its benign split brain)
    exhaustive = search(spec, invariants)
    levels = {inv: v.level for inv, v in exhaustive.violations.items()}
    assert set(levels) == set(invariants)
    depth = min(max(levels.values()), BMC_SUITE_DEPTH)
    reached = {inv: level for inv, level in levels.items() if level <= depth}
    result = bmc(spec, invariants, depth)
    assert {inv: v.level for inv, v in result.violations.items()} == reached
    assert not result.timed_out and result.budget_hit == (None if reached == levels else f"bmc depth {depth}")
    for inv, v in result.violations.items():
        assert len(v.steps) == v.level and v.steps[0][0] is None
        replayed = tr.replay(spec, tr.from_steps(spec, inv, "bmc", v.steps))
        assert replayed.ok, replayed.message
    assert result.verdicts == {inv: "violated" if inv in reached else "unknown" for inv in invariants}


def test_bmc_trace_saves_loads_replays_and_shows(tmp_path):
    from rich.console import Console

    from isrcheck.checker.traces.show import render

    spec = SPECS["acks-1"]()
    result = bmc(spec, ["no-committed-loss"], 8)
    steps = result.violations["no-committed-loss"].steps
    path = tr.save(tr.from_steps(spec, "no-committed-loss", "bmc", steps), str(tmp_path / "t.itf.json"))
    loaded = tr.load(path)
    assert loaded.engine == "bmc" and len(loaded) == len(steps) == 6
    again = tr.spec_for(loaded, path)
    assert tr.replay(again, loaded).ok
    console = Console(record=True, width=200)
    render(console, again, loaded)
    assert "produce" in console.export_text()


def test_bmc_reports_nothing_for_invariants_that_hold():
    spec = SPECS["kip-320"]()
    holds = [name for name, verdict in spec.expected.items() if verdict == "holds"]
    result = bmc(spec, holds, 6)
    assert result.violations == {}
    assert result.depth == 6 and len(result.level_seconds) == 6
    assert result.verdicts == {name: "unknown" for name in holds}      # bounded: not a proof
    assert result.budget_hit == "bmc depth 6" and not result.complete and not result.timed_out


def test_bmc_timeout_says_so_and_stops_a_long_solve():
    spec = SPECS["kip-101"]()
    start = time.perf_counter()
    result = bmc(spec, ["strong-isr"], 14, Budget(seconds=6.0))
    # levels 12-14 take 5-10 s each: the solve under way at the deadline was stopped, not waited for
    assert time.perf_counter() - start < 7.5
    assert result.timed_out and "time limit" in result.z3_unknown
    assert result.budget_hit == "z3 time limit 6s" and result.depth < 14
    assert result.verdicts == {"strong-isr": "unknown"}


def test_bmc_ctrl_c_stops_cleanly_and_keeps_what_was_found(monkeypatch):
    from isrcheck.checker.symbolic import bmc as bmc_module

    calls = {"n": 0}
    check = bmc_module.sat_check

    def interrupted_later(*args):
        calls["n"] += 1
        if calls["n"] == 8:
            raise KeyboardInterrupt
        return check(*args)

    monkeypatch.setattr(bmc_module, "sat_check", interrupted_later)
    spec = SPECS["kip-320"]()
    result = bmc(spec, ["single-acting-leader", "no-committed-loss"], 10)
    assert result.budget_hit == "Ctrl-C" and result.depth < 10
    assert result.verdicts == {"single-acting-leader": "violated", "no-committed-loss": "unknown"}
    steps = result.violations["single-acting-leader"].steps
    assert len(steps) == 5 and not backends.scalar(spec).holds(steps[-1][1], spec.invariants["single-acting-leader"])


@pytest.mark.parametrize("name", ["kip-279", "kafka-7128", "tla-kip101"])
def test_cnf_step_agrees_with_the_scalar_backend(name):
    """On sampled states, each action's CNF step is satisfiable iff its guard holds, its one successor is the
    scalar backend's, and each invariant's CNF output is its scalar truth value."""
    from pysat.solvers import Solver

    spec = SPECS[name]()
    u = CnfUnrolling(spec, list(spec.invariants.values()))
    rng = np.random.default_rng(7)
    enabled = disabled = violated = 0
    with Solver(name="cadical195") as solver:
        solver.append_formula(u.transition(0))
        clauses, holds = u.holds(0)
        solver.append_formula(clauses)
        for row in walk_rows(spec, 150, rng) + random_rows(spec, 20, rng):
            s0 = u.literals(0, enumerate(row))
            for inst in spec.actions:
                after = backends.scalar(spec).step(row, inst)
                sat = solver.solve(assumptions=s0 + [int(u.choice(0)[inst.id])])
                assert sat == (after is not None), (inst.label, row)
                if sat:
                    enabled += 1
                    model = u.model(solver)
                    assert u.values(model, 1) == list(map(int, after)), inst.label
                    for inv in spec.invariants.values():
                        truth = model[holds[inv.name] - 1] > 0
                        assert truth == backends.scalar(spec).holds(row, inv), inv.name
                        violated += not truth
                else:
                    disabled += 1
    assert enabled > 50 and disabled > 50 and violated > 0      # not a vacuous comparison


def test_bit_blaster_width_covers_every_subterm():
    x, y = z3.Ints("x y")
    bb = BitBlaster({"x": (-1, 6), "y": (0, 100)})
    assert bb.fit([x + y + 1 < 3]) == 8       # x + y + 1 ranges over 0..107: 7 bits plus a sign bit
    bx, by = bb(x), bb(y)
    in_bounds = [bx >= -1, bx <= 6, by >= 0, by <= 100]

    def solve(target):
        s = z3.Solver()
        s.add(bb(z3.If(x > 0, x - y, x * 3) == target), *in_bounds)
        return s.model() if s.check() == z3.sat else None

    m = solve(-97)                      # x - y = -97 with x = 1..3: no wrap-around in 8 bits
    xv, yv = m[bx].as_signed_long(), m[by].as_signed_long()
    assert (xv - yv if xv > 0 else xv * 3) == -97
    assert solve(-103) is None          # out of reach on Ints, and so on bit-vectors (-103 would need a wrap)
    with pytest.raises(ValueError):
        bb(x * y > 0)                   # needs more bits than the width fitted


# --- k-induction ---------------------------------------------------------------------------
Kip320 = SPECS["kip-320"]
KIP320_PROOF = Kip320.proofs["no-committed-loss"]


def kip320_proof(replicas, lemmas=KIP320_PROOF["lemmas"], **kw):
    spec = Kip320(replicas=replicas, **KIP320_PROOF["settings"])
    return spec, prove(spec, "no-committed-loss", 1, lemmas=list(lemmas), **kw)


def test_kip320_proof_needs_the_history_ghosts():
    """Without the proof ghosts the history lemmas say nothing, and induction starts from unreachable states."""
    spec = Kip320(replicas=2)
    assert "applied_epoch" not in spec.layout.fields
    result = prove(spec, "no-committed-loss", 1, lemmas=list(KIP320_PROOF["lemmas"]))
    assert result.verdict == "not-inductive" and len(result.steps) == 2


def test_proof_ghost_updates_agree_on_the_scalar_and_z3_backends():
    """The ghosts' updates, as the exhaustive engine (scalar/numpy) and the proof (z3) see them, on random walks."""
    spec = Kip320(replicas=3, proof_ghosts=1)
    lay = spec.layout
    ghosts = {c for name in ("applied_epoch", "followed_epoch", "fetched_epoch", "up_since", "led_since", "exposed_epoch")
              for c in range(lay.base[name], lay.base[name] + lay.fields[name].size)}
    variables = Unrolling(spec).state(0)
    rng = np.random.default_rng(1)
    written = set()
    for _ in range(8):
        row = backends.scalar(spec).initial_row()
        for _ in range(40):
            steps = [(a, nxt) for a in spec.actions if (nxt := backends.scalar(spec).step(row, a)) is not None]
            inst, nxt = steps[rng.integers(len(steps))]
            _, updates = backends.symbolic(spec).action(inst, variables)
            sub = [(x, z3.BoolVal(bool(v)) if lay.boolean[c] else z3.IntVal(int(v)))
                   for c, (x, v) in enumerate(zip(variables, row))]
            for c in set(updates) & ghosts:
                value = z3.simplify(z3.substitute(updates[c], *sub))
                assert value.as_long() == nxt[c], (inst.label, lay.names[c])
                written.add(c)
            row = nxt
    assert written == ghosts          # every ghost cell was updated somewhere on the walks


def test_kip320_lemmas_belong_to_kip320_only():
    lemmas = [n for n in KIP320_PROOF["lemmas"] if n.startswith("lemma-")]
    spec = Kip320()
    assert set(lemmas) <= set(spec.invariants) and all(spec.expected[n] == "holds" for n in lemmas)
    assert all(spec.invariants[n].meaning for n in lemmas)          # documented in Kafka terms
    subclasses = [cls for cls in SPECS.values() if cls is not Kip320 and issubclass(cls, Kip320)]
    assert len(subclasses) > 5
    for cls in subclasses:      # every version built on kip-320 changes its protocol and says so
        assert not set(lemmas) & (set(cls().invariants) | set(cls.expected) | set(cls.expected_why)), cls.name
        assert cls.proofs == {}, cls.name
    # a subclass that says nothing keeps the lemmas, their expectations and the proof (no hidden stripping)
    inheriting = type("Inheriting", (Kip320,), {"name": "inheriting"})
    assert set(lemmas) <= set(inheriting().invariants) and inheriting.proofs == Kip320.proofs != {}
    assert all(inheriting.expected[n] == "holds" for n in lemmas)


def test_prove_small_case():
    """leader-in-isr is 1-inductive once zkVersion fencing and the request table are stated."""
    spec = Kip320()
    result = prove(spec, "leader-in-isr", 1, lemmas=["lemma-zk-current", "lemma-epochs"])
    assert result.verdict == "proved", result.reason
    assert {"q_epoch", "log_record"} <= set(result.relaxed) and "crashes" not in result.relaxed
    # the lemmas are needed: without them the step has a counterexample
    assert prove(spec, "leader-in-isr", 1).verdict == "not-inductive"


def test_prove_not_inductive_gives_a_consistent_counterexample_to_induction():
    spec = Kip320()
    k = 2
    result = prove(spec, "leader-in-isr", k, relax=False)
    assert result.verdict == "not-inductive" and result.failing == "leader-in-isr"
    assert len(result.steps) == k + 1 and result.steps[0][0] is None
    inv = spec.invariants["leader-in-isr"]
    rows = [spec.layout.encode(state) for _, state in result.steps]     # within bounds: relax=False
    for i in range(k):
        assert backends.scalar(spec).holds(rows[i], inv)
        nxt = backends.scalar(spec).step(rows[i], result.steps[i + 1][0])
        assert nxt is not None and np.array_equal(nxt, rows[i + 1])
    assert not backends.scalar(spec).holds(rows[k], inv)
    text = result.render(spec)
    assert "counterexample to induction" in text and "leader-in-isr fails in state 2" in text
    assert result.trace(spec).extra["counterexample_to_induction"]


def test_prove_refutes_hw_truncation_no_committed_loss():
    spec = SPECS["hw-truncation"](log_size=1, max_records=1, max_epochs=2)   # same depth as the defaults, fewer states
    shortest = search(spec, ["no-committed-loss"]).violations["no-committed-loss"].level
    result = prove(spec, "no-committed-loss", shortest)
    assert result.verdict == "refuted" and result.failing == "no-committed-loss"
    assert len(result.steps) == shortest == 12
    assert tr.replay(spec, result.trace(spec)).ok
    assert result.violation().level == shortest


def test_prove_short_of_the_counterexample_is_not_refuted():
    spec = SPECS["hw-truncation"](log_size=1, max_records=1, max_epochs=2)
    result = prove(spec, "no-committed-loss", 3)
    assert result.verdict == "not-inductive"


def test_prove_timeout_is_unknown():
    spec, result = kip320_proof(2, budget=Budget(seconds=0.05))
    assert result.verdict == "unknown" and "time limit" in result.reason


# --- command line --------------------------------------------------------------------------
def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "isrcheck.checker.command_line.cli", *args], capture_output=True, text=True)


def test_cli_prove_uses_the_specs_lemmas_and_reports_k_lemmas_and_cpu():
    """The lemmas make no-committed-loss 1-inductive at 2 replicas (and are proved with it: each is an invariant
    at these bounds); the suite proves it once, through the command users run."""
    r = run_cli("prove", "--spec", "kip-320", "--invariant", "no-committed-loss")
    assert r.returncode == 0, r.stdout + r.stderr
    n = len(KIP320_PROOF["lemmas"])
    assert "proved for every depth" in r.stdout and "replicas=2" in r.stdout and "proof_ghosts=1" in r.stdout
    assert f"k=1 · lemmas: {n} lemmas (the spec's for this invariant; proof_ghosts=1)" in r.stdout
    assert "s CPU" in r.stdout


def test_cli_prove_with_too_few_lemmas_prints_the_counterexample_to_induction():
    r = run_cli("prove", "--spec", "kip-320", "--invariant", "no-committed-loss", "--lemma", "lemma-epochs")
    assert r.returncode == 4, r.stdout + r.stderr          # neither proved (0) nor refuted (1)
    assert "not inductive" in r.stdout and "lemmas: lemma-epochs" in r.stdout
    assert "counterexample to induction: kip-320" in r.stdout and "fails in state 1" in r.stdout


def test_cli_bmc_says_no_violation_up_to_its_depth_and_exits_3():
    r = run_cli("check", "--engine", "bmc", "--spec", "kip-320", "--invariant", "no-committed-loss", "--depth", "3",
                "--no-progress")
    assert r.returncode == 3, r.stdout + r.stderr
    assert "no violation of no-committed-loss up to depth 3: a bounded check, not a proof" in r.stdout
    assert "every path of up to 3 states checked symbolically" in r.stdout
    assert "distinct states" not in r.stdout
