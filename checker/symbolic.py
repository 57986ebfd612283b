"""Symbolic engines on z3: bounded model checking and k-induction.

Both unroll the spec's transition relation over copies of the state vector,
``s0, s1, ...`` (one z3 Int/Bool per state column, from
:func:`model.view.z3_variables`), plus one action-choice variable ``a_i`` per
step, an Int naming the action instance (``spec.actions[a_i]``) that leads from
``s_i`` to ``s_{i+1}``::

    T(s_i, a_i, s_{i+1}) =  0 <= a_i < n
                          /\\  AND_k  (a_i = k  =>  guard_k(s_i))
                          /\\  AND_c  s_{i+1}[c] = ite(a_i = k1, upd_k1[c], ite(a_i = k2, upd_k2[c], ... s_i[c]))

where the ``ite`` chain for column ``c`` lists only the instances that write
``c``. Given the range constraint this is exactly the disjunction over action
instances ``OR_k (a_i = k /\\ guard_k /\\ updates_k /\\ unchanged columns)``,
written so that each column's next value is one term (z3 solves it much faster
than the flat disjunction). The chosen instance is read off the model.

* :func:`bmc` -- is a state violating an invariant reachable in at most
  ``depth`` states? Incremental over depth, so the first violation found for an
  invariant is a shortest one (the same number of states as the exhaustive
  engine's trace). The z3 model is decoded into action ids, replayed on the
  scalar backend from the initial row (the replayed rows must equal the model's:
  a disagreement is an internal error), and returned as a
  :class:`checker.bfs.SearchResult` with ordinary steps, so traces save, replay
  and show exactly like the exhaustive engine's.
* :func:`prove` -- k-induction: a base case (BMC to depth k) and an induction
  step (k consecutive states satisfying the property, then one violating it, is
  unsatisfiable). The verdict is ``proved`` (every depth, at the spec's bounds),
  ``refuted`` (a real counterexample from the initial state), ``not-inductive``
  (the counterexample to induction, for display) or ``unknown`` (z3 gave up or
  the time ran out).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import z3

from checker.bfs import SearchResult, Violation, peak_memory
from model.view import z3_variables

#: Fields whose *upper* type bound the induction step drops, and what their values are.
#: See :func:`prove` for why this is sound and what it buys.
UNBOUNDED_FIELDS = {
    "log_epoch": "leader epoch",
    "leader_epoch": "leader epoch",
    "q_epoch": "leader epoch",
    "log_record": "record id",
    "exposed": "record id",
    "next_record": "record id",
}


class Z3Unknown(Exception):
    """z3 answered unknown (a timeout, or a resource or incompleteness limit)."""

    def __init__(self, reason):
        super().__init__(reason)
        self.reason = reason


# ---------------------------------------------------------------------------------------
# the unrolled transition relation
# ---------------------------------------------------------------------------------------
class Unrolling:
    """State copies ``s0, s1, ...`` of one spec and the formulas linking them.

    ``relaxed``: columns whose upper type bound :meth:`typed` leaves out.
    """

    def __init__(self, spec, prefix="s", relaxed=()):
        self.spec = spec
        self.prefix = prefix
        self.relaxed = frozenset(relaxed)
        self.states = []          # list of variable lists
        self.choices = []         # action-choice Int per step

    def state(self, i):
        while len(self.states) <= i:
            self.states.append(z3_variables(self.spec.layout, f"{self.prefix}{len(self.states)}"))
        return self.states[i]

    def choice(self, i):
        while len(self.choices) <= i:
            self.choices.append(z3.Int(f"{self.prefix}.action{len(self.choices)}"))
        return self.choices[i]

    def initial(self, i=0):
        """s_i is the spec's initial state."""
        lay, row, v = self.spec.layout, self.spec.initial_row(), self.state(i)
        return z3.And([v[c] == (bool(row[c]) if lay.boolean[c] else int(row[c])) for c in range(lay.width)])

    def typed(self, i):
        """Every integer cell of s_i within its declared bounds (upper bound left out for relaxed columns)."""
        lay, v = self.spec.layout, self.state(i)
        out = []
        for c, x in enumerate(v):
            if lay.boolean[c]:
                continue
            out.append(x >= int(lay.lo[c]))
            if c not in self.relaxed:
                out.append(x <= int(lay.hi[c]))
        return z3.And(out)

    def transition(self, i):
        """T(s_i, a_i, s_{i+1}) as described in the module docstring."""
        spec = self.spec
        cur, nxt, a = self.state(i), self.state(i + 1), self.choice(i)
        n = len(spec.actions)
        parts = [a >= 0, a < n]
        chains = {}
        for inst in spec.actions:
            guard, updates = spec.z3_action(inst, cur)
            parts.append(z3.Implies(a == inst.id, guard))
            for c, t in updates.items():
                chains.setdefault(c, []).append((inst.id, t))
        for c in range(spec.layout.width):
            value = cur[c]
            for k, t in reversed(chains.get(c, [])):
                value = z3.If(a == k, t, value)
            parts.append(nxt[c] == value)
        return z3.And(parts)

    def holds(self, inv, i):
        return self.spec.z3_invariant(inv, self.state(i))

    def distinct(self, i, j):
        """s_i and s_j differ in some column."""
        return z3.Or([x != y for x, y in zip(self.state(i), self.state(j))])

    # --- decoding ----------------------------------------------------------------------
    def values(self, model, i):
        """s_i in the model as a list of Python ints (booleans as 0/1; may exceed int8 when relaxed)."""
        out = []
        for x in self.state(i):
            v = model.eval(x, model_completion=True)
            out.append(int(z3.is_true(v)) if z3.is_bool(v) else v.as_long())
        return out

    def action_ids(self, model, steps):
        return [model.eval(self.choice(i), model_completion=True).as_long() for i in range(steps)]

    def replay(self, model, n_states):
        """Steps [(ActionInstance or None, row)] from the initial row, replayed on the scalar backend.

        Raises RuntimeError if a chosen action is disabled or a replayed row
        differs from the model's: the z3 and scalar backends disagree.
        """
        spec = self.spec
        row = spec.initial_row()
        if list(map(int, row)) != self.values(model, 0):
            raise RuntimeError("internal error: the z3 model's initial state is not the spec's")
        steps = [(None, row)]
        for i, aid in enumerate(self.action_ids(model, n_states - 1)):
            inst = spec.actions[aid]
            row = spec.step(row, inst)
            if row is None:
                raise RuntimeError(f"internal error: z3 chose {inst.label} at step {i + 1} but it is disabled on replay")
            expected = self.values(model, i + 1)
            if list(map(int, row)) != expected:
                diff = [spec.layout.names[c] for c in range(len(expected)) if int(row[c]) != expected[c]]
                raise RuntimeError(f"internal error: {inst.label} at step {i + 1} reaches a different state "
                                   f"on the scalar backend than in the z3 model ({', '.join(diff[:6])})")
            steps.append((inst, row))
        return steps


