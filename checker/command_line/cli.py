"""The ``isrcheck`` command line.

Exit codes: 0 every checked invariant holds (or a replayed trace still
violates), 1 a violation was found (or a trace no longer reproduces), 2 bad
usage or input (one line, no traceback), 3 a budget the user set ran out
(time, states, memory) or a signal (SIGINT, SIGTERM) stopped the work.
"""
from __future__ import annotations

import json
import math
import os
import sys
import threading
import time

import click

from isrcheck.checker import __version__
from isrcheck.checker.guards import atomic
from isrcheck.checker.engine import engines, stop
from isrcheck.checker.command_line import provenance, report, settings, state_counts, unused_options
from isrcheck.checker.traces import show as show_mod
from isrcheck.checker.guards.atomic import WriteFailed
from isrcheck.checker.engine.budget import Budget
from isrcheck.checker.guards.outpaths import OutputPathError, usable_dir, usable_file
from isrcheck.checker.traces.trace import (TraceError, default_path, from_steps, is_lasso, itf_text, load,
                                           replay as replay_trace, replay_lasso, save)
from isrcheck.model.expr import DeclarationError
from isrcheck.model.spec import BoundsError
from isrcheck.checker.command_line.registry import SpecRefError, known as known_specs, plugins, resolve, show_command
from isrcheck.specs import BOUND_FLAGS, SWITCH_EXAMPLE

EXIT_HOLDS, EXIT_VIOLATED, EXIT_USAGE, EXIT_BUDGET = 0, 1, 2, 3
EXIT_NOT_INDUCTIVE = 4            # prove: no counterexample, and no proof either (a lemma is missing)
OUT_DIR = "isrcheck-out"          # traces of ordinary runs; counterexamples/ is the gate's golden store
MAX_SECONDS = 366 * 24 * 3600     # a time budget longer than a year is a mistake


class UserError(Exception):
    """A user's mistake: printed as one line, exit code 2."""


def _out():
    """stdout; wide when it is not a terminal, so piped traces and reports do not wrap."""
    from rich.console import Console        # rich loads only where something is printed with it
    console = Console(highlight=False)
    return console if console.is_terminal else Console(highlight=False, width=200)


def _err():
    from rich.console import Console
    return Console(stderr=True, highlight=False)


def spec_class(ref):
    """The Spec class a --spec names: a registered name, FILE.py:CLASS or MODULE:CLASS (checker/command_line/registry.py)."""
    try:
        return resolve(ref)
    except SpecRefError as e:
        raise UserError(str(e)) from None


def make_spec(name, bounds):
    cls = spec_class(name)
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
        if key.replace("-", "_") in out:
            raise UserError(f"--set {key} is given twice")
        try:
            out[key.replace("-", "_")] = int(value)
        except ValueError:
            raise UserError(f"--set {key}: {value!r} is not an integer") from None
    return out


def count(n):
    """A count for a progress line: exact below a million, then in millions (``11.63M``), so lines stay short."""
    return f"{n:,.0f}" if n < 1_000_000 else f"{n / 1e6:,.2f}M"


class Progress:
    """Live progress on stderr: a redrawn line on a terminal; otherwise (CI logs) a plain line every few seconds,
    never wrapped and short enough for 80 columns. Each engine's line names its own units."""

    def __init__(self, enabled):
        self.enabled = enabled
        self.console = _err() if enabled else None      # rich loads only where progress is shown
        self.last = float("-inf")             # the first line at once: the user sees the work has started
        self.live = enabled and self.console.is_terminal
        self.ticker = None

    #: the counters an engine may report (checker/engine/result.py's progress interface), in the order shown
    COUNTERS = (("runs", "{} runs"), ("depth", "depth {}"), ("frontier", "frontier {}"), ("transitions", "{} steps"),
                ("distinct", "{} states"), ("lemmas", "{} lemmas learned"), ("discharged", "{} obligations discharged"))

    def __call__(self, seconds, snapshot=None, **counters):
        """One engine's progress: ``seconds`` elapsed and the counters it knows (see checker/engine/result.py)."""
        parts = [text.format(count(counters[name])) if name != "depth" else text.format(counters[name])
                 for name, text in self.COUNTERS if counters.get(name) is not None]
        distinct = counters.get("distinct")
        parts.append(f"{count(distinct / seconds if seconds > 0 else 0)}/s" if distinct is not None
                     else f"{seconds:,.0f} s")
        if snapshot is not None:
            parts.append(f"snapshot {time.time() - snapshot:,.0f} s ago")
        self.line(" · ".join(parts))

    def fuzz(self, runs, transitions, distinct, seconds, **_):
        """The fuzzer: executions run, steps taken in them, distinct states seen."""
        self.line(f"fuzz: {count(runs)} runs · {count(transitions)} steps · {count(distinct)} states · "
                  f"{seconds:,.0f} s")

    def bmc(self, most):
        """A callback for bounded model checking: the depth checked (of ``most``) and the solver's time on it."""
        before = [0.0]

        def report(depth, seconds, **_):
            self.line(f"bmc: depth {depth} of {most} checked · {seconds - before[0]:,.1f} s on it · "
                      f"{seconds:,.0f} s in all")
            before[0] = seconds
        return report

    def phase(self, name):
        """A phase that reports nothing while it runs (a solver call): its name now, then its elapsed time every
        few seconds, until the next phase or :meth:`done`."""
        self._stop_ticker()
        if not self.enabled:
            return
        start, stopped = time.monotonic(), threading.Event()
        self.last = float("-inf")
        self.line(name)

        def tick():
            while not stopped.wait(1.0):
                self.line(f"{name} · {time.monotonic() - start:,.0f} s")
        thread = threading.Thread(target=tick, daemon=True)
        thread.start()
        self.ticker = (stopped, thread)

    def _stop_ticker(self):
        if self.ticker is not None:
            self.ticker[0].set()
            self.ticker[1].join()
            self.ticker = None

    def line(self, text):
        """Show one progress line (with the memory in use), unless one was shown a moment ago."""
        now = time.monotonic()
        if not self.enabled or now - self.last < (0.2 if self.live else 5.0):
            return
        self.last = now
        line = f"{text} · {stop.peak_bytes() / 2 ** 20:,.0f} MB"
        if self.live:
            self.console.print(line, end="\r", soft_wrap=True, markup=False)
        else:
            self.console.print(line, soft_wrap=True, markup=False)

    def done(self):
        self._stop_ticker()
        if self.enabled and self.live:
            self.console.print(" " * 100, end="\r")


