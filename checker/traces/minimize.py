"""Counterexample minimization: shortcuts through the state space, delta debugging over the steps, simpler parameters.

API (the CLI's ``isrcheck minimize`` calls this)::

    minimize(spec, steps_or_trace, invariant=None, *, backend=None, reduce=True,
             time_limit=None, clock=time.monotonic) -> Minimized

``steps_or_trace`` is any of: a :class:`checker.traces.trace.Trace` (as loaded from a
file; ``invariant`` defaults to the trace's), engine steps
``[(ActionInstance or None, row)]`` (what ``checker.exhaustive.bfs`` and
``checker.fuzzing.fuzz`` produce), a list of ``ActionInstance``, or a list of
``(action name, params)`` pairs. Recorded states are not trusted: only the
actions are kept and replayed.

A candidate is *valid* when, replayed from the initial state, every step is
enabled and ``invariant`` holds before the last step and fails after it (a
candidate that breaks it earlier is cut there: that prefix is valid and
shorter). Starting from the input (cut at its first violation), the search
runs three phases, each only while time is left:

- a local search (steps 2-4 below, without step 1) until nothing changes;
- a breadth-first search from the initial state
  (:func:`checker.traces.shortcuts.explore`) within ``EXPLORE_STEPS``
  transitions: when it reaches a violation, that is a shortest
  counterexample, and the result (its outcome is kept per spec instance and
  invariant, so the next trace of the same invariant costs nothing);
- otherwise the local search again, with step 1 in each round.

The steps of a round:

1. search the trace's neighbourhood: breadth-first again, expanding only
   the states within d steps of a state of the trace, for d = 1, 2, ... up to
   ``SHORTCUT_DEPTH`` while a search stays within ``SHORTCUT_STEPS``
   transitions. A state reached that equals a later state of the trace, or
   that already violates the invariant, cuts out everything in between: this
   reorders steps and replaces a stretch of the trace by a different, shorter
   one, which dropping steps cannot do;
2. ddmin (Zeller's delta debugging) over the steps: drop chunks of steps,
   halving the chunk size down to single steps, while the result stays valid;
3. for every step, tries the same action with smaller parameters: a
   replacement is kept when the result stays valid and is shorter, or as long
   with smaller parameters;
4. when none of these helps, tries dropping every pair of steps (an election and the
   LeaderAndIsr it sent, say);

On the scalar backend, or the compiled backend's interface over it (a
hundred times slower), the search from the initial state is skipped and the
neighbourhood search only looks one step off the trace, within a hundredth of
its cap. The caps are set for states of up to ``CAP_CELLS`` cells (every
spec at its default bounds); for wider states (more replicas) they shrink in
proportion, a transition costing about that much more. When a candidate's step is no longer enabled (dropping an election renumbers the epochs after it) it is repaired:
the enabled instance of the same action whose effect is closest to what the
step did before takes its place. The first local search runs twice, with that
repair and with a plain nearest-parameters repair, and keeps the shorter end.
A candidate is only accepted when it is shorter than the current trace, or as
long with smaller parameters, so the result is never longer than the input.
For the same input, spec and caps the result is the same (unless the time
limit or a stop request cuts the search short).

The result is a :class:`Minimized`: a list of engine steps
``[(ActionInstance or None, row)]`` (rows replayed on the scalar backend, so the
result can go straight into ``checker.traces.trace.from_steps``) with ``before`` and
``after`` (number of actions in the input and in the result), ``reduction``
(the pair) and ``replays`` (candidates tried).

``backend`` runs the candidates: by default (``None``) the spec compiled by
:func:`model.backends.compiled` (about a hundred times faster than the
scalar backend), ``"scalar"`` the spec's scalar backend, or any object with
the interface of :class:`model.backends.Scalar` (``initial_row()``, ``step(row, inst)``,
``holds(row, inv)``). The result is always replayed on the spec's scalar
backend; if that replay disagrees, the search is redone there.
``reduce=False`` only validates and cuts the input (no search).
``time_limit`` (seconds of ``clock``; ``time.process_time`` makes it CPU
time, which the machine's load does not cut short), or a stop request
(:mod:`checker.engine.stop`: a signal), stops the search early with the best trace so far
(the breadth-first searches look at the clock every few hundred states).

Raises ``ValueError`` when the input does not violate ``invariant`` (a step
not enabled, or the invariant never fails), names an action the spec does not
have, or ``invariant`` is unknown.
"""
from __future__ import annotations

