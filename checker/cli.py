"""The ``isrcheck`` command line.

Exit codes: 0 every checked invariant holds (or a replayed trace still
violates), 1 a violation was found (or a trace no longer reproduces), 2 bad
usage or input (one line, no traceback), 3 a budget the user set ran out.
"""
from __future__ import annotations

import json
import sys
import time

import click
from rich.console import Console
from rich.table import Table

from isrcheck.checker import __version__, report, show as show_mod
from isrcheck.checker.trace import (TraceError, default_path, from_steps, is_lasso, load, replay as replay_trace,
                                    replay_lasso, save, spec_for)
from isrcheck.model.expr import DeclarationError
from isrcheck.model.spec import BoundsError
from isrcheck.specs import SPECS

EXIT_HOLDS, EXIT_VIOLATED, EXIT_USAGE, EXIT_BUDGET = 0, 1, 2, 3


class UserError(Exception):
    """A user's mistake: printed as one line, exit code 2."""


def _out():
    """stdout; wide when it is not a terminal, so piped traces and reports do not wrap."""
    console = Console(highlight=False)
    return console if console.is_terminal else Console(highlight=False, width=200)


def _err():
    return Console(stderr=True, highlight=False)


def make_spec(name, bounds):
    cls = SPECS.get(name)
    if cls is None:
        raise UserError(f"unknown spec {name!r} (known: {', '.join(SPECS)})")
    try:
        return cls(**bounds)
    except (BoundsError, DeclarationError) as e:
        raise UserError(str(e)) from None


def pick_invariants(spec, names, every):
    """The invariants to check; with ``--all``, every one (benign ones are reported, not failed on)."""
    if every:
        return list(spec.invariants)
    if not names:
        raise UserError(f"name an invariant with --invariant, or use --all "
                        f"(spec {spec.name} has: {', '.join(spec.invariants)})")
    for n in names:
        if n not in spec.invariants:
            raise UserError(f"spec {spec.name} has no invariant {n!r} (it has: {', '.join(spec.invariants)})")
    return list(dict.fromkeys(names))


def parse_settings(settings):
    """--set KEY=VALUE pairs (integer options of the model, e.g. unflushed_loss=1)."""
    out = {}
    for item in settings:
        key, sep, value = item.partition("=")
        if not sep:
            raise UserError(f"--set expects KEY=VALUE, got {item!r}")
        try:
            out[key.replace("-", "_")] = int(value)
        except ValueError:
            raise UserError(f"--set {key}: {value!r} is not an integer") from None
    return out


class Progress:
    """Live search progress on stderr: a redrawn line on a terminal, a line every few seconds otherwise."""

    def __init__(self, enabled):
        self.enabled = enabled
        self.console = _err()
        self.last = time.monotonic()
        self.live = self.console.is_terminal

    def __call__(self, depth, frontier, distinct, seconds, **_):
        rate = distinct / seconds if seconds > 0 else 0
        self.line(f"depth {depth} · frontier {frontier:,} · {distinct:,} distinct states · {rate:,.0f} states/s")

    def line(self, text):
        """Show one progress line (with the memory in use), unless one was shown a moment ago."""
        now = time.monotonic()
        if not self.enabled or now - self.last < (0.2 if self.live else 5.0):
            return
        self.last = now
        import resource
        line = f"{text} · {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MB"
        if self.live:
            self.console.print(line, end="\r", soft_wrap=True)
        else:
            self.console.print(line)

    def done(self):
        if self.enabled and self.live:
            self.console.print(" " * 100, end="\r")


def bound_options(fn):
    for flag in ("max_crashes", "max_epochs", "max_records", "log_size", "replicas"):
        fn = click.option(f"--{flag.replace('_', '-')}", flag, type=int, default=None,
                          help=f"bound: {flag.replace('_', ' ')} (default: the spec's)")(fn)
    return click.option("--set", "settings", multiple=True, metavar="KEY=VALUE",
                        help="other model option, e.g. --set unflushed_loss=1 (see `isrcheck list`)")(fn)