#: the bounds with a flag of their own (``--max-epochs``); every other bound or option is given with --set
FLAGGED = BOUND_FLAGS


def bound_options(fn):
    for name, doc in reversed(FLAGGED.items()):
        fn = click.option(f"--{name.replace('_', '-')}", name, type=int, default=None,
                          help=f"bound: {doc} (default: the spec's)")(fn)
    return click.option("--set", "settings", multiple=True, metavar="KEY=VALUE",
                        help=f"other model option, e.g. --set {'='.join(map(str, SWITCH_EXAMPLE))} "
                             f"(see `isrcheck list`)")(fn)


ITF_FORM = click.option("--itf", "itf", type=click.Choice(["compact", "typed"]), default="compact", show_default=True,
                        help="how traces are written: compact (cells as integers and booleans) or typed (sets of "
                             "replicas as #set, replica ids as names, 'none' for no replica) for ITF viewers")


def _typed_itf(spec, trace):
    """``show --format itf``: the trace in typed ITF."""
    return itf_text(trace, spec)


def collect_bounds(kw):
    bounds = {k: kw.pop(k) for k in FLAGGED}
    bounds = {k: v for k, v in bounds.items() if v is not None}
    settings = parse_settings(kw.pop("settings"))
    for k in settings.keys() & bounds.keys():
        raise UserError(f"--{k.replace('_', '-')} {bounds[k]} and --set {k}={settings[k]}: give the bound once")
    bounds.update(settings)
    return bounds


class Seconds(click.ParamType):
    """A positive, finite number of seconds, at most a year (nan, inf and 1e400 are mistakes); 0 too if ``zero``."""
    name = "seconds"

    def __init__(self, zero=False):
        self.zero = zero

    def convert(self, value, param, ctx):
        try:
            seconds = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number of seconds", param, ctx)
        if not math.isfinite(seconds) or not (0 <= seconds if self.zero else 0 < seconds) or seconds > MAX_SECONDS:
            self.fail(f"{value!r} is not a {'' if self.zero else 'positive '}number of seconds "
                      f"{'from 0 ' if self.zero else ''}up to {MAX_SECONDS:,}", param, ctx)
        return seconds


def check_out_dir(out_dir, spec_name, names):
    """The traces' directory is usable for every trace this run may write (else exit 2, before any work)."""
    try:
        usable_dir(out_dir, "--out", [default_path("", spec_name, n) for n in names])
    except OutputPathError as e:
        raise UserError(str(e)) from None


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="isrcheck")
@click.option("--config", "config", metavar="FILE", default=None,
              help="settings file (default: isrcheck.toml, or pyproject.toml's [tool.isrcheck], in this directory)")
@click.option("--profile", "profile", metavar="NAME", envvar="ISRCHECK_PROFILE", default=None,
              help="a profile of the settings file, over the rest of it (or set ISRCHECK_PROFILE)")
@click.pass_context
def cli(ctx, config, profile):
    """Model checker and property fuzzer for Kafka's partition replication protocol.

    Options a command does not get on the command line come from the settings file, if there is one
    (see the documentation, "Settings files": docs/how-to/settings.md)."""
    path = config if config is not None else settings.find()
    if path is None:
        if profile is not None:
            raise UserError(f"--profile {profile}: there is no settings file (isrcheck.toml, or pyproject.toml "
                            f"with [tool.isrcheck]) here; name one with --config FILE")
        return
    try:
        ctx.default_map = settings.default_map(cli, path, profile)
    except settings.SettingsError as e:
        raise UserError(str(e)) from None
    provenance.remember(ctx, path, profile, FLAGGED)     # named on the header line of what it changes


@cli.command()
@click.option("--spec", "spec_name", required=True,
              help="protocol version (see `isrcheck list`), or FILE.py:CLASS / MODULE:CLASS")
