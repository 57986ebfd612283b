"""Proofs from the reachable set (checker.symbolic.strengthen), checked by engines other than the one that proposes.

The exhaustive engine proposes the lemmas and a SAT solver (CaDiCaL, on the CNF encoding)
proves them; here every proof is checked again by the numpy backend (each lemma holds on
every reachable state) and by z3 on the unbounded-Int encoding (the strengthened invariant
holds initially and is preserved by every transition), which shares neither the bit-level
translation nor the SAT solver. The specs in PROVED_HERE are the ones that fit the suite's
time; benchmarks/strengthen_all.py proves every spec's expected-holds invariants.
"""
import subprocess
import sys

import numpy as np
import pytest
import z3
from pysat.solvers import Solver as SatSolver

import isrcheck.checker.symbolic.strengthen as st
from isrcheck.checker.engine.budget import Budget
from isrcheck.checker.symbolic.strengthen import ReachableCubes, reachable_states, strengthen
from isrcheck.checker.symbolic.cnf import CnfUnrolling
from isrcheck.checker.symbolic.unrolling import Unrolling
from isrcheck.specs import SPECS
from isrcheck.model import backends

PROVED_HERE = ["acks-1", "kip-497"]          # unclean-election and async-isr: 20 s each, in the benchmark


def _holds(spec):
    return [n for n, v in spec.expected.items() if v == "holds"]


def _reached(rows, cells):
    """Whether some state (a column of rows) has all these (column, value) pairs."""
    return bool(np.all([rows[c] == v for c, v in cells], axis=0).any())


def _z3_confirms(spec, targets, lemmas):
    """z3 on the Int encoding: P /\\ F holds initially and no transition leaves it (both queries unsat).

    As in the SAT step, the successor is well-typed: strengthen checks that the reachable states,
    which are closed under successors, all are.
    """
    u, lay = Unrolling(spec, prefix="chk"), spec.layout

    def equals(i, cells):
        return z3.And([u.state(i)[c] == (bool(v) if lay.boolean[c] else int(v)) for c, v in cells])

    def strengthened(i):
        blocked = [z3.Not(equals(i, cube)) for cube in lemmas]
        return z3.And([u.holds(spec.invariants[n], i) for n in targets] + blocked)
    initially = z3.SolverFor("QF_FD")
    initially.add(equals(0, enumerate(backends.scalar(spec).initial_row())), z3.Not(strengthened(0)))
    step = z3.SolverFor("QF_FD")
    step.add(u.typed(0), strengthened(0), u.transition(0), u.typed(1), z3.Not(strengthened(1)))
    return initially.check() == z3.unsat and step.check() == z3.unsat


