"""The fuzzer's entry, on one process or several: the CLI's ``isrcheck fuzz`` and the Python API call it::

    fuzz(spec, invariants, budget, seed=None, derandomize=False, progress=None, *,
         shrink_budget_s=None, backend="compiled", minimize_steps=True, clock=time.monotonic,
         on_violation=None, workers=1, hints=True) -> Result

One process runs checker/fuzzing/fuzz.py's search; several, checker/fuzzing/fuzz_workers.py's workers.
"""
from __future__ import annotations

import random
import time

from isrcheck.checker.engine import stop
from isrcheck.checker.fuzzing.fuzz import DEFAULT_MAX_STEPS, _Fuzzer
from isrcheck.checker.fuzzing.fuzz_workers import fuzz_in_workers


def fuzz(spec, invariants, budget, seed=None, derandomize=False, progress=None, *, shrink_budget_s=None,
         backend="compiled", minimize_steps=True, clock=time.monotonic, on_violation=None, workers=1,
         hints=True):
    """Fuzz ``spec`` for the named invariants for about ``budget.seconds`` seconds; see checker/fuzzing/fuzz.py's module doc.

    ``budget`` (checker/engine/budget.py): ``seconds`` (required), ``max_steps`` (the longest execution;
    DEFAULT_MAX_STEPS when None), ``max_runs`` (search runs at most; none when None).

    ``progress``, when given, is called about once a second with keyword
    arguments ``runs``, ``transitions``, ``distinct``, ``seconds``, ``found``;
    ``on_violation(violation)`` as soon as an invariant is first broken (not yet
    minimized). A stop request (:mod:`checker.engine.stop`) ends the run like the budget,
    and the traces found are then kept unminimized. ``workers``: processes searching
    at once (checker/fuzzing/fuzz_workers.py; 1: this process alone). ``hints``: whether runs may follow the
    shortest counterexamples the exhaustive search finds at small bounds, lifted to ``spec``'s bounds
    (checker/fuzzing/fuzz_hints.py).
    """
    unknown = [n for n in invariants if n not in spec.invariants]
    if unknown:
        raise KeyError(f"spec {spec.name} has no invariant {unknown[0]!r}")
    if budget.seconds is None:
        raise ValueError("fuzz needs a time budget (Budget(seconds=...))")
    if seed is None:
        seed = 0 if derandomize else random.getrandbits(32)
    args = (spec, invariants, budget.seconds, seed, budget.max_steps or DEFAULT_MAX_STEPS, derandomize, progress,
            budget.max_runs, shrink_budget_s, backend, clock, on_violation, hints)
    if workers > 1:
        return fuzz_in_workers(args, workers, minimize_steps)
    fz = _Fuzzer(*args)
    fz.search()
    return fz.result(minimize_steps and not stop.reason())     # a stop keeps the traces unminimized