def collect_bounds(kw):
    bounds = {k: kw.pop(k) for k in ("replicas", "log_size", "max_records", "max_epochs", "max_crashes")}
    bounds = {k: v for k, v in bounds.items() if v is not None}
    bounds.update(parse_settings(kw.pop("settings")))
    return bounds


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="isrcheck")
def cli():
    """Model checker and property fuzzer for Kafka's partition replication protocol."""


@cli.command()
@click.option("--spec", "spec_name", required=True, help="protocol version (see `isrcheck list`)")
@click.option("--invariant", "invariants", multiple=True, help="invariant to check (repeatable)")
@click.option("--all", "every", is_flag=True, help="check every invariant and liveness property of the spec")
@click.option("--property", "properties", multiple=True,
              help="liveness property to check (repeatable; local engine): P leads to Q under its fairness")
@bound_options
@click.option("--symmetry", is_flag=True, help="replica-symmetry reduction")
@click.option("--engine", type=click.Choice(["local", "bmc", "spark"]), default="local", show_default=True,
              help="local: exhaustive BFS in process; bmc: bounded model checking (z3 + SAT); spark: BFS on Spark")
@click.option("--depth", type=click.IntRange(min=1), default=40, show_default=True,
              help="bmc: longest path checked, in states")
@click.option("--z3-timeout", type=click.FloatRange(min=0, min_open=True), default=None, help="bmc: seconds")
@click.option("--master", default="local[*]", show_default=True, help="spark: master URL")
@click.option("--partitions", type=click.IntRange(min=1), default=None, help="spark: partitions")
@click.option("--out", "out_dir", default="counterexamples", show_default=True, help="where traces are written")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--max-states", type=click.IntRange(min=1), default=None, help="budget: distinct states")
@click.option("--max-depth", type=click.IntRange(min=1), default=None, help="budget: BFS levels")
@click.option("--time-limit", type=click.FloatRange(min=0, min_open=True), default=None, help="budget: seconds")
@click.option("--chunk", type=click.IntRange(min=1), default=1 << 18, hidden=True)
@click.option("--no-progress", is_flag=True, help="no live progress on stderr")
def check(spec_name, invariants, every, properties, symmetry, engine, depth, z3_timeout, master, partitions,
          out_dir, fmt, max_states, max_depth, time_limit, chunk, no_progress, **kw):
    """Explore every interleaving within the bounds; exit 1 with a shortest counterexample if one breaks."""
    spec = make_spec(spec_name, collect_bounds(kw))
    live_engine = engine == "local" and not symmetry
    props = pick_properties(spec, properties, every and live_engine)
    names = pick_invariants(spec, invariants, every) if invariants or every or not props else []
    progress = Progress(not no_progress)
    live = None
    if props:
        if not live_engine:
            raise UserError("liveness properties are checked by the local engine, without --symmetry")
        from isrcheck.checker.liveness import check as check_liveness
        try:
            live = check_liveness(spec, props, chunk=chunk, max_states=max_states, max_depth=max_depth,
                                  time_limit=time_limit, progress=progress)
        finally:
            progress.done()
        if not names:
            code, obj = finish_liveness(spec, live, out_dir, fmt)
            if fmt == "json":
                click.echo(json.dumps(obj, indent=1))
            sys.exit(code)
    try:
        if engine == "bmc":
            from isrcheck.checker.symbolic import bmc
            result = bmc(spec, names, depth, timeout_s=z3_timeout or time_limit, progress=progress)
        elif engine == "spark":
            from isrcheck.checker.spark_engine import INSTALL_HINT, missing_dependencies, spark_search
            if missing_dependencies():
                raise UserError(f"--engine spark needs {' and '.join(missing_dependencies())}: {INSTALL_HINT}")
            result = spark_search(spec, names, master=master, partitions=partitions, symmetry=symmetry,
                                  max_states=max_states, max_depth=max_depth, time_limit=time_limit,
                                  progress=progress)
        else:
            from isrcheck.checker.bfs import search
            result = search(spec, names, symmetry=symmetry, chunk=chunk, max_states=max_states,
                            max_depth=max_depth, time_limit=time_limit, progress=progress)
    finally:
        progress.done()
    if every and not live_engine and spec.properties:
        _err().print("isrcheck: liveness properties are not checked: only the local engine without --symmetry "
                     "checks them", markup=False)
    finish(spec, engine, result, out_dir, fmt, observed=observations(spec, names, every), symmetry=symmetry,
           liveness=live)