@click.option("--invariant", "invariants", multiple=True, help="invariant to check (repeatable)")
@click.option("--all", "every", is_flag=True, help="check every invariant and liveness property of the spec")
@click.option("--property", "properties", multiple=True,
              help="liveness property to check (repeatable; local engine): P leads to Q under its fairness")
@bound_options
@click.option("--symmetry", is_flag=True, help="replica-symmetry reduction")
@click.option("--engine", type=click.Choice(list(engines.ENGINES)), default="local", show_default=True,
              help=engines.help_text())
@click.option("--depth", type=click.IntRange(min=1, max=10_000), default=40, show_default=True,
              help="bmc: longest path checked, in states")
@click.option("--z3-timeout", type=Seconds(), default=None, help="bmc: seconds")
@click.option("--master", default="local[*]", show_default=True, help="spark: master URL")
@click.option("--partitions", type=click.IntRange(min=1, max=1 << 20), default=None, help="spark: partitions")
@click.option("--workdir", metavar="DIR", default=None,
              help="spark: where the levels' files go, a path the driver and every executor share (needed when "
                   "executors run on other machines; default: a temporary directory here, removed at the end)")
@click.option("--out", "out_dir", default=OUT_DIR, show_default=True, help="where traces are written")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--max-states", type=click.IntRange(min=1, max=1 << 62), default=None, help="budget: distinct states")
@click.option("--max-depth", type=click.IntRange(min=1, max=1 << 31), default=None, help="budget: BFS levels")
@click.option("--time-limit", type=Seconds(), default=None, help="budget: seconds")
@stop.memory_option
@click.option("--checkpoint", "checkpoint", metavar="DIR", default=None,
              help="local and spark engines: snapshot the search to DIR at level boundaries (resume it with "
                   "--resume DIR)")
@click.option("--resume", "resume", metavar="DIR", default=None,
              help="local and spark engines: continue the search snapshotted in DIR (same spec, bounds and "
                   "invariants), snapshotting there as it goes")
@click.option("--checkpoint-every", type=Seconds(zero=True), default=60.0, show_default=True,
              help="seconds between snapshots (one at the end of a level once this much time has passed)")
@click.option("--chunk", type=click.IntRange(min=1, max=1 << 26), default=1 << 18, hidden=True)
@click.option("--decide-from", type=click.IntRange(min=0, max=1 << 62), default=None, hidden=True,
              help="spark: levels of this many states or more are jobs of their own, decided on (fingerprint, tag) "
                   "records (default: the engine's own threshold)")
@click.option("--workers", type=click.IntRange(min=1, max=1024), default=None,
              help="local engine: threads expanding states (default: every core); results do not depend on it")
@click.option("--fingerprint", type=click.Choice(["auto", "64", "96"]), default="auto", show_default=True,
              help="local engine: fingerprint bits; auto keeps 64 until the collision bound could pass 1e-6, then "
                   "goes 96 (96 needs a C compiler, without --symmetry)")
@click.option("--kernels", type=click.Choice(["auto", "native", "numpy"]), default="auto", hidden=True,
              help="local and spark engines: compiled (numba) kernels, numpy's, or native once compiled or for large "
                   "levels")
@ITF_FORM
@click.option("--coverage", "coverage", is_flag=True,
              help="local engine: per action, how often it was enabled and fired and the states it reached first "
                   "(always in --format json)")
