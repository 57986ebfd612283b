"""Proofs from the reachable set: block each counterexample to induction with a cube no reachable state is in.

At a spec's exact bounds the exhaustive engine enumerates every reachable state R.
An invariant P that holds on R holds at every depth, but to *prove* it the SAT
solver needs an inductive invariant: P strengthened until no state satisfying it
has a successor violating it. This module finds one automatically, in the manner of
IC3/PDR with R as a perfect oracle for "is this state reachable?":

- F is a growing set of clauses "not (c1 = v1 and ... and cn = vn)" over state
  cells, each true in every state of R.
- An obligation (P, or a clause of F) is checked by one SAT query: a well-typed
  state s satisfying P and F, a transition, and a successor s' violating the
  obligation. Unsatisfiable: the obligation is preserved relative to F, and stays
  so as F grows. Satisfiable: s is a counterexample to induction, and s is not in
  R (its successor would be, and every obligation holds on R). s is generalised to
  the fewest cells whose values in s no reachable state shares (a greedy cover
  over one bitset per (cell, value), see :class:`ReachableCubes`); that clause
  joins F, blocking s and every state like it, and becomes an obligation.
- When every obligation is discharged, P /\\ F holds in the initial state (a
  member of R) and is preserved by every transition: P is proved for every depth.

The SAT step only considers well-typed successors (every cell within its
bounds); that covers every transition from a reachable state, because the
reachable states are checked to be within bounds, and they are closed under
successors.

It terminates: each counterexample is blocked for good, and there are finitely
many well-typed states. Soundness does not rest on R: R only proposes clauses,
and a fresh SAT solver checks the final certificate (P /\\ F holds initially, and
no transition leaves it) from scratch. The proof is at the spec's exact bounds
(replicas, log capacity, epochs, records, crashes): unlike ``prove``'s hand-written
lemmas, the learned ones are about these bounds.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
from pysat.solvers import Solver as SatSolver

from isrcheck.checker.engine import stop
from isrcheck.checker.exhaustive.bfs import search
from isrcheck.checker.engine.budget import UNLIMITED
from isrcheck.checker.symbolic.cnf import CnfUnrolling, sat_check
from isrcheck.checker.symbolic.induction import ProofResult
from isrcheck.checker.symbolic.unrolling import Z3Unknown
from isrcheck.model import backends


def reachable_states(spec, budget=UNLIMITED, progress=None):
    """Every state the exhaustive engine reaches (within ``budget``), column-major; and whether that is all."""
    batches = []
    result = search(spec, [], budget=budget, on_states=batches.append, progress=progress)
    return np.concatenate(batches, axis=1), result.complete


class ReachableCubes:
    """The reachable states as one bitset per (cell, value): which cubes of cell values some reachable state is in."""

    def __init__(self, spec, rows):
        lay = spec.layout
        self.width, self.n = rows.shape
        self.offset = np.concatenate([[0], np.cumsum(lay.hi - lay.lo + 1)]).astype(np.int64)
        self.lo = lay.lo.astype(np.int64)
        pad = -self.n % 64
        self.bitsets = np.stack([np.packbits(np.concatenate([rows[c] == v, np.zeros(pad, dtype=bool)])).view(np.uint64)
                                 for c in range(self.width) for v in range(int(lay.lo[c]), int(lay.hi[c]) + 1)])
        self.counts = np.bitwise_count(self.bitsets).sum(axis=1, dtype=np.int64)

    def _of(self, state):
        """Per cell, the index of the bitset of the reachable states agreeing with ``state`` there."""
        return self.offset[:-1] + np.asarray(state, dtype=np.int64) - self.lo

    def generalize(self, state):
        """A few (cell, value) pairs of ``state`` that no reachable state has all of (``state`` must be unreachable).

        Greedy: add the cell that leaves the fewest reachable states agreeing on
        every chosen cell, until none does; then drop each chosen cell the others
        already exclude. Only the words of the bitsets where some state still
        agrees are looked at, so each step costs less than the one before.
        """
        which = self._of(state)
        chosen = [int(np.argmin(self.counts[which]))]
        words = np.flatnonzero(self.bitsets[which[chosen[0]]])
        agree = self.bitsets[np.ix_(which, words)]        # cell x word, where the first choice has states
        while agree.shape[1]:
            left = np.bitwise_count(agree & agree[chosen[-1]]).sum(axis=1, dtype=np.int64)
            left[chosen] = self.n + 1
            c = int(np.argmin(left))
            if left[c] > self.n:
                raise RuntimeError("internal error: a counterexample to induction is a reachable state")
            agree = agree[:, (agree[c] & agree[chosen[-1]]) != 0]
            agree[c] &= agree[chosen[-1]]
            chosen.append(c)
        for c in chosen[::-1]:
            rest = [d for d in chosen if d != c]
            if rest and not np.bitwise_and.reduce(self.bitsets[which[rest]], axis=0).any():
                chosen = rest
        return tuple((c, int(state[c])) for c in sorted(chosen))


@dataclass
class StrengthenResult:
    """The outcome of :func:`strengthen`.

    ``verdict``: "proved" (every target, with ``lemmas`` as the strengthening),
    "violated" (a reachable state violates ``failing``; the exhaustive engine has
    the trace), or "unknown" (``reason``: the time limit, or the exhaustive search
    not finishing). ``lemmas``: the clauses of F as cubes ((column, value), ...)
    no reachable state is in; ``queries``: SAT calls; ``distinct_states``: the
    reachable states (None before the search ends); ``phase_seconds``: {"search":
    the exhaustive search's seconds, "SAT": the lemma learning's} (the phases that ran).
    """

    spec: str
    targets: list
    verdict: str
    lemmas: list = field(default_factory=list)
    queries: int = 0
    distinct_states: int | None = None
    seconds: float = 0.0
    phase_seconds: dict = field(default_factory=dict)
    failing: str | None = None
    reason: str | None = None

    def describe(self, spec, cube):
        """A lemma as it reads: "not (x = 1 and y[2] = 0)"."""
        lay = spec.layout
        return "not (" + " and ".join(f"{lay.names[c]} = {bool(v) if lay.boolean[c] else v}" for c, v in cube) + ")"


def prove_with_lemmas(spec, invariant, budget=UNLIMITED, progress=None):
    """``prove --auto-lemmas``: :func:`strengthen` one invariant, as a :class:`checker.symbolic.induction.ProofResult`.

    The lemmas are listed smallest first, as they read; a reachable violation is
    a refutation, with the exhaustive engine's (shortest) trace. Returns the
    result and a line saying how the lemmas were found.
    """
    found = strengthen(spec, [invariant], budget, search_progress=progress, progress=progress)
    used = (f"{len(found.lemmas):,} learned from {found.distinct_states or 0:,} reachable states "
            f"({found.queries:,} SAT queries)")
    smallest = [found.describe(spec, cube) for cube in sorted(found.lemmas, key=len)]
    result = ProofResult(spec.name, dict(spec.bounds), invariant, smallest, 1, found.verdict, found.seconds,
                         phase_seconds=dict(found.phase_seconds), reason=found.reason,
                         distinct_states=found.distinct_states)
    if found.verdict == "violated":
        again = search(spec, [invariant], budget=budget.left(found.seconds))
        if invariant in again.violations:
            result.verdict, result.steps = "refuted", again.violations[invariant].steps
        else:
            result.reason = f"stopped by {again.budget_hit} while finding the counterexample"
    return result, used


def strengthen(spec, targets, budget=UNLIMITED, progress=None, search_progress=None):
    """Prove the named invariants together at the spec's bounds, with lemmas learned from the reachable states.

    ``budget``: its seconds bound the whole run, the exhaustive search included; its max_states and
    max_depth cap that search, and a capped search gives "unknown" (its states cannot stand for R).
    ``search_progress`` is the exhaustive search's progress callback (see :meth:`checker.exhaustive.bfs.Search.run`);
    then ``progress(lemmas=, discharged=, seconds=)`` is called every 100 lemmas.
    """
    start = time.perf_counter()
    deadline = None if budget.seconds is None else start + budget.seconds
    result = StrengthenResult(spec.name, list(targets), "unknown")

    def finish(**kw):
        for key, v in kw.items():
            setattr(result, key, v)
        result.seconds = time.perf_counter() - start
        if learning:                  # the SAT phase ran (the states were all the reachable ones)
            result.phase_seconds["SAT"] = result.seconds - result.phase_seconds["search"]
        return result

    learning = False
    rows, complete = reachable_states(spec, budget=budget, progress=search_progress)
    result.distinct_states, result.phase_seconds["search"] = rows.shape[1], time.perf_counter() - start
    if not complete:
        why = stop.reason()
        if why:
            return finish(reason=f"stopped by {why} during the exhaustive search ({rows.shape[1]:,} states)")
        if deadline is not None and time.perf_counter() >= deadline:
            return finish(reason=f"time limit reached during the exhaustive search ({rows.shape[1]:,} states, "
                                 f"no lemmas learned yet)")
        return finish(reason="the exhaustive search did not finish: its states are not all the reachable ones")
    lay = spec.layout
    if ((rows < lay.lo[:, None]) | (rows > lay.hi[:, None])).any():
        raise RuntimeError("internal error: a reachable state is outside its fields' bounds")
    invs = [spec.invariants[n] for n in targets]
    for inv in invs:
        if not backends.batch(spec).holds(inv, rows).all():
            return finish(verdict="violated", failing=inv.name)
    learning = True
    reach = ReachableCubes(spec, rows)
    u = CnfUnrolling(spec, invs)
    lemmas = []
    with SatSolver(name="cadical195") as solver:
        holds = _step(u, solver)
        obligations = [[-holds[1][n]] for n in targets]        # assumptions: "s' violates it"
        done = 0
        try:
            while done < len(obligations):
                if not sat_check(solver, obligations[done], deadline):
                    done += 1
                    continue
                result.queries += 1
                cti = u.values(u.model(solver), 0)
                cube = reach.generalize(cti)
                lemmas.append(cube)
                solver.add_clause([-x for x in u.literals(0, cube)])
                obligations.append(u.literals(1, cube))
                if progress is not None and len(lemmas) % 100 == 0:
                    progress(lemmas=len(lemmas), discharged=done, seconds=time.perf_counter() - start)
        except Z3Unknown as e:
            return finish(lemmas=lemmas, reason=f"{e.reason} ({len(lemmas):,} lemmas, {done:,} of "
                                                f"{len(obligations):,} obligations discharged)")
        except KeyboardInterrupt:
            return finish(lemmas=lemmas, reason="Ctrl-C")
        result.queries += len(obligations)
    try:
        _check_certificate(spec, u, targets, lemmas, deadline)
    except Z3Unknown as e:
        return finish(lemmas=lemmas, reason=f"{e.reason} (checking the {len(lemmas):,} lemmas found)")
    return finish(verdict="proved", lemmas=lemmas)


def _step(u, solver):
    """Clauses of one step s -> s' from a well-typed s; the targets' truth at s and s' (one variable each)."""
    solver.append_formula(u.typed(0))
    solver.append_formula(u.transition(0))
    holds = []
    for i in (0, 1):
        clauses, named = u.holds(i)
        solver.append_formula(clauses)
        holds.append({n: int(v) for n, v in named.items()})
    return holds


def _check_certificate(spec, u, targets, lemmas, deadline):
    """A fresh solver confirms P /\\ F: true in the initial state, and no step from it leads out of it.

    One query per target and per lemma, each under F at s: it is what the search
    found piecemeal, re-checked against the final F.
    """
    with SatSolver(name="cadical195") as solver:
        holds = _step(u, solver)
        solver.append_formula([[holds[0][n]] for n in targets])
        solver.append_formula([[-x for x in u.literals(0, cube)] for cube in lemmas])
        for assumptions in [[-holds[1][n]] for n in targets] + [u.literals(1, cube) for cube in lemmas]:
            if sat_check(solver, assumptions, deadline):
                raise RuntimeError("internal error: the learned lemmas are not inductive")
    row = backends.scalar(spec).initial_row()
    if any(all(row[c] == v for c, v in cube) for cube in lemmas) or not all(
            backends.scalar(spec).holds(row, spec.invariants[n]) for n in targets):
        raise RuntimeError("internal error: the strengthened invariant is false in the initial state")