@pytest.mark.long
@pytest.mark.parametrize("name", PROVED_HERE)
def test_every_expected_holds_invariant_is_proved_and_the_proof_checks_out(name):
    spec = SPECS[name]()
    targets = _holds(spec)
    result = strengthen(spec, targets)
    assert result.verdict == "proved" and result.reason is None
    assert result.lemmas and result.queries > len(result.lemmas)
    rows, complete = reachable_states(spec)
    assert complete and result.distinct_states == rows.shape[1]
    for cube in result.lemmas:         # each lemma is true: no reachable state is in its cube
        assert not _reached(rows, cube), result.describe(spec, cube)
    assert _z3_confirms(spec, targets, result.lemmas)
    assert not _z3_confirms(spec, targets, result.lemmas[: len(result.lemmas) // 2])     # and it needed them


def test_an_invariant_a_reachable_state_violates_is_never_proved():
    spec = SPECS["acks-1"]()
    result = strengthen(spec, ["leader-in-isr", "no-committed-loss"])
    assert result.verdict == "violated" and result.failing == "no-committed-loss" and not result.lemmas


def test_a_wrong_reachable_set_never_becomes_a_proof(monkeypatch):
    """States cut off before the violation, passed off as all of them: the SAT checks refuse the lemmas."""
    spec = SPECS["acks-1"]()
    shallow, complete = reachable_states(spec, Budget(max_depth=5))
    assert not complete
    assert backends.batch(spec).holds(spec.invariants["no-committed-loss"], shallow).all()
    monkeypatch.setattr(st, "reachable_states", lambda spec, **_: (shallow, True))
    with pytest.raises(RuntimeError, match="internal error"):
        strengthen(spec, ["no-committed-loss"])


def test_a_truncated_search_is_unknown():
    result = strengthen(SPECS["acks-1"](), ["leader-in-isr"], Budget(max_depth=4))
    assert result.verdict == "unknown" and "did not finish" in result.reason


def test_the_time_limit_is_unknown_and_says_how_far_it_got():
    result = strengthen(SPECS["kip-320"](), ["no-committed-loss"], Budget(seconds=3))
    assert result.verdict == "unknown" and result.reason.startswith("time limit reached")
    assert "lemmas" in result.reason and result.seconds < 6


def test_generalize_keeps_only_cells_that_exclude_every_reachable_state():
    spec = SPECS["acks-1"]()
    rows, _ = reachable_states(spec)
    reach = ReachableCubes(spec, rows)
    lay, rng = spec.layout, np.random.default_rng(7)
    tried = 0
    while tried < 40:
        state = rows[:, rng.integers(rows.shape[1])].copy()
        for c in rng.choice(lay.width, 2, replace=False):
            state[c] = rng.integers(lay.lo[c], lay.hi[c] + 1)
        if (rows == state[:, None]).all(axis=0).any():
            with pytest.raises(RuntimeError, match="reachable state"):
                reach.generalize(state)
            continue
        tried += 1
        cube = reach.generalize(state)
        assert cube and all(state[c] == v for c, v in cube)
        assert not _reached(rows, cube)
        assert all(_reached(rows, [x for x in cube if x != drop]) for drop in cube if len(cube) > 1)


def test_typed_clauses_allow_exactly_each_columns_bounds():
    spec = SPECS["kip-320"]()
    u, lay = CnfUnrolling(spec, []), spec.layout
    s = u.state(0)
    with SatSolver(name="cadical195") as solver:
        solver.append_formula(u.typed(0))
        for c in range(lay.width):
            bits = [int(x) for x in s[u.start[c]:u.start[c + 1]]]
            for raw in range(1 << len(bits)):
                assumptions = [x if (raw >> b) & 1 else -x for b, x in enumerate(bits)]
                allowed = raw <= (1 if lay.boolean[c] else lay.hi[c] - lay.lo[c])
                assert solver.solve(assumptions=assumptions) == allowed, (lay.names[c], raw)


# --- command line --------------------------------------------------------------------------
def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "isrcheck.checker.command_line.cli", *args], capture_output=True, text=True)


def test_cli_prove_auto_lemmas_proves_and_says_what_it_learned():
    r = run_cli("prove", "--spec", "kip-497", "--invariant", "no-committed-loss", "--auto-lemmas")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "proved for every depth" in r.stdout and "learned from" in r.stdout and "reachable states" in r.stdout
    shown = r.stdout.split("the smallest lemmas learned:\n")[1].splitlines()
    assert len(shown) == 3 and all(line.startswith("  not (") and " = " in line for line in shown)


def test_cli_prove_auto_lemmas_of_a_violated_invariant_saves_the_counterexample(tmp_path):
    r = run_cli("prove", "--spec", "acks-1", "--invariant", "no-committed-loss", "--auto-lemmas",
                "--out", str(tmp_path))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "refuted" in r.stdout and (tmp_path / "acks-1" / "no-committed-loss.itf.json").exists()
    assert run_cli("replay", str(tmp_path / "acks-1" / "no-committed-loss.itf.json")).returncode == 0


def test_cli_prove_auto_lemmas_out_of_time_is_unknown_and_exits_3():
    r = run_cli("prove", "--spec", "kip-320", "--invariant", "no-committed-loss", "--auto-lemmas",
                "--z3-timeout", "2")
    assert r.returncode == 3, r.stdout + r.stderr
    assert "unknown: time limit reached" in r.stdout


def test_cli_prove_auto_lemmas_with_a_lemma_is_a_usage_error():
    r = run_cli("prove", "--spec", "kip-320", "--invariant", "no-committed-loss", "--auto-lemmas",
                "--lemma", "lemma-epochs")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--auto-lemmas" in r.stderr
