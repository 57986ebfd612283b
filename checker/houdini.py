"""Automatic lemmas for k-induction: candidate invariants mined from the reachable states, kept by Houdini.

A k-induction proof needs lemmas that rule out the unreachable states the
induction step would otherwise start from. This module finds them without a
human:

1. **Candidates** (guesses only). The exhaustive engine (:class:`checker.bfs.Search`)
   enumerates every reachable state at the spec's bounds; from that set
   :func:`mine` proposes facts about single cells ("``leo[1]`` is never 3") and
   pairs of cells ("never ``leader[0]`` = 1 together with ``hw[1]`` = 2", for
   value pairs never seen together although each value is seen). Orderings such
   as ``hw[r] <= leo[r]`` need no candidate of their own: over the finite value
   sets they are conjunctions of such pairs. The spec's invariants that must hold
   (and its ``lemma-*`` ones) are candidates too.
2. **Houdini** (:func:`houdini`). z3 is asked for a well-typed state (every cell
   within its declared bounds) that satisfies every remaining candidate and has a
   successor violating one; every candidate that successor violates is dropped,
   until no such state exists. Candidates false in the initial state are dropped
   first. What remains is the largest subset of the candidates whose conjunction
   is 1-inductive: it holds in the initial state and every action preserves it.
3. **The proof** (:func:`prove_invariant`). An invariant that survives Houdini is
   proved; otherwise :func:`checker.symbolic.prove` runs k-induction for k = 2,
   3, ... with the survivors as facts.

Soundness. The exhaustive engine only *proposes*: a wrong guess (say, from a
truncated search, or a fingerprint collision) costs a Houdini round, never a
wrong verdict, because every surviving candidate is checked by z3 to hold
initially and to be preserved by every transition of the spec's own transition
relation (:class:`checker.symbolic.BvUnrolling`, bit-blasted, exact on well-typed
states), and the facts are then used only as proved invariants. z3 proves; the
result is a proof for every depth, at the spec's exact bounds (replica count,
log capacity, epochs, records, crashes as given): the facts are about those
bounds, so unlike ``prove``'s hand-written lemmas they do not carry over to
larger epochs or record ids.
"""
from __future__ import annotations

import functools
import time
from dataclasses import dataclass

import numpy as np
import z3

from checker.bfs import Search
from checker.symbolic import BvUnrolling, ProofResult, _solve, _value, prove


@dataclass(frozen=True)
class Candidate:
    """A guessed invariant: one of the spec's, or a fact "these cells never hold these values at once".

    ``cells`` is ((column, value),) or ((column, value), (column, value)) for a mined
    fact (the column never takes that value; the two never together); ``invariant``
    names a spec invariant instead.
    """

    cells: tuple = ()
    invariant: str | None = None

    def describe(self, spec):
        """How it reads: the invariant's name, "leo[1] != 2", or "not (leader[0] = 1 and hw[1] = 2)"."""
        if self.invariant is not None:
            return self.invariant
        lay = spec.layout
        eqs = [(lay.names[c], bool(v) if lay.boolean[c] else v) for c, v in self.cells]
        if len(eqs) == 1:
            return f"{eqs[0][0]} != {eqs[0][1]}"
        return "not (" + " and ".join(f"{n} = {v}" for n, v in eqs) + ")"

    def formula(self, spec, state):
        """The candidate over one state's z3 variables (Int/Bool; a mined fact also over bit-vectors)."""
        if self.invariant is not None:
            return spec.z3_invariant(spec.invariants[self.invariant], state)
        lay = spec.layout
        return z3.Not(z3.And([state[c] == (bool(v) if lay.boolean[c] else v) for c, v in self.cells]))

    def holds(self, spec, rows):
        """Numpy backend: the candidate on a column-major batch of states, as a bool vector."""
        if self.invariant is not None:
            return spec.holds_batch(spec.invariants[self.invariant], rows)
        together = np.ones(rows.shape[1], dtype=bool)
        for c, v in self.cells:
            together &= rows[c] == v
        return ~together


