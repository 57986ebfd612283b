"""``isrcheck gate``: the CI gate on protocol changes.

Every spec declares, for each of its invariants, whether it must hold or must be
violated at its default bounds (``expected``), and may declare named configurations
with expectations at other bounds (model/configuration.py). Every expected violation
has a saved counterexample at exactly its configuration's bounds, under
``counterexamples/<spec>/<invariant>.itf.json`` for the defaults and
``counterexamples/<spec>/<configuration>/<invariant>.itf.json`` for the others. The
gate runs one exhaustive search per (spec, configuration) over its invariants and fails when

- an invariant that must hold is violated (the change broke the protocol: the
  counterexample is written under ``--out`` for CI to attach),
- an invariant that must be violated now holds (the model or the checker lost
  its bite), or
- the saved counterexample of an expected violation is missing, was found at
  other bounds than its configuration's, or no longer replays on the current
  model (a fresh one, when the search found it, is written under ``--out`` to
  replace it).

``--update-traces`` rewrites the saved counterexamples on purpose: every expected
violation the search found gets its trace written into ``--counterexamples``.

The spec registry and the directories are parameters of :func:`run_gate`, so
tests (and other tools) can gate a registry of their own. Reports: a rich table,
JSON, JUnit XML, SARIF 2.1.0, and a Markdown summary for GitHub Actions
(``$GITHUB_STEP_SUMMARY``). ``--changed-since REV`` narrows the gate to the specs
whose behaviour can change with the files changed since a git revision.

This module is the command; the work is split by job:

    gate_changes.py   which specs (``--changed-since``: git, the modules a spec's class comes from)
    gate_run.py       running each (spec, configuration) and checking its saved counterexamples
    gate_results.py   what was found: a Row per expectation, the GateReport, how they are named
    gate_formats.py   the reports: text table, JSON, JUnit XML, SARIF, Markdown
"""
from __future__ import annotations

import io
import json
import os

import click

from isrcheck.checker.guards import atomic
from isrcheck.checker.command_line import provenance
from isrcheck.checker.engine import stop
from isrcheck.checker.gating.gate_results import EXIT_MET, EXIT_STOPPED, EXIT_UNMET, GateError
from isrcheck.checker.guards.outpaths import OutputPathError, usable_dir, usable_file
from isrcheck.checker.command_line.registry import SpecRefError, plugins, resolve_all
from isrcheck.checker.traces.show import printable
from isrcheck.specs import SPECS


def named(refs):
    """(registry, names) of the gate's SPEC arguments: the built-in specs and installed plugins, with the classes
    ``refs`` name (a name, FILE.py[:CLASS] or MODULE:CLASS) added; SpecRefError for one that does not resolve."""
    installed, broken = plugins()
    if broken:                          # a spec the gate cannot check is never passed over
        raise SpecRefError(f"{'; '.join(broken)} (the gate does not run with an installed plugin it cannot load: "
                           f"fix it or uninstall it)")
    registry, names = {**SPECS, **installed}, []
    for ref in refs:
        for cls in [registry[ref]] if ref in registry else resolve_all(ref):
            registry[cls.name] = cls
            names.append(cls.name)
    return registry, list(dict.fromkeys(names))


def _write(path, text):
    """Write the report file whole or not at all: None, or why the disk refused it (its path was checked before
    the gate ran: the verdicts stand, and the gate exits 3)."""
    try:
        atomic.write_text(path, text)
    except atomic.WriteFailed as e:
        return e
    return None


@click.command(name="gate")
@click.argument("spec_names", metavar="[SPEC]...", nargs=-1)
@click.option("--changed-since", "changed_since", metavar="REV", default=None,
              help="only specs whose behaviour can change with the files changed since this git revision")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "junit", "sarif"]), default="text",
              show_default=True, help="report format")
@click.option("--output", "output", metavar="FILE", default=None,
              help="write the report here (json/junit/sarif go to stdout otherwise)")
@click.option("--out", "out_dir", metavar="DIR", default="gate-counterexamples", show_default=True,
              help="where counterexamples of unmet expectations are written")