def _check(solver, deadline, *assumptions):
    """solver.check under the remaining time budget; raises Z3Unknown on unknown."""
    if deadline is not None:
        remaining = deadline - time.perf_counter()
        if remaining <= 0:
            raise Z3Unknown("time limit reached")
        solver.set("timeout", max(1, int(remaining * 1000)))
    answer = solver.check(*assumptions)
    if answer == z3.unknown:
        reason = solver.reason_unknown()
        if reason in ("timeout", "canceled") or (deadline is not None and time.perf_counter() >= deadline):
            reason = "time limit reached (z3: %s)" % reason
        raise Z3Unknown(reason)
    return answer


# ---------------------------------------------------------------------------------------
# bounded model checking
# ---------------------------------------------------------------------------------------
@dataclass
class BmcResult(SearchResult):
    """A :class:`checker.bfs.SearchResult` from the BMC engine.

    Field meanings that differ from the exhaustive engine:

    - ``depth``: the deepest level (number of states, initial state = 1) at which
      every still-pending invariant was checked;
    - ``distinct_states`` and ``transitions``: 0 (BMC enumerates no states);
      ``retained_bytes`` 0; ``never_fired`` empty (not known);
    - ``complete``: always False: a bounded check proves nothing beyond its
      depth, so an invariant not violated is reported "unknown", and
      ``budget_hit`` says why the search stopped ("bmc depth N" when the
      requested depth was reached, "z3 unknown: ..." when z3 gave up or the
      time ran out);
    - each violation's ``state_id`` is -1 and ``level`` its number of states.
    """

    engine: str = "bmc"
    z3_unknown: str | None = None          # why z3 gave up (None: it never did)
    level_seconds: list = field(default_factory=list)   # cumulative seconds when each level was done

    @property
    def timed_out(self):
        return self.z3_unknown is not None