def pick_properties(spec, names, every):
    """The liveness properties to check; with ``--all``, every one."""
    if every:
        return list(spec.properties)
    for n in names:
        if n not in spec.properties:
            raise UserError(f"spec {spec.name} has no liveness property {n!r} "
                            f"(it has: {', '.join(spec.properties) or 'none'})")
    return list(dict.fromkeys(names))


def finish_liveness(spec, results, out_dir, fmt):
    """Save a lasso per violated property and print the verdicts (text); (exit code: 1 violated, 3 unknown, else 0;
    the ``--format json`` object)."""
    files = {}
    for name, r in results.items():
        if r.lasso is not None:
            prop = spec.properties[name]
            trace = from_steps(spec, name, "local", r.lasso.steps, loop=r.lasso.loop, trigger=r.lasso.trigger,
                               fairness=[f"{f.kind}({f.action})" for f in prop.fairness])
            files[name] = save(trace, default_path(out_dir, spec.name, name))
    if fmt == "text":
        report.print_liveness(_out(), spec, results, files)
    verdicts = {r.verdict for r in results.values()}
    code = EXIT_VIOLATED if "violated" in verdicts else EXIT_BUDGET if "unknown" in verdicts else EXIT_HOLDS
    return code, report.liveness_json(spec, results, files)


def observations(spec, names, every):
    """Benign invariants checked through ``--all``: reported when broken, never a failure.

    Named explicitly with ``--invariant``, a benign invariant is checked like any other.
    """
    return {n for n in names if every and spec.invariants[n].benign}


def finish(spec, engine, result, out_dir, fmt, observed=(), liveness=None, **meta):
    """Save a trace per violation, print the report, exit 1 / 3 / 0 (benign observations never fail).

    ``liveness`` holds results of properties checked too (their report follows, and counts in the exit code).
    """
    trace_files = {}
    for inv, v in result.violations.items():
        trace = from_steps(spec, inv, engine, v.steps, **meta)
        trace_files[inv] = save(trace, default_path(out_dir, spec.name, inv))
    if fmt == "text":
        report.print_text(_out(), spec, engine, result, trace_files, observed)
    live, live_json = finish_liveness(spec, liveness, out_dir, fmt) if liveness else (EXIT_HOLDS, {})
    if fmt == "json":
        click.echo(json.dumps({**report.as_json(spec, engine, result, trace_files, observed), **live_json}, indent=1))
    if set(result.violations) - set(observed) or live == EXIT_VIOLATED:
        sys.exit(EXIT_VIOLATED)
    if live == EXIT_BUDGET:
        sys.exit(EXIT_BUDGET)
    if result.budget_hit:
        sys.exit(EXIT_BUDGET)
    sys.exit(EXIT_HOLDS)


@cli.command(name="list")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def list_specs(fmt):
    """Protocol versions and their invariants: summaries, references, default bounds, expected verdicts."""
    entries = []
    for name, cls in SPECS.items():
        spec = cls()
        entries.append({
            "spec": name, "summary": cls.summary, "references": list(cls.references),
            "default_bounds": dict(spec.bounds), "expected": dict(cls.expected),
            "expected_why": dict(cls.expected_why),
            "invariants": {n: {"meaning": i.meaning, "loss": i.loss} for n, i in spec.invariants.items()},
            "properties": {n: {"meaning": p.meaning, "fairness": [f"{f.kind}({f.action})" for f in p.fairness],
                               "expected": cls.liveness_expected()[0].get(n),
                               "expected_why": cls.liveness_expected()[1].get(n)}
                           for n, p in spec.properties.items()},
        })
    if fmt == "json":
        click.echo(json.dumps(entries, indent=1))
        return
    console = _out()
    for e in entries:
        console.rule(f"[bold cyan]{e['spec']}[/]", align="left")
        console.print(e["summary"])
        console.print(f"[dim]references:[/] {'; '.join(e['references'])}")
        console.print(f"[dim]default bounds:[/] {' '.join(f'{k}={v}' for k, v in e['default_bounds'].items())}")
        table = Table(box=None, header_style="bold", pad_edge=False)
        table.add_column("invariant")
        table.add_column("expected")
        table.add_column("meaning")
        for inv, info in e["invariants"].items():
            why = e["expected_why"].get(inv)
            expected = e["expected"].get(inv, "-")
            table.add_row(inv, f"{expected}" + (f" — {why}" if why else ""), info["meaning"])
        for prop, info in e["properties"].items():
            expected = info["expected"] or "-"
            table.add_row(f"{prop} (liveness)", expected + (f" — {info['expected_why']}" if info["expected_why"] else ""),
                          f"{info['meaning']} Fairness: {', '.join(info['fairness'])}.")
        console.print(table)


