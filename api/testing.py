"""pytest (or unittest) helpers: assert that an invariant holds, or is violated, within bounds.

    from isrcheck.testing import assert_holds, assert_violated

    def test_our_fix_keeps_committed_records():
        assert_holds("our_versions.py:OurKip320", "no-committed-loss", max_crashes=2)

A failed assertion's message is the counterexample as ``isrcheck show`` prints it: pytest shows it in
its report. Both take the arguments of :func:`isrcheck.check`.
"""
from __future__ import annotations

from isrcheck.checking import CheckResult, check


def _searched(result: CheckResult):
    bounds = " ".join(f"{k}={v}" for k, v in result.bounds.items())
    return f"{result.distinct_states:,} states, depth {result.depth}, at {bounds}"


def assert_holds(spec, invariant, **bounds):
    """Fail unless ``invariant`` holds in every reachable state; returns the :class:`CheckResult`."""
    result = check(spec, invariant, **bounds)
    verdict = result.verdicts[invariant]
    if verdict == "violated":
        raise AssertionError(f"{result.spec}: {invariant} is violated ({_searched(result)}):\n\n"
                             + result.render(invariant))
    if verdict != "holds":
        raise AssertionError(f"{result.spec}: {invariant} not verified: stopped by {result.budget_hit} "
                             f"after {_searched(result)}")
    return result


def assert_violated(spec, invariant, **bounds):
    """Fail unless some reachable state violates ``invariant``; returns the shortest counterexample (a Trace)."""
    result = check(spec, invariant, **bounds)
    verdict = result.verdicts[invariant]
    if verdict != "violated":
        how = "holds" if verdict == "holds" else f"is not violated before {result.budget_hit} stopped the search"
        raise AssertionError(f"{result.spec}: {invariant} {how} ({_searched(result)}); expected a violation")
    return result.traces[invariant]


__all__ = ["assert_holds", "assert_violated"]
