"""``isrcheck.check``: the exhaustive check from Python, with its result as an object.

    >>> import isrcheck
    >>> result = isrcheck.check("kip-101", "no-committed-loss")
    >>> result.verdicts
    {'no-committed-loss': 'violated'}
    >>> print(result.render("no-committed-loss"))        # what `isrcheck show` prints for its trace

The search is the command line's local engine (``isrcheck check``); nothing is written to disk. Liveness
properties are checked when named (``properties=["hw-advances"]``), as ``check --property`` does: their
verdicts join the invariants' and a violated one's lasso is among the traces. :mod:`isrcheck.commands` has
the other commands (``fuzz``, ``prove``, ``gate``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from isrcheck.checker.command_line import state_counts
from isrcheck.checker.exhaustive.bfs import search
from isrcheck.checker.engine.budget import Budget
from isrcheck.checker.exhaustive.liveness import check as check_liveness, lasso_trace
from isrcheck.checker.command_line.registry import resolve
from isrcheck.checker.command_line.report import liveness_expectations
from isrcheck.checker.engine.result import Measured
from isrcheck.checker.traces.trace import Trace, from_steps, save
from isrcheck.checker.command_line.variants import unnamed
from isrcheck.model.configuration import configuration_of
from isrcheck.model.spec import Spec


@dataclass
class CheckResult(Measured):
    """What a check found.

    ``verdicts`` maps each invariant (and liveness property) checked to ``"holds"`` (no reachable state within the
    bounds violates it), ``"violated"`` or ``"unknown"`` (a budget stopped the search first). ``traces`` holds a
    shortest counterexample per violated invariant, and a lasso per violated property, as a
    :class:`isrcheck.checker.traces.trace.Trace`; ``render`` words one the way ``isrcheck show`` does, and ``save``
    writes it as an ITF file the command line reads. ``expected`` is what the spec declares for these bounds
    when they are one of its configurations (its defaults or a named one, ``configuration``), for the
    invariants checked, and at its defaults for the properties checked; else it is empty.
    ``coverage`` is the search's action coverage, as ``--format json`` has it (``actions``: per action,
    ``instances``: per action instance, each with ``enabled``, ``fired`` and ``new_states``).
    The counts and times mean what they mean for every engine (``isrcheck.checker.engine.result``): ``distinct_states``,
    ``transitions``, ``depth``, ``seconds``, ``peak_memory_bytes``, ``retained_bytes`` (the visited set and
    parents kept), with ``states_per_second`` and ``bytes_per_state`` derived from them.
    """
    spec: str
    bounds: dict
    verdicts: dict
    expected: dict
    distinct_states: int
    transitions: int | None              # None: properties alone were checked (no invariant search)
    depth: int | None
    seconds: float
    complete: bool                       # the whole reachable state space was searched
    budget_hit: str | None               # which budget stopped it, if one did
    traces: dict = field(default_factory=dict)
    configuration: str | None = None     # the spec's configuration these bounds are, if any
    instance: Spec | None = field(default=None, repr=False)
    coverage: dict = field(default_factory=dict, repr=False)
    peak_memory_bytes: int | None = None
    retained_bytes: int | None = None

    @property
    def holds(self):
        """Every invariant checked holds."""
        return all(v == "holds" for v in self.verdicts.values())

    @property
    def violated(self):
        """The invariants violated, in the order checked."""
        return [inv for inv, v in self.verdicts.items() if v == "violated"]

    @property
    def as_expected(self):
        """Every verdict the spec states an expectation for matches it."""
        return all(self.verdicts[inv] == want for inv, want in self.expected.items())

    def _trace(self, invariant):
        if invariant is None:
            if not self.traces:
                raise ValueError(f"{self.spec}: no invariant was violated, there is no trace")
            invariant = next(iter(self.traces))
        if invariant not in self.traces:
            raise ValueError(f"{self.spec}: no trace for {invariant!r} (violated: {', '.join(self.traces) or 'none'})")
        return self.traces[invariant]

    def render(self, invariant=None, format="text"):
        """A violation's trace (the first one by default) as ``isrcheck show`` prints it; ``format`` ``"html"``,
        ``"mermaid"`` or ``"dot"`` give what ``show --format`` writes."""
        from isrcheck.checker.traces import export, html, show
        renderers = {"text": show.trace_text, "html": html.to_html, "mermaid": export.to_mermaid,
                     "dot": export.to_dot}
        if format not in renderers:
            raise ValueError(f"format {format!r}: one of {', '.join(renderers)}")
        return renderers[format](self.instance, self._trace(invariant))

    def save(self, path, invariant=None):
        """Write a violation's trace (the first one by default) as an ITF file; returns the path."""
        return save(self._trace(invariant), path)