def _load_trace(path):
    trace = load(path)
    spec = spec_for(trace, path)
    return trace, spec


@cli.command()
@click.argument("trace_path", metavar="TRACE")
@click.option("--format", "fmt", type=click.Choice(["text", "mermaid", "dot"]), default="text", show_default=True,
              help="text: step by step; mermaid: sequence diagram; dot: state graph (Graphviz)")
def show(trace_path, fmt):
    """Print a trace step by step in Kafka terms, and say what went wrong."""
    from isrcheck.checker import explain, export
    trace, spec = _load_trace(trace_path)
    if fmt != "text":
        click.echo((export.to_mermaid if fmt == "mermaid" else export.to_dot)(spec, trace))
        return
    console = _out()
    meta = " ".join(f"{k}={v}" for k, v in trace.bounds.items())
    if is_lasso(trace):
        console.print(f"[bold]{trace.spec}[/] · {meta} · property [bold]{trace.invariant}[/] · engine {trace.engine}"
                      f" · {len(trace.steps)} states")
        show_mod.render(console, spec, trace)
        console.print(show_mod.lasso_summary(spec, trace), soft_wrap=True)
        return
    console.print(f"[bold]{trace.spec}[/] · {meta} · invariant [bold]{trace.invariant}[/] · engine {trace.engine}"
                  f" · {len(trace.steps)} states")
    notes = {}
    for line in explain.explain(spec, trace):
        notes.setdefault(line.step, []).append(line.text)
    show_mod.render(console, spec, trace, notes)
    inv = spec.invariants[trace.invariant]
    console.print(f"[bold red]{explain.summary(spec, trace)}[/]")
    console.print(f"{trace.invariant}: {inv.meaning}")
    loss = explain.consequence(spec, trace.invariant)
    if loss:
        console.print(f"[dim]{loss}[/]")
    fence = getattr(spec, "missing_fence", None)
    if fence:
        console.print(f"[bold]missing fence:[/] {fence}")


@cli.command()
@click.argument("trace_path", metavar="TRACE")
def replay(trace_path):
    """Re-run a saved trace against the current model: exit 0 if it still reaches the violation, else 1."""
    trace, spec = _load_trace(trace_path)
    result = (replay_lasso if is_lasso(trace) else replay_trace)(spec, trace)
    console = _out()
    if result.ok:
        console.print(f"[green]reproduces:[/] {result.message}")
        sys.exit(EXIT_HOLDS)
    console.print(f"[red]does not reproduce:[/] {result.message}")
    sys.exit(EXIT_VIOLATED)


@cli.command()
@click.option("--spec", "spec_name", required=True)
@click.option("--invariant", required=True)
@click.option("--k", "k", type=click.IntRange(min=1), default=1, show_default=True, help="induction depth")
@click.option("--lemma", "lemmas", multiple=True,
              help="an invariant of the spec assumed and proved alongside (repeatable; default: the lemmas and "
                   "model options the spec declares for proving this invariant, if any)")
@click.option("--auto-lemmas", is_flag=True,
              help="find the lemmas automatically: each counterexample to induction is blocked by a clause no "
                   "reachable state (exhaustive engine) violates, until the invariant is inductive; a SAT-checked "
                   "proof at exactly these bounds (--k is not used)")
