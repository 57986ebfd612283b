"""Running the gate: each spec at each of its configurations, its verdicts against the expected ones, and its
saved counterexamples replayed (see checker/gating/gate.py for the whole story)."""
from __future__ import annotations

import inspect
import os
import time

from isrcheck.checker.command_line import state_counts
from isrcheck.checker.command_line.registry import reference
from isrcheck.checker.guards.atomic import WriteFailed
from isrcheck.checker.traces.trace import TraceError, conform, from_steps, is_lasso, load, replay, replay_lasso, save
from isrcheck.model.configuration import DEFAULTS, configurations
from isrcheck.model.expr import DeclarationError
from isrcheck.model.spec import BoundsError
from isrcheck.checker.gating.gate_changes import affected_specs, changed_files, everything, select
from isrcheck.checker.gating.gate_results import (MISSING, NO_REPLAY, OTHER_BOUNDS, REPLAYS, GateError, GateReport,
                                                  Row, label, trace_path)
from isrcheck.specs import SPECS


def instantiate(registry, names):
    """Each spec at the bounds of each of its configurations, keyed (name, configuration), with the verdicts
    expected there, of invariants and of liveness properties; the defaults' ``expected`` must cover every invariant
    (GateError if not; a key that names no invariant or property is refused when the class is created,
    model/configuration.py)."""
    specs, expectations, live = {}, {}, {}
    for name in names:
        cls = registry[name]
        for conf_name, conf in configurations(cls).items():
            where = f"spec {name}" if conf_name == DEFAULTS else f"spec {name}, configuration {conf_name}"
            try:
                spec = cls(**conf.bounds)
            except (BoundsError, DeclarationError) as e:
                raise GateError(f"{where}: {e}") from None
            if conf_name == DEFAULTS:
                for inv in spec.invariants:
                    if inv not in conf.expected:
                        raise GateError(f"{where}: invariant {inv!r} has no expected verdict "
                                        f"(add it to {cls.__name__}.expected: 'holds' or 'violated')")
            specs[name, conf_name] = spec
            expectations[name, conf_name] = dict(conf.expected)
            if conf.liveness:
                live[name, conf_name] = dict(conf.liveness)
    return specs, expectations, live


def check_saved_trace(spec, configuration, invariant, counterexamples):
    """(status, message, path) of the saved counterexample of an expected violation.

    The trace must record exactly the bounds of its configuration (``spec``'s), and
    replay there, like ``isrcheck replay``. A file that is no trace of the spec
    (unreadable, malformed, states or actions that do not fit it) is bad input: GateError.
    """
    name, ref = spec.name, reference(type(spec))
    path = trace_path(counterexamples, name, configuration, invariant)
    if not os.path.exists(path):
        return MISSING, f"no {path} (run: isrcheck gate --update-traces {ref})", path
    try:
        trace = load(path)
    except TraceError as e:
        raise GateError(str(e)) from None
    if (trace.spec, trace.invariant) != (name, invariant):
        return NO_REPLAY, f"{path} is a trace of {trace.spec!r}/{trace.invariant!r}, not {name}/{invariant}", path
    if trace.bounds != spec.bounds:
        keys = list(spec.bounds) + [k for k in trace.bounds if k not in spec.bounds]
        diff = ", ".join(f"{k}={trace.bounds.get(k, 'unset')} (declared {spec.bounds.get(k, 'unset')})"
                         for k in keys if trace.bounds.get(k) != spec.bounds.get(k))
        return OTHER_BOUNDS, (f"{path} was found at other bounds than {label(name, configuration)} declares: "
                              f"{diff} (refresh: isrcheck gate --update-traces {ref})"), path
    try:
        conform(spec, trace, path)
    except TraceError as e:
        raise GateError(str(e)) from None
    lasso = invariant in spec.properties       # a liveness property's counterexample is a lasso
    if is_lasso(trace) != lasso:
        return NO_REPLAY, f"{path} is {'not ' if lasso else ''}a liveness lasso", path
    try:
        result = (replay_lasso if lasso else replay)(spec, trace)
    except Exception as e:      # a saved trace is data: any way it fails to replay is a failed expectation
        return NO_REPLAY, f"{path}: {type(e).__name__}: {e}", path
    if result.ok:
        return REPLAYS, result.message, path
    return NO_REPLAY, f"{path}: {result.message}", path


