"""Reports of a check: a JSON object for machines, rich text for people."""
from __future__ import annotations

from rich.console import Console
from rich.table import Table

from isrcheck.checker import __version__
from isrcheck.checker.registry import show_command
from isrcheck.checker.show import markup_safe


def as_json(spec, engine, result, trace_files, observed=()):
    """The ``--format json`` object (stable keys; see the README).

    ``benign`` lists the invariants whose verdict does not count towards the exit code. A quantity the
    engine does not know is null (BMC: ``distinct_states``, ``transitions``, ``states_per_second``,
    ``bytes_per_state``, ``collision_probability``, ``never_fired``; the fuzzer: ``never_fired``).
    """
    first = next((f for inv, f in trace_files.items() if inv not in observed), None)
    return {
        "tool": "isrcheck", "version": __version__, "spec": spec.name, "bounds": dict(spec.bounds),
        "engine": engine, "verdicts": result.verdicts, "benign": sorted(observed),
        "distinct_states": result.distinct_states, "transitions": result.transitions, "depth": result.depth,
        "seconds": round(result.seconds, 3), "states_per_second": _round(result.states_per_second, 1),
        "peak_memory_bytes": result.peak_memory_bytes, "bytes_per_state": _round(result.bytes_per_state, 2),
        "collision_probability": result.collision_probability, "complete": result.complete,
        "budget_hit": result.budget_hit, "never_fired": result.never_fired,
        "trace_file": first, "trace_files": trace_files,
        "trace_lengths": {k: len(v.steps) for k, v in result.violations.items()},
    }


def _round(value, digits):
    return None if value is None else round(value, digits)


def _bytes(n):
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024


def print_text(console: Console, spec, engine, result, trace_files, observed=()):
    bounds = " ".join(f"{k}={v}" for k, v in spec.bounds.items())
    console.print(f"[bold]isrcheck {__version__}[/] · [bold cyan]{spec.name}[/] · {bounds} · engine {engine}")
    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    table.add_column("invariant")
    table.add_column("verdict")
    table.add_column("expected")
    table.add_column("trace")
    styles = {"holds": "green", "violated": "bold red", "unknown": "yellow"}
    for inv, verdict in result.verdicts.items():
        expected = spec.expected.get(inv, "")
        mark = "" if not expected or expected == verdict or verdict == "unknown" else " [bold yellow](unexpected)[/]"
        trace = ""
        if inv in trace_files:
            trace = f"{markup_safe(trace_files[inv])} ({len(result.violations[inv].steps)} states)"
        shown = f"[{styles[verdict]}]{verdict}[/]{mark}"
        if inv in observed:
            shown = "[yellow]observed[/] (benign)" if verdict == "violated" else f"{shown} (benign)"
        table.add_row(inv, shown, expected, trace)
    console.print(table)
    (_print_bmc_summary if engine == "bmc" else _print_search_summary)(console, result)
    if trace_files:
        first = next((f for inv, f in trace_files.items() if inv not in observed), next(iter(trace_files.values())))
        console.print(f"read a counterexample: [bold]{markup_safe(show_command(type(spec), first))}[/]")


def _print_search_summary(console, result):
    console.print(f"{result.distinct_states:,} distinct states · {result.transitions:,} transitions · "
                  f"depth {result.depth} · {result.seconds:.2f} s · {result.states_per_second:,.0f} states/s")
    console.print(f"peak memory {_bytes(result.peak_memory_bytes)} · {result.bytes_per_state:.1f} bytes retained "
                  f"per state · fingerprint collision probability ≤ {result.collision_probability:.1e}")
    if result.budget_hit:
        console.print(f"[yellow]stopped by {result.budget_hit}: depth {result.depth} fully explored, "
                      f"{result.distinct_states:,} states[/]")
    elif result.never_fired:
        console.print(f"[yellow]never fired: {', '.join(result.never_fired)} — an action that never fires "
                      f"at these bounds is suspicious (a guard too strong, or bounds too small)[/]")
    elif result.complete:
        console.print("every action fired")


def _print_bmc_summary(console, result):
    """Bounded model checking enumerates no states: say which paths it covered, and that it is no proof."""
    console.print(f"every path of up to {result.depth} states checked symbolically · {result.bits}-bit encoding · "
                  f"{result.seconds:.2f} s · peak memory {_bytes(result.peak_memory_bytes)}")
    pending = [inv for inv, verdict in result.verdicts.items() if verdict == "unknown"]
    if result.timed_out:
        console.print(f"[yellow]stopped by {result.budget_hit}: no violation of {', '.join(pending)} "
                      f"up to depth {result.depth}[/]")
    elif pending:
        console.print(f"[yellow]no violation of {', '.join(pending)} up to depth {result.depth}: a bounded check, "
                      f"not a proof (isrcheck prove covers every depth)[/]")


def liveness_json(spec, results, trace_files):
    """The liveness part of ``--format json``: ``properties``, one object per property checked."""
    return {"tool": "isrcheck", "version": __version__, "spec": spec.name, "bounds": dict(spec.bounds),
            "properties": {name: {
                "verdict": r.verdict, "expected": type(spec).liveness_expected()[0].get(name),
                "fairness": [f"{f.kind}({f.action})" for f in spec.properties[name].fairness],
                "distinct_states": r.distinct_states, "edges": r.edges, "fair_states": r.fair_states,
                "seconds": round(r.seconds, 3), "bytes_per_state": round(r.bytes_per_state, 2),
                "peak_memory_bytes": r.peak_memory_bytes, "budget_hit": r.budget_hit,
                "trace_file": trace_files.get(name),
                "loop": r.lasso.loop if r.lasso else None, "trace_length": len(r.lasso.steps) if r.lasso else None,
            } for name, r in results.items()}}


def print_liveness(console: Console, spec, results, trace_files):
    """The verdict of each liveness property, with its fairness and lasso."""
    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    for column in ("property", "verdict", "expected", "fairness", "lasso"):
        table.add_column(column)
    styles = {"holds": "green", "violated": "bold red", "unknown": "yellow"}
    for name, r in results.items():
        expected = type(spec).liveness_expected()[0].get(name, "")
        mark = "" if not expected or expected == r.verdict or r.verdict == "unknown" else " [bold yellow](unexpected)[/]"
        fairness = ", ".join(f"{f.kind}({f.action})" for f in spec.properties[name].fairness) or "none"
        lasso = ""
        if name in trace_files:
            lasso = f"{trace_files[name]} (loop from state {r.lasso.loop} of {len(r.lasso.steps)})"
        table.add_row(name, f"[{styles[r.verdict]}]{r.verdict}[/]{mark}", expected, fairness, lasso)
    console.print(table)
    r = next(iter(results.values()))
    console.print(f"liveness: {r.distinct_states:,} distinct states · {r.seconds:.2f} s · peak memory "
                  f"{_bytes(r.peak_memory_bytes)} · {r.bytes_per_state:.1f} bytes retained per state")
    if r.budget_hit:
        console.print(f"[yellow]stopped by {r.budget_hit}: a property not violated among the states explored "
                      f"is unknown[/]")
