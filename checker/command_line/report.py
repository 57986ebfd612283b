"""Reports of a check: a JSON object for machines, rich text for people."""
from __future__ import annotations

from isrcheck.checker import __version__
from isrcheck.checker.engine import engines
from isrcheck.checker.command_line import provenance
from isrcheck.checker.command_line.registry import reference, show_command
from isrcheck.checker.traces.show import markup_safe
from isrcheck.model.configuration import DEFAULTS, configuration_of


def expectations(spec, result):
    """What the spec declares for the invariants checked, at these bounds: (configuration name or None,
    {invariant: verdict}, {invariant: why}, as expected: True, False, or None when it cannot be said).

    Expectations apply only at the bounds of one of the spec's configurations (its defaults or a named one);
    an invariant left ``unknown`` (a budget, a fuzz) leaves the comparison open."""
    name, conf = configuration_of(type(spec), spec.bounds)
    if conf is None:
        return None, {}, {}, None
    want = {inv: v for inv, v in conf.expected.items() if inv in result.verdicts}
    got = [result.verdicts[inv] for inv in want]
    if not want or "unknown" in got and all(g in (w, "unknown") for g, w in zip(got, want.values())):
        return name, want, conf.why, None
    return name, want, conf.why, all(g == w for g, w in zip(got, want.values()))


def liveness_expectations(spec):
    """{property: verdict} the spec declares at these bounds (its defaults' or a named configuration's; none
    elsewhere)."""
    _, conf = configuration_of(type(spec), spec.bounds)
    return dict(conf.liveness) if conf is not None else {}


def as_json(spec, engine, result, trace_files, observed=()):
    """The ``--format json`` object (stable keys; docs/reference/json.md).

    ``benign`` lists the invariants whose verdict does not count towards the exit code; ``configuration``,
    ``expected`` and ``as_expected`` are :func:`expectations`; ``seed``, ``workers`` and ``found`` (per invariant:
    how long to find, and trace lengths before and after shrinking) are the fuzzer's (else null). A quantity the
    engine does not know is null (BMC: ``distinct_states``, ``transitions``, ``states_per_second``,
    ``bytes_per_state``, ``collision_probability``, ``fingerprints``, ``never_fired``; the fuzzer:
    ``never_fired``). ``fingerprints`` says how states were told apart ("64-bit", "96-bit", or "64-bit,
    96-bit from N states"), which ``collision_probability`` accounts for. ``levels``
    (Spark only): per level expanded, its new states, ``shuffle_write_bytes`` (Spark's shuffle write metrics)
    ``python_jvm_bytes`` (the numpy payload of the records between the JVM and the Python workers) and
    ``successor_file_bytes`` (the successors written to files in the workdir instead: on one machine).
    """
    first = next((f for inv, f in trace_files.items() if inv not in observed), None)
    configuration, expected, _, as_expected = expectations(spec, result)
    return {
        "tool": "isrcheck", "version": __version__, "spec": spec.name, "bounds": dict(spec.bounds),
        "engine": engine, "settings": provenance.as_json(), "verdicts": result.verdicts, "benign": sorted(observed),
        "configuration": configuration, "expected": expected, "as_expected": as_expected,
        "seed": result.seed, "workers": getattr(result, "workers", None), "found": result.found or None,
        "distinct_states": result.distinct_states, "transitions": result.transitions, "depth": result.depth,
        "seconds": round(result.seconds, 3), "states_per_second": _round(result.states_per_second, 1),
        "peak_memory_bytes": result.peak_memory_bytes, "bytes_per_state": _round(result.bytes_per_state, 2),
        "collision_probability": result.collision_probability,
        "fingerprints": result.fingerprint_width if result.distinct_states is not None else None,
        "complete": result.complete,
        "budget_hit": result.budget_hit, "never_fired": result.never_fired,
        "trace_file": first, "trace_files": trace_files,
        "coverage": result.coverage.as_json() if getattr(result, "coverage", None) is not None else None,
        "trace_lengths": {k: len(v.steps) for k, v in result.violations.items()},
        "levels": result.levels or None,
    }


def _round(value, digits):
    return None if value is None else round(value, digits)


def _bytes(n):
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024


def header(console, spec, engine):
    """The first line of a report: tool, spec, bounds, engine, and what a settings file changed."""
    bounds = " ".join(f"{k}={v}" for k, v in spec.bounds.items())
    settings = provenance.note()
    console.print(f"[bold]isrcheck {__version__}[/] · [bold cyan]{markup_safe(spec.name)}[/] · {bounds} · engine "
                  f"{engine}" + (f" · [yellow]{markup_safe(settings)}[/]" if settings else ""), soft_wrap=True)