@click.option("--no-progress", is_flag=True, help="no live progress on stderr")
def check(spec_name, invariants, every, properties, symmetry, engine, depth, z3_timeout, master, partitions, workdir,
          out_dir, fmt, max_states, max_depth, time_limit, checkpoint, resume, checkpoint_every, chunk, decide_from,
          workers, fingerprint, kernels, itf, coverage, no_progress, **kw):
    """Explore every interleaving within the bounds; exit 1 with a shortest counterexample if one breaks."""
    stop.polled()
    unused_options.refuse(click.get_current_context(), engine)
    spec = make_spec(spec_name, collect_bounds(kw))
    live_engine = engines.ENGINES[engine].liveness and not symmetry and not (checkpoint or resume)
    props = pick_properties(spec, properties, every and live_engine)
    if props and not live_engine:
        raise UserError("liveness properties are checked by the local engine, without --symmetry, --checkpoint "
                        "or --resume")
    names = pick_invariants(spec, invariants, every) if invariants or every or not props else []
    check_out_dir(out_dir, spec.name, names + props)
    if (checkpoint or resume) and not engines.ENGINES[engine].resumable:
        raise UserError(f"--checkpoint and --resume work with the {' and '.join(engines.which('resumable'))} engines "
                        f"only")
    if "workdir" not in engines.ENGINES[engine].reads:
        workdir = None                  # a settings file's workdir is for the engines that read it
    if (checkpoint or resume) and workdir is not None:
        raise UserError("--checkpoint/--resume DIR is the Spark run's workdir: leave out --workdir")
    if workdir is not None:
        try:
            os.makedirs(workdir, exist_ok=True)
        except OSError as e:
            raise UserError(f"--workdir {workdir}: cannot create it ({e.strerror})") from None
        if not os.access(workdir, os.W_OK | os.X_OK):
            raise UserError(f"--workdir {workdir}: not a writable directory")
    if checkpoint and resume:
        raise UserError("--resume DIR goes on snapshotting to DIR: leave out --checkpoint")
    if fingerprint == "96" and (engine != "local" or symmetry or kernels == "numpy"):
        raise UserError("--fingerprint 96 works with the local engine on its compiled kernels, without --symmetry")
    if checkpoint:
        try:
            os.makedirs(checkpoint, exist_ok=True)
        except OSError as e:
            raise UserError(f"--checkpoint {checkpoint}: cannot create it ({e.strerror})") from None
    if (checkpoint or resume) and not os.access(checkpoint or resume, os.W_OK | os.X_OK):
        raise UserError(f"--{'checkpoint' if checkpoint else 'resume'} {checkpoint or resume}: not a writable "
                        f"directory")
    sink = TraceSink(spec, engine, out_dir, typed=itf == "typed", symmetry=symmetry)
    progress = Progress(not no_progress)
    budget = Budget(max_states=max_states, max_depth=max_depth, seconds=time_limit)
    result = None
    if names:           # the invariants first: their traces are written as found, and a stop keeps them
        try:
            result = engines.run(engine, spec, names, engines.Request(budget, progress, sink,
                                                                      click.get_current_context().params))
        except engines.EngineError as e:
            raise UserError(str(e)) from None
        finally:
            progress.done()
    live = None
    if props and (result is None or not result.budget_hit):
        from isrcheck.checker.exhaustive.liveness import check as check_liveness
        try:
            live = check_liveness(spec, props, chunk=chunk, progress=progress, budget=budget)
        finally:
            progress.done()
    elif props:
        _err().print(f"isrcheck: liveness properties are not checked: the invariant search stopped "
                     f"({result.budget_hit})", markup=False)
    if every and not live_engine and spec.properties:
        _err().print("isrcheck: liveness properties are not checked: only the local engine without --symmetry, "
                     "--checkpoint or --resume checks them", markup=False)
    if result is None:
        code, obj, unkept = finish_liveness(spec, live, out_dir, fmt, sink.typed, alone=True)
        if fmt == "json":
            click.echo(json.dumps(obj, indent=1))
        if unkept:
            _unkept(unkept)
        sys.exit(EXIT_BUDGET if stop.interrupted() or unkept else code)
    state_counts.record(spec, result, symmetry)        # for `isrcheck list --brief`
    finish(spec, engine, result, out_dir, fmt, observed=observations(spec, names, every), sink=sink, liveness=live,
           coverage=coverage)


def pick_properties(spec, names, every):
    """The liveness properties to check; with ``--all``, every one."""
    if every:
        return list(spec.properties)
    for n in names:
        if n not in spec.properties:
            raise UserError(f"spec {spec.name} has no liveness property {n!r} "
                            f"(it has: {', '.join(spec.properties) or 'none'})")
    return list(dict.fromkeys(names))


def finish_liveness(spec, results, out_dir, fmt, typed=False, alone=False):
    """Save a lasso per violated property and print the verdicts (text; ``alone``: with the header line, no
    invariant report came first); (exit code: 1 violated, 3 unknown, else 0; the ``--format json`` object;
    {property: WriteFailed} of the lassos the disk refused)."""
    from isrcheck.checker.exhaustive.liveness import lasso_trace
    files, unkept = {}, {}
    for name, r in results.items():
        if r.lasso is not None:
            try:
                files[name] = save(lasso_trace(spec, r), default_path(out_dir, spec.name, name),
                                   spec if typed else None)
            except WriteFailed as e:
                unkept[name] = e
    if fmt == "text":
        report.print_liveness(_out(), spec, results, files, alone)
    verdicts = {r.verdict for r in results.values()}
    code = EXIT_VIOLATED if "violated" in verdicts else EXIT_BUDGET if "unknown" in verdicts else EXIT_HOLDS
    return code, report.liveness_json(spec, results, files), unkept


def observations(spec, names, every):
    """Benign invariants checked through ``--all``: reported when broken, never a failure.

    Named explicitly with ``--invariant``, a benign invariant is checked like any other.
    """
    return {n for n in names if every and spec.invariants[n].benign}


class TraceSink:
    """Writes a counterexample (atomically) as soon as an engine finds it, so a stop or a crash loses none; one the
    disk refuses is in ``unkept`` (invariant -> what failed) and the search goes on."""

    def __init__(self, spec, engine, out_dir, typed=False, **meta):
        self.spec, self.engine, self.out_dir, self.meta, self.typed = spec, engine, out_dir, meta, typed
        self.files, self.unkept = {}, {}

    def __call__(self, violation):
        trace = from_steps(self.spec, violation.invariant, self.engine, violation.steps, **self.meta)
        self.files.pop(violation.invariant, None)
        try:
            self.files[violation.invariant] = save(trace, default_path(self.out_dir, self.spec.name,
                                                                       violation.invariant),
                                                   self.spec if self.typed else None)
            self.unkept.pop(violation.invariant, None)
        except WriteFailed as e:
            self.unkept[violation.invariant] = e


