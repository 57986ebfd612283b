"""The engines' side of a spec: the same action and invariant code, run on each kind of value.

A :class:`model.spec.Spec` only declares (fields, initial state, actions, invariants,
properties); engines evaluate it through a backend, built once per spec instance::

    scalar(spec)     one state at a time, as a numpy int8 row: replay, show, checks of a trace
    batch(spec)      numpy kernels over a column-major batch of states: exhaustive search, Spark, liveness
    symbolic(spec)   z3 terms: bounded model checking, k-induction, lemma learning
    compiled(spec)   the spec traced into one-state Python code over tuples of ints: fuzzing, minimization
    native(spec)     fused numba loops per action instance over a chunk (model/native.py): exhaustive search

The user's class carries none of these methods, so a spec may call its own helpers
``holds``, ``step``, ``run`` or ``enabled`` (model/spec.py rejects, at class
creation, only the few names the engines read off a spec: ``RESERVED``).
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from isrcheck.model import kernel_cache
from isrcheck.model.compile import Graph, kernel, kernel_code, tuple_kernel
from isrcheck.model.expr import DeclarationError, term
from isrcheck.model.view import GuardDone, View, scalar_reader, z3_reader, z3_type_ok


def _cached(spec, kind):
    """The backend ``kind`` of a spec instance, built on first use."""
    found = vars(spec).setdefault("_isrcheck_backends", {})
    backend = found.get(kind)
    if backend is None:
        backend = found[kind] = kind(spec)
    return backend


def action_named(spec, name, params):
    """The action instance of ``spec`` called ``name`` with these parameters, or None."""
    for a in spec.actions:
        if a.name == name and a.params == params:
            return a
    return None


def run_action(spec, inst, view):
    """Run one action instance on a view (any backend); returns its guard."""
    try:
        inst.fn(spec, view, **inst.params)
    except GuardDone:
        pass
    return view.guard


class Scalar:
    """One state at a time: a row is a numpy int8 vector, one cell per column of the layout."""

    def __init__(self, spec):
        self.spec, self.layout = spec, spec.layout

    def initial_row(self):
        """The initial state (cells the spec's ``initial`` does not write start at their lower bound)."""
        lay = self.layout
        row = lay.lo.astype(np.int8)
        view = View(lay, scalar_reader(lay, row))
        try:
            self.spec.initial(view)
        except AttributeError as e:
            raise DeclarationError(f"initial: {e}") from None
        for c, v in view._written.items():
            if not lay.lo[c] <= int(v) <= lay.hi[c]:
                raise DeclarationError(f"initial: writes {lay.names[c]} = {int(v)}, outside {lay.lo[c]}..{lay.hi[c]}")
            row[c] = int(v)
        return row

    def step(self, row, inst):
        """The successor row, or None when the action is disabled."""
        view = View(self.layout, scalar_reader(self.layout, row))
        if not bool(run_action(self.spec, inst, view)):
            return None
        new = row.copy()
        for c, v in view._written.items():
            new[c] = int(v)
        return new

    def holds(self, row, inv):
        """Whether an invariant (or a property's trigger or goal) holds in a row."""
        return bool(inv.fn(self.spec, View(self.layout, scalar_reader(self.layout, row))))

    def enabled(self, row):
        """Every enabled action instance (guards only: each run stops at its first write)."""
        read = scalar_reader(self.layout, row)
        return [a for a in self.spec.actions
                if bool(run_action(self.spec, a, View(self.layout, read, guard_only=True)))]


def trace_action(spec, inst, graph):
    """An action run on the nodes of an expression ``graph``: its view holds the guard and the writes."""
    view = View(spec.layout, graph.reader(spec.layout))
    inst.fn(spec, view, **inst.params)
    return view


def trace_invariant(spec, inv, graph):
    """An invariant as a node of an expression ``graph``."""
    return inv.fn(spec, View(spec.layout, graph.reader(spec.layout)))


class Batch:
    """Numpy: a batch is column-major (one row per column of the layout, one entry per state).

    Each action and invariant is traced once into numpy code (model/compile.py); the guards of all the
    action instances are one graph evaluated by one kernel, so what they share (a replica's role, a log's
    end) is computed once per batch, and the actions' updates are traced on that graph too. The compiled
    kernels of a spec's actions and invariants are built on first use and kept across processes
    (model/kernel_cache.py).
    """

    def __init__(self, spec):
        self.spec = spec
        self._guards = None         # the guards' kernel, then per action instance (written columns, update kernel)
        self._updates = self._invariants = None
        self._others = {}           # name -> kernel of what holds() is given besides the spec's invariants

    def _build(self):
        """The kernels, from the cache or traced and compiled (then cached)."""
        spec = self.spec
        key = kernel_cache.key(spec)
        found = kernel_cache.read(key, spec)
        if found is None:
            found = self._compile()
            kernel_cache.write(key, *found)
        guards, updates, invariants = found
        self._updates = [(columns, kernel(code)) for columns, code in updates]
        self._invariants = {name: kernel(code) for name, code in invariants.items()}
        self._guards = kernel(guards)

    def _compile(self):
        """(guards' code, per action instance (written columns, update code), {invariant: code}).

        An update kernel returns the written columns' new values, then their old ones (read once, shared with
        the update where it reads them too).
        """
        graph = Graph()
        old = graph.reader(self.spec.layout)
        views = [trace_action(self.spec, inst, graph) for inst in self.spec.actions]
        updates = []
        for view in views:
            columns = list(view._written)
            updates.append((columns, kernel_code([view._written[c] for c in columns] + [old(c) for c in columns],
                                                 subset=True)))
        invariants = {name: kernel_code([trace_invariant(self.spec, inv, Graph())], subset=False)
                      for name, inv in self.spec.invariants.items()}
        return kernel_code([v.guard for v in views], subset=False), updates, invariants

    def guards(self, batch):
        """Every action instance's guard over a batch (bool vectors, by instance id), from one kernel."""
        if self._guards is None:
            self._build()
        return [_vector(v, batch) for v in self._guards(batch)]

    def update(self, inst, batch, rows):
        """The new values of the written columns for the given rows (guard assumed).

        Returns an object whose ``_written`` maps column -> values (an array, or a constant),
        and ``old`` maps the same columns to their values before.
        """
        if self._updates is None:
            self._build()
        columns, update = self._updates[inst.id]
        values = update(batch, rows)
        return SimpleNamespace(_written=dict(zip(columns, values)), old=dict(zip(columns, values[len(columns):])))

    def holds(self, inv, batch):
        """The invariant (or a property's trigger or goal) over a batch, as a bool vector."""
        if self._invariants is None:
            self._build()
        if self.spec.invariants.get(inv.name) is inv:
            found = self._invariants[inv.name]
        else:                   # a property's trigger or goal, a candidate lemma: traced on first use
            found = self._others.get(inv.name)
            if found is None:
                found = self._others[inv.name] = kernel(kernel_code([trace_invariant(self.spec, inv, Graph())],
                                                                    subset=False))
        return _vector(found(batch)[0], batch)


def _vector(v, batch):
    return v if isinstance(v, np.ndarray) else np.broadcast_to(np.asarray(v, dtype=bool), (batch.shape[1],))


class Symbolic:
    """z3: a state is a list of z3 constants, one per column (``model.view.z3_variables``)."""

    def __init__(self, spec):
        self.spec = spec

    def type_ok(self, variables):
        """Every integer cell within its declared bounds."""
        return z3_type_ok(self.spec.layout, variables)

    def action(self, inst, variables):
        """(guard, {column: new term}) of an action instance."""
        view = View(self.spec.layout, z3_reader(variables))
        inst.fn(self.spec, view, **inst.params)
        return term(view.guard), {c: term(v) for c, v in view._written.items()}

    def invariant(self, inv, variables):
        """The invariant (or a property's trigger or goal) as a formula."""
        return term(inv.fn(self.spec, View(self.spec.layout, z3_reader(variables))))


class _OnStateTuples:
    """What the one-state-over-tuples models share: ``holds`` by name, and the scalar interface on top."""

    def holds(self, r, name):
        return self.invariant(name)(r)

    def backend(self):
        """This model behind the scalar backend's interface (what checker.traces.minimize replays on)."""
        return _OnTuples(self)


class Compiled(_OnStateTuples):
    """A spec on tuples of ints: ``enabled(r)`` (instance ids), ``step(r, i)``, ``holds(r, name)``.

    Every action and invariant is traced on :class:`model.compile.Node` values
    into one shared graph, as the numpy kernels are, and emitted by
    :func:`model.compile.tuple_kernel`: the very guards, updates and invariants
    the other backends evaluate, as straight-line Python over one state.
    """

    def __init__(self, spec):
        self.spec = spec
        lay = spec.layout
        self.graph = Graph()
        booleans = {c for c in range(len(lay.names)) if lay.boolean[c]}
        guards, self.updates = [], []
        for inst in spec.actions:
            view = trace_action(spec, inst, self.graph)
            guards.append(view.guard)
            columns = list(view._written)
            self.updates.append(tuple_kernel([view._written[c] for c in columns], "update", columns, booleans))
        self.enabled = tuple_kernel(guards, "which")
        self._guards = guards
        self._invariants = {}
        self.initial = tuple(int(v) for v in scalar(spec).initial_row())

    def step(self, r, i):
        """The successor of state ``r`` by instance id ``i`` (which must be enabled)."""
        return self.updates[i](r)

    def enabled_among(self, ids):
        """``enabled`` for the instances ``ids`` only (a function of a state; the others' guards are not evaluated)."""
        return tuple_kernel([self._guards[i] for i in ids], "which", labels=list(ids))

    def invariant(self, name):
        """The invariant ``name`` as a function of a state tuple."""
        fn = self._invariants.get(name)
        if fn is None:
            value = trace_invariant(self.spec, self.spec.invariants[name], self.graph)
            fn = self._invariants[name] = tuple_kernel([value], "value")
        return fn


class ScalarTuples(_OnStateTuples):
    """:class:`Compiled`'s interface on the scalar backend (slow; the fuzzer's ``backend="scalar"``)."""

    def __init__(self, spec):
        self.spec, self.scalar = spec, scalar(spec)
        self.initial = tuple(int(v) for v in self.scalar.initial_row())

    def _row(self, r):
        return np.array(r, dtype=np.int8)

    def enabled(self, r):
        return [a.id for a in self.scalar.enabled(self._row(r))]

    def enabled_among(self, ids):
        keep = set(ids)
        return lambda r: [i for i in self.enabled(r) if i in keep]

    def step(self, r, i):
        return tuple(int(v) for v in self.scalar.step(self._row(r), self.spec.actions[i]))

    def invariant(self, name):
        inv = self.spec.invariants[name]
        return lambda r: self.scalar.holds(self._row(r), inv)


class _OnTuples:
    """``initial_row`` / ``step(row, inst)`` / ``holds(row, inv)`` like :class:`Scalar`, on tuples."""

    def __init__(self, model):
        self.model = model

    def initial_row(self):
        return self.model.initial

    def step(self, row, inst):
        if inst.id not in self.model.enabled(row):
            return None
        return self.model.step(row, inst.id)

    def holds(self, row, inv):
        return self.model.holds(row, inv.name)

    def successors(self, row):
        """``[(instance id, successor)]`` of every enabled instance, from one evaluation of the guards."""
        return [(i, self.model.step(row, i)) for i in self.model.enabled(row)]


def scalar(spec) -> Scalar:
    """The scalar backend of a spec instance."""
    return _cached(spec, Scalar)


def batch(spec) -> Batch:
    """The numpy batch backend of a spec instance (its kernels compiled on first use, then kept)."""
    return _cached(spec, Batch)


def symbolic(spec) -> Symbolic:
    """The z3 backend of a spec instance."""
    return _cached(spec, Symbolic)


def compiled(spec) -> Compiled:
    """The compiled one-state backend of a spec instance (compiled once, then kept)."""
    return _cached(spec, Compiled)


def _native(spec):
    from isrcheck.model.native import Native       # numba loads only when the native kernels are wanted
    views = [trace_action(spec, inst, Graph()) for inst in spec.actions]
    return Native(spec.layout, [(v.guard, v._written) for v in views],
                  {name: trace_invariant(spec, inv, Graph()) for name, inv in spec.invariants.items()})


def native(spec):
    """The native (numba) kernels of a spec instance: traced on first use, compiled on their first call."""
    return _cached(spec, _native)
