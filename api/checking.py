"""``isrcheck.check``: the exhaustive check from Python, with its result as an object.

    >>> import isrcheck
    >>> result = isrcheck.check("kip-101", "no-committed-loss")
    >>> result.verdicts
    {'no-committed-loss': 'violated'}
    >>> print(result.render("no-committed-loss"))        # what `isrcheck show` prints for its trace

The search is the command line's local engine (``isrcheck check``); nothing is written to disk.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from isrcheck.checker.bfs import search
from isrcheck.checker.budget import Budget
from isrcheck.checker.result import Measured
from isrcheck.checker.registry import resolve
from isrcheck.checker.trace import Trace, from_steps, save
from isrcheck.model.configuration import configuration_of
from isrcheck.model.spec import Spec


@dataclass
class CheckResult(Measured):
    """What a check found.

    ``verdicts`` maps each invariant checked to ``"holds"`` (no reachable state within the bounds violates it),
    ``"violated"`` or ``"unknown"`` (a budget stopped the search first). ``traces`` holds a shortest
    counterexample per violated invariant, as a :class:`isrcheck.checker.trace.Trace`; ``render`` words one
    the way ``isrcheck show`` does, and ``save`` writes it as an ITF file the command line reads.
    ``expected`` is what the spec declares for these bounds when they are one of its configurations (its
    defaults or a named one, ``configuration``), for the invariants checked; else it is empty.
    ``coverage`` is the search's action coverage, as ``--format json`` has it (``actions``: per action,
    ``instances``: per action instance, each with ``enabled``, ``fired`` and ``new_states``).
    The counts and times mean what they mean for every engine (``isrcheck.checker.result``): ``distinct_states``,
    ``transitions``, ``depth``, ``seconds``, ``peak_memory_bytes``, ``retained_bytes`` (the visited set and
    parents kept), with ``states_per_second`` and ``bytes_per_state`` derived from them.
    """
    spec: str
    bounds: dict
    verdicts: dict
    expected: dict
    distinct_states: int
    transitions: int
    depth: int
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
        from isrcheck.checker import export, html, show
        renderers = {"text": show.trace_text, "html": html.to_html, "mermaid": export.to_mermaid,
                     "dot": export.to_dot}
        if format not in renderers:
            raise ValueError(f"format {format!r}: one of {', '.join(renderers)}")
        return renderers[format](self.instance, self._trace(invariant))

    def save(self, path, invariant=None):
        """Write a violation's trace (the first one by default) as an ITF file; returns the path."""
        return save(self._trace(invariant), path)


def check(spec, invariants=None, *, max_states=None, max_depth=None, time_limit=None, symmetry=False, **bounds):
    """Search every reachable state of ``spec`` within ``bounds`` for violations of ``invariants``.

    ``spec``: a registered name (``"kip-320"``, see ``isrcheck list``), a reference ``"FILE.py:CLASS"`` or
    ``"MODULE:CLASS"``, or a :class:`isrcheck.Spec` subclass. ``invariants``: one name, a list, or None for
    all of the spec's. ``bounds``: the spec's bounds and model options (``replicas=3``, ``unflushed_loss=1``;
    the spec's defaults otherwise). ``max_states``, ``max_depth``, ``time_limit`` (seconds) are budgets: a
    verdict they cut short is ``"unknown"``. Raises ValueError for an unknown spec or invariant and
    :class:`isrcheck.BoundsError` for bounds out of range.
    """
    cls = resolve(spec) if isinstance(spec, str) else spec
    if not (isinstance(cls, type) and issubclass(cls, Spec)):
        raise ValueError(f"spec {spec!r}: a name, FILE.py:CLASS, MODULE:CLASS or a Spec subclass")
    instance = cls(**bounds)
    names = list(instance.invariants) if invariants is None else (
        [invariants] if isinstance(invariants, str) else list(dict.fromkeys(invariants)))
    for name in names:
        if name not in instance.invariants:
            raise ValueError(f"spec {instance.name} has no invariant {name!r} "
                             f"(it has: {', '.join(instance.invariants)})")
    result = search(instance, names, symmetry=symmetry,
                    budget=Budget(max_states=max_states, max_depth=max_depth, seconds=time_limit))
    traces = {inv: from_steps(instance, inv, "local", v.steps) for inv, v in result.violations.items()}
    conf, declared = configuration_of(cls, instance.bounds)
    expected = declared.expected if declared else {}
    return CheckResult(instance.name, dict(instance.bounds), result.verdicts,
                       {inv: want for inv, want in expected.items() if inv in names},
                       result.distinct_states, result.transitions, result.depth, result.seconds, result.complete,
                       result.budget_hit, traces, conf, instance, result.coverage.as_json(), result.peak_memory_bytes,
                       result.retained_bytes)


__all__ = ["check", "CheckResult", "Trace"]
