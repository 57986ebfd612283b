"""The command line's other commands from Python: ``isrcheck.fuzz``, ``isrcheck.prove``, ``isrcheck.gate``.

Each runs what its command runs and returns a plain dataclass (:class:`FuzzResult`, :class:`ProofResult`,
:class:`GateResult`); traces are :class:`isrcheck.checker.traces.trace.Trace` objects, written nowhere unless saved
(``trace`` module's ``save``), except the gate's, which reads and writes its directories as the command does.
Specs are named as for :func:`isrcheck.check`: a registered name, ``"FILE.py:CLASS"``, ``"MODULE:CLASS"`` or
a Spec subclass. Mistakes raise ValueError (:class:`isrcheck.BoundsError` for bounds out of range).

    >>> isrcheck.fuzz("kip-101", "no-committed-loss", seconds=20, seed=1).verdicts   # doctest: +SKIP
    {'no-committed-loss': 'violated'}          # or 'unknown': random runs within a time budget
    >>> isrcheck.prove("kip-320", "no-committed-loss").verdict
    'proved'
    >>> isrcheck.gate(["kip-101"]).ok
    True
"""
from __future__ import annotations

import random
import time
from dataclasses import dataclass, field

from isrcheck.checker.engine.budget import Budget
from isrcheck.checker.traces.trace import Trace, from_steps
from isrcheck.checking import names, spec_class


@dataclass
class FuzzResult:
    """What a fuzz campaign found. ``verdicts``: per invariant, ``"violated"`` or ``"unknown"`` (random runs never
    show that an invariant holds); ``traces``: a shrunk counterexample per violated invariant; ``seed`` repeats
    the campaign (while no time budget cuts it short); ``runs``, ``steps``, ``distinct_states``: how much it
    explored; ``budget_hit``: what ended it."""
    spec: str
    bounds: dict
    verdicts: dict
    seed: int
    runs: int | None
    steps: int | None
    distinct_states: int | None
    seconds: float
    budget_hit: str | None
    traces: dict = field(default_factory=dict)

    @property
    def violated(self):
        return [inv for inv, v in self.verdicts.items() if v == "violated"]


def fuzz(spec, invariants=None, *, seconds=60.0, seed=None, max_steps=None, **bounds):
    """Random long executions of ``spec`` at ``bounds`` for ``seconds``, steered by its fuzz targets, checking
    ``invariants`` (one, a list, or None for all) after every step; a violation is shrunk (``isrcheck fuzz``)."""
    from isrcheck.checker.fuzzing.fuzzer import fuzz as run
    instance = spec_class(spec)(**bounds)
    chosen = names("invariant", invariants, instance.invariants, instance.name)
    seed = random.getrandbits(32) if seed is None else seed
    result = run(instance, chosen, Budget(seconds=seconds, max_steps=max_steps), seed=seed, derandomize=True)
    traces = {inv: from_steps(instance, inv, "fuzz", v.steps, seed=seed) for inv, v in result.violations.items()}
    return FuzzResult(instance.name, dict(instance.bounds), result.verdicts, seed, result.runs, result.transitions,
                      result.distinct_states, result.seconds, result.budget_hit, traces)


@dataclass
class ProofResult:
    """What ``prove`` concluded. ``verdict``: ``"proved"`` (for every depth, at these bounds), ``"refuted"``
    (``trace`` is a real counterexample), ``"not-inductive"`` (``counterexample_to_induction``: the states, each
    as ``(action label or None, state)``, consistent but unreachable: a lemma is missing; ``failing`` names what
    breaks), or ``"unknown"`` (``reason``). ``lemmas``: what was assumed and proved alongside."""
    spec: str
    bounds: dict
    invariant: str
    verdict: str
    k: int
    lemmas: list
    seconds: float
    reason: str | None = None
    failing: str | None = None
    trace: Trace | None = None
    counterexample_to_induction: list = field(default_factory=list)

    @property
    def proved(self):
        return self.verdict == "proved"


