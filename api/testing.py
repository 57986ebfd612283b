"""pytest (or unittest) helpers: assert that an invariant holds, or is violated, within bounds.

    from isrcheck.testing import assert_holds, assert_violated

    def test_our_fix_keeps_committed_records(tmp_path):
        assert_holds("our_versions.py:OurKip320", "no-committed-loss", out=tmp_path, max_crashes=2)

A failed assertion's message is the counterexample as ``isrcheck show --compact`` prints it (each step as the
cells it changed, in 80 columns), with the file it is saved in: pytest shows both in its report. Every trace
found is saved under ``out`` (pytest's ``tmp_path``, or any directory; default ``isrcheck-out``, as the command
line's ``--out``) as ``<out>/<spec>/<invariant>.itf.json``, which ``isrcheck show`` reads. Both take the
arguments of :func:`isrcheck.check`.
"""
from __future__ import annotations

import os

from isrcheck.checker.command_line.registry import show_command
from isrcheck.checker.traces.show import trace_text
from isrcheck.checker.traces.trace import default_path
from isrcheck.checking import CheckResult, check

OUT_DIR = "isrcheck-out"


def _searched(result: CheckResult):
    bounds = " ".join(f"{k}={v}" for k, v in result.bounds.items())
    return f"{result.distinct_states:,} states, depth {result.depth}, at {bounds}"


def _saved(result, invariant, out):
    """Save the trace of ``invariant`` under ``out``; the path."""
    return result.save(default_path(os.fspath(out if out is not None else OUT_DIR), result.spec, invariant),
                       invariant)


def assert_holds(spec, invariant, *, out=None, **bounds):
    """Fail unless ``invariant`` holds in every reachable state; returns the :class:`CheckResult`. A violation's
    trace is saved under ``out`` and printed, compact, in the failure's message."""
    result = check(spec, invariant, **bounds)
    verdict = result.verdicts[invariant]
    if verdict == "violated":
        path = _saved(result, invariant, out)
        raise AssertionError(f"{result.spec}: {invariant} is violated ({_searched(result)}); the counterexample, "
                             f"saved as {path} ({show_command(type(result.instance), path)}):\n\n"
                             + trace_text(result.instance, result.traces[invariant], width=80, compact=True))
    if verdict != "holds":
        raise AssertionError(f"{result.spec}: {invariant} not verified: stopped by {result.budget_hit} "
                             f"after {_searched(result)}")
    return result


def assert_violated(spec, invariant, *, out=None, **bounds):
    """Fail unless some reachable state violates ``invariant``; returns the shortest counterexample (a Trace),
    saved under ``out``."""
    result = check(spec, invariant, **bounds)
    verdict = result.verdicts[invariant]
    if verdict != "violated":
        how = "holds" if verdict == "holds" else f"is not violated before {result.budget_hit} stopped the search"
        raise AssertionError(f"{result.spec}: {invariant} {how} ({_searched(result)}); expected a violation")
    _saved(result, invariant, out)
    return result.traces[invariant]


__all__ = ["assert_holds", "assert_violated"]
