"""The engines ``isrcheck check --engine NAME`` runs: one registry, one signature.

Every engine is an :class:`Engine` in :data:`ENGINES`, reached through :func:`run`; the command line
names none of them in a branch. An engine's function takes ``(spec, invariants, request)`` and returns
a :class:`checker.engine.result.Result`; ``request`` is a :class:`Request`: the budget, the progress display,
the callback that saves each counterexample as it is found, and ``options``, check's parsed options by
parameter name, of which each engine reads its own. A mistake an engine can only see once it starts
(a snapshot of another search, a missing optional package) is an :class:`EngineError`: one line, exit 2.

An engine module is imported only when its engine runs: listing the registry costs nothing.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Mapping


class EngineError(Exception):
    """A user's mistake an engine found when it started: printed as one line, exit code 2."""


@dataclass(frozen=True)
class Request:
    """What the command line hands every engine."""
    budget: Any                       # checker.engine.budget.Budget
    progress: Any                     # the command line's live progress (checker.command_line.cli.Progress)
    on_violation: Callable            # called with each Violation as soon as it is found
    options: Mapping[str, Any]        # check's parsed options, by parameter name


@dataclass(frozen=True)
class Engine:
    """One engine: its function and what it can do besides checking invariants."""
    name: str
    run: Callable                     # (spec, invariants, request) -> Result
    help: str                         # what --engine's help says of it
    resumable: bool = False           # --checkpoint and --resume
    liveness: bool = False            # liveness properties are checked alongside (without --symmetry or snapshots)
    reads: tuple = ()                 # check's options that only some engines read, this one among them (the
                                      # command line refuses one typed for an engine that does not read it)
    symbolic: bool = False            # enumerates no states: its report says which paths it covered instead


def _snapshot(options):
    """--checkpoint DIR, or --resume DIR (which goes on snapshotting there)."""
    return options["checkpoint"] or options["resume"]


def _local(spec, invariants, request):
    from isrcheck.checker.exhaustive.bfs import search
    from isrcheck.checker.exhaustive.checkpoint import CheckpointError
    from isrcheck.model.cbuild import CompileError
    o = request.options
    try:
        return search(spec, invariants, symmetry=o["symmetry"], chunk=o["chunk"], workers=o["workers"],
                      kernels=o["kernels"], fingerprint=o["fingerprint"], budget=request.budget,
                      progress=request.progress, on_violation=request.on_violation, checkpoint=_snapshot(o),
                      resume=o["resume"] is not None, checkpoint_every=o["checkpoint_every"])
    except CheckpointError as e:
        raise EngineError(str(e)) from None
    except CompileError as e:
        raise EngineError(f"--fingerprint 96 needs the compiled kernels: {e}") from None


def _bmc(spec, invariants, request):
    from isrcheck.checker.symbolic.bmc import bmc
    o = request.options
    budget = request.budget
    if o["z3_timeout"]:                          # --z3-timeout is this engine's own time limit
        budget = dataclasses.replace(budget, seconds=o["z3_timeout"])
    return bmc(spec, invariants, o["depth"], budget, progress=request.progress.bmc(o["depth"]),
               on_violation=request.on_violation)


def _spark(spec, invariants, request):
    from isrcheck.checker.exhaustive.checkpoint import CheckpointError
    from isrcheck.checker.spark.spark_engine import (BATCH_STATES, INSTALL_HINT, SparkSetupError, check_options,
                                                     missing_dependencies, spark_search)
    if missing_dependencies():
        raise EngineError(f"--engine spark needs {' and '.join(missing_dependencies())}: {INSTALL_HINT}")
    o = request.options
    decide = {} if o["decide_from"] is None else dict(decide_from=o["decide_from"],
                                                      batch_states=min(BATCH_STATES, o["decide_from"]))
    try:
        check_options(o["master"], o["workdir"] or _snapshot(o))
        return spark_search(spec, invariants, master=o["master"], partitions=o["partitions"], symmetry=o["symmetry"],
                            budget=request.budget, progress=request.progress, on_violation=request.on_violation,
                            workdir=o["workdir"], snapshot=_snapshot(o), resume=o["resume"] is not None,
                            snapshot_seconds=o["checkpoint_every"], kernels=o["kernels"], **decide)
    except (CheckpointError, SparkSetupError) as e:
        raise EngineError(str(e)) from None


#: every engine by name, in the order --help lists them (the first is the default)
ENGINES = {e.name: e for e in (
    Engine("local", _local, "exhaustive BFS in process", resumable=True, liveness=True,
           reads=("workers", "symmetry", "max_states", "max_depth")),
    Engine("bmc", _bmc, "bounded model checking (z3 + SAT)", symbolic=True, reads=("depth", "z3_timeout")),
    Engine("spark", _spark, "BFS on Spark", resumable=True,
           reads=("master", "partitions", "workdir", "decide_from", "symmetry", "max_states", "max_depth")),
)}


def run(name, spec, invariants, request):
    """Check ``invariants`` of ``spec`` with the engine called ``name``."""
    return ENGINES[name].run(spec, invariants, request)


def which(ability):
    """The names of the engines that have ``ability`` (an :class:`Engine` flag: "resumable", "liveness", ...)."""
    return [e.name for e in ENGINES.values() if getattr(e, ability)]


def readers():
    """{option: the engines that read it} of check's options that only some engines read (``Engine.reads``)."""
    out = {}
    for engine in ENGINES.values():
        for option in engine.reads:
            out.setdefault(option, []).append(engine.name)
    return out


def symbolic(name):
    """Whether the results of the engine (or command) called ``name`` count no states."""
    return name in ENGINES and ENGINES[name].symbolic


def help_text():
    """--engine's help: each engine and what it is."""
    return "; ".join(f"{e.name}: {e.help}" for e in ENGINES.values())
