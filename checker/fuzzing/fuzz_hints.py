"""Hints for the fuzzer: shortest counterexamples the exhaustive search finds at small bounds.

A bug that shows at a spec's small bounds usually shows at larger ones along the same steps, with the
extra replicas left out of the way. :func:`hints` runs the exhaustive engine (checker/exhaustive/bfs.py,
with symmetry, one thread) on the spec's instance at small bounds: every bound of kind ``"bound"``
(replicas, epochs, crashes, records, ...) lowered to its default, every option as in the spec. Its search
is capped by a number of states (``HINT_STATES``), not by time, so the hints, and the fuzz that follows
them, are the same for the same seed whatever the machine's load. For each requested invariant it breaks
there, the hint is the counterexample's steps as (action name, parameters), the replicas in them mapped
later onto the replicas a run lets act (:func:`mapped`).

What the hints name comes from the spec alone (its actions, their parameter domains, its bound
declarations): the fuzzer stays free of Kafka names.
"""
from __future__ import annotations

HINT_STATES = 1_500_000      # most distinct states of the search at small bounds


def small_instance(spec):
    """The spec at small bounds (each ``"bound"`` lowered to its default, options kept), or None when that
    instance is the spec itself or does not load."""
    bounds = dict(spec.bounds)
    for name, decl in type(spec).bound_declarations().items():
        if decl.kind == "bound" and name in bounds:
            bounds[name] = min(bounds[name], decl.default)
    if bounds == dict(spec.bounds):
        return None
    try:
        return type(spec)(**bounds)
    except (TypeError, ValueError):
        return None


def hints(spec, names, max_states=HINT_STATES):
    """(small spec, {invariant: [(action name, params)]}) for each of ``names`` the exhaustive search at small
    bounds breaks within ``max_states`` states; ({} when the spec has no smaller instance)."""
    from isrcheck.checker.engine.budget import Budget
    from isrcheck.checker.exhaustive.bfs import search
    small = small_instance(spec)
    if small is None:
        return None, {}
    result = search(small, list(names), symmetry=True, budget=Budget(max_states=max_states), workers=1)
    return small, {n: [(a.name, dict(a.params)) for a, _ in v.steps if a is not None]
                   for n, v in result.violations.items()}


def instance_index(spec):
    """(action name, parameters as a sorted tuple) -> the instance's id in ``spec``."""
    return {(a.name, tuple(sorted(a.params.items()))): a.id for a in spec.actions}


def mapped(small, spec, steps, index, onto):
    """The instance ids in ``spec`` of a hint's ``steps`` (from ``small``), replica ``r`` of ``small`` mapped
    onto replica ``onto[r]``: a parameter of the replica domain maps its replica; one of a wider domain (a
    replica or none) maps a replica and keeps the others in their place after the replicas. A step that has
    no instance in ``spec`` is left out."""
    dom = small.replica_domain
    n_small, n_big = len(getattr(small, dom)), len(getattr(spec, dom))
    domains = {a.name: a.fn.__isrcheck_action__ for a in small.actions}
    out = []
    for name, params in steps:
        new = {}
        for p, v in params.items():
            d = domains[name][p]
            if d == dom:
                v = onto[v]
            elif set(getattr(small, dom)) < set(getattr(small, d)):
                v = onto[v] if v < n_small else v - n_small + n_big
            new[p] = v
        i = index.get((name, tuple(sorted(new.items()))))
        if i is not None:
            out.append(i)
    return out