def spec_class(spec):
    """The Spec class ``spec`` names: a registered name, ``"FILE.py:CLASS"``, ``"MODULE:CLASS"`` or the class itself
    (ValueError otherwise, or for a variant without a name of its own)."""
    cls = resolve(spec) if isinstance(spec, str) else spec      # a SpecRefError is a ValueError
    if not (isinstance(cls, type) and issubclass(cls, Spec)):
        raise ValueError(f"spec {spec!r}: a name, FILE.py:CLASS, MODULE:CLASS or a Spec subclass")
    if unnamed(cls):
        raise ValueError(unnamed(cls))
    return cls


def names(kind, requested, known, spec_name):
    """The invariants (or properties) to check: one name, a list, or None for all of ``known``."""
    chosen = list(known) if requested is None else (
        [requested] if isinstance(requested, str) else list(dict.fromkeys(requested)))
    for name in chosen:
        if name not in known:
            raise ValueError(f"spec {spec_name} has no {kind} {name!r} (it has: {', '.join(known) or 'none'})")
    return chosen


def check(spec, invariants=None, *, properties=(), max_states=None, max_depth=None, time_limit=None,
          symmetry=False, **bounds):
    """Search every reachable state of ``spec`` within ``bounds`` for violations of ``invariants`` and of the
    liveness ``properties``.

    ``spec``: a registered name (``"kip-320"``, see ``isrcheck list``), a reference ``"FILE.py:CLASS"`` or
    ``"MODULE:CLASS"``, or a :class:`isrcheck.Spec` subclass. ``invariants``: one name, a list, or None for
    all of the spec's (``[]`` for none, to check properties alone). ``properties``: one name or a list
    (P leads to Q under its fairness; not with ``symmetry``). ``bounds``: the spec's bounds and model options
    (``replicas=3``, ``unflushed_loss=1``; the spec's defaults otherwise). ``max_states``, ``max_depth``,
    ``time_limit`` (seconds) are budgets: a verdict they cut short is ``"unknown"``. Raises ValueError for an
    unknown spec, invariant or property and :class:`isrcheck.BoundsError` for bounds out of range.
    """
    cls = spec_class(spec)
    instance = cls(**bounds)
    chosen = names("invariant", invariants, instance.invariants, instance.name)
    props = names("liveness property", properties or [], instance.properties, instance.name)
    if props and symmetry:
        raise ValueError("liveness properties are checked without symmetry reduction")
    budget = Budget(max_states=max_states, max_depth=max_depth, seconds=time_limit)
    conf, declared = configuration_of(cls, instance.bounds)
    verdicts, traces, expected, out = {}, {}, {}, None
    if chosen or not props:             # properties alone: the liveness search is the only one, as on the CLI
        result = search(instance, chosen, symmetry=symmetry, budget=budget)
        state_counts.record(instance, result, symmetry)
        verdicts.update(result.verdicts)
        traces.update((inv, from_steps(instance, inv, "local", v.steps)) for inv, v in result.violations.items())
        expected.update((inv, want) for inv, want in (declared.expected if declared else {}).items() if inv in chosen)
        out = CheckResult(instance.name, dict(instance.bounds), verdicts, expected, result.distinct_states,
                          result.transitions, result.depth, result.seconds, result.complete, result.budget_hit,
                          traces, conf, instance, result.coverage.as_json(), result.peak_memory_bytes,
                          result.retained_bytes)
    if out is not None and out.budget_hit:             # the search stopped first: the properties are not checked
        verdicts.update((name, "unknown") for name in props)
    if not props or (out is not None and out.budget_hit):
        return out
    live = check_liveness(instance, props, budget=budget)
    verdicts.update((name, r.verdict) for name, r in live.items())
    traces.update((name, lasso_trace(instance, r)) for name, r in live.items() if r.lasso is not None)
    expected.update((name, want) for name, want in liveness_expectations(instance).items() if name in props)
    if out is not None:
        return out
    r = next(iter(live.values()))       # the exploration every property is checked on
    return CheckResult(instance.name, dict(instance.bounds), verdicts, expected, r.distinct_states, None, None,
                       r.seconds, r.budget_hit is None, r.budget_hit, traces, conf, instance, {}, r.peak_memory_bytes,
                       r.retained_bytes)


__all__ = ["check", "CheckResult", "Trace"]