def _unkept(failures):
    """Say (one line on stderr) that the disk refused traces: the verdicts stand, the files are not there."""
    first, *more = failures.values()
    which = f"{len(more) + 1} traces are" if more else "the trace is"
    _err().print(f"isrcheck: {show_mod.printable(first)}: the verdicts stand, {which} not kept", soft_wrap=True,
                 markup=False)


def finish(spec, engine, result, out_dir, fmt, observed=(), sink=None, liveness=None, coverage=False, **meta):
    """Save the final traces, print the report, exit 1 / 3 / 0 (benign observations never fail).

    A stop by a signal is exit 3 even when violations were found: the verdicts are partial.
    ``liveness`` holds results of properties checked too (their report follows, and counts in the exit code).
    """
    sink = sink or TraceSink(spec, engine, out_dir, **meta)
    for v in result.violations.values():      # again: an engine may have improved a trace since (fuzz minimizes)
        sink(v)
    trace_files = {inv: sink.files[inv] for inv in result.violations if inv in sink.files}
    if fmt == "text":
        report.print_text(_out(), spec, engine, result, trace_files, observed, coverage)
    live, live_json, live_unkept = (finish_liveness(spec, liveness, out_dir, fmt, sink.typed) if liveness
                                    else (EXIT_HOLDS, {}, {}))
    if fmt == "json":
        click.echo(json.dumps({**report.as_json(spec, engine, result, trace_files, observed), **live_json}, indent=1))
    unkept = {**{inv: e for inv, e in sink.unkept.items() if inv in result.violations}, **live_unkept}
    if unkept:                # the search's result stands; the disk did not keep it: a resource ran out
        _unkept(unkept)
    if stop.interrupted() or unkept:
        sys.exit(EXIT_BUDGET)
    if set(result.violations) - set(observed) or live == EXIT_VIOLATED:
        sys.exit(EXIT_VIOLATED)
    if live == EXIT_BUDGET:
        sys.exit(EXIT_BUDGET)
    if result.budget_hit:
        sys.exit(EXIT_BUDGET)
    sys.exit(EXIT_HOLDS)


@cli.command(name="list")
@click.argument("names", nargs=-1, metavar="[SPEC]...")
@click.option("--brief", is_flag=True,
              help="one line a spec: name, distinct states at its defaults (once counted), expected violations, "
                   "summary")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def list_specs(names, brief, fmt):
    """Protocol versions (or the ones named: a name, FILE.py[:CLASS] or MODULE:CLASS) and their invariants:
    summaries, references, default bounds, expected verdicts."""
    from isrcheck.checker.command_line import listing
    from isrcheck.checker.command_line.registry import resolve_all
    classes = list(known_specs().values())
    if names:
        try:
            classes = list(dict.fromkeys(cls for name in names for cls in resolve_all(name)))
        except SpecRefError as e:
            raise UserError(str(e)) from None
    for error in plugins()[1]:
        _err().print(f"isrcheck: warning: {error}", soft_wrap=True, markup=False)
    entries = [listing.entry(cls) for cls in classes]
    if fmt == "json":
        click.echo(json.dumps(entries, indent=1))
    else:
        (listing.print_brief if brief else listing.print_full)(_out(), entries)


def _write(path, text):
    """Write a rendered file whole or not at all: into a folder that exists (else exit 2); a failure then is the
    disk's (exit 3)."""
    if not os.path.isdir(os.path.dirname(os.path.abspath(path))):
        raise UserError(f"{path}: cannot write (no such folder)")
    try:
        atomic.write_text(path, text)
    except WriteFailed as e:
        _err().print(f"isrcheck: {show_mod.printable(e)}", soft_wrap=True, markup=False)
        sys.exit(EXIT_BUDGET)


def TRACE_SPEC(fn):
    """--spec and the bound flags: a trace's spec when it is not a registered one, and a trace from another tool's
    spec and bounds (checker/traces/foreign.py)."""
    return click.option("--spec", "spec_ref", default=None, metavar="SPEC",
                        help="the trace's spec when it is not a registered one (FILE.py:CLASS or MODULE:CLASS), or "
                             "when the trace has no isrcheck #meta (an ITF trace from another tool)")(bound_options(fn))


def _load_trace(path, spec_ref=None, kw=None):
    """The trace and its spec; ``kw``: the command's bound flags, for a trace from another tool (checker/traces/foreign.py)."""
    from isrcheck.checker.traces import foreign
    trace = load(path)
    filed = provenance.from_file(kw or {})          # a settings file's bounds: for a trace that records none
    sets = parse_settings(kw.get("settings", ())) if kw else {}
    bounds = collect_bounds(kw) if kw else {}
    filed = {k for k in bounds if k in filed or (k in sets and "settings" in filed)}
    spec = foreign.spec_for(trace, path, spec_class(spec_ref) if spec_ref else None, bounds, filed)
    return trace, spec


@cli.command()
@click.argument("trace_path", metavar="TRACE")
@click.option("--format", "fmt", type=click.Choice(["text", "mermaid", "dot", "html", "itf"]), default="text",
              show_default=True,
              help="text: step by step; mermaid: sequence diagram; dot: state graph (Graphviz); html: a "
                   "self-contained page stepped with the keyboard (needs --output); itf: the trace as typed ITF "
                   "(sets of replicas as #set, replica names, 'none') for ITF viewers")
