"""A spec's transition relation over z3 terms, unrolled over copies of the state vector.

``s0, s1, ...`` (one z3 Int/Bool per state column, from :func:`model.view.z3_variables`), plus one
action-choice variable ``a_i`` per step, an Int naming the action instance (``spec.actions[a_i]``)
that leads from ``s_i`` to ``s_{i+1}``::

    T(s_i, a_i, s_{i+1}) =  0 <= a_i < n
                          /\\  AND_k  (a_i = k  =>  guard_k(s_i))
                          /\\  AND_c  s_{i+1}[c] = ite(a_i = k1, upd_k1[c], ite(a_i = k2, upd_k2[c], ... s_i[c]))

where the ``ite`` chain for column ``c`` lists only the instances that write ``c``. Given the range
constraint this is exactly the disjunction over action instances ``OR_k (a_i = k /\\ guard_k /\\
updates_k /\\ unchanged columns)``, written so that each column's next value is one term. The chosen
instance is read off the model, and a path is replayed on the scalar backend (whose states must equal
the model's: a disagreement is an internal error). Used by k-induction (checker/symbolic/induction.py, on
unbounded Ints) and as the template of the CNF encoding (checker/symbolic/cnf.py).
"""
from __future__ import annotations

import time

import z3

from isrcheck.checker.engine import stop
from isrcheck.model.view import z3_variables
from isrcheck.model import backends


class Z3Unknown(Exception):
    """z3 answered unknown (a timeout, or a resource or incompleteness limit)."""

    def __init__(self, reason):
        super().__init__(reason)
        self.reason = reason


class Stopped(Z3Unknown):
    """A stop request (checker.engine.stop: a signal, the memory limit) ended the solving; the reason is its name."""


# ---------------------------------------------------------------------------------------
# the unrolled transition relation (Int/Bool terms)
# ---------------------------------------------------------------------------------------
class Unrolling:
    """State copies ``<prefix>0, <prefix>1, ...`` of one spec and the Int/Bool formulas linking them.

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
        a = self.choice(i)
        return z3.And([a >= 0, a < len(self.spec.actions)]
                      + step_relation(self.spec, self.state(i), self.state(i + 1), lambda k: a == k))

    def holds(self, inv, i):
        return backends.symbolic(self.spec).invariant(inv, self.state(i))

    def distinct(self, i, j):
        """s_i and s_j differ in some column."""
        return z3.Or([x != y for x, y in zip(self.state(i), self.state(j))])

    # --- decoding ----------------------------------------------------------------------
    def values(self, model, i):
        """s_i in the model as a list of Python ints (booleans as 0/1; may exceed int8 when relaxed)."""
        return [_value(model, x) for x in self.state(i)]

    def action_ids(self, model, steps):
        return [_value(model, self.choice(i)) for i in range(steps)]


def step_relation(spec, cur, nxt, chosen):
    """The conjuncts of T(cur, nxt): ``chosen(k)`` (a Bool term: instance k is the step's action) implies
    k's guard, and each column of ``nxt`` is the ``ite`` chain over the instances that write it."""
    parts, chains = [], {}
    for inst in spec.actions:
        guard, updates = backends.symbolic(spec).action(inst, cur)
        parts.append(z3.Implies(chosen(inst.id), guard))
        for c, t in updates.items():
            chains.setdefault(c, []).append((inst.id, t))
    for c in range(spec.layout.width):
        value = cur[c]
        for k, t in reversed(chains.get(c, [])):
            value = z3.If(chosen(k), t, value)
        parts.append(nxt[c] == value)
    return parts


def _value(model, x):
    v = model.eval(x, model_completion=True)
    if z3.is_bool(v):
        return int(z3.is_true(v))
    if z3.is_bv(v):
        return v.as_signed_long()
    return v.as_long()


def replay_path(spec, values, action_ids, n_states):
    """Steps [(ActionInstance or None, row)] from the initial row, replayed on the scalar backend.

    ``values(i)`` is state i of the z3 model as ints. Raises RuntimeError if a
    chosen action is disabled or a replayed row differs from the model's: the
    z3 and scalar backends disagree.
    """
    row = backends.scalar(spec).initial_row()
    if list(map(int, row)) != values(0):
        raise RuntimeError("internal error: the z3 model's initial state is not the spec's")
    steps = [(None, row)]
    for i, aid in enumerate(action_ids[:n_states - 1]):
        inst = spec.actions[aid]
        row = backends.scalar(spec).step(row, inst)
        if row is None:
            raise RuntimeError(f"internal error: z3 chose {inst.label} at step {i + 1} but it is disabled on replay")
        expected = values(i + 1)
        if list(map(int, row)) != expected:
            diff = [spec.layout.names[c] for c in range(len(expected)) if int(row[c]) != expected[c]]
            raise RuntimeError(f"internal error: {inst.label} at step {i + 1} reaches a different state "
                               f"on the scalar backend than in the z3 model ({', '.join(diff[:6])})")
        steps.append((inst, row))
    return steps


def solve(solver, deadline, assumptions=()):
    """Check the z3 solver under the assumptions; raises Z3Unknown on unknown or when the deadline passes.

    Returns the model when satisfiable, None when unsatisfiable.
    """
    if deadline is not None:
        remaining = deadline - time.perf_counter()
        if remaining <= 0:
            raise Z3Unknown("time limit reached")
        solver.set("timeout", max(1, int(remaining * 1000)))
    solver.set("ctrl_c", False)            # z3 would take SIGINT for itself; checker.engine.stop wakes it instead
    if stop.reason():                      # asked before the call: z3 forgets an interrupt when a check starts
        raise Stopped(stop.reason())
    with stop.on_stop(solver.ctx.interrupt):
        answer = solver.check(*assumptions)
    if stop.reason():
        raise Stopped(stop.reason())
    if answer == z3.unknown:
        reason = solver.reason_unknown()
        if reason in ("timeout", "canceled") or (deadline is not None and time.perf_counter() >= deadline):
            reason = f"time limit reached (z3: {reason})"
        raise Z3Unknown(reason)
    return solver.model() if answer == z3.sat else None