def reachable_states(spec, **budgets):
    """Every state the exhaustive engine reaches (within optional budgets), column-major; and whether that is all."""
    batches = []
    result = Search(spec, []).run(on_states=batches.append, **budgets)
    return np.concatenate(batches, axis=1), result.complete


def mine(spec, rows):
    """Facts true in every given state: values a cell never takes, and value pairs two cells never take together.

    The pairs come from one bitmask per seen (cell, value) over the states: two
    values were seen together iff their masks intersect.
    """
    lay = spec.layout
    facts, seen = [], []
    for c in range(lay.width):
        present = np.unique(rows[c])
        facts.extend(Candidate(((c, v),)) for v in range(int(lay.lo[c]), int(lay.hi[c]) + 1) if v not in present)
        if present.size > 1:      # a constant cell's pairs are all seen, or excluded by its single facts
            seen.extend((c, int(v)) for v in present)
    masks = np.stack([np.packbits(rows[c] == v) for c, v in seen])      # one bit per state
    for i, (c, v) in enumerate(seen):
        together = (masks[i + 1:] & masks[i]).any(axis=1)
        facts.extend(Candidate(((c, v), other)) for other, met in zip(seen[i + 1:], together)
                     if not met and other[0] != c)
    return facts


@dataclass
class HoudiniResult:
    """The outcome of :func:`houdini`: the inductive candidates and what it took.

    ``dropped_initially``: candidates false in the initial state; ``rounds``: z3
    queries that found a successor violating some candidate (the last query, unsat,
    is not counted). :func:`discover` also fills in where the candidates came from.
    """

    spec: str
    survivors: list
    dropped: list
    dropped_initially: list
    rounds: int
    seconds: float
    reachable_states: int = 0
    search_complete: bool = False
    mined: int = 0

    @property
    def candidates(self):
        return len(self.survivors) + len(self.dropped) + len(self.dropped_initially)

    def survived(self, invariant):
        return any(c.invariant == invariant for c in self.survivors)


def houdini(spec, candidates, timeout_s=None):
    """The largest subset of ``candidates`` that holds initially and is 1-inductive at the spec's exact bounds.

    One incremental bit-blasting solver holds a well-typed state s0, the transition
    to s1 and, per candidate j, two literals: "holds_j => candidate_j(s0)" and
    "breaks_j => not candidate_j(s1)", with one clause "some breaks_j". Each round
    assumes holds_j for the remaining candidates and not breaks_j for the dropped
    ones, so z3 looks for an s1 violating a remaining candidate; every candidate the
    decoded s1 violates (on the numpy backend, and z3 must agree) is dropped.
    Candidates false in the initial state (numpy backend) are dropped first, and z3
    confirms at the end that the survivors hold there. Raises
    :class:`checker.symbolic.Z3Unknown` when z3 gives up or ``timeout_s`` runs out.
    """
    start = time.perf_counter()
    deadline = None if timeout_s is None else start + timeout_s
    initial = spec.initial_row()
    pool = list(dict.fromkeys(candidates))
    alive = ~_violated(spec, pool, initial)
    u = BvUnrolling(spec, [spec.invariants[c.invariant] for c in pool if c.invariant is not None])
    solver = z3.SolverFor("QF_FD")
    solver.add(u.typed(0), u.transition(0), u.typed(1))
    holds = [z3.Bool(f"houdini.holds.{j}") for j in range(len(pool))]
    breaks = [z3.Bool(f"houdini.breaks.{j}") for j in range(len(pool))]
    after = [_at(spec, u, c, 1) for c in pool]
    for j, c in enumerate(pool):
        solver.add(z3.Implies(holds[j], _at(spec, u, c, 0)), z3.Implies(breaks[j], z3.Not(after[j])))
    solver.add(z3.Or(breaks))
    dropped, rounds = [], 0
    while alive.any():
        assumptions = [holds[j] if ok else z3.Not(breaks[j]) for j, ok in enumerate(alive)]
        model = _solve(None, deadline, solver, assumptions)
        if model is None:
            break
        rounds += 1
        successor = np.array([_value(model, x) for x in u.state(1)], dtype=np.int8)
        broken = np.flatnonzero(alive & _violated(spec, pool, successor))
        if not broken.size or any(z3.is_true(model.eval(after[j], model_completion=True)) for j in broken):
            raise RuntimeError("internal error: z3 and the numpy backend disagree on a Houdini successor")
        dropped.extend(pool[j] for j in broken)
        alive[broken] = False
    survivors = [c for c, ok in zip(pool, alive) if ok]
    if survivors and _solve([u.initial(0), z3.Not(z3.And([_at(spec, u, c, 0) for c in survivors]))], deadline):
        raise RuntimeError("internal error: z3 finds an inductive candidate false in the initial state")
    dropped_initially = [c for c, ok in zip(pool, _violated(spec, pool, initial)) if ok]
    return HoudiniResult(spec.name, survivors, dropped, dropped_initially, rounds, time.perf_counter() - start)


