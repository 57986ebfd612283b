"""Hints for the fuzzer: shortest counterexamples the exhaustive search finds at small bounds.

A bug that shows at a spec's small bounds usually shows at larger ones along the same steps, with the
extra replicas left out of the way. :func:`hints` runs the exhaustive engine (checker/exhaustive/bfs.py,
with symmetry, one thread) on the spec's instance at small bounds: every bound of kind ``"bound"``
(replicas, epochs, crashes, records, ...) lowered to its default, every option as in the spec. Its search
is capped by a number of states (``HINT_STATES``), not by time, so the hints, and the fuzz that follows
them, are the same for the same seed whatever the machine's load. For each requested invariant it breaks
there, the hint is the counterexample's steps as (action name, parameters), the replicas in them mapped
later onto the replicas a run lets act (:func:`mapped`).

A hint from small bounds may need a few more steps at the fuzz's bounds: the extra replicas must leave the
way first (a leader drops them from its ISR, say), and where that is a step of its own the hint alone stalls.
:func:`lift` finds those steps by a small search at the fuzz's bounds, seeded from the hint: the hint's steps
cost nothing, the steps the runs take eagerly (an active replica acting on a passive one, a passive replica
keeping up) are taken first and cost nothing, and any other step a run may take costs one; the search goes
level by level in that cost and ends at the first path that breaks the invariant, or after ``LIFT_NODES``
nodes (a count: the same lift, and fuzz, whatever the machine's load). The runs then follow the lifted path.

Where the extra replicas cannot simply leave the way (each step that clears one costs a bound the hint spends
to the full, say), they may instead act as one of the hint's replicas does: :func:`shadowed` follows each of
that replica's steps by the same step of each extra one, and the lift is tried on that, every replica acting.
And the shortest counterexample at small bounds is not always one that shows at large ones: :func:`hints`
searches again without a given action (``excluded``), for the fuzzer to lift another counterexample when the
first does not lift (checker/fuzzing/fuzz.py). A bug that shows at large bounds by none of these is left to
the unguided runs.

What the hints name comes from the spec alone (its actions, their parameter domains, its bound
declarations): the fuzzer stays free of Kafka names.
"""
from __future__ import annotations

HINT_STATES = 1_500_000      # most distinct states of the search at small bounds
LIFT_NODES = 20_000          # most nodes the lift of one hint expands (a CPU second or so)
RETRY_NODES = 2_000          # most nodes each further lift of a hint that did not lift expands
ABLATION_STATES = 500_000    # most distinct states of each search for another hint
LIFT_CLOSURE = 64            # most eager steps taken in a row before a node is expanded


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


def hints(spec, names, max_states=HINT_STATES, excluded=None):
    """(small spec, {invariant: [(action name, params)]}) for each of ``names`` the exhaustive search at small
    bounds breaks within ``max_states`` states, never taking the action named ``excluded`` (None: taking every
    one); ({} when the spec has no smaller instance)."""
    from isrcheck.checker.engine.budget import Budget
    from isrcheck.checker.exhaustive.bfs import search
    small = small_instance(spec)
    if small is None:
        return None, {}
    result = search(small, list(names), symmetry=True, budget=Budget(max_states=max_states), workers=1,
                    excluded=[a.id for a in small.actions if a.name == excluded])
    return small, {n: [(a.name, dict(a.params)) for a, _ in v.steps if a is not None]
                   for n, v in result.violations.items()}


def instance_index(spec):
    """(action name, parameters as a sorted tuple) -> the instance's id in ``spec``."""
    return {(a.name, tuple(sorted(a.params.items()))): a.id for a in spec.actions}


def _names_replicas(spec, domain):
    """Whether a parameter of ``domain`` names a replica of ``spec``: the replica domain, or a wider one (a
    replica or none)."""
    dom = spec.replica_domain
    return domain == dom or set(getattr(spec, dom)) < set(getattr(spec, domain))


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
            if _names_replicas(small, domains[name][p]):
                v = onto[v] if v < n_small else v - n_small + n_big
            new[p] = v
        i = index.get((name, tuple(sorted(new.items()))))
        if i is not None:
            out.append(i)
    return out


def shadowed(spec, ids, index, h, shadows):
    """A hint's instance ids in ``spec`` with the replicas ``shadows`` shadowing replica ``h``: each step that
    names ``h`` is followed by the same step naming each of them instead, where ``spec`` has it (replicas that
    fetch when ``h`` fetches and fall behind when it does, say, so that they leave an ISR with it)."""
    domains = {a.name: a.fn.__isrcheck_action__ for a in spec.actions}
    out = []
    for i in ids:
        a = spec.actions[i]
        out.append(i)
        named = [p for p, v in a.params.items() if v == h and _names_replicas(spec, domains[a.name][p])]
        for x in shadows if named else ():
            j = index.get((a.name, tuple(sorted({**a.params, **dict.fromkeys(named, x)}.items()))))
            if j is not None:
                out.append(j)
    return out


def lift(model, enabled, allowed, eager, hint, holds, max_steps, max_nodes=LIFT_NODES):
    """A path of instance ids from ``model``'s initial state that breaks the invariant ``holds`` (a function of a
    state: False where broken), built on the ``hint`` (instance ids in ``model``) with few other steps (paths
    are searched in order of their number of other steps), or None when none of at most ``max_steps`` steps is
    found within ``max_nodes`` expanded nodes.

    ``enabled(state)`` lists the instances a run may consider, ``allowed[i]`` whether a run may take instance
    ``i`` at all, ``eager[i]`` whether a run takes it as soon as it is enabled: before any other step, the
    enabled eager instances are taken, lowest id first (free). Then the hint's next step, when enabled, costs
    nothing and moves the hint on; any other allowed step costs one. Nodes are (state, position in the hint),
    each expanded once, those of one cost depth first before any of the next.
    """
    step = model.step

    def settle(r, path):
        for _ in range(LIFT_CLOSURE):
            i = next((i for i in enabled(r) if eager[i]), None)
            if i is None:
                break
            r = step(r, i)
            path = path + [i]
            if not holds(r):
                return r, path, True
        return r, path, False

    seen = {(model.initial, 0)}
    level, nodes = [(model.initial, 0, [])], 0
    if not holds(model.initial):
        return []
    while level and nodes < max_nodes:
        later, stack = [], level
        while stack:
            r, at, path = stack.pop()
            nodes += 1
            if nodes > max_nodes:
                return None
            r, path, broken = settle(r, path)
            if broken and len(path) <= max_steps:
                return path
            if broken or len(path) >= max_steps:
                continue
            for i in enabled(r):
                if not allowed[i] or eager[i]:
                    continue
                nxt = step(r, i)
                follows = at < len(hint) and i == hint[at]
                key = (nxt, at + follows)
                if key in seen:
                    continue
                seen.add(key)
                if not holds(nxt):
                    return path + [i]
                (stack if follows else later).append((nxt, at + follows, path + [i]))
        level = later
    return None