def prove(spec, invariant, *, k=1, lemmas=None, auto_lemmas=False, z3_timeout=None, **bounds):
    """k-induction on ``invariant`` of ``spec`` at ``bounds`` (``isrcheck prove``): with ``lemmas`` (invariants of the
    spec, proved alongside), else the lemmas and options the spec declares for it (``proofs``), or with
    ``auto_lemmas`` lemmas learned from the reachable states (``k`` unused)."""
    cls = spec_class(spec)
    if auto_lemmas and lemmas:
        raise ValueError("auto_lemmas finds the lemmas itself: leave out lemmas")
    lemmas = list(lemmas or ())
    declared = None if lemmas or auto_lemmas else getattr(cls, "proofs", {}).get(invariant)
    if declared:
        lemmas, bounds = list(declared["lemmas"]), {**declared["settings"], **bounds}
    instance = cls(**bounds)
    names("invariant", [invariant, *lemmas], instance.invariants, instance.name)
    budget, start = Budget(seconds=z3_timeout), time.perf_counter()
    if auto_lemmas:
        from isrcheck.checker.symbolic.strengthen import prove_with_lemmas
        result, _ = prove_with_lemmas(instance, invariant, budget)
    else:
        from isrcheck.checker.symbolic.induction import prove as k_induction
        result = k_induction(instance, invariant, k, lemmas=lemmas, budget=budget)
    trace = from_steps(instance, invariant, "prove", result.steps) if result.verdict == "refuted" else None
    cti = ([(a.label if a is not None else None, state) for a, state in result.steps]
           if result.verdict == "not-inductive" else [])
    return ProofResult(instance.name, dict(instance.bounds), invariant, result.verdict, result.k,
                       list(result.lemmas or lemmas), time.perf_counter() - start, result.reason,
                       getattr(result, "failing", None), trace, cti)


@dataclass
class GateRow:
    """One expectation: ``invariant`` (or liveness property) of ``spec`` at ``configuration`` must be ``expected``;
    ``got`` is what the search found, ``problems`` why the expectation is unmet (empty when ``ok``);
    ``saved_trace`` the golden counterexample of an expected violation, ``counterexample`` one this run wrote."""
    spec: str
    configuration: str
    invariant: str
    expected: str
    got: str
    ok: bool
    problems: list
    distinct_states: int
    saved_trace: str | None
    counterexample: str | None


@dataclass
class GateResult:
    """The gate's verdict: ``ok`` when every expectation is met; ``rows`` each expectation; ``skipped`` the specs
    ``changed_since`` left out and ``changed_why`` why it checked more; ``stopped`` what stopped it early."""
    ok: bool
    summary: str
    rows: list
    skipped: list
    changed_why: list
    stopped: str | None
    seconds: float

    @property
    def unmet(self):
        return [r for r in self.rows if not r.ok]


def gate(specs=(), *, counterexamples="counterexamples", out="gate-counterexamples", changed_since=None,
         update_traces=False):
    """``isrcheck gate``: every spec (or those ``specs`` names) at each of its configurations against its expected
    verdicts and the saved counterexamples under ``counterexamples``; counterexamples of unmet expectations are
    written under ``out``."""
    from isrcheck.checker.gating.gate import named
    from isrcheck.checker.gating.gate_results import GateError
    from isrcheck.checker.gating.gate_run import run_gate
    try:
        registry, chosen = named([specs] if isinstance(specs, str) else list(specs))
        report = run_gate(chosen, registry, counterexamples=counterexamples, out=out, changed_since=changed_since,
                          update_traces=update_traces)
    except GateError as e:
        raise ValueError(e.format_message()) from None
    rows = [GateRow(r.spec, r.configuration, r.invariant, r.expected, r.got, r.ok, r.problems(), r.states,
                    r.saved_trace, r.counterexample) for r in report.rows]
    return GateResult(report.ok, report.headline(), rows, report.skipped, report.changed_why, report.stopped,
                      report.seconds)


__all__ = ["fuzz", "FuzzResult", "prove", "ProofResult", "gate", "GateResult", "GateRow"]
