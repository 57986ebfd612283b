"""The state-machine interface: fields, one initial state, actions, invariants.

A protocol version is a subclass of :class:`Spec`::

    class Kip101(HwTruncation):
        name = "kip-101"

        @action(f="REPLICAS", l="REPLICAS")
        def fetch(self, s, f, l):
            '''Kafka: the follower fetches from the leader it believes in (0.8+).'''
            s.require(s.up[f] & (s.leader[f] == l))
            s.leo[f] = s.leo[l]

        @invariant("log-matching")
        def log_matching(self, s):
            '''Replicas holding the same epoch at an offset agree on the log up to it.'''
            return ...

An action's parameters range over constant domains (attribute names of the
spec, e.g. ``"REPLICAS"``), so Python control flow over them simply unrolls.
Its guard is the conjunction of its ``s.require(...)`` calls, which come before
its first write. A subclass overrides an action or invariant by redefining the
method, and removes one by setting the name to ``None``.

Loading a spec runs every action instance and invariant on the z3 backend:
Python control flow on a state value, a bool/int mix-up, or a write that can
leave a field's bounds in a well-typed state fails there, naming the action.
"""
from __future__ import annotations

import inspect
import itertools
from dataclasses import dataclass, field as dc_field

import numpy as np
import z3

from types import SimpleNamespace

from isrcheck.model import configuration
from isrcheck.model.compile import Graph, kernel
from isrcheck.model.expr import DeclarationError, Sym, term, track_arithmetic
from isrcheck.model.layout import Field, Layout
from isrcheck.model.present import Presentation
from isrcheck.model.view import GuardDone, View, scalar_reader, z3_reader, z3_variables


#: the spec methods the engines call: an action or invariant may not take one of these names
ENGINE_METHODS = frozenset({"run", "step", "holds", "enabled", "traced", "traced_invariant", "guard_batch",
                            "update_batch", "holds_batch", "z3_action", "z3_invariant", "z3_type_ok",
                            "initial_row", "action_named"})

#: spec class and bounds -> (invariants, action instances), each checked once per process
_CHECKED = {}


class BoundsError(ValueError):
    """A bound or option outside its allowed range."""


def action(*misuse, **domains):
    """Declare a guarded command; keyword arguments name each parameter's domain."""
    if misuse:
        raise DeclarationError(f"@action on {getattr(misuse[0], '__name__', misuse[0])!r}: name each parameter's "
                               f"domain, e.g. @action(r=\"REPLICAS\") (or @action() for none)")
    for param, d in domains.items():
        if not isinstance(d, str) and not _is_int_sequence(d):
            raise DeclarationError(f"@action({param}={d!r}): a domain is the name of a spec attribute holding "
                                   f"the values, e.g. {param}=\"REPLICAS\", or a range of ints")

    def deco(fn):
        fn.__isrcheck_action__ = domains
        return fn
    return deco


def _is_int_sequence(values):
    """A re-iterable collection of ints (a range, a list; not an iterator, which the first use would consume)."""
    try:
        return iter(values) is not values and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                                                  for v in values)
    except TypeError:
        return False


def invariant(name, benign=False):
    """Declare a state invariant under a user-facing name (kebab-case).

    ``benign=True`` marks an observation rather than a safety property: breaking
    it is expected and harmless while the protocol's fences hold (e.g. the split
    brain of a deposed leader). ``check --all`` reports it without failing.
    """
    if not isinstance(name, str) or not name:
        what = f" on {name.__name__!r}" if callable(name) else f"({name!r})"
        raise DeclarationError(f"@invariant{what}: name the invariant, e.g. @invariant(\"no-committed-loss\")")

    def deco(fn):
        fn.__isrcheck_invariant__ = name
        fn.__isrcheck_benign__ = benign
        return fn
    return deco


