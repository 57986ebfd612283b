"""Shortcuts through the state space for counterexample minimization: breadth-first search near a trace.

API (:mod:`checker.traces.minimize` calls this)::

    explore(backend, inv, along=(), depth=None, cap=600_000, out_of_time=...) -> list of action ids or None

A breadth-first search from the backend's initial state for the shortest path
to a state where ``inv`` fails. ``depth=None`` searches every state; otherwise
only the states within ``depth`` steps of a state of ``along`` (the rows of a
known counterexample, the initial one first) are expanded, so the search
follows the trace and tries every detour of up to ``depth`` steps from each of
its states: a state reached that equals a later state of the trace, or that
already violates ``inv``, cuts out everything in between, whatever the order of
the steps that got there. Since the trace itself lies in that neighbourhood, a
search near a trace always finds a violation no longer than the trace.

The search stops, returning None, after ``cap`` transitions (successors
computed, whether new or not) or when
``out_of_time()`` says so (checked every few hundred expansions). It is
deterministic: states are expanded in breadth-first order, each state's
enabled instances in the backend's order. States are told apart by their
hash (a tuple's is the same in every process).

``backend`` is any object with the interface of :class:`model.backends.Scalar`
(``initial_row()``, ``step(row, inst)``, ``holds(row, inv)``, ``enabled(row)``);
one with a ``successors(row)`` method (``[(instance id, row)]``) is expanded
through it, in one guard evaluation per state. Rows are int8 cells (numpy rows
or tuples). The search knows nothing of the spec beyond that interface.
"""
from __future__ import annotations

_CHECK_EVERY = 256          # expansions between two looks at the clock


def _key(row):
    """A state's key: its bytes (numpy rows), or the hash of a tuple (8 bytes a state, not a copy of the tuple).

    Two tuples with one hash would be taken for one state: a path found is
    still a real path (the caller replays it), at worst not the shortest.
    """
    return row.tobytes() if hasattr(row, "tobytes") else hash(row)


def _successors(backend):
    fast = getattr(backend, "successors", None)
    if fast is not None:
        return fast

    def successors(row):
        return [(a.id, backend.step(row, a)) for a in backend.enabled(row)]
    return successors


def _path(parent, k):
    ids = []
    while parent[k] is not None:
        k, i = parent[k]
        ids.append(i)
    return ids[::-1]


def explore(backend, inv, along=(), depth=None, cap=600_000, out_of_time=lambda: False):
    """Action ids of the shortest path to a violation of ``inv`` found; None when none is within the cap or time."""
    successors = _successors(backend)
    start = backend.initial_row()
    if not backend.holds(start, inv):
        return []
    trace = {_key(r) for r in along}
    k0 = _key(start)
    parent = {k0: None}                 # state -> (the state it was first reached from, action id)
    layer = [(start, k0, 0)]            # (row, key, steps since the last state of the trace)
    expanded = transitions = 0
    while layer:
        following = []
        for row, k, off in layer:
            if expanded % _CHECK_EVERY == 0 and out_of_time():
                return None
            expanded += 1
            for i, new in successors(row):
                transitions += 1
                if transitions > cap:
                    return None
                nk = _key(new)
                if nk in parent:
                    continue
                parent[nk] = (k, i)
                if not backend.holds(new, inv):
                    return _path(parent, nk)
                o = 0 if nk in trace else off + 1
                if depth is None or o < depth:
                    following.append((new, nk, o))
        layer = following
    return None
