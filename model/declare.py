"""The declarations a spec is written with: ``@action``, ``@invariant``, ``@leads_to`` with ``weak``/``strong``
fairness, ``FuzzTarget``; and what loading a spec makes of them (action instances, invariants, properties).
``model.spec`` re-exports the decorators, which is where specs import them from.
"""
from __future__ import annotations

from dataclasses import dataclass, field as dc_field

import numpy as np

from isrcheck.model.expr import DeclarationError


def action(*misuse, **domains):
    """Declare a guarded command; keyword arguments name each parameter's domain."""
    if misuse:
        raise DeclarationError(f"@action on {getattr(misuse[0], '__name__', misuse[0])!r}: name each parameter's "
                               f"domain, e.g. @action(r=\"REPLICAS\") (or @action() for none)")
    for param, d in domains.items():
        if not isinstance(d, str) and not is_int_sequence(d):
            raise DeclarationError(f"@action({param}={d!r}): a domain is the name of a spec attribute holding "
                                   f"the values, e.g. {param}=\"REPLICAS\", or a range of ints")

    def deco(fn):
        fn.__isrcheck_action__ = domains
        return fn
    return deco


def is_int_sequence(values):
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


def doc_parts(fn):
    doc = (fn.__doc__ or "").strip()
    first, _, rest = doc.partition("\n")
    return first.strip(), " ".join(rest.split())


@dataclass(frozen=True)
class Bound:
    """One bound of the state space or model option, declared once (``Spec.declared_bounds``).

    ``default`` and the allowed range ``lo..hi`` give the spec's ``defaults`` and
    ``limits``; ``doc`` is its help text in the CLI and ``isrcheck list``. A
    ``kind="bound"`` (a size of the state space: replicas, epochs, ...) gets its own
    command-line flag (``--max-epochs``) and is named in the gate's progress lines;
    a ``kind="option"`` (a protocol setting, a feature switch) is set with ``--set KEY=VALUE``.
    """

    name: str
    default: int
    lo: int
    hi: int
    doc: str = ""
    kind: str = "option"

    @property
    def flag(self):
        """The command-line flag of a bound (``--max-epochs``)."""
        return f"--{self.name.replace('_', '-')}"


class Bounds:
    """The bounds and options one spec instance is built at, as attributes, for its ``configure(self, bounds)``:
    ``bounds.replicas``. Their names are the declared ones (``declared_bounds``, or ``defaults``), so a spec
    states each bound once; reading one that is not declared is a DeclarationError naming it."""

    def __init__(self, spec_class, values):
        self._spec_class, self._values = spec_class, dict(values)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        if name not in self._values:
            raise DeclarationError(f"{self._spec_class.__name__}.configure() reads bounds.{name}, which is no "
                                   f"declared bound (declared: {', '.join(self._values) or 'none'}): declare it "
                                   f"in declared_bounds as Bound({name!r}, default, lo, hi, doc)")
        return self._values[name]

    def __repr__(self):
        return "Bounds(" + ", ".join(f"{k}={v}" for k, v in self._values.items()) + ")"