@dataclass(frozen=True)
class FuzzTarget:
    """A quantity the fuzzer steers its runs towards (``hypothesis.target``), counted per run on a field.

    ``counts="moves"``: the steps in which any cell of ``field`` changes (e.g. a
    new leader epoch); ``"drops"``: the cells that decrease, summed over the steps
    (e.g. log truncations, or brokers going down).
    """

    label: str
    field: str
    counts: str
class Fairness(tuple):
    """``weak(name)`` / ``strong(name)``: the fairness a liveness property assumes of every instance of an action."""

    __slots__ = ()

    def __new__(cls, kind, action_name, optional=False):
        return super().__new__(cls, (kind, action_name, optional))

    kind = property(lambda self: self[0])
    action = property(lambda self: self[1])
    optional = property(lambda self: self[2])      # a version that lacks the action assumes nothing of it

    def __repr__(self):
        return f"{self.kind}({self.action!r})"

    def __str__(self):
        return f"{self.kind}({self.action})"


def weak(action_name, optional=False):
    """Weak fairness of each instance of an action: one that stays enabled is eventually taken (TLA+'s WF).

    ``optional=True``: a protocol version that declares no such action assumes nothing (else a DeclarationError).
    """
    return Fairness("weak", action_name, optional)


def strong(action_name, optional=False):
    """Strong fairness of each instance of an action: one enabled again and again is eventually taken (TLA+'s SF)."""
    return Fairness("strong", action_name, optional)


def leads_to(name, fairness=()):
    """Declare a liveness property P ~> Q (whenever P holds, Q holds then or later) under a kebab-case name.

    The method returns the pair (P, Q) as expressions of the state, like an
    invariant's body, so every backend evaluates them. ``fairness`` lists
    ``weak("action")`` / ``strong("action")``: each applies to every instance
    of that action (each parameter combination on its own, as TLA+'s
    ``\\A p: WF_vars(A(p))``). Without fairness any state may stutter forever.
    """
    def deco(fn):
        fn.__isrcheck_leads_to__ = (name, tuple(fairness))
        return fn
    return deco


@dataclass
class ActionInstance:
    id: int
    name: str
    params: dict
    fn: object = dc_field(repr=False)
    written: tuple = ()

    @property
    def label(self):
        args = ", ".join(f"{k}={v}" for k, v in self.params.items())
        return f"{self.name}({args})"


@dataclass
class Invariant:
    name: str
    fn: object = dc_field(repr=False)
    meaning: str = ""
    loss: str = ""
    benign: bool = False


@dataclass
class LeadsTo:
    """A declared liveness property: ``trigger`` (P) leads to ``goal`` (Q) under ``fairness``."""
    name: str
    fn: object = dc_field(repr=False)
    fairness: tuple = ()
    meaning: str = ""
    detail: str = ""

    @property
    def trigger(self):
        """P as an invariant-like predicate (so every backend's invariant evaluation runs it)."""
        return Invariant(f"{self.name}:trigger", lambda spec, s: self.fn(spec, s)[0])

    @property
    def goal(self):
        """Q as an invariant-like predicate."""
        return Invariant(f"{self.name}:goal", lambda spec, s: self.fn(spec, s)[1])


def _doc_parts(fn):
    doc = (fn.__doc__ or "").strip()
    first, _, rest = doc.partition("\n")
    return first.strip(), " ".join(rest.split())


