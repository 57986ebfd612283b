"""What an engine returns: one vocabulary for every result.

:class:`Result` is what a search returns (the exhaustive engine, Spark, BMC and
the fuzzer); the other results share its field names and their meanings:
:class:`checker.exhaustive.liveness.LivenessResult` (one liveness property),
:class:`checker.symbolic.induction.ProofResult` (``prove``, k-induction or learned lemmas),
:class:`checker.symbolic.strengthen.StrengthenResult` (lemma learning) and the API's
:class:`isrcheck.checking.CheckResult`. Each field means one thing in every one of
them, and a quantity a result does not know is None (never 0 or -1 standing for
"not known"); :class:`Measured` derives the rates from them the same way for all.

- ``verdict`` / ``verdicts``: "holds", "violated" or "unknown" (a proof's:
  "proved", "refuted", "not-inductive" or "unknown");
- ``seconds``: wall-clock seconds of the whole run; ``phase_seconds``: the
  seconds of each phase of a run that has phases, by phase name, in order (only
  the phases that ran);
- ``reason``: why a verdict is "unknown" (or what a lemma's refutation says), in words;
- ``peak_memory_bytes``: the process's peak resident memory after the run;

- ``distinct_states``, ``transitions``: states (fingerprints) and transitions
  enumerated; None for BMC and k-induction, which enumerate none;
- ``depth``: levels (states on the longest path) fully covered, the initial
  state being level 1: BFS levels explored, BMC levels checked, the fuzzer's
  longest run plus its initial state;
- ``complete``: the whole reachable state space was searched (only the
  exhaustive engines can say so: then "holds" is a verdict);
- ``budget_hit``: what stopped the search early, as a noun phrase (the CLI
  prints "stopped by <budget_hit>"), or None;
- ``never_fired``: action names no transition took, when the search was complete;
  None when the engine cannot know;
- ``retained_bytes``: memory the engine keeps per search (visited set, parents);
  None for BMC;
- engine extras, None (or empty) elsewhere: ``runs``, ``seed``, ``workers``, ``found``,
  ``fired`` (fuzz), ``z3_unknown``, ``level_seconds``, ``bits`` (BMC).

A :class:`Violation` records where an invariant failed: ``level`` is the number
of states on its trace, ``state_id`` the state's number in an exhaustive search
(None elsewhere), ``steps`` the trace as ``[(ActionInstance or None, row)]``.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Violation:
    invariant: str
    state_id: int | None
    level: int
    steps: list = field(default_factory=list)   # [(ActionInstance or None, row)]


class Measured:
    """Rates derived from a result's ``distinct_states``, ``seconds`` and ``retained_bytes`` (None when a count is)."""

    @property
    def states_per_second(self):
        if self.distinct_states is None:
            return None
        return self.distinct_states / self.seconds if self.seconds > 0 else float("inf")

    @property
    def bytes_per_state(self):
        if self.retained_bytes is None or self.distinct_states is None:
            return None
        return self.retained_bytes / max(self.distinct_states, 1)


@dataclass
class Result(Measured):
    invariants: list
    violations: dict                 # invariant -> Violation
    distinct_states: int | None
    transitions: int | None
    depth: int
    seconds: float
    peak_memory_bytes: int
    retained_bytes: int | None
    complete: bool
    budget_hit: str | None
    never_fired: list | None
    fingerprint_bits: int = 64       # a pair of distinct states collides with probability <= 2**-bits
    wide_from: int | None = None     # states found when the fingerprints became wide (0: from the start; None: never)
    renamings: int = 1               # symmetry: the replica renamings each canonical state stands for
    engine: str = "local"
    runs: int | None = None                                   # fuzz: runs executed
    seed: int | None = None                                   # fuzz: the seed that reproduces the campaign
    workers: int | None = None                                # fuzz: worker processes (the seed's runs depend on it)
    found: dict = field(default_factory=dict)                 # fuzz: per invariant, how its violation was found
    fired: list = field(default_factory=list)                 # fuzz: the action names some run took
    z3_unknown: str | None = None                             # bmc: why z3 gave up, if it did
    level_seconds: list = field(default_factory=list)         # bmc: cumulative seconds as each level was done
    bits: int | None = None                                   # bmc: SAT variables per state
    levels: list = field(default_factory=list)   # spark: per level expanded, new states and the bytes it moved
    coverage: object = None          # exhaustive: checker.exhaustive.coverage.Coverage, per action instance enabled / fired / new

    @property
    def verdicts(self):
        return {inv: ("violated" if inv in self.violations else "holds" if self.complete else "unknown")
                for inv in self.invariants}

    @property
    def collision_probability(self):
        """Upper bound on the chance that a fingerprint collision hid a state.

        The search is exact unless two distinct reachable states share a fingerprint, and each pair does with
        probability at most 2**-bits (less once the keys are wide: ``fingerprint.collision_bound``): the birthday
        bound over the pairs. Under symmetry a state's canonical
        fingerprint is one of its renamings' fingerprints, so the pairs are those of the up to n x renamings
        states the n canonical ones stand for (a symmetric search never claims better odds than the plain one).
        """
        if self.distinct_states is None:
            return None
        from isrcheck.checker.exhaustive.fingerprint import collision_bound
        wide_from = None if self.wide_from is None else self.wide_from * self.renamings
        return collision_bound(self.distinct_states * self.renamings, self.fingerprint_bits, wide_from)

    @property
    def fingerprint_width(self):
        """How the states were told apart: "64-bit", "96-bit", or "64-bit, 96-bit from N states"."""
        if self.wide_from is None:
            return "64-bit"
        return "96-bit" if self.wide_from == 0 else f"64-bit, 96-bit from {self.wide_from:,} states"

    @property
    def timed_out(self):
        """BMC: z3 gave up (time limit or otherwise) before the requested depth."""
        return self.z3_unknown is not None