import time
import weakref

import numpy as np

from isrcheck.checker.engine import stop
from isrcheck.checker.traces.shortcuts import explore
from isrcheck.model import backends

EXPLORE_STEPS = 600_000     # the breadth-first search from the initial state (about a second on the compiled backend)
SHORTCUT_STEPS = 50_000     # each search of a trace's neighbourhood
SHORTCUT_DEPTH = 8          # at most this many steps off the trace
SCALAR_SLOWER = 100         # the scalar backend's cap is this many times smaller
CAP_CELLS = 100             # the caps are for states of up to this many cells; wider ones shrink them in proportion

_shortest = weakref.WeakKeyDictionary()     # spec -> {(invariant, backend type): shortest ids, or None}


class Minimized(list):
    """Engine steps ``[(ActionInstance or None, row)]`` with the reduction achieved."""

    before: int = 0
    after: int = 0
    replays: int = 0

    @property
    def reduction(self):
        return self.before, self.after


def _actions(spec, steps_or_trace):
    """The action instances of ``spec`` named by any accepted input form."""
    from isrcheck.checker.traces.trace import Trace
    if isinstance(steps_or_trace, Trace):
        items = [(name, params) for name, params, _ in steps_or_trace.steps]
    else:
        items = list(steps_or_trace)
    out = []
    for k, item in enumerate(items):
        if isinstance(item, (tuple, list)) and item and not isinstance(item[0], str):
            item = item[0]                              # engine step (instance or None, row)
        if item is None:
            continue                                    # the initial state
        if isinstance(item, (tuple, list)) and len(item) >= 2 and isinstance(item[0], str):
            name, params = item[0], dict(item[1] or {})
        elif hasattr(item, "name") and hasattr(item, "params"):
            name, params = item.name, dict(item.params)
        else:
            raise ValueError(f"step {k}: not an action ({item!r})")
        inst = backends.action_named(spec, name, params)
        if inst is None:
            label = f"{name}({', '.join(f'{a}={v}' for a, v in params.items())})"
            raise ValueError(f"step {k}: no action {label} in spec {spec.name}")
        out.append(inst)
    return out


def _diff(a, b):
    """{column: new value} of the cells that differ between two rows."""
    a, b = np.asarray(a), np.asarray(b)
    return {int(c): int(b[c]) for c in np.flatnonzero(a != b)}


class _Replayer:
    """Replays candidate action-id lists, caching every prefix reached.

    A cached prefix maps to (row, whether the invariant holds there); every
    shorter prefix of a cached one is cached and holds (replay stops at the
    first violation).

    A step that is not enabled any more is repaired: among the enabled
    instances of the same action, the one whose effect (the cells it changes,
    and to what) is closest to what the step did in the trace it came from
    takes its place, the nearest parameters breaking ties. Removing an election
    renumbers the epochs after it, say, and the LeaderAndIsr a broker applied
    is then found under its new epoch.
    """

    def __init__(self, spec, backend, inv):
        self.actions, self.backend, self.inv = spec.actions, backend, inv
        row = backend.initial_row()
        self.cache = {(): (row, backend.holds(row, inv))}
        self.replays = 0
        by_name = {}
        for a in spec.actions:
            by_name.setdefault(a.name, []).append(a)
        self.nearest = {}
        for a in spec.actions:
            def distance(b, a=a):
                return (sum(abs(x - y) for x, y in zip(a.params.values(), b.params.values())),
                        tuple(b.params.values()))
            self.nearest[a.id] = [b for b in sorted(by_name[a.name], key=distance) if b.id != a.id]

    def rows(self, ids):
        """The rows along a trace already run (every prefix is cached)."""
        ids = tuple(ids)
        return [self.cache[ids[:j]][0] for j in range(len(ids) + 1)]

    def effects(self, ids):
        rows = self.rows(ids)
        return [_diff(a, b) for a, b in zip(rows, rows[1:])]

    def _repair(self, row, i, intent):
        b = self.backend
        best = None
        for rank, alt in enumerate(self.nearest[i]):
            nxt = b.step(row, alt)
            if nxt is None:
                continue
            if intent is None:
                return alt.id, nxt
            got = _diff(row, nxt)
            score = sum(1 for c in set(intent) | set(got) if intent.get(c, row[c]) != got.get(c, row[c]))
            if best is None or score < best[0]:
                best = (score, alt.id, nxt)
                if score == 0:
                    break
        return (best[1], best[2]) if best else (i, None)

    guided = True          # repairs follow the effect a step had (False: nearest parameters only)

    def run(self, ids, intents=None, repair=True):
        """The steps actually taken, cut after the first violation; None if it never fails or a step cannot be taken.

        ``intents[j]``, when given, is the effect step j had where it came from (guides repairs).
        """
        self.replays += 1
        b, inv, cache, actions = self.backend, self.inv, self.cache, self.actions
        ids = tuple(ids)
        k = len(ids)
        while ids[:k] not in cache:
            k -= 1
        row, ok = cache[ids[:k]]
        if not ok:
            return list(ids[:k])
        taken = list(ids[:k])
        for j in range(k, len(ids)):
            i = ids[j]
            nxt = b.step(row, actions[i])
            if nxt is None and repair:
                i, nxt = self._repair(row, i, intents[j] if intents is not None and self.guided else None)
            if nxt is None:
                return None
            row = nxt
            taken.append(i)
            ok = b.holds(row, inv)
            if len(cache) < 200_000:
                cache[tuple(taken)] = (row, ok)
            if not ok:
                return taken
        return None