@click.option("--counterexamples", "cx_dir", metavar="DIR", default="counterexamples", show_default=True,
              help="where the saved counterexamples are read from")
@click.option("--no-progress", is_flag=True, help="no per-spec progress lines on stderr")
@click.option("--update-traces", is_flag=True,
              help="on purpose: (re)write the saved counterexample of every expected violation the search finds "
                   "(every configuration of the specs checked) into --counterexamples, then check them")
@stop.memory_option
@click.pass_context
def gate(ctx, spec_names, changed_since, fmt, output, out_dir, cx_dir, no_progress, update_traces):
    """CI gate: check every spec (or those named), at each of its configurations, against its expected
    verdicts and saved counterexamples.

    Exit 0 when every expectation is met, 1 otherwise, 2 on bad input, 3 when stopped (a signal, --max-memory).
    """
    from rich.console import Console        # the gate's own modules and rich load only when it runs

    from isrcheck.checker.gating.gate_formats import as_json, as_junit, as_markdown, as_sarif, print_table
    from isrcheck.checker.gating.gate_run import run_gate
    stop.polled()
    registry = ctx.obj.get("specs") if isinstance(ctx.obj, dict) and "specs" in ctx.obj else None
    if registry is None:
        try:
            registry, spec_names = named(spec_names)
        except SpecRefError as e:
            raise GateError(str(e)) from None
    err = Console(stderr=True, highlight=False)
    if os.path.lexists(cx_dir) and not os.path.isdir(cx_dir):
        raise GateError(f"--counterexamples {cx_dir}: not a directory")
    try:
        if output is not None:
            usable_file(output, "--output")
        usable_dir(out_dir, "--out")
        if update_traces:                # the saved traces are rewritten there: checked before any search
            usable_dir(cx_dir, "--counterexamples")
    except OutputPathError as e:
        raise GateError(str(e)) from None
    if provenance.note():               # what the settings file changed, even without progress lines
        err.print(printable(f"gate: {provenance.note()}"), soft_wrap=True, markup=False)
    progress = None if no_progress else (lambda message: err.print(_fit(printable(f"gate: {message}")),
                                                                   soft_wrap=True, markup=False))
    report = run_gate(spec_names, registry, counterexamples=cx_dir, out=out_dir, changed_since=changed_since,
                      progress=progress, update_traces=update_traces, settings_file=provenance.settings_file())

    machine = {"json": lambda: json.dumps(as_json(report), indent=1) + "\n",
               "junit": lambda: as_junit(report),
               "sarif": lambda: json.dumps(as_sarif(report), indent=1) + "\n"}
    console = Console(highlight=False)
    if not console.is_terminal:
        console = Console(highlight=False, width=max(console.width, 140))
    unwritten = None
    if fmt == "text":
        print_table(console, report)
        if output is not None:
            file_console = Console(file=io.StringIO(), width=160, no_color=True, highlight=False, record=True)
            print_table(file_console, report)
            unwritten = _write(output, file_console.export_text())
    elif output is not None:
        unwritten = _write(output, machine[fmt]())
        print_table(console, report)
        if unwritten is None:
            err.print(f"gate: {fmt} report written to {printable(output)}", markup=False)
    else:
        click.echo(machine[fmt](), nl=False)
    if unwritten is not None:
        err.print(f"isrcheck: {printable(unwritten)}: the verdicts above stand, the report is not kept",
                  soft_wrap=True, markup=False)
        ctx.exit(EXIT_STOPPED)

    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        try:
            with open(summary, "a") as fh:
                fh.write(as_markdown(report))
        except OSError as e:
            err.print(f"gate: warning: cannot append the summary to {summary} ({e.strerror})", markup=False)
    ctx.exit(EXIT_STOPPED if report.stopped else EXIT_MET if report.ok else EXIT_UNMET)


def _fit(line, width=80):
    """A progress line cut to ``width`` columns, so CI logs never wrap it."""
    return line if len(line) <= width else line[:width - 1] + "…"
