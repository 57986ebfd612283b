"""Counterexample minimization: delta debugging over the steps, then simpler parameters.

API (the CLI's ``isrcheck minimize`` calls this)::

    minimize(spec, steps_or_trace, invariant=None, *, backend=None, reduce=True,
             time_limit=None) -> Minimized

``steps_or_trace`` is any of: a :class:`checker.trace.Trace` (as loaded from a
file; ``invariant`` defaults to the trace's), engine steps
``[(ActionInstance or None, row)]`` (what ``checker.bfs`` and
``checker.fuzz`` produce), a list of ``ActionInstance``, or a list of
``(action name, params)`` pairs. Recorded states are not trusted: only the
actions are kept and replayed.

A candidate is *valid* when, replayed from the initial state, every step is
enabled and ``invariant`` holds before the last step and fails after it (a
candidate that breaks it earlier is cut there: that prefix is valid and
shorter). Starting from the input (cut at its first violation), the search

1. ddmin (Zeller's delta debugging) over the steps: drop chunks of steps,
   halving the chunk size down to single steps, while the result stays valid;
2. for every step, tries the same action with other parameters (lowest
   first): a replacement is kept when it stays valid and leads to a shorter
   trace or to the same length with smaller parameters;

and repeats both until neither changes anything. Candidates are only ever
accepted when no longer than the current trace, so the result is never longer
than the input.

The result is a :class:`Minimized`: a list of engine steps
``[(ActionInstance or None, row)]`` (rows replayed on the scalar backend, so the
result can go straight into ``checker.trace.from_steps``) with ``before`` and
``after`` (number of actions in the input and in the result) and ``replays``.

``backend`` is anything with the scalar interface of a Spec (``initial_row()``,
``step(row, inst)``, ``holds(row, inv)``), e.g. ``checker.fuzz.CompiledModel.of(spec).backend()``
to search faster; the result is always replayed on ``spec`` itself, and if
that replay disagrees the search is redone on ``spec``.
``reduce=False`` only validates and cuts the input (no search).
``time_limit`` (seconds) stops the search early with the best trace so far.

Raises ``ValueError`` when the input does not violate ``invariant`` (a step
not enabled, or the invariant never fails).
"""
from __future__ import annotations

import time


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
    from checker.trace import Trace
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
        inst = spec.action_named(name, params)
        if inst is None:
            label = f"{name}({', '.join(f'{a}={v}' for a, v in params.items())})"
            raise ValueError(f"step {k}: no action {label} in spec {spec.name}")
        out.append(inst)
    return out


class _Replayer:
    """Replays candidate action-id lists, caching every prefix reached.

    A cached prefix maps to (row, whether the invariant holds there); every
    shorter prefix of a cached one is cached and holds (replay stops at the
    first violation). A step that is not enabled any more is repaired: the
    enabled instance of the same action with the nearest parameters takes its
    place (removing an election renumbers the epochs after it, say).
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

    def run(self, ids, repair=True):
        """The steps actually taken, cut after the first violation; None if it never fails or a step cannot be taken."""
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
                for alt in self.nearest[i]:
                    nxt = b.step(row, alt)
                    if nxt is not None:
                        i = alt.id
                        break
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


def _search(spec, backend, inv, ids, deadline):
    rp = _Replayer(spec, backend, inv)

    def better(got, c):
        return got is not None and (len(got) < len(c) or (len(got) == len(c) and got < c))

    def out_of_time():
        return deadline is not None and time.monotonic() > deadline

    def ddmin(c):
        n = 2
        while len(c) >= 2 and not out_of_time():
            size = len(c) / n
            chunks = [c[round(i * size):round((i + 1) * size)] for i in range(n)]
            reduced = False
            for i in range(n):
                complement = [x for j, ch in enumerate(chunks) if j != i for x in ch]
                got = rp.run(complement)
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
            current = spec.actions[c[k]]
            for alt in by_name[current.name]:
                if alt.id >= current.id:
                    break
                got = rp.run(c[:k] + [alt.id] + c[k + 1:])
                if better(got, c):
                    c = got
                    break
            k += 1
        return c

    ids = rp.run(ids, repair=False)
    if ids is None:
        return None, rp.replays
    while not out_of_time():
        before = ids
        ids = replace_params(ddmin(ids))
        if not better(ids, before):
            break
    return ids, rp.replays


def _replay_on_spec(spec, inv, ids):
    """Engine steps for ``ids`` on the scalar backend, or None if they do not reproduce the violation."""
    row = spec.initial_row()
    steps = [(None, row)]
    for k, i in enumerate(ids):
        if not spec.holds(row, inv):
            return None
        inst = spec.actions[i]
        row = spec.step(row, inst)
        if row is None:
            return None
        steps.append((inst, row))
    return steps if not spec.holds(row, inv) else None


def minimize(spec, steps_or_trace, invariant=None, *, backend=None, reduce=True, time_limit=None):
    """The shortest counterexample delta debugging finds; see the module doc."""
    from checker.trace import Trace
    if invariant is None:
        if not isinstance(steps_or_trace, Trace):
            raise ValueError("minimize needs the invariant (only a Trace names its own)")
        invariant = steps_or_trace.invariant
    if invariant not in spec.invariants:
        raise ValueError(f"spec {spec.name} has no invariant {invariant!r}")
    inv = spec.invariants[invariant]
    actions = _actions(spec, steps_or_trace)
    ids = [a.id for a in actions]
    deadline = None if time_limit is None else time.monotonic() + time_limit
    replays = 0

    if not reduce:
        result = _Replayer(spec, spec, inv).run(ids, repair=False)
        if result is None:
            raise ValueError(f"the trace does not violate {invariant} on replay")
    else:
        result = None
        if backend is not None:
            result, replays = _search(spec, backend, inv, ids, deadline)
            if result is not None and _replay_on_spec(spec, inv, result) is None:
                result = None                       # the fast backend disagrees: trust only the spec
        if result is None:
            result, more = _search(spec, spec, inv, ids, deadline)
            replays += more
        if result is None:
            raise ValueError(f"the trace does not violate {invariant} on replay")
    steps = _replay_on_spec(spec, inv, result)
    if steps is None:                               # pragma: no cover - _search validated it on spec
        raise RuntimeError("internal error: minimized trace does not reproduce on the scalar backend")
    out = Minimized(steps)
    out.before, out.after, out.replays = len(actions), len(result), replays
    return out
