"""Loading a spec: every action instance, invariant and property run once on z3, naming what is wrong.

Python control flow on a state value, a bool/int mix-up, a write that can leave a
field's bounds, an intermediate value that overflows a state cell, a parameter
without a domain: each fails here, when the spec is built, with the action or
invariant named (a :class:`DeclarationError`). ``model.spec.Spec.__init__`` calls
these once per (class, bounds), and not at all when model/load_cache.py holds the
verdict of an earlier load of the same sources and bounds: ``kept_instances`` and
``properties(spec, evaluate=False)`` then give the same instances and properties
without z3 (which is imported only where the checks run).
"""
from __future__ import annotations

import inspect
import itertools

import numpy as np

from isrcheck.model.compile import Graph, Node
from isrcheck.model.declare import ActionInstance, Fairness, LeadsTo, doc_parts, is_int_sequence
from isrcheck.model.expr import DeclarationError, Sym, term, track_arithmetic
from isrcheck.model.view import GuardDone, View, z3_reader, z3_type_ok, z3_variables


def invariants(spec):
    import z3
    invs = type(spec).declared_invariants()
    for inv in invs.values():
        fn = inv.fn
        with track_arithmetic() as arithmetic:
            try:
                value = fn(spec, View(spec.layout, z3_reader(z3_variables(spec.layout))))
            except (DeclarationError, AttributeError) as e:
                raise DeclarationError(f"invariant {inv.name}: {e}") from None
            except z3.Z3Exception as e:
                raise DeclarationError(f"invariant {inv.name}: ill-typed expression ({e})") from None
        if not (isinstance(value, Sym) and value.is_bool) and not isinstance(value, (bool, np.bool_)):
            raise DeclarationError(f"invariant {inv.name}: must return a boolean expression")
        _check_cell_range(spec, arithmetic, True, f"invariant {inv.name}")
    return invs

def properties(spec, evaluate=True):
    """The declared liveness properties, their fairness and names checked; with ``evaluate``, each also run on z3
    like an invariant (P and Q boolean, intermediate values within a cell)."""
    props, names = {}, {attr for attr, _ in type(spec)._members("__isrcheck_action__")}
    for _, fn in type(spec)._members("__isrcheck_leads_to__"):
        name, fairness = fn.__isrcheck_leads_to__
        meaning, detail = doc_parts(fn)
        for f in fairness:
            if not isinstance(f, Fairness):
                raise DeclarationError(f"property {name}: fairness must be weak(\"action\") or strong(\"action\"), "
                                       f"got {f!r}")
            if f.action not in names and not f.optional:
                raise DeclarationError(f"property {name}: fairness names {f.action!r}, which is no action "
                                       f"of {spec.name} (it has: {', '.join(sorted(names))})")
        if name in spec.invariants:
            raise DeclarationError(f"property {name}: an invariant has that name")
        if evaluate:
            _check_property(spec, name, fn)
        props[name] = LeadsTo(name, fn, fairness, meaning, detail)
    return props

def _check_property(spec, name, fn):
    import z3
    with track_arithmetic() as arithmetic:
        try:
            value = fn(spec, View(spec.layout, z3_reader(z3_variables(spec.layout))))
        except DeclarationError as e:
            raise DeclarationError(f"property {name}: {e}") from None
        except z3.Z3Exception as e:
            raise DeclarationError(f"property {name}: ill-typed expression ({e})") from None
    if not (isinstance(value, tuple) and len(value) == 2 and all(
            (isinstance(v, Sym) and v.is_bool) or isinstance(v, (bool, np.bool_)) for v in value)):
        raise DeclarationError(f"property {name}: must return a pair (P, Q) of boolean expressions")
    _check_cell_range(spec, arithmetic, True, f"property {name}")

def declared_instances(spec):
    """(name, function, parameters) of every action instance the declarations give, in order (no z3)."""
    for name, fn in type(spec)._members("__isrcheck_action__"):
        domains = fn.__isrcheck_action__
        _check_parameters(name, fn, domains)
        values = [_domain(spec, name, param, d) for param, d in domains.items()]
        for combo in itertools.product(*values):
            yield name, fn, dict(zip(domains, combo))

def action_instances(spec):
    """The action instances enabled in some well-typed state, each run on z3 and checked."""
    import z3
    variables = z3_variables(spec.layout)
    type_ok = z3_type_ok(spec.layout, variables)
    solver = z3.Solver()
    solver.add(type_ok)
    instances = []
    for name, fn, params in declared_instances(spec):
        inst = ActionInstance(len(instances), name, params, fn)
        view = View(spec.layout, z3_reader(variables))
        with track_arithmetic() as arithmetic:
            try:
                if fn(spec, view, **params) is not None:
                    raise DeclarationError("returns a value: an action assigns state fields "
                                           "(s.x = ...) after its guard (s.require(...))")
                for cond in view._requires:
                    if not z3.is_bool(term(cond)):
                        raise DeclarationError("require() needs a boolean condition")
                guard = term(view.guard)
            except (DeclarationError, AttributeError) as e:
                raise DeclarationError(f"action {inst.label}: {e}") from None
            except z3.Z3Exception as e:
                raise DeclarationError(f"action {inst.label}: ill-typed expression ({e})") from None
        if z3.is_false(z3.simplify(guard)) or solver.check(guard) == z3.unsat:
            continue  # disabled in every well-typed state (e.g. a constant require failed)
        _check_writes(spec, solver, inst, view, guard)
        _check_cell_range(spec, arithmetic, guard, f"action {inst.label}", solver)
        inst.written = tuple(sorted(view._written))
        instances.append(inst)
    if len(instances) >= 2 ** 16:
        raise DeclarationError("more than 65535 action instances")
    return instances

