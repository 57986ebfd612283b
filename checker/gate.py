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
whose behaviour can change with the files changed since a git revision
(:func:`affected_specs`).
"""
from __future__ import annotations

import importlib
import inspect
import io
import json
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

import click
from rich.console import Console
from rich.table import Table

from isrcheck.checker import __version__, show as show_mod, stop
from isrcheck.checker.outpaths import OutputPathError, usable_dir, usable_file
from isrcheck.checker.registry import SpecRefError, plugins, reference, resolve_all, show_command as read_command
from isrcheck.checker.trace import (TraceError, conform, default_path, from_steps, is_lasso, load, replay,
                                    replay_lasso, save)
from isrcheck.model.configuration import DEFAULTS, VERDICTS, configurations
from isrcheck.model.expr import DeclarationError
from isrcheck.model.present import step_label
from isrcheck.model.spec import BoundsError
from isrcheck.specs import SPECS

EXIT_MET, EXIT_UNMET, EXIT_USAGE, EXIT_STOPPED = 0, 1, 2, 3
BOUNDS = ("replicas", "log_size", "max_records", "max_epochs", "max_crashes")   # named in progress lines
ENGINE_PACKAGES = {"model": "isrcheck.model", "checker": "isrcheck.checker"}   # repo folder -> package; a change in either can change every spec

# saved-trace statuses
REPLAYS, MISSING, NO_REPLAY, NOT_NEEDED = "replays", "missing", "no longer replays", "-"
OTHER_BOUNDS = "at other bounds"


def label(spec, configuration):
    """How reports name a (spec, configuration): the spec alone for its defaults, ``spec/configuration`` else."""
    return spec if configuration == DEFAULTS else f"{spec}/{configuration}"


def trace_path(counterexamples, spec, configuration, invariant):
    """Where the saved counterexample of an expected violation lives (the defaults' path is the historic one)."""
    if configuration == DEFAULTS:
        return default_path(counterexamples, spec, invariant)
    return default_path(os.path.join(counterexamples, spec), configuration, invariant)


class GateError(click.UsageError):
    """Bad input to the gate: one line, exit code 2.

    A ``click.UsageError`` rather than ``checker.cli.UserError`` so that this module
    need not import ``checker.cli`` (which registers this command): ``isrcheck``'s
    ``main`` prints a UsageError as one line and exits 2, like a UserError.
    """


# --------------------------------------------------------------------------------------------
# results
# --------------------------------------------------------------------------------------------
@dataclass
class Row:
    """One expectation: (spec, configuration, invariant) must hold / be violated, and what the gate found."""
    spec: str
    invariant: str
    expected: str
    got: str                             # holds | violated | unknown
    states: int
    depth: int
    seconds: float
    trace_status: str = NOT_NEEDED       # of the saved counterexample: replays | missing | ...
    trace_message: str = ""
    saved_trace: str | None = None       # where the saved counterexample is (or should be)
    counterexample: str | None = None    # a counterexample this run wrote under --out
    steps: int | None = None             # its number of states
    configuration: str = DEFAULTS

    @property
    def label(self):
        return label(self.spec, self.configuration)

    @property
    def verdict_ok(self):
        return self.got == self.expected

    @property
    def trace_ok(self):
        return self.expected != "violated" or self.trace_status == REPLAYS

    @property
    def ok(self):
        return self.verdict_ok and self.trace_ok

    @property
    def kind(self):
        """The main reason the expectation is unmet (a SARIF rule id), or None."""
        if self.got != self.expected:
            if self.got == "violated":
                return "unexpected-violation"
            if self.got == "holds":
                return "expected-violation-not-found"
            return "inconclusive"
        if not self.trace_ok:
            return {MISSING: "counterexample-missing", OTHER_BOUNDS: "counterexample-at-other-bounds"}.get(
                self.trace_status, "counterexample-does-not-replay")
        return None

    def problems(self):
        """Why the expectation is unmet, in words (empty if it is met)."""
        out = []
        if self.got == "violated" and self.expected == "holds":
            at = f" at step {self.steps - 1}" if self.steps else ""
            out.append(f"{self.invariant} must hold but is violated{at}")
        elif self.got == "holds" and self.expected == "violated":
            out.append(f"{self.invariant} must be violated but holds: the model or the checker lost its bite")
        elif self.got != self.expected:
            out.append(f"{self.invariant}: expected {self.expected}, got {self.got}")
        if not self.trace_ok:
            out.append(f"saved counterexample {self.trace_status}: {self.trace_message}")
        return out

    def as_json(self):
        return {"spec": self.spec, "configuration": self.configuration, "invariant": self.invariant,
                "expected": self.expected, "got": self.got,
                "ok": self.ok, "kind": self.kind, "problems": self.problems(),
                "distinct_states": self.states, "depth": self.depth, "seconds": round(self.seconds, 3),
                "saved_trace": {"path": self.saved_trace, "status": self.trace_status,
                                "message": self.trace_message} if self.expected == "violated" else None,
                "counterexample": self.counterexample, "counterexample_states": self.steps}


@dataclass
class GateReport:
    rows: list
    specs: dict                          # (name, configuration) -> spec instance at its bounds
    seconds: float
    never_fired: dict = field(default_factory=dict)    # (spec, configuration) -> actions that never fired
    changed_since: str | None = None
    changed_files: list | None = None
    skipped: list = field(default_factory=list)        # specs --changed-since left out
    traces: dict = field(default_factory=dict)         # (spec, configuration, invariant) -> Trace under --out
    sources: dict = field(default_factory=dict)        # spec -> (source file, line) of its class
    stopped: str | None = None           # why the gate stopped early (a signal, the memory limit), and where

    @property
    def ok(self):
        return not self.stopped and all(r.ok for r in self.rows)

    @property
    def unmet(self):
        return [r for r in self.rows if not r.ok]

    def headline(self):
        if self.stopped:
            return f"stopped by {self.stopped}: no verdict (rows below are as far as it got)"
        n = len(self.rows)
        if not self.rows:
            return "no spec to check" + (f" (no spec is affected by the changes since {self.changed_since})"
                                         if self.changed_since else "")
        names = {name for name, _ in self.specs}
        specs = f"{len(names)} spec{'s' if len(names) != 1 else ''}"
        if len(self.specs) != len(names):
            specs += f", {len(self.specs)} configurations"
        if self.ok:
            return f"all {n} expectations met ({specs})"
        return f"{len(self.unmet)} of {n} expectations unmet ({specs})"


# --------------------------------------------------------------------------------------------
# which specs
# --------------------------------------------------------------------------------------------
def select(registry, names):
    """The registry names to check, in registry order (GateError on an unknown name)."""
    for n in names:
        if n not in registry:
            raise GateError(f"unknown spec {n!r} (known: {', '.join(registry)})")
    wanted = set(names)
    return [n for n in registry if not wanted or n in wanted]


def _source_paths(cls):
    """Paths of the modules defining cls and every class it inherits from.

    Each is given twice over: the absolute real path, and the path relative to the
    directory holding the class's top-level package (``specs/kip_320.py``), which is
    also its path in the repository when isrcheck is installed from a copy of it.
    """
    out = set()
    for klass in cls.__mro__:
        if klass is object:
            continue
        try:
            path = inspect.getsourcefile(klass)
        except TypeError:                # built-in
            continue
        if not path:
            continue
        path = os.path.realpath(path)
        out.add(path)
        top = sys.modules.get(klass.__module__.split(".")[0])
        top_file = getattr(top, "__file__", None)
        if top_file:
            base = os.path.dirname(top_file)
            if os.path.basename(top_file) == "__init__.py":     # a package: paths are relative to its parent
                base = os.path.dirname(base)
            out.add(os.path.relpath(path, os.path.realpath(base)).replace(os.sep, "/"))
    return out


def _engine_prefixes(root):
    prefixes = {f"{folder}/" for folder in ENGINE_PACKAGES}
    for pkg in ENGINE_PACKAGES.values():
        mod = importlib.import_module(pkg)
        rel = os.path.relpath(os.path.realpath(os.path.dirname(mod.__file__)), os.path.realpath(root))
        if not rel.startswith(".."):
            prefixes.add(rel.replace(os.sep, "/").rstrip("/") + "/")
    return prefixes


def affected_specs(registry, changed, root=".", counterexamples="counterexamples"):
    """Names of the specs whose behaviour can change with the ``changed`` files.

    ``changed`` are paths relative to ``root`` (the repository's top level), as
    ``git diff --name-only`` prints them. A change under ``model/`` or ``checker/``
    affects every spec; a module that defines a spec class or one of its ancestors
    (by the class's MRO) affects that spec; a change under
    ``<counterexamples>/<spec>/`` affects that spec; anything else affects none.
    """
    root = os.path.realpath(root)
    changed = {c.replace(os.sep, "/") for c in changed}
    engine = _engine_prefixes(root)
    if any(c.startswith(p) for c in changed for p in engine):
        return list(registry)
    cx = os.path.relpath(os.path.realpath(counterexamples), root).replace(os.sep, "/")
    cx_prefixes = {f"{cx}/"} if not cx.startswith("..") else set()
    cx_prefixes.add(f"{os.path.basename(os.path.normpath(counterexamples))}/")
    changed_abs = {os.path.realpath(os.path.join(root, c)) for c in changed}
    out = []
    for name, cls in registry.items():
        sources = _source_paths(cls)
        if sources & (changed | changed_abs) \
                or any(c.startswith(f"{p}{name}/") for c in changed for p in cx_prefixes):
            out.append(name)
    return out


def _git(args, cwd=None):
    try:
        return subprocess.run(["git", *args], capture_output=True, text=True, cwd=cwd)
    except OSError as e:
        raise GateError(f"--changed-since needs git ({e.strerror})") from None


def changed_files(rev, cwd=None):
    """(repository top level, files changed since ``rev``: ``git diff --name-only REV``, and the untracked files
    git does not ignore: a new spec module is a change too)."""
    if not rev or rev.startswith("-"):
        raise GateError(f"--changed-since: {rev!r} is not a git revision")
    top = _git(["rev-parse", "--show-toplevel"], cwd)
    if top.returncode != 0:
        raise GateError("--changed-since: not inside a git repository")
    commit = _git(["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], cwd)
    if commit.returncode != 0:
        raise GateError(f"--changed-since: unknown git revision {rev!r} "
                        f"(in CI, check out with fetch-depth: 0 so the base branch is there)")
    diff = _git(["-c", "diff.relative=false", "diff", "--name-only", "--no-renames", commit.stdout.strip(), "--"],
                cwd)
    untracked = _git(["ls-files", "--others", "--exclude-standard", "--full-name"], top.stdout.strip())
    for listing in (diff, untracked):
        if listing.returncode != 0:
            msg = (listing.stderr.strip().splitlines() or ["git failed"])[-1]
            raise GateError(f"--changed-since {rev}: {msg}")
    return top.stdout.strip(), [line for out in (diff, untracked) for line in out.stdout.splitlines() if line]


# --------------------------------------------------------------------------------------------
# running the gate
# --------------------------------------------------------------------------------------------
def instantiate(registry, names):
    """Each spec at the bounds of each of its configurations, keyed (name, configuration), with the verdicts
    expected there; the defaults' ``expected`` must cover every invariant (GateError if not)."""
    specs, expectations = {}, {}
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
            for inv, verdict in conf.expected.items():
                if inv not in spec.invariants:
                    raise GateError(f"{where}: expected names {inv!r}, which is not one of its invariants "
                                    f"({', '.join(spec.invariants)})")
                if verdict not in VERDICTS:
                    raise GateError(f"{where}: expected verdict of {inv!r} is {verdict!r} "
                                    f"(must be 'holds' or 'violated')")
            specs[name, conf_name] = spec
            expectations[name, conf_name] = dict(conf.expected)
    return specs, expectations


def show_command(report, row):
    """The command that reads a row's counterexample (naming the spec's class when it is not registered)."""
    return read_command(type(report.specs[row.spec, row.configuration]), row.counterexample)


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


def run_gate(names=(), registry=None, counterexamples="counterexamples", out="gate-counterexamples",
             changed_since=None, progress=None, cwd=None, update_traces=False):
    """Check the named specs (all if none) of ``registry`` (default: ``specs.SPECS``) against their expectations.

    One search per (spec, configuration), over the invariants that configuration expects something of,
    and at the defaults a liveness check of the properties the spec expects something of.
    ``progress(message)`` is called before and after each search. Counterexamples of
    unexpected violations, and fresh ones for expected violations whose saved trace is
    missing or no longer replays, are written under ``out``; stale files there for
    the checked (spec, configuration, invariant) are removed. With ``update_traces``, every expected
    violation the search found is saved under ``counterexamples`` first (the golden traces, on purpose).
    """
    from isrcheck.checker.bfs import search
    from isrcheck.checker.liveness import check as check_liveness, lasso_trace

    registry = SPECS if registry is None else registry
    say = progress or (lambda message: None)
    start = time.perf_counter()
    chosen = select(registry, list(names))
    changed, skipped = None, []
    if changed_since is not None:
        root, changed = changed_files(changed_since, cwd)
        hit = set(affected_specs(registry, changed, root, counterexamples))
        skipped = [n for n in chosen if n not in hit]
        chosen = [n for n in chosen if n in hit]
        say(f"changed since {changed_since}: {len(changed)} files; checking {len(chosen)} of "
            f"{len(chosen) + len(skipped)} specs" + (f" ({', '.join(chosen)})" if chosen else ""))
    specs, expectations = instantiate(registry, chosen)
    live_expectations = {(name, DEFAULTS): dict(registry[name].liveness_expected()[0])
                         for name, conf in specs if conf == DEFAULTS and registry[name].liveness_expected()[0]}
    report = GateReport([], specs, 0.0, changed_since=changed_since, changed_files=changed, skipped=skipped)
    saved = {} if update_traces else {      # read before any search: a bad file is exit 2
        (name, conf, inv): check_saved_trace(spec, conf, inv, counterexamples)
        for (name, conf), spec in specs.items()
        for inv, verdict in {**expectations[name, conf], **live_expectations.get((name, conf), {})}.items()
        if verdict == "violated"}
    for k, ((name, conf), spec) in enumerate(specs.items(), start=1):
        report.sources[name] = _class_source(registry[name])
        expected = expectations[name, conf]
        what = f"[{k}/{len(specs)}] {label(name, conf)}"
        say(f"{what}: searching {len(expected)} invariants at "
            + " ".join(f"{b}={spec.bounds[b]}" for b in BOUNDS if b in spec.bounds))

        def unexpected(v, name=name, conf=conf, spec=spec, expected=expected):
            """A violation of an invariant that must hold is written as soon as found: a stop keeps it."""
            if expected[v.invariant] != "violated":
                save(from_steps(spec, v.invariant, "local", v.steps, gate=True), trace_path(out, name, conf, v.invariant))
        result = search(spec, list(expected), on_violation=unexpected)
        report.never_fired[name, conf] = list(result.never_fired)
        stats = (result.distinct_states, result.depth, result.seconds)
        for inv, verdict in expected.items():
            found = result.violations.get(inv)
            make = None if found is None else (
                lambda found=found, **meta: from_steps(spec, found.invariant, "local", found.steps, **meta))
            report.rows.append(_row(report, spec, conf, inv, verdict, result.verdicts[inv], make, stats, saved,
                                    counterexamples, out, update_traces))
        live = live_expectations.get((name, conf))
        if live and not result.budget_hit:
            say(f"{what}: liveness: {', '.join(live)}")
            for prop, r in check_liveness(spec, list(live)).items():
                make = None if r.lasso is None else (lambda r=r, **meta: lasso_trace(spec, r, **meta))
                report.rows.append(_row(report, spec, conf, prop, live[prop], r.verdict, make,
                                        (r.distinct_states, result.depth, r.seconds), saved, counterexamples, out,
                                        update_traces))
                if r.budget_hit:
                    result.budget_hit = r.budget_hit
        unmet = [r.invariant for r in report.rows if (r.spec, r.configuration) == (name, conf) and not r.ok]
        if result.budget_hit:               # the gate sets no budget: a stop request ends the whole gate
            left = len(specs) - k
            report.stopped = (f"{result.budget_hit} while searching {label(name, conf)}"
                              + (f"; {left} more searches not run" if left else ""))
            say(f"{what}: stopped by {result.budget_hit} after {result.distinct_states:,} "
                f"states, depth {result.depth} fully explored")
            break
        say(f"{what}: {result.distinct_states:,} states, depth {result.depth}, "
            f"{result.seconds:.1f} s — " + (f"UNMET: {', '.join(unmet)}" if unmet else "as expected"))
    report.seconds = time.perf_counter() - start
    return report


def _row(report, spec, conf, inv, expected, got, make, stats, saved, counterexamples, out, update_traces):
    """The Row of one expectation (an invariant's or a liveness property's) at a configuration.

    ``make(**meta)`` builds the trace of the violation the search found (None: none found). With
    ``update_traces`` an expected violation's trace becomes the golden one first; an unmet expectation's
    is written under ``out``, and a stale one there from an earlier run is removed.
    """
    name = spec.name
    row = Row(name, inv, expected, got, *stats, configuration=conf)
    if expected == "violated":
        if update_traces:
            if make is not None:
                save(make(symmetry=False), trace_path(counterexamples, name, conf, inv))
            saved[name, conf, inv] = check_saved_trace(spec, conf, inv, counterexamples)
        row.trace_status, row.trace_message, row.saved_trace = saved[name, conf, inv]
    target = trace_path(out, name, conf, inv)
    if make is not None and not row.ok:
        trace = make(gate=True)
        row.counterexample, row.steps = save(trace, target), len(trace.steps)
        report.traces[name, conf, inv] = trace
    elif os.path.isfile(target):
        os.remove(target)          # from an earlier run: it would mislead whoever reads --out
    return row


# --------------------------------------------------------------------------------------------
# reports
# --------------------------------------------------------------------------------------------
STYLE = {"holds": "green", "violated": "red", "unknown": "yellow"}


def print_table(console, report):
    """The gate's rich table and, under it, what is unmet and where the counterexamples are."""
    table = Table(title=f"isrcheck {__version__} gate", title_justify="left", header_style="bold")
    for col, just in (("spec", "left"), ("invariant", "left"), ("expected", "left"), ("got", "left"),
                      ("states", "right"), ("depth", "right"), ("seconds", "right"), ("saved trace", "left"),
                      ("", "left")):
        table.add_column(col, justify=just)
    last = None
    for i, r in enumerate(report.rows):
        first = r.label != last
        last = r.label
        trace = {REPLAYS: "[green]replays[/]", NOT_NEEDED: "[dim]-[/]"}.get(r.trace_status,
                                                                           f"[bold red]{r.trace_status}[/]")
        got = f"[{STYLE.get(r.got, '')}]{r.got}[/]"
        mark = "[green]✓[/]" if r.ok else "[bold red]✗ unmet[/]"
        end = i + 1 < len(report.rows) and report.rows[i + 1].label != r.label
        table.add_row(r.label if first else "", r.invariant, r.expected, got,
                      f"{r.states:,}" if first else "", str(r.depth) if first else "",
                      f"{r.seconds:.1f}" if first else "", trace, mark, end_section=end)
    if report.rows:
        console.print(table)
    if report.changed_since is not None:
        console.print(f"changed since {report.changed_since}: {len(report.changed_files or [])} files; "
                      f"skipped {len(report.skipped)} unaffected specs"
                      + (f" ({', '.join(report.skipped)})" if report.skipped else ""))
    for (name, conf), never in report.never_fired.items():
        if never:
            console.print(f"[yellow]{label(name, conf)}: never fired: {', '.join(never)}[/] "
                          "(a guard too strong, or bounds too small?)")
    for r in report.unmet:
        console.print(f"[bold red]✗ {r.label} {r.invariant}:[/] {show_mod.markup_safe('; '.join(r.problems()))}",
                      soft_wrap=True)
        if r.counterexample:
            console.print(f"  counterexample ({r.steps} states): "
                          f"[bold]{show_mod.markup_safe(show_command(report, r))}[/]", soft_wrap=True)
    if report.stopped:
        console.print(f"[yellow]gate stopped:[/] {report.headline()} in {report.seconds:.1f} s", soft_wrap=True)
        return
    colour = "green" if report.ok else "bold red"
    console.print(f"[{colour}]gate {'passed' if report.ok else 'FAILED'}:[/] {report.headline()} "
                  f"in {report.seconds:.1f} s")


def as_json(report):
    return {
        "tool": "isrcheck", "version": __version__, "ok": report.ok,
        "stopped": report.stopped, "seconds": round(report.seconds, 3),
        "summary": report.headline(),
        "changed_since": report.changed_since, "changed_files": report.changed_files,
        "specs": {name: {"bounds": dict(spec.bounds), "never_fired": report.never_fired.get((name, conf), []),
                         "configurations": {c: {"bounds": dict(other.bounds),
                                                "never_fired": report.never_fired.get((n, c), [])}
                                            for (n, c), other in report.specs.items() if n == name}}
                  for (name, conf), spec in report.specs.items() if conf == DEFAULTS},
        "skipped": report.skipped,
        "results": [r.as_json() for r in report.rows],
    }


def as_junit(report):
    """JUnit XML: a testsuite per (spec, configuration), named like the table (``spec`` for the defaults,
    ``spec/configuration`` else), a testcase per expectation, a failure per unmet one."""
    suites = ET.Element("testsuites", name="isrcheck gate", tests=str(len(report.rows)),
                        failures=str(len(report.unmet)), errors="0", time=f"{report.seconds:.3f}")
    for (name, conf), spec in report.specs.items():
        rows = [r for r in report.rows if (r.spec, r.configuration) == (name, conf)]
        seconds = rows[0].seconds if rows else 0.0
        suite = ET.SubElement(suites, "testsuite", name=label(name, conf), tests=str(len(rows)),
                              failures=str(sum(not r.ok for r in rows)), errors="0", skipped="0",
                              time=f"{seconds:.3f}")
        props = ET.SubElement(suite, "properties")
        ET.SubElement(props, "property", name="configuration", value=conf)
        for k, v in spec.bounds.items():
            ET.SubElement(props, "property", name=k, value=str(v))
        for r in rows:
            case = ET.SubElement(suite, "testcase", classname=r.label, name=r.invariant, time="0")
            if not r.ok:
                failure = ET.SubElement(case, "failure", type=r.kind, message="; ".join(r.problems()))
                lines = [f"spec {name}, configuration {conf}, invariant {r.invariant}: expected {r.expected}, "
                         f"got {r.got}",
                         f"{r.states} distinct states, depth {r.depth}"]
                if r.expected == "violated":
                    lines.append(f"saved counterexample {r.saved_trace}: {r.trace_status} ({r.trace_message})")
                if r.counterexample:
                    lines.append(f"counterexample ({r.steps} states): {show_command(report, r)}")
                failure.text = "\n".join(lines)
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


SARIF_RULES = {
    "unexpected-violation": "An invariant the protocol version must satisfy is violated at the bounds of one of its "
                            "configurations (its defaults or a named one).",
    "expected-violation-not-found": "An invariant the protocol version must violate (a known bug) now holds: "
                                    "the model or the checker lost its bite.",
    "counterexample-does-not-replay": "The saved counterexample of an expected violation no longer replays on "
                                      "the current model.",
    "counterexample-missing": "An expected violation has no saved counterexample.",
    "counterexample-at-other-bounds": "The saved counterexample of an expected violation was found at other bounds "
                                      "than its configuration declares.",
    "inconclusive": "The search did not reach a verdict.",
}


def _uri(path):
    """A path as a SARIF artifact URI: relative to the working directory when under it."""
    path = os.path.abspath(path)
    rel = os.path.relpath(path, os.getcwd())
    if not rel.startswith(".."):
        return {"uri": rel.replace(os.sep, "/"), "uriBaseId": "%SRCROOT%"}
    return {"uri": "file://" + path.replace(os.sep, "/")}


def as_sarif(report):
    """SARIF 2.1.0: one run, one result per unmet expectation."""
    rules = [{"id": rid, "name": rid.replace("-", " "), "shortDescription": {"text": text},
              "fullDescription": {"text": text}, "defaultConfiguration": {"level": "error"}}
             for rid, text in SARIF_RULES.items()]
    index = {rid: i for i, rid in enumerate(SARIF_RULES)}
    results = []
    for r in report.unmet:
        source, line = report.sources.get(r.spec, (None, None))
        locations = []
        if r.kind in ("counterexample-does-not-replay", "counterexample-at-other-bounds") and r.saved_trace \
                and os.path.exists(r.saved_trace):
            locations.append({"physicalLocation": {"artifactLocation": _uri(r.saved_trace)}})
        elif source:
            locations.append({"physicalLocation": {"artifactLocation": _uri(source),
                                                   "region": {"startLine": line or 1}}})
        result = {"ruleId": r.kind, "ruleIndex": index[r.kind], "level": "error",
                  "message": {"text": f"{r.label}: " + "; ".join(r.problems())},
                  "locations": locations,
                  "properties": {"spec": r.spec, "configuration": r.configuration, "invariant": r.invariant,
                                 "expected": r.expected, "got": r.got,
                                 "savedTrace": r.trace_status}}
        if r.counterexample:
            result["relatedLocations"] = [{"id": 1, "physicalLocation": {"artifactLocation": _uri(r.counterexample)},
                                           "message": {"text": f"counterexample, {r.steps} states"}}]
        results.append(result)
    return {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            # no informationUri: it is optional, and isrcheck has no public address to give
            "tool": {"driver": {"name": "isrcheck", "version": __version__, "semanticVersion": __version__,
                                "rules": rules}},
            "originalUriBaseIds": {"%SRCROOT%": {"uri": "file://" + os.getcwd().replace(os.sep, "/") + "/"}},
            "invocations": [{"executionSuccessful": not report.stopped,
                             "exitCode": EXIT_STOPPED if report.stopped else EXIT_MET if report.ok else EXIT_UNMET}],
            "results": results,
        }],
    }


def _md(text):
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def _md_row(cells):
    return "| " + " | ".join(cells) + " |"


def _changes(spec, f, before, after, axes, index=""):
    """``name[i]=value`` for the elements of a field that changed (a whole replica set counts as one)."""
    if before == after:
        return []
    replica_set = len(axes) == 1 and f.boolean and tuple(axes) == ("replica",)
    if isinstance(after, list) and isinstance(before, list) and len(before) == len(after) and not replica_set:
        out = []
        for i, (b, a) in enumerate(zip(before, after)):
            label = f"r{i}" if axes[:1] == ("replica",) else str(i)
            out += _changes(spec, f, b, a, tuple(axes[1:]), f"{index}[{label}]")
        return out
    return [f"{f.name}{index}={spec.presentation.fmt_value(f, after, len(f.shape) - len(axes))}"]


def markdown_steps(spec, trace):
    """A trace as a Markdown table: a row per replica per step (its log, and the columns the spec's
    presentation leads with), and the step's other changes; changed cells in bold."""
    present = spec.presentation
    per_replica, partition = present.table_fields()
    lead = [f for f in per_replica if f.name in present.columns]
    rest = [f for f in per_replica if f not in lead]
    head = (["step", "action", "replica", present.log_header] + [present.header(f) for f in lead]
            + ["other changes"])
    lines = [_md_row(head), _md_row(["---"] * len(head))]

    def cell(text, changed):
        text = _md(text)
        return f"**{text}**" if changed and text else text

    prev = None
    for i, (name, params, state) in enumerate(trace.steps):
        label = step_label(name, params)
        for r in range(present.R):
            log = present.log_text(state, r)
            row = [str(i) if r == 0 else "", f"`{label}`" if r == 0 else "", f"r{r}",
                   cell(log if log is not None else "", prev is not None and present.log_text(prev, r) != log)]
            for f in lead:
                v = state[f.name][r]
                row.append(cell(present.fmt_value(f, v, 1), prev is not None and prev[f.name][r] != v))
            other = []
            if prev is not None:
                for f in rest:
                    other += _changes(spec, f, prev[f.name][r], state[f.name][r], tuple(f.axes[1:]))
                if r == 0:
                    for f in partition:
                        other += _changes(spec, f, prev[f.name], state[f.name], tuple(f.axes))
            row.append(_md(" ".join(other)))
            lines.append(_md_row(row))
        prev = state
    return "\n".join(lines)


def as_markdown(report):
    """The GitHub Actions step summary: verdict, unmet expectations, counterexamples as tables, all results."""
    icon = "✅" if report.ok else "❌"
    out = [f"## {icon} isrcheck gate: {report.headline()}", ""]
    if report.changed_since is not None:
        out += [f"Changed since `{report.changed_since}`: {len(report.changed_files or [])} files; checked "
                + (", ".join(f"`{label(*key)}`" for key in report.specs) or "no spec")
                + (f"; skipped {len(report.skipped)} unaffected specs." if report.skipped else "."), ""]
    head = ["spec", "invariant", "expected", "got", "states", "depth", "seconds", "saved trace", ""]

    def table(rows):
        lines = [_md_row(head), _md_row(["---"] * len(head))]
        for r in rows:
            lines.append(_md_row([f"`{r.label}`", f"`{r.invariant}`", r.expected,
                                  r.got if r.verdict_ok else f"**{r.got}**", f"{r.states:,}", str(r.depth),
                                  f"{r.seconds:.1f}", _md(r.trace_status), "✅" if r.ok else "❌ unmet"]))
        return lines

    if report.unmet:
        out += ["### Unmet expectations", ""] + table(report.unmet) + [""]
        for r in report.unmet:
            out += [f"- `{r.label}` `{r.invariant}`: " + _md("; ".join(r.problems()))]
        out.append("")
    for (name, conf, inv), trace in report.traces.items():
        r = next(r for r in report.rows if (r.spec, r.configuration, r.invariant) == (name, conf, inv))
        if r.expected != "holds":
            continue                    # fresh traces of expected violations: attached, not shown
        spec = report.specs[name, conf]
        meaning = spec.invariants[inv].meaning
        loss = spec.invariants[inv].loss
        out += [f"### ❌ `{r.label}`: `{inv}` violated ({len(trace.steps)} states)", "",
                f"> {_md(meaning)}" + (f" {_md(loss)}" if loss else ""), "",
                f"Bounds: {' '.join(f'{k}={v}' for k, v in spec.bounds.items())}. Written to "
                f"`{r.counterexample}` (in the job's artifacts); read it with `{show_command(report, r)}`.",
                "", markdown_steps(spec, trace), "",
                f"`{inv}` is violated at step {len(trace.steps) - 1}.", ""]
    if report.rows:
        out += ["<details><summary>All results</summary>", ""] + table(report.rows) + ["", "</details>", ""]
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------------------------
# the command
# --------------------------------------------------------------------------------------------
def _write(path, text):
    try:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w") as fh:
            fh.write(text)
    except OSError as e:
        raise GateError(f"--output {path}: cannot write ({e.strerror})") from None


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
    stop.polled()
    registry = ctx.obj.get("specs") if isinstance(ctx.obj, dict) and "specs" in ctx.obj else None
    if registry is None:                 # the built-in specs, installed plugins, and FILE.py[:CLASS] / MODULE:CLASS
        registry, names = {**SPECS, **plugins()[0]}, []
        for ref in spec_names:
            try:
                classes = [registry[ref]] if ref in registry else resolve_all(ref)
            except SpecRefError as e:
                raise GateError(str(e)) from None
            for cls in classes:
                registry[cls.name] = cls
                names.append(cls.name)
        spec_names = list(dict.fromkeys(names))
    err = Console(stderr=True, highlight=False)
    if os.path.lexists(cx_dir) and not os.path.isdir(cx_dir):
        raise GateError(f"--counterexamples {cx_dir}: not a directory")
    try:
        if output is not None:
            usable_file(output, "--output")
        usable_dir(out_dir, "--out")
    except OutputPathError as e:
        raise GateError(str(e)) from None
    progress = None if no_progress else (lambda message: err.print(f"gate: {message}", soft_wrap=True,
                                                                   markup=False))
    report = run_gate(spec_names, registry, counterexamples=cx_dir, out=out_dir, changed_since=changed_since,
                      progress=progress, update_traces=update_traces)

    machine = {"json": lambda: json.dumps(as_json(report), indent=1) + "\n",
               "junit": lambda: as_junit(report),
               "sarif": lambda: json.dumps(as_sarif(report), indent=1) + "\n"}
    console = Console(highlight=False)
    if not console.is_terminal:
        console = Console(highlight=False, width=max(console.width, 140))
    if fmt == "text":
        print_table(console, report)
        if output is not None:
            file_console = Console(file=io.StringIO(), width=160, no_color=True, highlight=False, record=True)
            print_table(file_console, report)
            _write(output, file_console.export_text())
    elif output is not None:
        _write(output, machine[fmt]())
        print_table(console, report)
        err.print(f"gate: {fmt} report written to {output}", markup=False)
    else:
        click.echo(machine[fmt](), nl=False)

    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        try:
            with open(summary, "a") as fh:
                fh.write(as_markdown(report))
        except OSError as e:
            err.print(f"gate: warning: cannot append the summary to {summary} ({e.strerror})", markup=False)
    ctx.exit(EXIT_STOPPED if report.stopped else EXIT_MET if report.ok else EXIT_UNMET)