def _class_source(cls):
    try:
        path = inspect.getsourcefile(cls)
        line = inspect.getsourcelines(cls)[1]
    except (TypeError, OSError):
        return None, None
    return path, line


def _progress_bounds(cls):
    """The bounds progress lines name: the sizes of the state space (``kind="bound"``), else every one."""
    declared = cls.bound_declarations()
    return [n for n, b in declared.items() if b.kind == "bound"] or list(declared)


def run_gate(names=(), registry=None, counterexamples="counterexamples", out="gate-counterexamples",
             changed_since=None, progress=None, cwd=None, update_traces=False, settings_file=None):
    """Check the named specs (all if none) of ``registry`` (default: ``specs.SPECS``) against their expectations.

    One search per (spec, configuration), over the invariants that configuration expects something of,
    and a liveness check of the properties it expects something of.
    ``progress(message)`` is called before and after each search. With ``changed_since``, only the specs the
    changes can affect (checker/gating/gate_changes.py; ``settings_file``: the settings file in use, whose change
    affects every spec). Counterexamples of
    unexpected violations, and fresh ones for expected violations whose saved trace is
    missing or no longer replays, are written under ``out``; stale files there for
    the checked (spec, configuration, invariant) are removed. With ``update_traces``, every expected
    violation the search found is saved under ``counterexamples`` first (the golden traces, on purpose).
    """
    from isrcheck.checker.exhaustive.bfs import search
    from isrcheck.checker.exhaustive.liveness import check as check_liveness, lasso_trace

    registry = SPECS if registry is None else registry
    say = progress or (lambda message: None)
    start = time.perf_counter()
    chosen = select(registry, list(names))
    changed, skipped, why = None, [], []
    if changed_since is not None:
        root, changed = changed_files(changed_since, cwd)
        whole, reasons = everything(changed, root, changed_since, settings_file), {}
        hit = set(registry) if whole else set(affected_specs(registry, changed, root, counterexamples, reasons))
        skipped = [n for n in chosen if n not in hit]
        chosen = [n for n in chosen if n in hit]
        why = [f"every spec: {whole}"] if whole else [f"{n} on any change: {reasons[n]}" for n in chosen if n in reasons]
        say(f"changed since {changed_since}: {len(changed)} files; checking {len(chosen)} of "
            f"{len(chosen) + len(skipped)} specs" + (f" ({', '.join(chosen)})" if chosen else ""))
        for line in why:
            say(f"checking {line}")
    specs, expectations, live_expectations = instantiate(registry, chosen)
    report = GateReport([], specs, 0.0, changed_since=changed_since, changed_files=changed, skipped=skipped,
                        changed_why=why)
    unwritten = []                          # the files the disk refused: the gate stops at the first
    saved = {} if update_traces else {      # read before any search: a bad file is exit 2
        (name, conf, inv): check_saved_trace(spec, conf, inv, counterexamples)
        for (name, conf), spec in specs.items()
        for inv, verdict in {**expectations[name, conf], **live_expectations.get((name, conf), {})}.items()
        if verdict == "violated"}
    for k, ((name, conf), spec) in enumerate(specs.items(), start=1):
        report.sources[name] = _class_source(registry[name])
        expected = expectations[name, conf]
        what = f"[{k}/{len(specs)}] {label(name, conf)}"
        differ = [f"{b}={spec.bounds[b]}" for b in _progress_bounds(type(spec))
                  if spec.bounds[b] != type(spec).defaults.get(b)]
        say(f"{what}: searching {len(expected)} invariants at " + (" ".join(differ) if differ else "its defaults"))

        def unexpected(v, name=name, conf=conf, spec=spec, expected=expected):
            """A violation of an invariant that must hold is written as soon as found: a stop keeps it."""
            if expected[v.invariant] != "violated":
                _save(from_steps(spec, v.invariant, "local", v.steps, gate=True),
                      trace_path(out, name, conf, v.invariant), unwritten)
        result = search(spec, list(expected), on_violation=unexpected)
        state_counts.record(spec, result)           # for `isrcheck list --brief`
        report.never_fired[name, conf] = list(result.never_fired)
        stats = (result.distinct_states, result.depth, result.seconds)
        for inv, verdict in expected.items():
            found = result.violations.get(inv)
            make = None if found is None else (
                lambda found=found, **meta: from_steps(spec, found.invariant, "local", found.steps, **meta))
            report.rows.append(_row(report, spec, conf, inv, verdict, result.verdicts[inv], make, stats, saved,
                                    counterexamples, out, update_traces, unwritten))
        live = live_expectations.get((name, conf))
        if live and not result.budget_hit:
            say(f"{what}: liveness of {len(live)} properties")
            for prop, r in check_liveness(spec, list(live)).items():
                make = None if r.lasso is None else (lambda r=r, **meta: lasso_trace(spec, r, **meta))
                report.rows.append(_row(report, spec, conf, prop, live[prop], r.verdict, make,
                                        (r.distinct_states, result.depth, r.seconds), saved, counterexamples, out,
                                        update_traces, unwritten))
                if r.budget_hit:
                    result.budget_hit = r.budget_hit
        unmet = [r.invariant for r in report.rows if (r.spec, r.configuration) == (name, conf) and not r.ok]
        if unwritten and not result.budget_hit:     # a full disk: the rows so far stand, nothing more is kept
            result.budget_hit = f"a write that failed ({unwritten[0]})"
        if result.budget_hit:               # the gate sets no budget: a stop request ends the whole gate
            left = len(specs) - k
            report.stopped = (f"{result.budget_hit} while searching {label(name, conf)}"
                              + (f"; {left} more searches not run" if left else ""))
            say(f"{what}: stopped by {result.budget_hit} after {result.distinct_states:,} "
                f"states, depth {result.depth} fully explored")
            break
        say(f"{what}: " + (f"UNMET: {', '.join(unmet)}" if unmet else "as expected")
            + f" · {result.distinct_states:,} states · depth {result.depth} · {result.seconds:.1f} s")
    report.seconds = time.perf_counter() - start
    return report