def print_text(console, spec, engine, result, trace_files, observed=(), coverage=False):
    from rich.table import Table            # rich loads only where a report is printed with it
    header(console, spec, engine)
    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    table.add_column("invariant")
    table.add_column("verdict")
    table.add_column("expected")
    table.add_column("trace")
    styles = {"holds": "green", "violated": "bold red", "unknown": "yellow"}
    configuration, want, why, as_expected = expectations(spec, result)
    for inv, verdict in result.verdicts.items():
        expected = want.get(inv, "")
        mark = "" if not expected or expected == verdict or verdict == "unknown" else " [bold yellow](unexpected)[/]"
        trace = ""
        if inv in trace_files:
            trace = f"{markup_safe(trace_files[inv])} ({len(result.violations[inv].steps)} states)"
        shown = f"[{styles[verdict]}]{verdict}[/]{mark}"
        if inv in observed:
            shown = "[yellow]observed[/] (benign)" if verdict == "violated" else f"{shown} (benign)"
        table.add_row(markup_safe(inv), shown, markup_safe(expected), trace)
    console.print(table)
    (_print_bmc_summary if engines.symbolic(engine) else _print_search_summary)(console, result)
    if coverage:
        print_coverage(console, result)
    if getattr(result, "seed", None) is not None:
        again = f"--seed {result.seed}" + (f" --workers {result.workers}" if result.workers else "")
        console.print(f"seed {result.seed}: `{again}` repeats these runs (while no time budget cuts them short)",
                      soft_wrap=True)
    _print_expectations(console, spec, result, configuration, want, why, as_expected, observed)
    if trace_files:
        first = next((f for inv, f in trace_files.items() if inv not in observed), next(iter(trace_files.values())))
        console.print(f"read a counterexample: [bold]{markup_safe(show_command(type(spec), first))}[/]")


def _print_expectations(console, spec, result, configuration, want, why, as_expected, observed):
    """Say whether the verdicts are the ones the spec declares: a known bug exits 1 and is still as expected."""
    where = "its defaults" if configuration == DEFAULTS else f"its configuration {markup_safe(configuration)}"
    name = markup_safe(spec.name)
    if configuration is None:
        console.print(f"[dim]no expected verdicts: these bounds are none of {name}'s configurations "
                      f"(`isrcheck list {markup_safe(reference(type(spec)))}`)[/]", soft_wrap=True)
    elif as_expected:
        known = [inv for inv, v in want.items() if v == "violated" and inv not in observed]
        exits = (f"; it exits 1 for the known {'bug' if len(known) == 1 else 'bugs'} this spec reproduces: "
                 + "; ".join(markup_safe(f"{inv} ({why[inv]})" if inv in why else inv) for inv in known)
                 if known else "")
        console.print(f"[green]as expected:[/] the verdicts are the ones {name} declares at {where}{exits}",
                      soft_wrap=True)
    elif as_expected is False:
        off = [inv for inv, v in want.items() if result.verdicts[inv] not in (v, "unknown")]
        console.print(f"[bold yellow]not as expected:[/] {markup_safe(', '.join(off))} (see the expected column; "
                      f"{name} declares these verdicts at {where})", soft_wrap=True)


def print_coverage(console, result):
    """``--coverage``: per action, how often it was enabled and fired and how many states it reached first."""
    if getattr(result, "coverage", None) is None:
        console.print("[yellow]no coverage: only the local exhaustive engine counts it[/]")
        return
    from rich.table import Table
    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False, title_justify="left",
                  title="coverage" + ("" if result.complete else " (of the states explored)"))
    for column in ("action", "instances fired", "enabled", "fired", "new states"):
        table.add_column(column, justify="left" if column == "action" else "right")
    for name, c in result.coverage.by_action().items():
        never = c["fired"] == 0
        name = markup_safe(name)
        table.add_row(f"[bold yellow]{name}[/]" if never else name, f"{c['instances_fired']}/{c['instances']}",
                      f"{c['enabled']:,}", "[bold yellow]0 (never)[/]" if never else f"{c['fired']:,}",
                      f"{c['new_states']:,}")
    console.print(table)


def _print_search_summary(console, result):
    console.print(f"{result.distinct_states:,} distinct states · {result.transitions:,} transitions · "
                  f"depth {result.depth} · {result.seconds:.2f} s · {result.states_per_second:,.0f} states/s")
    console.print(f"peak memory {_bytes(result.peak_memory_bytes)} · {result.bytes_per_state:.1f} bytes retained "
                  f"per state · fingerprint collision probability ≤ {result.collision_probability:.1e} "
                  f"({result.fingerprint_width})")
    if result.budget_hit:
        console.print(f"[yellow]stopped by {result.budget_hit}: depth {result.depth} fully explored, "
                      f"{result.distinct_states:,} states[/]")
    elif result.never_fired:
        console.print(f"[yellow]never fired: {markup_safe(', '.join(result.never_fired))} — an action that never fires "
                      f"at these bounds is suspicious (a guard too strong, or bounds too small)[/]")
    elif result.complete:
        console.print("every action fired")


def _print_bmc_summary(console, result):
    """Bounded model checking enumerates no states: say which paths it covered, and that it is no proof."""
    console.print(f"every path of up to {result.depth} states checked symbolically · {result.bits}-bit encoding · "
                  f"{result.seconds:.2f} s · peak memory {_bytes(result.peak_memory_bytes)}")
    pending = [inv for inv, verdict in result.verdicts.items() if verdict == "unknown"]
    if result.timed_out:
        console.print(f"[yellow]stopped by {result.budget_hit}: no violation of {markup_safe(', '.join(pending))} "
                      f"up to depth {result.depth}[/]")
    elif pending:
        console.print(f"[yellow]no violation of {markup_safe(', '.join(pending))} up to depth {result.depth}: a bounded check, "
                      f"not a proof (isrcheck prove covers every depth)[/]")