def bmc(spec, invariants, depth, timeout_s=None, progress=None):
    """Bounded model checking of the named invariants on paths of up to ``depth`` states.

    Levels are checked in order 1, 2, ..., depth (level d: paths of d states from
    the initial state), so an invariant's violation is reported at its smallest
    level, with a trace of that many states. ``timeout_s`` bounds the whole run
    (z3's timeout is the remaining time at each check); when it runs out, or z3
    answers unknown, the result has ``z3_unknown`` and ``budget_hit`` set and
    ``depth`` is the last level fully checked. ``progress(depth=, frontier=0,
    distinct=0, seconds=)`` is called after each level.
    """
    if depth < 1:
        raise ValueError("bmc depth must be at least 1")
    start = time.perf_counter()
    deadline = None if timeout_s is None else start + timeout_s
    invs = [spec.invariants[name] for name in invariants]
    pending = list(invs)
    violations = {}
    u = Unrolling(spec)
    solver = z3.Solver()
    solver.add(u.initial(0))
    done, unknown, level_seconds = 0, None, []
    try:
        for level in range(1, depth + 1):
            last = level - 1
            if last > 0:
                solver.add(u.transition(last - 1))
            _check_level(solver, u, level, pending, violations, deadline)
            done = level
            level_seconds.append(time.perf_counter() - start)
            if progress is not None:
                progress(depth=level, frontier=0, distinct=0, seconds=time.perf_counter() - start)
            if not pending:
                break
    except Z3Unknown as e:
        unknown = e.reason
    budget = None
    if unknown is not None:
        budget = f"z3 unknown: {unknown} (after level {done})"
    elif pending:
        budget = f"bmc depth {depth}"
    return BmcResult(
        invariants=[i.name for i in invs], violations=violations, distinct_states=0, transitions=0,
        depth=done, seconds=time.perf_counter() - start, peak_memory_bytes=peak_memory(), retained_bytes=0,
        complete=False, budget_hit=budget, never_fired=[], z3_unknown=unknown, level_seconds=level_seconds)


def _check_level(solver, u, level, pending, violations, deadline):
    """Find every pending invariant violated at ``level`` (a path of that many states)."""
    last = level - 1
    goals = {inv.name: u.holds(inv, last) for inv in pending}
    # One query for all of them; then one per invariant only if some is violated here.
    if _check(solver, deadline, z3.Not(z3.And(list(goals.values())))) == z3.unsat:
        for t in goals.values():
            solver.add(t)          # every state at this level satisfies them: a sound hint for deeper levels
        return
    for inv in list(pending):
        flag = z3.Bool(f"violate.{inv.name}.{level}")
        solver.add(z3.Implies(flag, z3.Not(goals[inv.name])))
        if _check(solver, deadline, flag) == z3.sat:
            steps = u.replay(solver.model(), level)
            if u.spec.holds(steps[-1][1], inv):
                raise RuntimeError(f"internal error: {inv.name} holds on replay of the z3 counterexample")
            violations[inv.name] = Violation(inv.name, -1, level, steps)
            pending.remove(inv)
        else:
            solver.add(goals[inv.name])


# ---------------------------------------------------------------------------------------
# k-induction
# ---------------------------------------------------------------------------------------
@dataclass
class ProofResult:
    """The outcome of :func:`prove`.

    - ``verdict``: "proved", "refuted", "not-inductive" or "unknown";
    - ``steps``: for "refuted", the counterexample from the initial state as
      engine steps [(ActionInstance or None, row)] (replayable, saveable with
      checker.trace.from_steps); for "not-inductive", the counterexample to
      induction as [(ActionInstance or None, decoded state dict)]: k states
      satisfying the invariant and lemmas, then one violating ``failing`` --
      consistent with the transition relation but not reachable from the initial
      state (values of relaxed fields may exceed their declared bounds);
    - ``failing``: the invariant or lemma that fails at the last state;
    - ``reason``: for "unknown", why (z3's reason, or a lemma refuted in the base case);
    - ``relaxed``: field -> kind, the fields whose upper bounds the step left out.
    """

    spec: str
    bounds: dict
    invariant: str
    lemmas: list
    k: int
    verdict: str
    seconds: float
    base_seconds: float = 0.0
    step_seconds: float = 0.0
    steps: list = field(default_factory=list)
    failing: str | None = None
    reason: str | None = None
    relaxed: dict = field(default_factory=dict)

    def violation(self):
        """The base-case counterexample as a checker.bfs.Violation (verdict "refuted" only)."""
        if self.verdict != "refuted":
            return None
        return Violation(self.invariant, -1, len(self.steps), self.steps)

    def render(self, spec):
        """The counterexample to induction (or refutation) as readable text."""
        if not self.steps:
            return f"{self.verdict}: no counterexample"
        states = [s if isinstance(s, dict) else spec.layout.decode(s) for _, s in self.steps]
        title = ("counterexample to induction" if self.verdict == "not-inductive"
                 else "counterexample from the initial state")
        return render_states(spec, states, [a for a, _ in self.steps], self.failing, title)


def relaxed_columns(spec, fields=None):
    """Columns of the fields (default UNBOUNDED_FIELDS) that exist in the spec's layout."""
    fields = UNBOUNDED_FIELDS if fields is None else fields
    lay = spec.layout
    cols = []
    for name in fields:
        if name in lay.fields:
            f = lay.fields[name]
            cols.extend(range(lay.base[name], lay.base[name] + f.size))
    return cols