def kept_instances(spec, written):
    """The action instances an earlier load kept, without z3: ``written`` maps each one's label to the columns
    it writes. None when ``written`` names an instance the declarations do not give, or leaves out one whose
    guard is not plainly false (false on constants alone: a dropped instance is not taken on trust)."""
    instances = []
    for name, fn, params in declared_instances(spec):
        inst = ActionInstance(len(instances), name, params, fn)
        if inst.label in written:
            inst.written = written[inst.label]
            instances.append(inst)
        elif not _plainly_disabled(spec, fn, params):
            return None
    return instances if len(instances) == len(written) else None

def _plainly_disabled(spec, fn, params):
    """Whether an action instance's guard folds to false when traced (e.g. ``s.require(l != r)`` with l == r).
    The trace stops at the first write: every require comes before it (View), and tracing the updates too cost
    a tenth of a small check's CPU."""
    view = View(spec.layout, Graph().reader(spec.layout), guard_only=True)
    try:
        fn(spec, view, **params)
    except GuardDone:
        pass
    except Exception:                   # the checks will say what is wrong
        return False
    guard = view.guard
    return not isinstance(guard, Node) and not bool(guard)

def _check_parameters(name, fn, domains):
    """The action's parameters after the state are exactly those its @action gives domains for."""
    params = list(inspect.signature(fn).parameters)[2:]
    if set(params) != set(domains):
        example = ", ".join(f'{p}="..."' for p in params)
        raise DeclarationError(f"action {name}: its parameters are ({', '.join(params)}) but @action gives "
                               f"domains for ({', '.join(domains)}): write @action({example})")

def _domain(spec, name, param, domain):
    """The values of an action parameter: a constant the spec defines (by name), or the range itself."""
    if not isinstance(domain, str):
        return list(domain)
    values = getattr(spec, domain, None)
    if values is None or not is_int_sequence(values):
        known = [a for a in dir(spec) if a.isupper() and is_int_sequence(getattr(spec, a, None))]
        what = "is not an attribute of the spec" if values is None else f"is {values!r}, not a range of ints"
        hint = ("write " + " or ".join(f'@action({param}="{k}")' for k in known) if known
                else f"set self.{domain} = range(...) in configure()")
        raise DeclarationError(f"action {name}: domain {param}={domain!r} {what}; {hint}")
    return list(values)

def check_fuzz_targets(spec):
    for t in spec.fuzz_targets:
        if t.field not in spec.layout.fields:
            raise DeclarationError(f"fuzz target {t.label!r}: no state field {t.field!r} "
                                   f"(fields: {', '.join(spec.layout.fields)})")
        if t.counts not in ("moves", "drops"):
            raise DeclarationError(f"fuzz target {t.label!r}: counts is \"moves\" or \"drops\", not {t.counts!r}")
    names = {name for name, _ in type(spec)._members("__isrcheck_action__")}
    for name in spec.fuzz_keep_up:
        if name not in names:
            raise DeclarationError(f"fuzz_keep_up: no action {name!r} (actions: {', '.join(sorted(names))})")

def _check_cell_range(spec, arithmetic, guard, what, solver=None):
    """Intermediate arithmetic must fit a state cell (int8): numpy batches compute in int8."""
    if not arithmetic:
        return
    import z3
    if solver is None:
        solver = z3.Solver()
        solver.add(z3_type_ok(spec.layout, z3_variables(spec.layout)))
    solver.push()
    solver.add(term(guard), z3.Or([z3.Or(t < -128, t > 127) for t in arithmetic]))
    bad = solver.check() == z3.sat
    solver.pop()
    if bad:
        raise DeclarationError(f"{what}: an intermediate value may leave -128..127 (state cells are int8)")

def _check_writes(spec, solver, inst, view, guard):
    import z3
    lay = spec.layout
    problems = []
    for c, value in view._written.items():
        t = term(value)
        if z3.is_bool(t) != bool(lay.boolean[c]):
            kind = "boolean" if lay.boolean[c] else "integer"
            raise DeclarationError(f"action {inst.label}: writes a non-{kind} value to {lay.names[c]}")
        if not lay.boolean[c]:
            problems.append((f"may write {lay.names[c]} outside {lay.lo[c]}..{lay.hi[c]}",
                             z3.Or(t < int(lay.lo[c]), t > int(lay.hi[c]))))
    for fname, conds in view._index_obligations:
        problems.append((f"may write {fname} through an out-of-range index",
                         z3.Not(z3.Or([term(c) for c in conds]))))
    if not problems:
        return
    solver.push()
    solver.add(guard, z3.Or([p for _, p in problems]))
    bad = solver.check() == z3.sat
    solver.pop()
    if not bad:
        return
    for msg, p in problems:
        solver.push()
        solver.add(guard, p)
        found = solver.check() == z3.sat
        solver.pop()
        if found:
            raise DeclarationError(f"action {inst.label}: {msg}")