@click.option("--output", default=None, help="write to this file instead of stdout")
@click.option("--compact", is_flag=True,
              help="text: each step as only the cells it changed (old → new), one replica a line: fits 80 columns")
@TRACE_SPEC
def show(trace_path, fmt, output, compact, spec_ref, **kw):
    """Print a trace step by step in its protocol's terms, and say what went wrong."""
    from isrcheck.checker.traces import export
    if compact and fmt != "text":
        raise UserError("--compact is a layout of --format text")
    if fmt == "html" and output is None:
        raise UserError("--format html writes a page: name the file with --output FILE")
    trace, spec = _load_trace(trace_path, spec_ref, kw)
    if output is not None:
        try:
            usable_file(output, "--output")
        except OutputPathError as e:
            raise UserError(str(e)) from None
        from isrcheck.checker.traces.html import to_html
        render = {"html": to_html, "mermaid": export.to_mermaid, "dot": export.to_dot, "itf": _typed_itf}.get(fmt)
        if render is None:
            raise UserError("--output writes --format html, mermaid, dot or itf")
        _write(output, render(spec, trace))
        _err().print(f"wrote {show_mod.printable(output)}", soft_wrap=True, markup=False)
        return
    if fmt != "text":
        text = {"mermaid": export.to_mermaid, "dot": export.to_dot, "itf": _typed_itf}[fmt](spec, trace)
        click.echo(show_mod.printable(text, newlines=True))
        return
    show_mod.print_trace(_out(), spec, trace, compact)


FORMAT_JSON = click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)


def _trace_json(trace_path, trace, **more):
    """The head of ``replay`` and ``minimize``'s ``--format json`` object: which trace of what."""
    return {"tool": "isrcheck", "version": __version__, "trace": trace_path, "spec": trace.spec,
            "bounds": trace.bounds, "invariant": trace.invariant, "lasso": is_lasso(trace), **more}


@cli.command()
@click.argument("trace_path", metavar="TRACE")
@TRACE_SPEC
@FORMAT_JSON
def replay(trace_path, spec_ref, fmt, **kw):
    """Re-run a saved trace against the current model: exit 0 if it still reaches the violation, else 1."""
    trace, spec = _load_trace(trace_path, spec_ref, kw)
    result = (replay_lasso if is_lasso(trace) else replay_trace)(spec, trace)
    if fmt == "json":
        click.echo(json.dumps(_trace_json(trace_path, trace, reproduces=result.ok, message=result.message,
                                          states=len(trace.steps), failed_step=result.failed_step), indent=1))
        sys.exit(EXIT_HOLDS if result.ok else EXIT_VIOLATED)
    console = _out()
    if result.ok:
        console.print(f"[green]reproduces:[/] {show_mod.markup_safe(result.message)}")
        sys.exit(EXIT_HOLDS)
    console.print(f"[red]does not reproduce:[/] {show_mod.markup_safe(result.message)}")
    sys.exit(EXIT_VIOLATED)


@cli.command()
@click.option("--spec", "spec_name", required=True)
@click.option("--invariant", required=True)
@click.option("--k", "k", type=click.IntRange(min=1, max=1000), default=1, show_default=True, help="induction depth")
@click.option("--lemma", "lemmas", multiple=True,
              help="an invariant of the spec assumed and proved alongside (repeatable; default: the lemmas and "
                   "model options the spec declares for proving this invariant, if any)")
@click.option("--auto-lemmas", is_flag=True,
              help="find the lemmas automatically: each counterexample to induction is blocked by a clause no "
                   "reachable state (exhaustive engine) violates, until the invariant is inductive; a SAT-checked "
                   "proof at exactly these bounds (--k is not used)")
