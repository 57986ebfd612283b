"""k-induction: a proof of an invariant for every depth, or a counterexample.

A base case (BMC to depth k, on z3) and an induction step (k consecutive states satisfying the
property and the lemmas, then one violating it, is unsatisfiable; checker/symbolic/unrolling.py on unbounded
Ints, since the relaxed columns have no upper bound). The verdict is ``proved`` (every depth, at the
spec's bounds), ``refuted`` (a real counterexample from the initial state), ``not-inductive`` (the
counterexample to induction, for display) or ``unknown`` (z3 gave up, the time ran out, or a stop).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import z3

from isrcheck.checker.engine.result import Violation
from isrcheck.checker.symbolic.bmc import bmc
from isrcheck.checker.engine.budget import UNLIMITED
from isrcheck.checker.symbolic.unrolling import Unrolling, Z3Unknown, solve


@dataclass
class ProofResult:
    """The outcome of :func:`prove`.

    - ``verdict``: "proved", "refuted", "not-inductive" or "unknown";
    - ``steps``: for "refuted", the counterexample from the initial state as
      engine steps [(ActionInstance or None, row)] (replayable, saveable with
      checker.traces.trace.from_steps); for "not-inductive", the counterexample to
      induction as [(ActionInstance or None, decoded state dict)]: k states
      satisfying the invariant and lemmas, then one violating ``failing`` --
      consistent with the transition relation but not reachable from the initial
      state (values of relaxed fields may exceed their declared bounds);
    - ``failing``: the invariant or lemma that fails at the last state;
    - ``reason``: for "unknown", why (z3's reason, or a lemma refuted in the base case);
    - ``relaxed``: the fields (declared ``unbounded``) whose upper bounds the step left out;
    - ``phase_seconds``: {"base": the base case's seconds, "step": the induction step's} (the phases that ran);
      a proof with learned lemmas has {"search": the exhaustive search's, "SAT": lemma learning's};
    - ``distinct_states``: the reachable states lemmas were learned from; None for k-induction.
    (Every field as in checker/engine/result.py.)
    """

    spec: str
    bounds: dict
    invariant: str
    lemmas: list
    k: int
    verdict: str
    seconds: float
    phase_seconds: dict = field(default_factory=dict)
    steps: list = field(default_factory=list)
    failing: str | None = None
    reason: str | None = None
    relaxed: tuple = ()
    distinct_states: int | None = None

    def violation(self):
        """The base-case counterexample as a checker.exhaustive.bfs.Violation (verdict "refuted" only)."""
        if self.verdict != "refuted":
            return None
        return Violation(self.invariant, None, len(self.steps), self.steps)

    def trace(self, spec):
        """The counterexample (refutation or CTI) as a checker.traces.trace.Trace, for checker.traces.show.render.

        A CTI trace is for reading only: it does not start from the initial state
        and does not replay.
        """
        from isrcheck.checker.traces.trace import Trace, from_steps
        if self.verdict == "refuted":
            return from_steps(spec, self.failing, "k-induction", self.steps)
        decoded = [(a.name if a else None, dict(a.params) if a else {}, s) for a, s in self.steps]
        return Trace(spec.name, dict(spec.bounds), self.failing or self.invariant, "k-induction", decoded,
                     extra={"counterexample_to_induction": True, "k": self.k, "lemmas": self.lemmas})

    def render(self, spec):
        """The counterexample (to induction, or from the initial state) as plain text."""
        if not self.steps:
            return f"{self.verdict}: no counterexample"
        states = [s if isinstance(s, dict) else spec.layout.decode(s) for _, s in self.steps]
        title = ("counterexample to induction" if self.verdict == "not-inductive"
                 else "counterexample from the initial state")
        return render_states(spec, states, [a for a, _ in self.steps], self.failing, title)


def relaxed_columns(spec, fields):
    """Columns of the named fields of the spec's layout."""
    lay = spec.layout
    return [c for name in fields for c in range(lay.base[name], lay.base[name] + lay.fields[name].size)]


def prove(spec, invariant, k, lemmas=(), budget=UNLIMITED, relax=True, simple_path=False, phase=None):
    """k-induction proof of ``invariant`` (with auxiliary ``lemmas``) at the spec's bounds.

    What is proved is the conjunction P = invariant /\\ lemmas (assuming a lemma
    in the step is only sound if the lemma is itself an invariant, so each lemma
    is proved along with the invariant, not taken on trust):

    - base: no path of at most k states from the initial state violates P
      (:func:`bmc` to depth k); a violation of the invariant is "refuted", of a
      lemma "unknown" with the lemma named in ``reason``;
    - step: k consecutive states s0..s_{k-1}, each well-typed and satisfying P
      and linked by the transition relation, followed by a successor s_k that
      violates P, is unsatisfiable. Then P holds in every reachable state: on a
      shortest path to a violation, the last k+1 states would form such a chain.
      Otherwise the satisfying assignment is the counterexample to induction.

    Relaxed bounds (``relax=True``): in the step, the *upper* type bound is left
    out for the fields the spec declares ``unbounded`` (epochs and ids that only
    count up);
    their lower bounds, and every bound of every other column (offsets, replica
    ids, flags, counters the protocol bounds), are kept. Why this is
    sound: the step's hypothesis then ranges over a *superset* of the
    well-typed states, so an unsatisfiable step with relaxed bounds implies an
    unsatisfiable step with the exact bounds -- dropping a constraint on the
    pre-states can add counterexamples to induction, never remove one. It admits
    no behaviour the model forbids from a real state: the transition relation is
    the spec's own (every guard that stops an epoch or an id at its bound is
    still there; a state beyond the bound simply has those actions disabled),
    and the base case runs from the exact initial state. What it buys: a proof
    cannot lean on "epochs / ids run out" -- the inductive argument, and any
    lemma, must hold for arbitrarily large values of those fields, so the lemmas
    are about the protocol, not about the bounds. It is still a proof about the
    spec instantiated at these bounds (the number of array slots indexed by an
    epoch or an id is fixed): it is not a parametric proof for every bound. A
    proof may need one such bound back, as a lemma it proves rather than a type
    bound it assumes (kip-320's lemma-epoch-table: the quorum's epoch never
    passes max_epochs, inductive because every action that raises it is guarded
    by that bound); without it, states past the last slot make every lemma
    about that slot vacuous and z3 returns counterexamples to induction the
    model can never reach.

    ``simple_path=True`` also requires the k+1 step states to be pairwise
    distinct (sound for the same shortest-path reason; it can only remove
    counterexamples to induction, at a quadratic cost).

    ``budget.seconds`` bounds the whole proof; z3 unknown or the time running out
    gives verdict "unknown" with the reason. ``phase(name)``, when given, is called as
    each phase (the base case, the induction step) starts.
    """
    if k < 1:
        raise ValueError("k must be at least 1")
    start = time.perf_counter()
    deadline = None if budget.seconds is None else start + budget.seconds
    names = [invariant] + [n for n in dict.fromkeys(lemmas) if n != invariant]
    for n in names:
        if n not in spec.invariants:
            raise KeyError(f"spec {spec.name} has no invariant {n!r}")
    relaxed_fields = tuple(f.name for f in spec.layout.fields.values() if f.unbounded) if relax else ()
    result = ProofResult(spec.name, dict(spec.bounds), invariant, list(names[1:]), k, "unknown", 0.0,
                         relaxed=relaxed_fields)

    def finish(**kw):
        for key, v in kw.items():
            setattr(result, key, v)
        result.seconds = time.perf_counter() - start
        return result

    say = phase or (lambda name: None)

    # --- base case -------------------------------------------------------------------------
    states = "1 state" if k == 1 else f"{k} states"
    say(f"prove: base case (SAT), every path of up to {states}")
    base = bmc(spec, names, k, budget.left(time.perf_counter() - start))
    result.phase_seconds["base"] = base.seconds
    if invariant in base.violations:
        return finish(verdict="refuted", steps=base.violations[invariant].steps, failing=invariant)
    if base.violations:
        first = min(base.violations.values(), key=lambda v: v.level)
        return finish(verdict="unknown", steps=first.steps, failing=first.invariant,
                      reason=f"lemma {first.invariant} is violated at level {first.level} "
                             f"(a real counterexample: the lemma is wrong)")
    if base.z3_unknown is not None:
        return finish(verdict="unknown", reason=f"base case: {base.z3_unknown}")

    # --- induction step ------------------------------------------------------------------------
    say(f"prove: induction step (z3), {states} with the invariant and {len(names) - 1} lemmas")
    t0 = time.perf_counter()
    u = Unrolling(spec, prefix="t", relaxed=relaxed_columns(spec, relaxed_fields))
    invs = [spec.invariants[n] for n in names]
    # eliminating the next-state copies first (each is a function of the state before and the action
    # choice) makes the step about a third faster than z3's default solver on the kip-320 proof
    solver = z3.Then("simplify", "propagate-values", "solve-eqs", "simplify", "smt").solver()
    for i in range(k + 1):
        solver.add(u.typed(i))
        if i < k:
            solver.add(u.transition(i))
            for inv in invs:
                solver.add(u.holds(inv, i))
    if simple_path:
        for i in range(k + 1):
            for j in range(i + 1, k + 1):
                solver.add(u.distinct(i, j))
    goals = {inv.name: u.holds(inv, k) for inv in invs}
    try:
        model = solve(solver, deadline, [z3.Not(z3.And(list(goals.values())))])
    except Z3Unknown as e:
        result.phase_seconds["step"] = time.perf_counter() - t0
        return finish(verdict="unknown", reason=f"induction step: {e.reason}")
    result.phase_seconds["step"] = time.perf_counter() - t0
    if model is None:
        return finish(verdict="proved")
    ids = u.action_ids(model, k)
    decoded = [spec.layout.decode(u.values(model, i)) for i in range(k + 1)]
    failing = [n for n, g in goals.items() if z3.is_false(model.eval(g, model_completion=True))]
    steps = [(None, decoded[0])] + [(spec.actions[a], decoded[i + 1]) for i, a in enumerate(ids)]
    return finish(verdict="not-inductive", steps=steps, failing=failing[0] if failing else None,
                  reason=("fails at the last state: " + ", ".join(failing)) if failing else None)


def _fmt(v):
    if isinstance(v, list):
        return "[" + " ".join(_fmt(x) for x in v) + "]"
    if isinstance(v, bool):
        return "T" if v else "."
    return str(v)


def render_states(spec, states, actions, failing=None, title="trace"):
    """Text: the first state field by field, then per step the action and the fields it changed."""
    lines = [f"{title}: {spec.name} {' '.join(f'{k}={v}' for k, v in spec.bounds.items())}"]
    for i, (state, act) in enumerate(zip(states, actions)):
        if i == 0:
            lines.append("state 0:")
            lines.extend(f"    {name:<24} {_fmt(v)}" for name, v in state.items())
            continue
        prev = states[i - 1]
        label = act.label if act is not None else "?"
        lines.append(f"state {i}: after {label}")
        for name, v in state.items():
            if v != prev[name]:
                lines.append(f"    {name:<24} {_fmt(prev[name])} -> {_fmt(v)}")
    if failing:
        lines.append(f"{failing} fails in state {len(states) - 1}")
    return "\n".join(lines)