@click.option("--z3-timeout", type=click.FloatRange(min=0, min_open=True), default=None, help="seconds")
@bound_options
@click.option("--out", "out_dir", default="counterexamples", show_default=True)
def prove(spec_name, invariant, k, lemmas, auto_lemmas, z3_timeout, out_dir, **kw):
    """k-induction: prove an invariant for every depth (at these replica and log bounds)."""
    from isrcheck.checker.symbolic import prove as k_induction, render_states
    if auto_lemmas and lemmas:
        raise UserError("--auto-lemmas finds the lemmas itself: leave out --lemma")
    bounds = collect_bounds(kw)
    declared = None if lemmas or auto_lemmas else getattr(SPECS.get(spec_name), "proofs", {}).get(invariant)
    if declared:
        lemmas = tuple(declared["lemmas"])
        bounds = {**declared["settings"], **bounds}       # an explicit --set wins
    spec = make_spec(spec_name, bounds)
    for name in (invariant,) + lemmas:
        pick_invariants(spec, [name], False)
    cpu, start = time.process_time(), time.perf_counter()
    if auto_lemmas:
        result, used = _auto_lemma_proof(spec, invariant, z3_timeout)
    else:
        result = k_induction(spec, invariant, k, lemmas=list(lemmas), timeout_s=z3_timeout)
        settings = " ".join(f"{key}={v}" for key, v in declared["settings"].items()) if declared else ""
        used = (f"{len(lemmas)} lemmas (the spec's for this invariant; {settings or 'no options'})" if declared
                else ", ".join(lemmas) or "none")
    cpu = time.process_time() - cpu
    console = _out()
    head = (f"{spec.name} · {invariant} · k={result.k} · lemmas: {used} · {time.perf_counter() - start:.1f} s "
            f"({cpu:.1f} s CPU; {'search' if auto_lemmas else 'base'} {result.base_seconds:.1f} s, "
            f"{'SAT' if auto_lemmas else 'step'} {result.step_seconds:.1f} s)")
    if result.verdict == "proved":
        console.print(f"[green]proved[/] for every depth at {' '.join(f'{key}={v}' for key, v in spec.bounds.items())}"
                      f"\n{head}")
        if auto_lemmas and result.lemmas:
            console.print("the smallest lemmas learned:\n" + "\n".join(f"  {text}" for text in result.lemmas[:3]),
                          soft_wrap=True)
        sys.exit(EXIT_HOLDS)
    if result.verdict == "refuted":
        path = save(from_steps(spec, invariant, "prove", result.steps), default_path(out_dir, spec.name, invariant))
        console.print(f"[red]refuted[/]: a real counterexample of {len(result.steps)} states · {head}\n"
                      f"read it: isrcheck show {path}")
        sys.exit(EXIT_VIOLATED)
    if result.verdict == "not-inductive":
        console.print(f"[yellow]not inductive[/] · {head}\nthe counterexample to induction below is consistent "
                      f"but unreachable: add a lemma (an invariant of the spec) that rules it out")
        console.print(render_states(spec, [st for _, st in result.steps], [a for a, _ in result.steps],
                                    failing=result.failing, title="counterexample to induction"))
        sys.exit(EXIT_VIOLATED)
    console.print(f"[yellow]unknown[/]: {result.reason} · {head}")
    sys.exit(EXIT_BUDGET)


def _auto_lemma_proof(spec, invariant, z3_timeout):
    """prove --auto-lemmas: (ProofResult, how the lemmas were found); a reachable violation is a refutation."""
    from isrcheck.checker.bfs import search
    from isrcheck.checker.strengthen import strengthen
    from isrcheck.checker.symbolic import ProofResult
    progress = Progress(True)
    try:
        found = strengthen(spec, [invariant], timeout_s=z3_timeout, search_progress=progress,
                           progress=lambda lemmas, discharged, seconds: progress.line(
                               f"{lemmas:,} lemmas learned · {discharged:,} obligations discharged · {seconds:.0f} s"))
    finally:
        progress.done()
    used = (f"{len(found.lemmas):,} learned from {found.reachable_states:,} reachable states "
            f"({found.queries:,} SAT queries)")
    smallest = [found.describe(spec, cube) for cube in sorted(found.lemmas, key=len)]
    result = ProofResult(spec.name, dict(spec.bounds), invariant, smallest, 1, found.verdict, found.seconds,
                         base_seconds=found.search_seconds, step_seconds=found.seconds - found.search_seconds,
                         reason=found.reason)
    if found.verdict == "violated":
        result.verdict, result.steps = "refuted", search(spec, [invariant]).violations[invariant].steps
    return result, used