def _violated(spec, candidates, row):
    """Which candidates one state (a row) violates, as a bool vector."""
    cells = [c.cells if len(c.cells) == 2 else c.cells * 2 for c in candidates]      # a one-cell fact: twice
    out = np.zeros(len(candidates), dtype=bool)
    facts = [j for j, c in enumerate(candidates) if c.invariant is None]
    if facts:
        table = np.array([cells[j] for j in facts])          # facts x 2 cells x (column, value)
        out[facts] = (row[table[:, :, 0]] == table[:, :, 1]).all(axis=1)
    for j, c in enumerate(candidates):
        if c.invariant is not None:
            out[j] = not spec.holds(row, spec.invariants[c.invariant])
    return out


def _at(spec, u, candidate, i):
    if candidate.invariant is not None:
        return u.holds(spec.invariants[candidate.invariant], i)
    return candidate.formula(spec, u.state(i))


def invariant_candidates(spec, targets=()):
    """The spec's invariants worth guessing: the targets, every one expected to hold, and any lemma-* one."""
    names = list(targets) + [n for n, v in spec.expected.items() if v == "holds"]
    names += [n for n in spec.invariants if n.startswith("lemma-")]
    return [Candidate(invariant=n) for n in dict.fromkeys(names) if n in spec.invariants]


def discover(spec, targets=(), timeout_s=None, **budgets):
    """Mine candidates from the exhaustive engine's reachable states and keep the inductive ones (Houdini).

    ``budgets`` (max_states, max_depth, time_limit) truncate the search: fewer,
    possibly wrong guesses, which Houdini drops. Raises
    :class:`checker.symbolic.Z3Unknown` when z3 gives up or ``timeout_s`` runs out.
    """
    start = time.perf_counter()
    rows, complete = reachable_states(spec, **budgets)
    facts = mine(spec, rows)
    left = None if timeout_s is None else max(timeout_s - (time.perf_counter() - start), 0.001)
    result = houdini(spec, facts + invariant_candidates(spec, targets), timeout_s=left)
    result.reachable_states, result.search_complete, result.mined = rows.shape[1], complete, len(facts)
    result.seconds = time.perf_counter() - start
    return result


def prove_invariant(spec, invariant, lemmas, k=1, timeout_s=None):
    """A :class:`checker.symbolic.ProofResult` for ``invariant`` from the inductive candidates ``lemmas``.

    Proved at once if Houdini kept it (``lemmas`` is a :class:`HoudiniResult`);
    otherwise k-induction at the exact bounds (``relax=False``: the facts are about
    these bounds) with the survivors as proved facts. At k=1 that fails by
    construction (Houdini's set is the largest 1-inductive one), and the result
    carries the counterexample to induction against the survivors.
    """
    found = [c.describe(spec) for c in lemmas.survivors]
    if lemmas.survived(invariant):
        return ProofResult(spec.name, dict(spec.bounds), invariant, found, 1, "proved", 0.0)
    facts = [functools.partial(c.formula, spec) for c in lemmas.survivors]
    result = prove(spec, invariant, k, timeout_s=timeout_s, relax=False, facts=facts)
    result.lemmas = found
    return result
