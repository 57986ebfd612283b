"""What the gate found: a :class:`Row` per expectation, a :class:`GateReport` per run, and how both are named."""
from __future__ import annotations

import os
from dataclasses import dataclass, field

import click

from isrcheck.checker.command_line.registry import show_command as read_command
from isrcheck.checker.traces.trace import default_path, file_name
from isrcheck.model.configuration import DEFAULTS

EXIT_MET, EXIT_UNMET, EXIT_USAGE, EXIT_STOPPED = 0, 1, 2, 3

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
    return default_path(os.path.join(counterexamples, file_name(spec)), configuration, invariant)


class GateError(click.UsageError):
    """Bad input to the gate: one line, exit code 2.

    A ``click.UsageError`` rather than ``checker.command_line.cli.UserError`` so that this module
    need not import ``checker.command_line.cli`` (which registers the command): ``isrcheck``'s
    ``main`` prints a UsageError as one line and exits 2, like a UserError.
    """


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
    changed_why: list = field(default_factory=list)    # why --changed-since checked more: every spec, or one whose
    #                                                    dependencies cannot be followed (sentences)
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


def show_command(report, row):
    """The command that reads a row's counterexample (naming the spec's class when it is not registered)."""
    return read_command(type(report.specs[row.spec, row.configuration]), row.counterexample)