@click.option("--z3-timeout", type=Seconds(), default=None, help="seconds")
@bound_options
@click.option("--out", "out_dir", default=OUT_DIR, show_default=True, help="where a refuting trace is written")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@stop.memory_option
def prove(spec_name, invariant, k, lemmas, auto_lemmas, z3_timeout, out_dir, fmt, **kw):
    """k-induction: prove an invariant for every depth (at these replica and log bounds)."""
    stop.polled()
    from isrcheck.checker.symbolic.induction import prove as k_induction, render_states
    if auto_lemmas and lemmas:
        raise UserError("--auto-lemmas finds the lemmas itself: leave out --lemma")
    bounds = collect_bounds(kw)
    declared = None if lemmas or auto_lemmas else getattr(spec_class(spec_name), "proofs", {}).get(invariant)
    if declared:
        lemmas = tuple(declared["lemmas"])
        bounds = {**declared["settings"], **bounds}       # an explicit --set wins
    spec = make_spec(spec_name, bounds)
    for name in (invariant,) + lemmas:
        pick_invariants(spec, [name], False)
    check_out_dir(out_dir, spec.name, [invariant])
    cpu, start = time.process_time(), time.perf_counter()
    budget = Budget(seconds=z3_timeout)
    if auto_lemmas:
        result, used = _auto_lemma_proof(spec, invariant, budget)
    else:
        progress = Progress(True)
        try:
            result = k_induction(spec, invariant, k, lemmas=list(lemmas), budget=budget, phase=progress.phase)
        finally:
            progress.done()
        settings = " ".join(f"{key}={v}" for key, v in declared["settings"].items()) if declared else ""
        used = (f"{len(lemmas)} lemmas (the spec's for this invariant; {settings or 'no options'})" if declared
                else ", ".join(lemmas) or "none")
    cpu = time.process_time() - cpu
    wall = time.perf_counter() - start
    path = unkept = None
    if result.verdict == "refuted":
        try:
            path = save(from_steps(spec, invariant, "prove", result.steps), default_path(out_dir, spec.name, invariant))
        except WriteFailed as e:
            unkept = {invariant: e}
    code = {"proved": EXIT_HOLDS, "refuted": EXIT_VIOLATED, "not-inductive": EXIT_NOT_INDUCTIVE}.get(result.verdict,
                                                                                                    EXIT_BUDGET)
    if unkept:                  # refuted, and the disk did not keep the counterexample
        code = EXIT_BUDGET
    if fmt == "json":
        click.echo(json.dumps(report.proof_json(spec, result, used, wall, cpu, path), indent=1, default=int))
        if unkept:
            _unkept(unkept)
        sys.exit(code)
    console = _out()
    head = (f"{show_mod.markup_safe(f'{spec.name} · {invariant} · k={result.k} · lemmas: {used}')} · {wall:.1f} s "
            f"({cpu:.1f} s CPU; {', '.join(f'{name} {s:.1f} s' for name, s in result.phase_seconds.items())})"
            + (f" · {show_mod.markup_safe(provenance.note())}" if provenance.note() else ""))
    if result.verdict == "proved":
        console.print(f"[green]proved[/] for every depth at {' '.join(f'{key}={v}' for key, v in spec.bounds.items())}"
                      f"\n{head}")
        if auto_lemmas and result.lemmas:
            console.print("the smallest lemmas learned:\n" + "\n".join(f"  {text}" for text in result.lemmas[:3]),
                          soft_wrap=True)
    elif result.verdict == "refuted":
        console.print(f"[red]refuted[/]: a real counterexample of {len(result.steps)} states · {head}"
                      + (f"\nread it: {show_mod.markup_safe(show_command(type(spec), path))}" if path else ""))
    elif result.verdict == "not-inductive":
        console.print(f"[yellow]not inductive[/] (exit {EXIT_NOT_INDUCTIVE}) · {head}\nthe counterexample to "
                      f"induction below is consistent but unreachable: add a lemma (an invariant of the spec) that "
                      f"rules it out")
        console.print(render_states(spec, [st for _, st in result.steps], [a for a, _ in result.steps],
                                    failing=result.failing, title="counterexample to induction"))
    else:
        console.print(f"[yellow]unknown[/]: {result.reason} · {head}")
    if unkept:
        _unkept(unkept)
    sys.exit(code)


def _auto_lemma_proof(spec, invariant, budget):
    """prove --auto-lemmas: (ProofResult, how the lemmas were found)."""
    from isrcheck.checker.symbolic.strengthen import prove_with_lemmas
    progress = Progress(True)
    try:
        return prove_with_lemmas(spec, invariant, budget, progress=progress)
    finally:
        progress.done()


def parse_budget(text):
    """A time budget: seconds, or with a unit: 90s, 2m, 1h."""
    units = {"s": 1, "m": 60, "h": 3600}
    try:
        seconds = float(text[:-1]) * units[text[-1]] if text and text[-1] in units else float(text)
    except ValueError:
        raise UserError(f"--budget {text!r}: expected seconds, e.g. 60, 90s or 2m") from None
    if not math.isfinite(seconds) or not 0 < seconds <= MAX_SECONDS:
        raise UserError(f"--budget {text!r}: expected a positive time up to a year, e.g. 60, 90s or 2m")
    return seconds


@cli.command()
@click.option("--spec", "spec_name", required=True)
@click.option("--invariant", "invariants", multiple=True)
@click.option("--all", "every", is_flag=True)
@bound_options
@click.option("--budget", default="60s", show_default=True,
              help="CPU time each fuzzing process searches for (e.g. 60s, 5m); shrinking comes after it")
@click.option("--seed", type=int, default=None, help="fixed seed: the same runs every time")
@click.option("--max-steps", type=click.IntRange(min=1, max=1_000_000), default=None, help="longest execution")
@click.option("--workers", type=click.IntRange(min=1, max=1024), default=None,
              help="worker processes (default: every core); the same --seed and number of workers repeat the runs")
