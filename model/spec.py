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

Loading a spec runs every action instance and invariant on the z3 backend
(model/loading.py): Python control flow on a state value, a bool/int mix-up, or
a write that can leave a field's bounds in a well-typed state fails there,
naming the action. A process building a spec whose sources and bounds passed
those checks before takes the verdict from model/load_cache.py instead.

A spec only declares: the engines evaluate it through backends (model/backends.py:
scalar, numpy batch, z3, compiled), so its helpers may have any name but the few
in ``RESERVED``, which the engines read off every spec (rejected at class creation).
"""
from __future__ import annotations

import inspect

from isrcheck.model import backends, configuration, load_cache, loading, near_miss, sources
from isrcheck.model.declare import (ActionInstance, Bound, Bounds, Fairness, FuzzTarget, Invariant, LeadsTo, action,
                                    doc_parts, invariant, leads_to, strong, weak)
from isrcheck.model.expr import DeclarationError
from isrcheck.model.layout import Field, Layout
from isrcheck.model.present import Presentation

__all__ = ["Spec", "BoundsError", "DECLARED", "RESERVED", "action", "invariant", "leads_to", "weak", "strong",
           "Bound", "FuzzTarget", "Fairness", "ActionInstance", "Invariant", "LeadsTo"]

#: what a subclass declares or overrides; every other name :class:`Spec` defines, and the attributes an
#: instance gets, are read by the engines (``RESERVED``): a subclass may not redefine them
DECLARED = frozenset({"name", "summary", "references", "declared_bounds", "defaults", "limits", "expected",
                      "expected_why", "expected_liveness", "expected_liveness_why", "configurations", "not_modelled",
                      "dropped_invariants", "proofs", "fuzz_targets", "fuzz_keep_up", "replica_domain",
                      "presentation_class", "configure", "fields", "initial"})

#: spec class and bounds -> (invariants, action instances, properties), each checked once per process (and once
#: per source and bounds across processes: model/load_cache.py)
_CHECKED = {}


class BoundsError(ValueError):
    """A bound or option outside its allowed range."""


class Spec:
    """Base class of a model: subclasses declare fields, initial, actions, invariants."""

    name: str = ""
    summary: str = ""
    references: tuple = ()
    #: every bound and model option, declared once (:class:`Bound`: name, default, range, doc); a family
    #: declares them, and ``defaults``, ``limits``, the CLI's flags and ``list`` derive from them
    declared_bounds: tuple = ()
    #: bound/option name -> default value (derived from ``declared_bounds``; a version overrides some,
    #: e.g. ``defaults = {**Kip320.defaults, "max_epochs": 2}``)
    defaults: dict = {}
    #: bound/option name -> (lowest, highest) allowed (derived from ``declared_bounds``)
    limits: dict = {}
    #: invariant name -> "holds" | "violated" at the default bounds. Inherited along the MRO: a version
    #: states only what changes (``{**Parent.expected, ...}`` means the same)
    expected: dict = {}
    #: invariant name -> why it is expected so (ticket, KIP); a why is inherited while the verdict it
    #: explains is (a version that changes a verdict without saying why has no why for it)
    expected_why: dict = {}
    #: names of inherited invariants this version leaves out, with their expected verdicts and every proof
    #: that uses them (e.g. a version that changes the protocol drops its parent's proof lemmas)
    dropped_invariants: tuple = ()
    #: invariant -> {"lemmas": [invariant, ...], "settings": {option: value}}: what ``isrcheck prove``
    #: assumes and proves along with the invariant when no --lemma is given, and the options it turns on
    proofs: dict = {}
    #: liveness property name -> "holds" | "violated" at the default bounds, as this class states them; merged
    #: along the MRO as ``expected`` is (``liveness_expected()``); None withdraws an inherited one (not triaged)
    expected_liveness: dict = {}
    #: liveness property name -> why it is expected so, with the fairness it assumes (inherited as expected_why)
    expected_liveness_why: dict = {}

    #: name -> Configuration: expected verdicts at other bounds (model/configuration.py; not inherited)
    configurations: dict = {}
    #: ticket or KIP the references cite -> why the model cannot reproduce it (not inherited)
    not_modelled: dict = {}

    #: what the fuzzer steers towards (:class:`FuzzTarget`): the events that make runs interesting
    fuzz_targets: tuple = ()
    #: names of actions that a replica the fuzzer leaves passive still takes, as soon as one is enabled: what a
    #: replica that is otherwise idle must do so as not to hold the others back (e.g. applying the metadata log
    #: the controller waits on)
    fuzz_keep_up: tuple = ()
    #: the domain (a spec attribute's name) of the action parameters that are replica ids, e.g.
    #: ``@action(r="REPLICAS")``: the fuzzer slows and stops replicas by them (the first one is the replica acting)
    replica_domain: str = "REPLICAS"
    #: how traces read in ``show``, diagrams and the gate's summary: the family's ``Presentation`` subclass
    presentation_class: type = Presentation

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        try:
            _check_declarations(cls)
        except DeclarationError as e:           # named at the user's file and line
            raise DeclarationError(sources.located(str(e), sources.of_class_error(cls, str(e)))) from None

    @classmethod
    def _inherit_expectations(cls):
        """``expected``/``expected_why`` merged along the MRO, less ``dropped_invariants`` (and proofs using them)."""
        expected, why = cls._merged("expected", "expected_why")
        dropped = set(cls.dropped_invariants)
        unknown = dropped - {fn.__isrcheck_invariant__ for _, fn in cls._members("__isrcheck_invariant__", False)}
        if unknown:
            raise DeclarationError(f"{cls.__name__}.dropped_invariants: {sorted(unknown)[0]!r} is no invariant "
                                   f"it inherits")
        cls.expected = {k: v for k, v in expected.items() if k not in dropped}
        cls.expected_why = {k: v for k, v in why.items() if k not in dropped}
        if dropped:
            cls.proofs = {inv: proof for inv, proof in cls.proofs.items()
                          if inv not in dropped and not dropped & set(proof.get("lemmas", ()))}

    @classmethod
    def _merged(cls, attr, why_attr):
        """(verdicts, whys) of ``attr``/``why_attr`` as each class along the MRO states them, base classes first: a
        why is kept while the verdict it explains is."""
        expected, why = {}, {}
        for klass in reversed(cls.__mro__):
            own, own_why = vars(klass).get(attr, {}), vars(klass).get(why_attr, {})
            for name, verdict in own.items():
                if expected.get(name, verdict) != verdict and name not in own_why:
                    why.pop(name, None)            # the verdict changed and the old reason no longer explains it
                expected[name] = verdict
            why.update(own_why)
        return expected, why

    @classmethod
    def _derive_bounds(cls):
        """``defaults`` and ``limits`` from the bounds this class declares (unless it states them itself)."""
        names = [b.name for b in cls.declared_bounds if isinstance(b, Bound)]
        if len(names) != len(cls.declared_bounds):
            raise DeclarationError(f"{cls.__name__}.declared_bounds: a tuple of Bound(name, default, lo, hi, doc)")
        for b in cls.declared_bounds:
            if names.count(b.name) > 1:
                raise DeclarationError(f"{cls.__name__}.declared_bounds: {b.name!r} is declared twice")
            if not b.lo <= b.default <= b.hi:
                raise DeclarationError(f"{cls.__name__}.declared_bounds: {b.name}'s default {b.default} is outside "
                                       f"{b.lo}..{b.hi}")
            if b.kind not in ("bound", "option"):
                raise DeclarationError(f"{cls.__name__}.declared_bounds: {b.name}'s kind is \"bound\" or \"option\", "
                                       f"not {b.kind!r}")
        if "defaults" not in vars(cls):
            cls.defaults = {b.name: b.default for b in cls.declared_bounds}
        if "limits" not in vars(cls):
            cls.limits = {b.name: (b.lo, b.hi) for b in cls.declared_bounds}

    @classmethod
    def bound_declarations(cls):
        """name -> :class:`Bound` of every bound and option, at this class's defaults.

        A family that states ``defaults``/``limits`` dicts instead of declaring bounds
        gets each as an undocumented option.
        """
        declared = {b.name: b for b in cls.declared_bounds}
        out = {}
        for name, default in cls.defaults.items():
            lo, hi = cls.limits.get(name, (None, None))
            b = declared.get(name)
            out[name] = Bound(name, default, lo, hi, b.doc if b else "", b.kind if b else "option")
        return out

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
            self._load()
        except MemoryError:
            raise
        except Exception as e:                  # named at the user's file and line (model/sources.py)
            where = sources.of_error(e, type(self))
            if isinstance(e, DeclarationError):
                raise DeclarationError(sources.located(str(e), where)) from None
            if where is None:                   # not raised in spec code: isrcheck's own error
                raise
            raise DeclarationError(sources.located(f"{type(e).__name__}: {e}", where)) from e

    def _load(self):
        """Build the spec at ``self.bounds``: configure, fields, and the checks of model/loading.py."""
        params = list(inspect.signature(self.configure).parameters.values())
        if len(params) != 1 or params[0].kind not in (params[0].POSITIONAL_ONLY, params[0].POSITIONAL_OR_KEYWORD) \
                or params[0].name in self.bounds:         # configure(self, replicas): the bounds as keywords
            raise DeclarationError(f"{type(self).__name__}.configure() takes one argument, the bounds as attributes: "
                                   f"def configure(self, bounds): ... bounds.{next(iter(self.bounds), 'replicas')} ...")
        self.configure(Bounds(type(self), self.bounds))
        fields = self.fields()
        if not isinstance(fields, (list, tuple)) or not all(isinstance(f, Field) for f in fields):
            raise DeclarationError(f"{type(self).__name__}.fields() must return a list of Field(...)")
        self.layout = Layout(fields)
        key = (type(self), tuple(sorted(self.bounds.items())))
        checked = _CHECKED.get(key)
        if checked is None:                       # the z3 checks run once per spec class and bounds
            loading.check_fuzz_targets(self)
            backends.scalar(self).initial_row()                  # initial() writes in bounds
            self.presentation_class.check(self)
            digest = load_cache.digest(self)
            written = load_cache.read(digest, self)
            actions = None if written is None else loading.kept_instances(self, written)
            if actions is not None:               # these sources passed the checks before: no z3
                self.invariants = type(self).declared_invariants()
                checked = (self.invariants, actions, loading.properties(self, evaluate=False))
            else:
                self.invariants = loading.invariants(self)
                checked = (self.invariants, loading.action_instances(self), loading.properties(self))
                load_cache.write(digest, checked[1])
            _CHECKED[key] = checked
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
            meaning, loss = doc_parts(fn)
            out[fn.__isrcheck_invariant__] = Invariant(fn.__isrcheck_invariant__, fn, meaning, loss,
                                                       fn.__isrcheck_benign__)
        return out

    @classmethod
    def declared_properties(cls):
        """name -> (meaning, fairness) of the liveness properties as declared (documentation only)."""
        out = {}
        for _, fn in cls._members("__isrcheck_leads_to__"):
            name, fairness = fn.__isrcheck_leads_to__
            out[name] = (doc_parts(fn)[0], fairness)
        return out

    @classmethod
    def liveness_expected(cls):
        """(expected, why) of the liveness properties at the default bounds, inherited along the MRO (a version
        states the verdicts that change; None withdraws one it has not triaged)."""
        live, why = cls._merged("expected_liveness", "expected_liveness_why")
        live = {k: v for k, v in live.items() if v is not None}
        return live, {k: v for k, v in why.items() if k in live}

    # --- to be provided by subclasses -------------------------------------------------
    def configure(self, bounds):
        """Derive constants and domains from the bounds: ``bounds.NAME`` for each declared bound
        (model.declare.Bounds)."""

    def fields(self):
        raise NotImplementedError

    def initial(self, s):
        """Write the initial state (cells not written start at their lower bound)."""

    # --- declarations ------------------------------------------------------------------
    @classmethod
    def _members(cls, marker, drop=True):
        """(attribute, function) of every declaration carrying ``marker``, base classes first; the invariants
        in ``dropped_invariants`` left out unless ``drop`` is False."""
        dropped = set(cls.dropped_invariants) if drop and marker == "__isrcheck_invariant__" else set()
        seen, out = set(), []
        for klass in reversed(cls.__mro__):
            for attr in klass.__dict__:
                if attr not in seen:
                    seen.add(attr)
                    out.append(attr)
        for attr in out:
            fn = getattr(cls, attr, None)
            if fn is not None and hasattr(fn, marker) and not (dropped and getattr(fn, marker) in dropped):
                yield attr, fn


def _check_declarations(cls):
    """What a subclass of :class:`Spec` declares, checked when it is created."""
    near_miss.check(cls)
    clash = sorted(set(vars(cls)) & RESERVED)
    if clash:
        raise DeclarationError(f"{cls.__name__}.{clash[0]}: the engines read {clash[0]} off every spec; "
                               f"give your attribute another name (e.g. {clash[0].strip('_')}_)")
    for attr in ("configurations", "not_modelled"):
        if attr not in vars(cls):
            setattr(cls, attr, {})
    if "declared_bounds" in vars(cls):
        cls._derive_bounds()
    cls._inherit_expectations()
    configuration.validate(cls)
    configuration.validate_expected(cls)


#: the names engines read off every spec (see ``DECLARED``), checked when a subclass is created
RESERVED = frozenset({n for n in vars(Spec) if not n.startswith("__")} - DECLARED
                     | {"bounds", "layout", "actions", "invariants", "properties", "presentation",
                        "_isrcheck_backends"})