class Spec:
    """Base class of a model: subclasses declare fields, initial, actions, invariants."""

    name: str = ""
    summary: str = ""
    references: tuple = ()
    #: bound/option name -> default value
    defaults: dict = {}
    #: bound/option name -> (lowest, highest) allowed
    limits: dict = {}
    #: invariant name -> "holds" | "violated" at the default bounds
    expected: dict = {}
    #: invariant name -> why it is expected so (ticket, KIP)
    expected_why: dict = {}
    #: liveness property name -> "holds" | "violated" at the default bounds; not inherited (see liveness_expected)
    expected_liveness: dict = {}
    #: liveness property name -> why it is expected so, with the fairness it assumes
    expected_liveness_why: dict = {}

    #: name -> Configuration: expected verdicts at other bounds (model/configuration.py; not inherited)
    configurations: dict = {}
    #: ticket or KIP the references cite -> why the model cannot reproduce it (not inherited)
    not_modelled: dict = {}

    #: what the fuzzer steers towards (:class:`FuzzTarget`): the events that make runs interesting
    fuzz_targets: tuple = ()
    #: how traces read in ``show``, diagrams and the gate's summary: the family's ``Presentation`` subclass
    presentation_class: type = Presentation

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        for attr in ("configurations", "not_modelled"):
            if attr not in vars(cls):
                setattr(cls, attr, {})
        configuration.validate(cls)

    def __init__(self, **bounds):
        unknown = set(bounds) - set(self.defaults)
        if unknown:
            raise BoundsError(f"{self.name}: unknown bound {sorted(unknown)[0]!r} "
                              f"(known: {', '.join(sorted(self.defaults))})")
        self.bounds = {**self.defaults, **{k: v for k, v in bounds.items() if v is not None}}
        for k, v in self.bounds.items():
            lo, hi = self.limits.get(k, (None, None))
            if lo is not None and not lo <= v <= hi:
                raise BoundsError(f"{self.name}: --{k.replace('_', '-')} {v} is outside {lo}..{hi}")
        try:
            inspect.signature(self.configure).bind(**self.bounds)
        except TypeError as e:
            raise DeclarationError(f"{type(self).__name__}.configure() must take every bound in defaults "
                                   f"({', '.join(self.bounds)}) as a keyword: {e}") from None
        self.configure(**self.bounds)
        fields = self.fields()
        if not isinstance(fields, (list, tuple)) or not all(isinstance(f, Field) for f in fields):
            raise DeclarationError(f"{type(self).__name__}.fields() must return a list of Field(...)")
        self.layout = Layout(fields)
        key = (type(self), tuple(sorted(self.bounds.items())))
        checked = _CHECKED.get(key)
        if checked is None:                       # the z3 checks run once per spec class and bounds
            self._check_fuzz_targets()
            self.initial_row()
            self.presentation_class.check(self)
            self.invariants = self._collect_invariants()
            checked = _CHECKED[key] = (self.invariants, self._instantiate_actions(), self._collect_properties())
        self.invariants, self.actions, self.properties = checked
        self.presentation = self.presentation_class(self)

    @classmethod
    def declared_invariants(cls):
        """name -> :class:`Invariant` as declared (documentation only: nothing is evaluated)."""
        for klass in cls.__mro__:
            names = [fn.__isrcheck_invariant__ for fn in vars(klass).values() if hasattr(fn, "__isrcheck_invariant__")]
            twice = sorted({n for n in names if names.count(n) > 1})
            if twice:
                raise DeclarationError(f"{klass.__name__} declares invariant {twice[0]!r} twice "
                                       f"(an invariant is overridden by redefining its method)")
        out = {}
        for _, fn in cls._members("__isrcheck_invariant__"):
            meaning, loss = _doc_parts(fn)
            out[fn.__isrcheck_invariant__] = Invariant(fn.__isrcheck_invariant__, fn, meaning, loss,
                                                       fn.__isrcheck_benign__)
        return out

    @classmethod
    def declared_properties(cls):
        """name -> (meaning, fairness) of the liveness properties as declared (documentation only)."""
        out = {}
        for _, fn in cls._members("__isrcheck_leads_to__"):
            name, fairness = fn.__isrcheck_leads_to__
            out[name] = (_doc_parts(fn)[0], fairness)
        return out

    @classmethod
    def liveness_expected(cls):
        """(expected, why) of the liveness properties as this class itself states them.

        Not inherited: a version that changes the protocol triages its liveness verdicts anew (a
        subclass inherits the properties, and states none of their verdicts until it does).
        """
        return cls.__dict__.get("expected_liveness", {}), cls.__dict__.get("expected_liveness_why", {})

    # --- to be provided by subclasses -------------------------------------------------
    def configure(self, **bounds):
        """Derive constants and domains from the bounds."""

    def fields(self):
        raise NotImplementedError

    def initial(self, s):
        """Write the initial state (cells not written start at their lower bound)."""

    # --- declarations ------------------------------------------------------------------
    @classmethod
    def _members(cls, marker):
        seen, out = set(), []
        for klass in reversed(cls.__mro__):
            for attr in klass.__dict__:
                if attr not in seen:
                    seen.add(attr)
                    out.append(attr)
        for attr in out:
            fn = getattr(cls, attr, None)
            if fn is not None and hasattr(fn, marker):
                if attr in ENGINE_METHODS:
                    raise DeclarationError(f"{marker.strip('_').split('_')[-1]} {attr}: {attr} is a method the "
                                           f"engines call on every spec; give it another name")
                yield attr, fn

    def _collect_invariants(self):
        invs = self.declared_invariants()
        for inv in invs.values():
            fn = inv.fn
            with track_arithmetic() as arithmetic:
                try:
                    value = fn(self, View(self.layout, z3_reader(z3_variables(self.layout))))
                except (DeclarationError, AttributeError) as e:
                    raise DeclarationError(f"invariant {inv.name}: {e}") from None
                except z3.Z3Exception as e:
                    raise DeclarationError(f"invariant {inv.name}: ill-typed expression ({e})") from None
            if not (isinstance(value, Sym) and value.is_bool) and not isinstance(value, (bool, np.bool_)):
                raise DeclarationError(f"invariant {inv.name}: must return a boolean expression")
            self._check_cell_range(arithmetic, True, f"invariant {inv.name}")
        return invs

    def _collect_properties(self):
        """The declared liveness properties, each checked like an invariant on z3 (P and Q boolean, fairness known)."""
        props, names = {}, {attr for attr, _ in self._members("__isrcheck_action__")}
        for _, fn in self._members("__isrcheck_leads_to__"):
            name, fairness = fn.__isrcheck_leads_to__
            meaning, detail = _doc_parts(fn)
            for f in fairness:
                if not isinstance(f, Fairness):
                    raise DeclarationError(f"property {name}: fairness must be weak(\"action\") or strong(\"action\"), "
                                           f"got {f!r}")
                if f.action not in names and not f.optional:
                    raise DeclarationError(f"property {name}: fairness names {f.action!r}, which is no action "
                                           f"of {self.name} (it has: {', '.join(sorted(names))})")
            if name in self.invariants:
                raise DeclarationError(f"property {name}: an invariant has that name")
            with track_arithmetic() as arithmetic:
                try:
                    value = fn(self, View(self.layout, z3_reader(z3_variables(self.layout))))
                except DeclarationError as e:
                    raise DeclarationError(f"property {name}: {e}") from None
                except z3.Z3Exception as e:
                    raise DeclarationError(f"property {name}: ill-typed expression ({e})") from None
            if not (isinstance(value, tuple) and len(value) == 2 and all(
                    (isinstance(v, Sym) and v.is_bool) or isinstance(v, (bool, np.bool_)) for v in value)):
                raise DeclarationError(f"property {name}: must return a pair (P, Q) of boolean expressions")
            self._check_cell_range(arithmetic, True, f"property {name}")
            props[name] = LeadsTo(name, fn, fairness, meaning, detail)
        return props

    def _instantiate_actions(self):
        variables = z3_variables(self.layout)
        type_ok = self.z3_type_ok(variables)
        solver = z3.Solver()
        solver.add(type_ok)
        instances = []
        for name, fn in self._members("__isrcheck_action__"):
            domains = fn.__isrcheck_action__
            self._check_parameters(name, fn, domains)
            values = [self._domain(name, param, d) for param, d in domains.items()]
            for combo in itertools.product(*values):
                params = dict(zip(domains, combo))
                inst = ActionInstance(len(instances), name, params, fn)
                view = View(self.layout, z3_reader(variables))
                with track_arithmetic() as arithmetic:
                    try:
                        if fn(self, view, **params) is not None:
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
                self._check_writes(solver, inst, view, guard)
                self._check_cell_range(arithmetic, guard, f"action {inst.label}", solver)
                inst.id = len(instances)
                inst.written = tuple(sorted(view._written))
                instances.append(inst)
        if len(instances) >= 2 ** 16:
            raise DeclarationError("more than 65535 action instances")
        return instances

    @staticmethod
    def _check_parameters(name, fn, domains):
        """The action's parameters after the state are exactly those its @action gives domains for."""
        params = list(inspect.signature(fn).parameters)[2:]
        if set(params) != set(domains):
            example = ", ".join(f'{p}="..."' for p in params)
            raise DeclarationError(f"action {name}: its parameters are ({', '.join(params)}) but @action gives "
                                   f"domains for ({', '.join(domains)}): write @action({example})")

    def _domain(self, name, param, domain):
        """The values of an action parameter: a constant the spec defines (by name), or the range itself."""
        if not isinstance(domain, str):
            return list(domain)
        values = getattr(self, domain, None)
        if values is None or not _is_int_sequence(values):
            known = [a for a in dir(self) if a.isupper() and _is_int_sequence(getattr(self, a, None))]
            what = "is not an attribute of the spec" if values is None else f"is {values!r}, not a range of ints"
            hint = ("write " + " or ".join(f'@action({param}="{k}")' for k in known) if known
                    else f"set self.{domain} = range(...) in configure()")
            raise DeclarationError(f"action {name}: domain {param}={domain!r} {what}; {hint}")
        return list(values)

    def _check_fuzz_targets(self):
        for t in self.fuzz_targets:
            if t.field not in self.layout.fields:
                raise DeclarationError(f"fuzz target {t.label!r}: no state field {t.field!r} "
                                       f"(fields: {', '.join(self.layout.fields)})")
            if t.counts not in ("moves", "drops"):
                raise DeclarationError(f"fuzz target {t.label!r}: counts is \"moves\" or \"drops\", not {t.counts!r}")

    def _check_cell_range(self, arithmetic, guard, what, solver=None):
        """Intermediate arithmetic must fit a state cell (int8): numpy batches compute in int8."""
        if not arithmetic:
            return
        if solver is None:
            solver = z3.Solver()
            solver.add(self.z3_type_ok(z3_variables(self.layout)))
        solver.push()
        solver.add(term(guard), z3.Or([z3.Or(t < -128, t > 127) for t in arithmetic]))
        bad = solver.check() == z3.sat
        solver.pop()
        if bad:
            raise DeclarationError(f"{what}: an intermediate value may leave -128..127 (state cells are int8)")

    def _check_writes(self, solver, inst, view, guard):
        lay = self.layout
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

    # --- evaluation on each backend -----------------------------------------------------
    def z3_type_ok(self, variables):
        """Every integer cell within its declared bounds."""
        lay = self.layout
        return z3.And([z3.And(v >= int(lay.lo[c]), v <= int(lay.hi[c]))
                       for c, v in enumerate(variables) if not lay.boolean[c]])

    def initial_row(self):
        lay = self.layout
        row = lay.lo.astype(np.int8)
        view = View(lay, scalar_reader(lay, row))
        try:
            self.initial(view)
        except AttributeError as e:
            raise DeclarationError(f"initial: {e}") from None
        for c, v in view._written.items():
            if not lay.lo[c] <= int(v) <= lay.hi[c]:
                raise DeclarationError(f"initial: writes {lay.names[c]} = {int(v)}, outside {lay.lo[c]}..{lay.hi[c]}")
            row[c] = int(v)
        return row

    def run(self, inst, view):
        """Run one action instance on a view (any backend); returns its guard."""
        try:
            inst.fn(self, view, **inst.params)
        except GuardDone:
            pass
        return view.guard

    def step(self, row, inst):
        """Scalar backend: the successor row, or None when the action is disabled."""
        view = View(self.layout, scalar_reader(self.layout, row))
        if not bool(self.run(inst, view)):
            return None
        new = row.copy()
        for c, v in view._written.items():
            new[c] = int(v)
        return new

    def holds(self, row, inv):
        """Scalar backend: whether an invariant holds in a row."""
        return bool(inv.fn(self, View(self.layout, scalar_reader(self.layout, row))))

    def enabled(self, row):
        """Scalar backend: every enabled action instance (guards only: each run stops at its first write)."""
        read = scalar_reader(self.layout, row)
        return [a for a in self.actions if bool(self.run(a, View(self.layout, read, guard_only=True)))]

    def traced(self, inst, graph):
        """An action run on the nodes of an expression ``graph``: its view holds the guard and the writes."""
        view = View(self.layout, graph.reader(self.layout))
        inst.fn(self, view, **inst.params)
        return view

    def traced_invariant(self, inv, graph):
        """An invariant as a node of an expression ``graph``."""
        return inv.fn(self, View(self.layout, graph.reader(self.layout)))

    def _action_kernels(self, inst):
        """(guard kernel, written columns, update kernel) of an action, traced once and cached.

        The update kernel returns the written columns' new values, then their old
        ones (read once, shared with the update where it reads them too).
        """
        cache = self.__dict__.setdefault("_kernel_cache", {})
        found = cache.get(("action", inst.id))
        if found is None:
            graph = Graph()
            view = self.traced(inst, graph)
            columns = list(view._written)
            old = graph.reader(self.layout)
            found = (kernel([view.guard], subset=False), columns,
                     kernel([view._written[c] for c in columns] + [old(c) for c in columns], subset=True))
            cache[("action", inst.id)] = found
        return found

    def _invariant_kernel(self, inv):
        cache = self.__dict__.setdefault("_kernel_cache", {})
        found = cache.get(("invariant", inv.name))
        if found is None:
            found = kernel([self.traced_invariant(inv, Graph())], subset=False)
            cache[("invariant", inv.name)] = found
        return found

    def guard_batch(self, inst, batch):
        """Numpy backend: the guard of an action over a column-major batch, as a bool vector."""
        g = self._action_kernels(inst)[0](batch)[0]
        return g if isinstance(g, np.ndarray) else np.broadcast_to(np.asarray(g, dtype=bool), (batch.shape[1],))

    def update_batch(self, inst, batch, rows):
        """Numpy backend: the new values of the written columns for the given rows (guard assumed).

        Returns an object whose ``_written`` maps column -> values (an array, or a constant),
        and ``old`` maps the same columns to their values before.
        """
        _, columns, update = self._action_kernels(inst)
        values = update(batch, rows)
        return SimpleNamespace(_written=dict(zip(columns, values)), old=dict(zip(columns, values[len(columns):])))

    def holds_batch(self, inv, batch):
        """Numpy backend: the invariant over a batch, as a bool vector."""
        v = self._invariant_kernel(inv)(batch)[0]
        return v if isinstance(v, np.ndarray) else np.broadcast_to(np.asarray(v, dtype=bool), (batch.shape[1],))

    def z3_action(self, inst, variables):
        """z3 backend: (guard, {column: new term}) of an action instance."""
        view = View(self.layout, z3_reader(variables))
        inst.fn(self, view, **inst.params)
        return term(view.guard), {c: term(v) for c, v in view._written.items()}

    def z3_invariant(self, inv, variables):
        """z3 backend: the invariant as a formula."""
        return term(inv.fn(self, View(self.layout, z3_reader(variables))))

    # --- conveniences -----------------------------------------------------------------------
    def action_named(self, name, params):
        for a in self.actions:
            if a.name == name and a.params == params:
                return a
        return None