def _shortest_from_initial(spec, backend, inv, cap, out_of_time):
    """The exhaustive search's answer within ``cap`` states (None: not within it), once per spec and invariant."""
    known = _shortest.setdefault(spec, {})
    key = (inv.name, type(backend), type(getattr(backend, "model", None)), cap)
    if key not in known:
        found = explore(backend, inv, cap=cap, out_of_time=out_of_time)
        if found is None and out_of_time():
            return None                             # cut short: not an answer to keep
        known[key] = found
    return known[key]


def _search(spec, backend, inv, ids, deadline, clock=time.monotonic, scale=1):
    """The search of the module doc on ``backend``; ``scale`` (the scalar backend's slowness) divides its caps."""
    rp = _Replayer(spec, backend, inv)
    slow = scale > 1
    scale *= max(1.0, len(spec.layout.names) / CAP_CELLS)         # a transition costs in proportion to the state

    def better(got, c):
        return got is not None and (len(got) < len(c) or (len(got) == len(c) and got < c))

    def out_of_time():
        return (deadline is not None and clock() > deadline) or stop.reason() is not None

    def without(c, eff, drop):
        """Run c without the steps at positions ``drop``."""
        keep = [k for k in range(len(c)) if k not in drop]
        return rp.run([c[k] for k in keep], [eff[k] for k in keep])

    def ddmin(c):
        n = 2
        while len(c) >= 2 and not out_of_time():
            eff = rp.effects(c)
            size = len(c) / n
            chunks = [range(round(i * size), round((i + 1) * size)) for i in range(n)]
            reduced = False
            for ch in chunks:
                got = without(c, eff, set(ch))
                if got is not None and len(got) < len(c):
                    c, n, reduced = got, max(n - 1, 2), True
                    break
            if not reduced:
                if n >= len(c):
                    break
                n = min(len(c), 2 * n)
        return c

    by_name = {}
    for a in spec.actions:
        by_name.setdefault(a.name, []).append(a)

    def replace_params(c):
        """Each step in turn: the same action with smaller parameters (ids of one action are in parameter order)."""
        k = 0
        while k < len(c) and not out_of_time():
            eff = rp.effects(c)
            current = spec.actions[c[k]]
            for alt in by_name[current.name]:
                if alt.id >= current.id:
                    break
                got = rp.run(c[:k] + [alt.id] + c[k + 1:], eff)
                if better(got, c):
                    c = got
                    break
            k += 1
        return c

    near = {}

    def shortcut(c):
        """The shortest violation near the trace's states: one step off it, then more while within the cap."""
        key = tuple(c)
        if key not in near:
            rows, best = rp.rows(c), c
            for depth in range(1, (1 if slow else SHORTCUT_DEPTH) + 1):
                found = explore(backend, inv, rows, depth, int(SHORTCUT_STEPS / scale), out_of_time)
                if found is None:
                    if out_of_time():
                        return best
                    break                           # the cap: a deeper search would only hit it sooner
                got = rp.run(found, repair=False)
                if better(got, best):
                    best = got
            near[key] = best
        return near[key]

    def remove_pairs(c):
        """Drop two steps at once (an election and the LeaderAndIsr it sent, say)."""
        eff = rp.effects(c)
        for i in range(len(c)):
            for j in range(i + 1, len(c)):
                if out_of_time():
                    return c
                got = without(c, eff, {i, j})
                if got is not None and len(got) < len(c):
                    return got
        return c

    start = rp.run(ids, repair=False)
    if start is None:
        return None, rp.replays
    def local(ids, shortcuts):
        """Each reduction in turn until none helps (the neighbourhood search first, with ``shortcuts``)."""
        while not out_of_time():
            before = ids
            ids = replace_params(ddmin(shortcut(ids) if shortcuts else ids))
            if not better(ids, before):
                ids = remove_pairs(ids)
                if not better(ids, before):
                    break
        return ids

    best = start
    for guided in (True, False):        # two repair strategies, each a local search: keep the better end
        rp.guided = guided
        ids = local(start, False)
        if better(ids, best):
            best = ids
    if best and not slow and not out_of_time():
        found = _shortest_from_initial(spec, backend, inv, int(EXPLORE_STEPS / scale), out_of_time)
        got = None if found is None else rp.run(found, repair=False)
        if got is not None:                 # a shortest counterexample: nothing shorter to look for
            return (got if better(got, best) else best), rp.replays
    rp.guided = True
    ids = local(best, True)
    return (ids if better(ids, best) else best), rp.replays