def liveness_json(spec, results, trace_files):
    """The liveness part of ``--format json``: ``properties``, one object per property checked (``expected``:
    :func:`liveness_expectations`)."""
    expected = liveness_expectations(spec)
    return {"tool": "isrcheck", "version": __version__, "spec": spec.name, "bounds": dict(spec.bounds),
            "settings": provenance.as_json(),
            "properties": {name: {
                "verdict": r.verdict, "expected": expected.get(name),
                "fairness": [f"{f.kind}({f.action})" for f in spec.properties[name].fairness],
                "distinct_states": r.distinct_states, "edges": r.edges, "fair_states": r.fair_states,
                "seconds": round(r.seconds, 3), "bytes_per_state": round(r.bytes_per_state, 2),
                "peak_memory_bytes": r.peak_memory_bytes, "budget_hit": r.budget_hit,
                "trace_file": trace_files.get(name),
                "loop": r.lasso.loop if r.lasso else None, "trace_length": len(r.lasso.steps) if r.lasso else None,
            } for name, r in results.items()}}


def print_liveness(console, spec, results, trace_files, alone=False):
    """The verdict of each liveness property, with its fairness and lasso, and how to read a lasso; ``alone``: no
    invariant report came first, so the header line comes here."""
    from rich.table import Table
    if alone:
        header(console, spec, "local")
    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    for column in ("property", "verdict", "expected", "fairness", "lasso"):
        table.add_column(column)
    styles = {"holds": "green", "violated": "bold red", "unknown": "yellow"}
    declared = liveness_expectations(spec)
    for name, r in results.items():
        expected = declared.get(name, "")
        mark = "" if not expected or expected == r.verdict or r.verdict == "unknown" else " [bold yellow](unexpected)[/]"
        fairness = ", ".join(f"{f.kind}({f.action})" for f in spec.properties[name].fairness) or "none"
        lasso = ""
        if name in trace_files:
            lasso = f"{markup_safe(trace_files[name])} (loop from state {r.lasso.loop} of {len(r.lasso.steps)})"
        table.add_row(markup_safe(name), f"[{styles[r.verdict]}]{r.verdict}[/]{mark}", markup_safe(expected),
                      markup_safe(fairness), lasso)
    console.print(table)
    r = next(iter(results.values()))
    console.print(f"liveness: {r.distinct_states:,} distinct states · {r.seconds:.2f} s · peak memory "
                  f"{_bytes(r.peak_memory_bytes)} · {r.bytes_per_state:.1f} bytes retained per state")
    if r.budget_hit:
        console.print(f"[yellow]stopped by {r.budget_hit}: a property not violated among the states explored "
                      f"is unknown[/]")
    if not declared:
        console.print(f"[dim]no expected liveness verdicts: {spec.name} states them at its defaults only "
                      f"(`isrcheck list {markup_safe(reference(type(spec)))}`)[/]", soft_wrap=True)
    if trace_files:
        console.print(f"read a lasso: [bold]{markup_safe(show_command(type(spec), next(iter(trace_files.values()))))}"
                      f"[/]", soft_wrap=True)


def proof_json(spec, result, lemmas_used, seconds, cpu_seconds, trace_file):
    """``prove --format json``: the verdict (proved, refuted, not-inductive, unknown) and what it rests on.

    ``counterexample_to_induction`` (not-inductive) is the k consistent states and the one after them that breaks
    ``failing``, each with the action that led to it; ``trace_file`` (refuted) the real counterexample."""
    # base_seconds and step_seconds: the first and second phase (k-induction's base case and step; with learned
    # lemmas, the exhaustive search and the SAT phase), 0 for a phase that did not run (phase_seconds has them named)
    first, second = (list(result.phase_seconds.values()) + [0.0, 0.0])[:2]
    cti = None
    if result.verdict == "not-inductive":
        cti = [{"action": a.label if a is not None else None, "state": state} for a, state in result.steps]
    return {"tool": "isrcheck", "version": __version__, "spec": spec.name, "bounds": dict(spec.bounds),
            "settings": provenance.as_json(), "invariant": result.invariant, "verdict": result.verdict, "k": result.k, "lemmas": list(result.lemmas),
            "lemmas_used": lemmas_used, "seconds": round(seconds, 3), "cpu_seconds": round(cpu_seconds, 3),
            "base_seconds": round(first, 3), "step_seconds": round(second, 3),
            "phase_seconds": {name: round(s, 3) for name, s in result.phase_seconds.items()},
            "distinct_states": result.distinct_states,
            "reason": result.reason, "failing": getattr(result, "failing", None), "trace_file": trace_file,
            "trace_length": len(result.steps) if result.verdict == "refuted" else None,
            "counterexample_to_induction": cti}