@click.option("--out", "out_dir", default=OUT_DIR, show_default=True, help="where traces are written")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@ITF_FORM
@click.option("--no-progress", is_flag=True)
def fuzz(spec_name, invariants, every, budget, seed, max_steps, workers, out_dir, fmt, itf, no_progress, **kw):
    """Random long executions with Hypothesis at bounds beyond exhaustive reach; failures are shrunk.

    After its first thousand runs, a quarter of the runs follow hints: the shortest counterexamples the
    exhaustive search finds at the spec's small (default) bounds, each carried to the bounds given by a small
    search (the steps that take the extra replicas out of the way, or that have them do what one of the hint's
    replicas does), replayed on some of the replicas; where none carries, a counterexample the search finds
    without one of the hint's actions."""
    stop.polled()
    from isrcheck.checker.fuzzing.fuzzer import fuzz as run_fuzz
    spec = make_spec(spec_name, collect_bounds(kw))
    names = pick_invariants(spec, invariants, every)
    limits = Budget(seconds=parse_budget(budget), max_steps=max_steps)
    check_out_dir(out_dir, spec.name, names)
    progress = Progress(not no_progress)
    if seed is None:      # chosen here, so that every trace written (even one a stop keeps) records it
        import random
        seed = random.getrandbits(32)
    if workers is None:
        from isrcheck.checker.exhaustive.bfs import all_cores
        workers = all_cores()
    _err().print(f"fuzz: seed {seed}, {workers} worker{'s' * (workers > 1)} (`--seed {seed} --workers {workers}` "
                 f"repeats these runs)", soft_wrap=True, markup=False)
    sink = TraceSink(spec, "fuzz", out_dir, typed=itf == "typed", seed=seed)

    try:
        result = run_fuzz(spec, names, limits, seed=seed, derandomize=True, progress=progress.fuzz,
                          on_violation=sink, workers=workers, clock=time.process_time)
    finally:
        progress.done()
    finish(spec, "fuzz", result, out_dir, fmt, observed=observations(spec, names, every), sink=sink)


@cli.command()
@click.argument("trace_path", metavar="TRACE")
@click.option("--output", "output", default=None, help="where to write it (default: TRACE with .min before .itf.json)")
@TRACE_SPEC
@FORMAT_JSON
def minimize(trace_path, output, spec_ref, fmt, **kw):
    """Shorten a trace: a shorter way to the same violation (never makes it longer)."""
    stop.polled()
    from isrcheck.checker.traces.minimize import minimize as ddmin
    trace, spec = _load_trace(trace_path, spec_ref, kw)
    if is_lasso(trace):
        raise UserError(f"{trace_path}: a liveness lasso; minimize works on invariant traces")
    out = trace_path.replace(".itf.json", "") + ".min.itf.json" if output is None else output
    try:
        usable_file(out, "--output")
    except OutputPathError as e:
        raise UserError(str(e)) from None
    result = replay_trace(spec, trace)
    if not result.ok:
        raise UserError(f"{trace_path}: does not reproduce on the current model ({result.message})")
    _err().print(f"minimize: {len(trace.steps)} states, looking for a shorter way to violate {trace.invariant}",
                 markup=False)
    steps = ddmin(spec, trace)
    try:
        save(from_steps(spec, trace.invariant, trace.engine, steps, minimized_from=len(trace.steps)), out)
    except WriteFailed as e:
        _err().print(f"isrcheck: {show_mod.printable(e)}: minimized to {len(steps)} states, not kept", soft_wrap=True,
                     markup=False)
        sys.exit(EXIT_BUDGET)
    if fmt == "json":
        click.echo(json.dumps(_trace_json(trace_path, trace, output=out, states=len(trace.steps),
                                          minimized_states=len(steps),
                                          stopped_by=stop.reason() if stop.interrupted() else None), indent=1))
    else:
        _out().print(f"{len(trace.steps)} → {len(steps)} states: {show_mod.printable(out)}", markup=False)
    if stop.interrupted():
        if fmt == "text":
            _out().print(f"stopped by {stop.reason()}: the shortest trace found so far is saved (it still "
                         f"violates {trace.invariant}); minimize it again to go on")
        sys.exit(EXIT_BUDGET)


from isrcheck.checker.gating.gate import gate  # noqa: E402  (the gate command lives in its own module)

cli.add_command(gate)


def main(argv=None):
    """Console entry point: user mistakes become one line on stderr and exit code 2."""
    try:
        with stop.handling():
            code = cli.main(args=argv, prog_name="isrcheck", standalone_mode=False)
    except (UserError, TraceError) as e:
        _error(str(e))
        sys.exit(EXIT_USAGE)
    except click.exceptions.UsageError as e:
        if isinstance(e, getattr(click.exceptions, "NoArgsIsHelpError", ())):     # bare `isrcheck`: our own help
            click.echo(e.format_message(), err=True)
        else:
            _error(e.format_message())
        sys.exit(EXIT_USAGE)
    except (click.exceptions.Abort, KeyboardInterrupt):
        _err().print("isrcheck: interrupted; traces already written are complete")
        sys.exit(EXIT_BUDGET)
    except MemoryError as e:
        _err().print(f"isrcheck: out of memory{f' ({e})' if str(e) else ''}; traces already written are complete "
                     f"(--max-memory stops earlier, with a partial report)", soft_wrap=True, markup=False)
        sys.exit(EXIT_BUDGET)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    sys.exit(code if isinstance(code, int) else EXIT_HOLDS)     # without standalone_mode, ctx.exit(n) returns n


def _error(message):
    """One line on stderr, with whatever a file or an argument put in it shown escaped."""
    _err().print(f"isrcheck: error: {show_mod.printable(message)}", soft_wrap=True, markup=False)


if __name__ == "__main__":
    main()