def prove(spec, invariant, k, lemmas=(), timeout_s=None, relax=True, simple_path=False):
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
    out for the columns holding leader epochs (``log_epoch``, ``leader_epoch``,
    ``q_epoch``) and record ids (``log_record``, ``exposed``, ``next_record``);
    their lower bounds, and every bound of every other column (offsets, replica
    ids, flags, the ``crashes`` counter, ``acked_at``), are kept. Why this is
    sound: the step's hypothesis then ranges over a *superset* of the
    well-typed states, so an unsatisfiable step with relaxed bounds implies an
    unsatisfiable step with the exact bounds -- dropping a constraint on the
    pre-states can add counterexamples to induction, never remove one. It admits
    no behaviour the model forbids from a real state: the transition relation is
    the spec's own (guards such as ``q_epoch < E`` in elect_leader, ``next_record
    <= M`` in produce, the fixed epoch range of apply_leader_and_isr are all
    still there; a state with ``q_epoch`` beyond E simply has those actions
    disabled), and the base case runs from the exact initial state. What it buys:
    a proof cannot lean on "epochs / record ids run out" -- the inductive
    argument, and any lemma, must hold for arbitrarily large epoch and record
    values, so the lemmas are about the protocol, not about --max-epochs /
    --max-records. It is still a proof about the spec instantiated at these
    bounds (the number of LeaderAndIsr slots and record ghosts is E and M): it
    is not a parametric proof for every E and M.

    ``simple_path=True`` also requires the k+1 step states to be pairwise
    distinct (sound for the same shortest-path reason; it can only remove
    counterexamples to induction, at a quadratic cost).

    ``timeout_s`` bounds the whole proof; z3 unknown or the time running out
    gives verdict "unknown" with the reason.
    """
    if k < 1:
        raise ValueError("k must be at least 1")
    start = time.perf_counter()
    deadline = None if timeout_s is None else start + timeout_s
    names = [invariant] + [n for n in lemmas if n != invariant]
    for n in names:
        if n not in spec.invariants:
            raise KeyError(f"spec {spec.name} has no invariant {n!r}")
    relaxed_fields = {f: kind for f, kind in UNBOUNDED_FIELDS.items() if f in spec.layout.fields} if relax else {}
    result = ProofResult(spec.name, dict(spec.bounds), invariant, list(names[1:]), k, "unknown", 0.0,
                         relaxed=relaxed_fields)

    def finish(**kw):
        for key, v in kw.items():
            setattr(result, key, v)
        result.seconds = time.perf_counter() - start
        return result

    # --- base case -------------------------------------------------------------------------
    base = bmc(spec, names, k, timeout_s=None if deadline is None else max(deadline - time.perf_counter(), 0.001))
    result.base_seconds = base.seconds
    if base.violations:
        first = min(base.violations.values(), key=lambda v: (v.level, v.invariant != invariant))
        if invariant in base.violations:
            v = base.violations[invariant]
            return finish(verdict="refuted", steps=v.steps, failing=invariant)
        return finish(verdict="unknown", steps=first.steps, failing=first.invariant,
                      reason=f"lemma {first.invariant} is violated at level {first.level} "
                             f"(a real counterexample: the lemma is wrong)")
    if base.z3_unknown is not None:
        return finish(verdict="unknown", reason=f"base case: {base.z3_unknown}")

    # --- induction step ------------------------------------------------------------------------
    t0 = time.perf_counter()
    u = Unrolling(spec, prefix="t", relaxed=relaxed_columns(spec, relaxed_fields) if relax else ())
    invs = [spec.invariants[n] for n in names]
    solver = z3.Solver()
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
        answer = _check(solver, deadline, z3.Not(z3.And(list(goals.values()))))
    except Z3Unknown as e:
        return finish(verdict="unknown", reason=f"induction step: {e.reason}", step_seconds=time.perf_counter() - t0)
    if answer == z3.unsat:
        return finish(verdict="proved", step_seconds=time.perf_counter() - t0)
    model = solver.model()
    ids = u.action_ids(model, k)
    decoded = [spec.layout.decode(u.values(model, i)) for i in range(k + 1)]
    failing = [n for n, g in goals.items() if z3.is_false(model.eval(g, model_completion=True))]
    steps = [(None, decoded[0])] + [(spec.actions[a], decoded[i + 1]) for i, a in enumerate(ids)]
    return finish(verdict="not-inductive", steps=steps, failing=failing[0] if failing else None,
                  reason=("fails at the last state: " + ", ".join(failing)) if failing else None,
                  step_seconds=time.perf_counter() - t0)


# ---------------------------------------------------------------------------------------
# rendering
# ---------------------------------------------------------------------------------------
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