def parse_budget(text):
    """A time budget: seconds, or with a unit: 90s, 2m, 1h."""
    units = {"s": 1, "m": 60, "h": 3600}
    try:
        if text and text[-1] in units:
            return float(text[:-1]) * units[text[-1]]
        return float(text)
    except ValueError:
        raise UserError(f"--budget {text!r}: expected seconds, e.g. 60, 90s or 2m") from None


@cli.command()
@click.option("--spec", "spec_name", required=True)
@click.option("--invariant", "invariants", multiple=True)
@click.option("--all", "every", is_flag=True)
@bound_options
@click.option("--budget", default="60s", show_default=True, help="time budget (e.g. 60s, 5m)")
@click.option("--seed", type=int, default=None, help="fixed seed: the same runs every time")
@click.option("--max-steps", type=click.IntRange(min=1), default=None, help="longest execution")
@click.option("--out", "out_dir", default="counterexamples", show_default=True)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--no-progress", is_flag=True)
def fuzz(spec_name, invariants, every, budget, seed, max_steps, out_dir, fmt, no_progress, **kw):
    """Random long executions with Hypothesis at bounds beyond exhaustive reach; failures are shrunk."""
    from isrcheck.checker.fuzz import DEFAULT_MAX_STEPS, fuzz as run_fuzz
    spec = make_spec(spec_name, collect_bounds(kw))
    names = pick_invariants(spec, invariants, every)
    seconds = parse_budget(budget)
    if seconds <= 0:
        raise UserError("--budget must be positive")
    progress = Progress(not no_progress)

    def report_progress(runs, transitions, distinct, seconds, **_):
        progress(depth=runs, frontier=transitions, distinct=distinct, seconds=seconds)
    try:
        result = run_fuzz(spec, names, seconds, seed=seed, max_steps=max_steps or DEFAULT_MAX_STEPS,
                          derandomize=seed is not None, progress=report_progress)
    finally:
        progress.done()
    finish(spec, "fuzz", result, out_dir, fmt, observed=observations(spec, names, every), seed=result.seed)


@cli.command()
@click.argument("trace_path", metavar="TRACE")
@click.option("--output", "output", default=None, help="where to write it (default: TRACE with .min before .itf.json)")
def minimize(trace_path, output):
    """Delta-debug a trace: drop every step the violation does not need (never makes it longer)."""
    from isrcheck.checker.minimize import minimize as ddmin
    trace, spec = _load_trace(trace_path)
    if is_lasso(trace):
        raise UserError(f"{trace_path}: a liveness lasso; minimize works on invariant traces")
    result = replay_trace(spec, trace)
    if not result.ok:
        raise UserError(f"{trace_path}: does not reproduce on the current model ({result.message})")
    steps = ddmin(spec, trace)
    out = output or trace_path.replace(".itf.json", "") + ".min.itf.json"
    save(from_steps(spec, trace.invariant, trace.engine, steps, minimized_from=len(trace.steps)), out)
    _out().print(f"{len(trace.steps)} → {len(steps)} states: {out}")


from isrcheck.checker.gate import gate  # noqa: E402  (the gate command lives in its own module)

cli.add_command(gate)


def main(argv=None):
    """Console entry point: user mistakes become one line on stderr and exit code 2."""
    try:
        cli.main(args=argv, prog_name="isrcheck", standalone_mode=False)
    except (UserError, TraceError) as e:
        _err().print(f"isrcheck: error: {e}", soft_wrap=True, markup=False)
        sys.exit(EXIT_USAGE)
    except click.exceptions.UsageError as e:
        _err().print(f"isrcheck: error: {e.format_message()}", soft_wrap=True, markup=False)
        sys.exit(EXIT_USAGE)
    except click.exceptions.Abort:
        _err().print("isrcheck: interrupted")
        sys.exit(130)
    except KeyboardInterrupt:
        _err().print("isrcheck: interrupted; traces already written are complete")
        sys.exit(130)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    sys.exit(0)


if __name__ == "__main__":
    main()