def _save(trace, path, unwritten):
    """Save a trace (its path), or add why the disk refused it to ``unwritten`` (None)."""
    try:
        return save(trace, path)
    except WriteFailed as e:
        unwritten.append(e)
        return None


def _row(report, spec, conf, inv, expected, got, make, stats, saved, counterexamples, out, update_traces, unwritten):
    """The Row of one expectation (an invariant's or a liveness property's) at a configuration.

    ``make(**meta)`` builds the trace of the violation the search found (None: none found). With
    ``update_traces`` an expected violation's trace becomes the golden one first; an unmet expectation's
    is written under ``out``, and a stale one there from an earlier run is removed. A write the disk
    refuses is added to ``unwritten``.
    """
    name = spec.name
    row = Row(name, inv, expected, got, *stats, configuration=conf)
    if expected == "violated":
        if update_traces:
            if make is not None:
                _save(make(symmetry=False), trace_path(counterexamples, name, conf, inv), unwritten)
            saved[name, conf, inv] = check_saved_trace(spec, conf, inv, counterexamples)
        row.trace_status, row.trace_message, row.saved_trace = saved[name, conf, inv]
    target = trace_path(out, name, conf, inv)
    if make is not None and not row.ok:
        trace = make(gate=True)
        row.counterexample, row.steps = _save(trace, target, unwritten), len(trace.steps)
        report.traces[name, conf, inv] = trace
    elif os.path.isfile(target):
        os.remove(target)          # from an earlier run: it would mislead whoever reads --out
    return row