def _slowness(backend):
    """SCALAR_SLOWER for the scalar backend (or the compiled backend's interface over it), else 1."""
    model = getattr(backend, "model", backend)
    return SCALAR_SLOWER if isinstance(model, (backends.Scalar, backends.ScalarTuples)) else 1


def _replay_on_spec(spec, inv, ids):
    """Engine steps for ``ids`` on the scalar backend, or None if they do not reproduce the violation."""
    row = backends.scalar(spec).initial_row()
    steps = [(None, row)]
    for k, i in enumerate(ids):
        if not backends.scalar(spec).holds(row, inv):
            return None
        inst = spec.actions[i]
        row = backends.scalar(spec).step(row, inst)
        if row is None:
            return None
        steps.append((inst, row))
    return steps if not backends.scalar(spec).holds(row, inv) else None


def minimize(spec, steps_or_trace, invariant=None, *, backend=None, reduce=True, time_limit=None,
             clock=time.monotonic):
    """The shortest counterexample the search finds; see the module doc."""
    from isrcheck.checker.traces.trace import Trace
    if invariant is None:
        if not isinstance(steps_or_trace, Trace):
            raise ValueError("minimize needs the invariant (only a Trace names its own)")
        invariant = steps_or_trace.invariant
    if invariant not in spec.invariants:
        raise ValueError(f"spec {spec.name} has no invariant {invariant!r}")
    inv = spec.invariants[invariant]
    actions = _actions(spec, steps_or_trace)
    ids = [a.id for a in actions]
    deadline = None if time_limit is None else clock() + time_limit
    replays = 0

    scalar = backends.scalar(spec)
    if not reduce:
        result = _Replayer(spec, scalar, inv).run(ids, repair=False)
        if result is None:
            raise ValueError(f"the trace does not violate {invariant} on replay")
    else:
        result = None
        if backend is None:
            backend = backends.compiled(spec).backend()
        elif backend == "scalar":
            backend = scalar
        if backend is not scalar:
            result, replays = _search(spec, backend, inv, ids, deadline, clock, _slowness(backend))
            if result is not None and _replay_on_spec(spec, inv, result) is None:
                result = None                       # the fast backend disagrees: trust only the spec
        if result is None:
            result, more = _search(spec, scalar, inv, ids, deadline, clock, _slowness(scalar))
            replays += more
        if result is None:
            raise ValueError(f"the trace does not violate {invariant} on replay")
    steps = _replay_on_spec(spec, inv, result)
    if steps is None:                               # pragma: no cover - _search validated it on spec
        raise RuntimeError("internal error: minimized trace does not reproduce on the scalar backend")
    out = Minimized(steps)
    out.before, out.after, out.replays = len(actions), len(result), replays
    return out
