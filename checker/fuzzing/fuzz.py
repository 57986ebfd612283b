"""Property fuzzing: Hypothesis drives long random executions at bounds far beyond exhaustive reach.

The search of one process (:class:`_Fuzzer`); :func:`checker.fuzzing.fuzzer.fuzz` is the entry the CLI calls, on
one process or several (checker/fuzzing/fuzz_workers.py).

The fuzzer runs on model/backends.py's ``compiled(spec)``, the fast one-state-at-a-time
executor (``ScalarTuples`` for ``backend="scalar"``).

The spec's bounds are whatever spec instance is passed in (e.g.
``SPECS["hw-truncation"](replicas=5, max_epochs=8, max_crashes=3)``).
``checker.fuzzing.fuzzer.fuzz`` raises KeyError for an invariant the spec does not have and
ValueError for a budget (checker/engine/budget.py) without ``seconds``.

Result. A :class:`checker.engine.result.Result` with ``engine`` "fuzz" (the CLI prints
the same report keys as for ``check``): ``violations[name].steps`` is
``[(ActionInstance or None, row)]``, replayed on the scalar backend;
``distinct_states`` counts the distinct states visited (by their 64-bit hash;
:class:`_Distinct`); ``transitions`` counts steps executed (shrinking included);
``depth`` is the longest run plus one (states on it, from the initial state);
``complete`` is always False (fuzzing proves nothing), so an invariant not
found is "unknown" in ``verdicts``; ``budget_hit`` says which budget ended
the search when something was left unfound. Extra fields: ``runs`` (test
cases), ``seed`` (the seed the campaign derives every Hypothesis seed from),
``found`` (per invariant found: ``seconds_to_find`` (on ``clock``),
``cpu_seconds_to_find`` (CPU time of the process that found it, from its start),
``setup_cpu_seconds`` (the part of it before the first run: the model compiled, Hypothesis loaded),
``worker`` (the worker that found it first, counting search runs) and
``runs_to_find`` (its search runs, i.e. test cases), ``found_length`` of the first
failing run, ``hypothesis_length`` after Hypothesis shrinking,
``minimized_length`` after :func:`checker.traces.minimize.minimize`,
``shrink_seconds``, ``minimize_seconds``), ``fired`` (action kinds that fired
at least once).

A run. One Hypothesis test case is one execution (``@given(st.data())``).
It first draws its configuration (``_Fuzzer._swarm``): a weight for every
action kind (swarm testing: 1, 8 or 64, or off with probability 1/4; every
kind allowed brings in, at weight 1 at least, the kinds on a shortest path to
a state where it is enabled, so no configuration is so small that nothing
happens), how many replicas act (the first k: two with probability 1/2, three
with 1/4, ..., every one with the rest; replicas are interchangeable, so the
runs of k replicas all build on one archive) and how fast each is. Only the
active replicas act (an instance is allowed when its first replica parameter,
the acting one, is active) and an instance in which an active replica acts on
a passive one (a leader shrinking it out of its ISR) is taken as soon as it is
enabled: a bug that needs a precise interleaving of two or three replicas is
then not diluted by five. An instance that *chooses* a replica (a parameter
whose domain is every replica and more, e.g. the leader an election hands
over to, or none) is allowed only when that replica is active; a passive
replica takes only the actions the spec lists in ``fuzz_keep_up`` (applying
the metadata log, which the controller waits on), each as soon as it is
enabled. Replica speeds make laggards (a replica that applies
LeaderAndIsr late stays a zombie leader). Kind weights pace the scarce
resources (epochs, records, crashes) that a uniform walk spends in its first
steps. An instance's weight is its kind's times its replica's; each step draws
one enabled instance in proportion to it.

Where runs start (Go-Explore). Every state a run reaches falls in a *cell* of a
coarse, replica-symmetric picture of the state (checker/fuzzing/fuzz_cells.py: who leads,
which offsets and epochs stand above which, who is up, what was acknowledged;
derived from the spec's field declarations). Per number of active replicas the
fuzzer keeps an archive: for each cell reached, the state reached by the shortest
path and that path (at most ``CELLS`` cells; then a new one replaces an old one).
Cells fall in groups by their global part (epochs, failures, records acknowledged,
the passive replicas' flags counted). A run starts from the initial state or, with
probability 3/4, from an archived cell: of ``TOURNAMENT`` candidate cells the one
least picked and least often reached before (a new cell is the most promising),
the candidates drawn in half the runs from any group and in the other half from
the group runs started from least (of ``TOURNAMENT`` groups), so a rare global
situation (a record acknowledged before any failure) is built on about as often
as a common one; it runs at most ``CONTINUE`` steps
(``max_steps`` from the initial state). So runs go on from where earlier runs
got to something new, and deep interleavings are built a piece at a time
instead of in one lucky walk. ``hypothesis.target`` steers towards runs that
reach many new cells and many of the events the spec declares as its
``fuzz_targets`` (leader changes, truncations, crashes). Failing runs add
nothing, and the archive is frozen while a failure is shrunk, so Hypothesis's
replays stay exact.

Hints from the exhaustive search at small bounds (checker/fuzzing/fuzz_hints.py). The fuzzer
takes hints: when its first session (``SESSION_EXAMPLES`` runs) has not broken every requested
invariant, it runs the exhaustive engine on the spec at small bounds (every bound lowered to its
default, the options as given; symmetry on, one thread, at most ``fuzz_hints.HINT_STATES`` states,
a CPU second or two and a few hundred MB) and keeps, for each invariant still unbroken that the search breaks
there, its shortest counterexample. Each is then *lifted* to the fuzz's bounds (``fuzz_hints.lift``): the
hint's replicas the first ones and the others passive, as in a run where only they act, a small search
(at most ``fuzz_hints.LIFT_NODES`` nodes, a CPU second or so) finds a path that breaks the invariant here,
made of the hint's steps, the eager and keep-up steps a run takes anyway, and as few other steps as it can
(at more replicas the extra ones must leave the way first: a leader drops them from its ISR before the
hint's loss can happen). Where that fails, the lift is tried with every replica acting, the extra ones
*shadowing* one of the hint's (taking each of its steps after it: fetching when it fetches, falling behind
when it does), and then on other counterexamples at small bounds: the search's again, without one of the
hint's actions (the shortest loss at small bounds may go by a step whose cost grows with the replicas, where
a longer one does not). A hint none of that carries is dropped. From then on one run in ``GUIDED``
follows a lifted path (of the runs in which at least the replicas it names act): it starts from the initial
state, the path's replicas mapped onto a random choice of the active ones (the others, in order, onto the
rest), and whenever the path's next step is enabled it takes it with probability ``FOLLOW``/256 (otherwise
it steps as any run does; the passive replicas, keep-up and eager steps are unchanged), its cursor moving on
as the path's steps fire. The other
runs, the archive and the targets are as without hints, and so is every run of the first session: what is
found there is found exactly as without hints, at no cost. A bug that shows at small bounds is thus found at
large ones along the same steps plus the few the extra replicas need (docs/benchmarks/fuzzer.md measures
both); a bug that does not show at small bounds, or shows at large ones only by other steps, gets no hint,
and the fuzz is then the unguided one.
``fuzz(..., hints=False)`` fuzzes without hints. The hints depend on the spec and the invariants
alone, so a fuzz stays reproducible from its seed and number of workers.

The choices come from Hypothesis as one bytes draw per ``BLOCK`` steps (two
bytes a step): measured against one draw per step or per 16 steps, this finds
bugs several times sooner, because Hypothesis's span mutations and prefix reuse
then stop making most runs near-copies of earlier ones, and each run costs
fewer engine calls. After every step every requested invariant not yet found is
checked; the first violation fails the test case (one exception class per
invariant) and ends the session's generation: Hypothesis shrinks it (at most
``SHRINK_RUNS`` replays, and ``shrink_budget_s``) and the next session looks
for the invariants still unbroken.

Budgets and sessions. ``budget.seconds`` (``budget_s`` below) bounds the search, in seconds of
``clock`` (wall time by default; ``time.process_time``, which the ``fuzz`` command uses, makes every
budget and ``seconds_to_find`` CPU time, independent of the machine's load: with several workers, each
worker's own CPU time, and the result's ``seconds`` the CPU time of every process); ``budget.max_runs`` (``max_examples``), when
given, also bounds the number of search runs (split between the workers), which makes a fuzz independent
of the machine's speed. Shrinking a failure may take ``shrink_budget_s`` seconds of
CPU time more (default ``min(10, max(2, budget_s / 10))``) and minimizing it as
long again (at least 5 s): CPU time, so that a loaded machine does not cut them
short and change the trace. Every failing run is recorded, and the few shortest
(plus Hypothesis's final one) are each minimized; the shortest result is
returned. The search runs in Hypothesis sessions of ``SESSION_EXAMPLES``
test cases (so Hypothesis's targeting phase runs in each) with
``settings(deadline=None, database=None, derandomize=derandomize, ...)``;
session k of worker w uses ``hypothesis.seed(seed + k + w * 2**32)``. Without a seed, ``derandomize``
uses seed 0 and otherwise a random one (reported in ``seed``). A fuzz is thus
reproducible from its seed and number of workers, given the same Hypothesis version and the same
loaded modules (Hypothesis mixes constants found in local modules into its
generation) and as long as no time budget cuts it short.

Workers. ``workers`` > 1 runs that many worker processes (checker/fuzzing/fuzz_workers.py),
each its own search with its own seeds and archive; the first worker (by search runs,
then by number) to break an invariant supplies its trace, and a worker stops once
no invariant is left that it could be first to break, so the traces depend on the
seed and the number of workers, not on which process the machine runs faster.

Backend. By default the fuzzer runs on :class:`model.backends.Compiled`: the spec's own
guards, updates and invariants traced into the same kind of graph as the
numpy batch kernels (model/compile.py) and emitted by ``tuple_kernel`` as
straight-line Python over tuples of ints, evaluated one state at a time like
the scalar backend and about a hundred times faster (tests/test_fuzz.py
checks it against the numpy and scalar backends for every spec). Every
counterexample returned is replayed on the scalar backend
(``model.backends.scalar``). ``backend="scalar"`` fuzzes on the scalar backend itself.

``benchmarks/fuzz_reach.py`` measures the time to find every expected
violation in specs/; ``benchmarks/fuzz_vs_tlc.py`` sets it beside TLC's random simulation.
"""
from __future__ import annotations

import math
import random
import time
from array import array
from collections import deque

import numpy as np

from isrcheck.checker.engine import stop
from isrcheck.checker.exhaustive.bfs import peak_memory
from isrcheck.checker.fuzzing import fuzz_hints
from isrcheck.checker.fuzzing.fuzz_cells import Cells
from isrcheck.checker.traces.minimize import minimize
from isrcheck.checker.engine.result import Result, Violation
from isrcheck.model import backends

DEFAULT_MAX_STEPS = 120
SESSION_EXAMPLES = 1000
BLOCK = 1024            # bytes of one Hypothesis draw: a test case's choices, read in order (another when used up)
SHRINK_RUNS = 300       # most test cases Hypothesis may run to shrink one failure (a count: replays stay exact)


# ======================================================================================
# What the runs steer by, from the spec's declarations
# ======================================================================================
class _OutOfBudget(BaseException):
    """Stops a Hypothesis session (a BaseException, so Hypothesis does not take it for a failure)."""


class _InvariantBroken(AssertionError):
    """Base of the per-invariant failure classes (one class each, so Hypothesis tells them apart)."""


def _targets(spec):
    """(label, columns, counts) of each fuzz target the spec declares (see ``FuzzTarget``)."""
    lay = spec.layout
    return [(t.label, list(range(lay.base[t.field], lay.base[t.field] + lay.fields[t.field].size)), t.counts)
            for t in spec.fuzz_targets]


def target_counts(targets, batch):
    """Each target's count over a run, ``batch`` its states as rows: the steps in which one of its columns
    changes ("moves"), or the cells that decrease ("drops")."""
    if len(batch) < 2:
        return [0] * len(targets)
    d = np.diff(batch.astype(np.int16), axis=0)
    return [int(np.any(d[:, cols] != 0, axis=1).sum()) if counts == "moves" else int((d[:, cols] < 0).sum())
            for _, cols, counts in targets]


def _count_targets(targets, before, after, counts):
    """Add one step's events to ``counts`` (as :func:`target_counts` counts them over a run)."""
    for k, (_, cols, kind) in enumerate(targets):
        lo, hi = cols[0], cols[-1] + 1
        if before[lo:hi] != after[lo:hi]:
            counts[k] += 1 if kind == "moves" else sum(b < a for a, b in zip(before[lo:hi], after[lo:hi]))


def _enablers(model, spec, kinds, max_states=20_000):
    """For each action kind, the kinds on a shortest path to a state where it is enabled.

    A swarm subset gets the enablers of each of its kinds added, so every kind it
    allows can actually fire (no subset is so small that nothing happens).
    """
    kind_of = [kinds.index(a.name) for a in spec.actions]
    start = model.initial
    parent = {start: None}
    need = {}
    queue = deque([start])
    while queue and len(need) < len(kinds) and len(parent) < max_states:
        r = queue.popleft()
        en = model.enabled(r)
        fresh = {kind_of[i] for i in en} - set(need)
        if fresh:
            path, x = set(), r
            while parent[x] is not None:
                x, i = parent[x]
                path.add(kind_of[i])
            for k in fresh:
                need[k] = path
        for i in en:
            nxt = model.step(r, i)
            if nxt not in parent:
                parent[nxt] = (r, i)
                queue.append(nxt)
    return [need.get(k, set()) for k in range(len(kinds))]


class _Choices:
    """A test case's choices: bytes drawn from Hypothesis ``BLOCK`` at a time, read in order."""

    def __init__(self, data, strategy):
        self.data, self.strategy = data, strategy
        self.block, self.pos = data.draw(strategy), 0

    def refill(self):
        self.block, self.pos = self.data.draw(self.strategy), 0
        return self.block

    def take(self, n):
        """The next ``n`` bytes as an unsigned little-endian int."""
        if self.pos + n > BLOCK:
            self.refill()
        self.pos += n
        return int.from_bytes(self.block[self.pos - n:self.pos], "little")


def _pick(en, weight, v):
    """The instance a 16-bit choice ``v`` selects among the enabled ones ``en``, in proportion to ``weight``.

    ``v = 0`` picks the first enabled instance.
    """
    total = 0
    for i in en:
        total += weight[i]
    x = (v * total) >> 16
    for i in en:
        x -= weight[i]
        if x < 0:
            return i
    raise AssertionError("unreachable: v < 65536")


def action_kinds(spec):
    """The spec's action names, in declaration order."""
    return list(dict.fromkeys(a.name for a in spec.actions))


def cpu_clock(clock):
    """Whether ``clock`` counts the CPU time of the process (or thread) reading it."""
    return clock in (time.process_time, time.thread_time)


def time_limit(clock, budget_s):
    """How a search that ran out of its time budget says so."""
    return f"{'CPU ' if cpu_clock(clock) else ''}time limit {budget_s:g}s"


def shrink_seconds(budget_s, given):
    """How long shrinking one failure may take: ``given``, or by default a tenth of the budget within 2..10 s."""
    return min(10.0, max(2.0, budget_s / 10)) if given is None else given


def _replica_params(spec):
    """Per action instance, (its replica parameters in order (the first is the replica acting), the replicas it
    chooses).

    A replica parameter has the spec's replica domain. A parameter whose domain holds every replica and more
    (a replica or none) *chooses* one: the replica an election hands leadership to, say.
    """
    replicas = set(getattr(spec, spec.replica_domain))
    wider = {d for a in spec.actions for d in a.fn.__isrcheck_action__.values()
             if d != spec.replica_domain and replicas < set(getattr(spec, d))}
    return [([a.params[p] for p, d in a.fn.__isrcheck_action__.items() if d == spec.replica_domain],
             [a.params[p] for p, d in a.fn.__isrcheck_action__.items() if d in wider and a.params[p] in replicas])
            for a in spec.actions]


# ======================================================================================
# The archive of cells and the distinct states
# ======================================================================================
class _Archive:
    """The cells the runs of one number of active replicas reached: per cell a state and the shortest path to it.

    Cells fall in *groups* by their global part (the cell's scalars and counts, e.g. epochs, failures, records
    acknowledged so far): half the runs start from a cell of the group picked least, so a rare global situation
    (few cells reached so far, e.g. a record acknowledged before any failure) is built on about as often as a
    common one. Compact: the state as signed bytes, the path as 16-bit instance ids (a few hundred bytes a cell).
    Once ``cap`` cells are kept, a new cell takes the slot its hash names.
    """

    def __init__(self, cap):
        self.cap = cap
        self.slot = {}                   # hash of a cell -> its slot
        self.keys = array("q")           # slot -> hash of its cell
        self.group_of = array("q")       # slot -> hash of its group
        self.states = []                 # slot -> array("b")
        self.paths = []                  # slot -> array("H"): the actions from the initial state
        self.seen = array("l")           # slot -> states of runs that fell in the cell
        self.picked = array("l")         # slot -> runs started from it
        self.group_index = {}            # hash of a group -> its index below
        self.groups = []                 # index -> (hash of the group, its slots)
        self.group_picked = array("l")   # index -> runs started from one of its cells

    def __len__(self):
        return len(self.keys)

    def visit(self, key, group, state, path, n):
        """Record a state of cell ``key`` in group ``group`` a run reached by the first ``n`` actions of ``path``;
        returns True when its cell is new."""
        s = self.slot.get(key)
        if s is not None:
            self.seen[s] += 1
            if n < len(self.paths[s]):
                self.states[s], self.paths[s] = array("b", state), array("H", path[:n])
            return False
        if len(self.keys) < self.cap:
            s = len(self.keys)
            self.keys.append(key)
            self.group_of.append(group)
            self.states.append(array("b", state))
            self.paths.append(array("H", path[:n]))
            self.seen.append(1)
            self.picked.append(0)
        else:
            s = key % self.cap
            del self.slot[self.keys[s]]
            self._leave(s)
            self.keys[s], self.states[s], self.paths[s] = key, array("b", state), array("H", path[:n])
            self.group_of[s] = group
            self.seen[s], self.picked[s] = 1, 0
        self.slot[key] = s
        g = self.group_index.get(group)
        if g is None:
            g = self.group_index[group] = len(self.groups)
            self.groups.append((group, []))
            self.group_picked.append(0)
        self.groups[g][1].append(s)
        return True

    def _leave(self, s):
        """Take slot ``s`` out of its group (a group left empty goes, the last group taking its index)."""
        g = self.group_index[self.group_of[s]]
        slots = self.groups[g][1]
        slots.remove(s)
        if not slots:
            last = len(self.groups) - 1
            del self.group_index[self.groups[g][0]]
            if g != last:
                self.groups[g] = self.groups[last]
                self.group_picked[g] = self.group_picked[last]
                self.group_index[self.groups[g][0]] = g
            self.groups.pop()
            self.group_picked.pop()

    def pick(self, s):
        """Count a run started from slot ``s``."""
        self.picked[s] += 1
        self.group_picked[self.group_index[self.group_of[s]]] += 1

    TOURNAMENT = 8

    def choose(self, x):
        """The slot a run starts from, chosen by the 32-bit ``x``: in half the runs of ``TOURNAMENT`` groups the
        one picked least, then of ``TOURNAMENT`` of its cells (of all cells in the other half) the one picked least
        and reached least (Go-Explore's count-based score)."""
        among, n = None, len(self.keys)
        if x & 1:
            best, least = 0, None
            for _ in range(self.TOURNAMENT):
                x = (x * 1103515245 + 12345) & 0xFFFFFFFF
                g = (x >> 8) % len(self.groups)
                if least is None or self.group_picked[g] < least:
                    best, least = g, self.group_picked[g]
            among = self.groups[best][1]
            n = len(among)
        best, score = 0, -1.0
        for _ in range(self.TOURNAMENT):
            x = (x * 1103515245 + 12345) & 0xFFFFFFFF
            s = (x >> 8) % n if among is None else among[(x >> 8) % n]
            sc = 1 / math.sqrt(1 + self.picked[s]) + 1 / math.sqrt(1 + self.seen[s])
            if sc > score:
                best, score = s, sc
        return best


class _Distinct:
    """The distinct states visited, as the sorted 64-bit hashes of their tuples (8 bytes a state)."""

    MERGE = 1 << 18

    def __init__(self):
        self.sorted = np.empty(0, dtype=np.int64)
        self.pending, self.waiting = [], 0

    def add(self, hashes):
        """Add an ``array("q")`` or int64 array of hashes."""
        if len(hashes):
            self.pending.append(np.frombuffer(hashes, dtype=np.int64) if isinstance(hashes, array)
                                else np.asarray(hashes, dtype=np.int64))
            self.waiting += len(hashes)
            if self.waiting >= self.MERGE:
                self.merge()

    def merge(self):
        if self.pending:
            self.sorted = np.union1d(self.sorted, np.concatenate(self.pending))
            self.pending, self.waiting = [], 0

    def __len__(self):
        self.merge()
        return int(self.sorted.size)

    @property
    def nbytes(self):
        return self.sorted.nbytes + 8 * self.waiting


# ======================================================================================
# One worker's search
# ======================================================================================
class _Fuzzer:
    """One search: Hypothesis sessions of runs over one archive (one per worker process).

    ``board`` (multi-worker only; checker/fuzzing/fuzz_workers.py) says whether another
    worker broke an invariant in fewer search runs (``beaten(name, runs,
    worker)``) and whether to stop (``stopped()``); ``report(kind, **data)`` sends
    this worker's finds and counts to the parent. Alone, it keeps its own counts.
    """

    def __init__(self, spec, invariants, budget_s, seed, max_steps, derandomize, progress,
                 max_examples, shrink_budget_s, backend, clock=time.monotonic, on_violation=None, hints=True,
                 worker=0, board=None, report=None, start=None):
        self.spec = spec
        self.on_violation = on_violation
        self.names = list(invariants)
        self.budget_s = budget_s
        self.max_steps = max_steps
        self.derandomize = derandomize
        self.progress = progress
        self.max_examples = max_examples
        self.shrink_budget_s = shrink_seconds(budget_s, shrink_budget_s)
        self.clock = clock
        self.start = self.clock() if start is None else start
        self.cpu_start = time.process_time()
        self.deadline = self.start + budget_s
        self.base_seed = seed if seed is not None else (0 if derandomize else random.getrandbits(32))
        self.worker, self.board, self.report = worker, board, report
        if backend == "compiled":
            self.model = backends.compiled(spec)
        elif backend == "scalar":
            self.model = backends.ScalarTuples(spec)
        else:
            raise ValueError(f"unknown fuzz backend {backend!r}")
        self.checks = [(n, self.model.invariant(n)) for n in self.names]
        self.kinds = action_kinds(spec)
        self.kind_of = [self.kinds.index(a.name) for a in spec.actions]
        self.enablers = _enablers(self.model, spec, self.kinds)
        self.keep_up = [k in spec.fuzz_keep_up for k in self.kinds]
        self.replica_params = _replica_params(spec)
        self.replicas = spec.layout.replicas
        self.cells = Cells(spec.layout)
        self.archives = {}                 # number of active replicas -> (_Archive, cell function, enabled function)
        self.distinct = _Distinct()
        self.hashes = array("q")           # hashes of the states visited since they were last handed on
        self.runs = self.transitions = self.search_runs = self.shrink_runs = 0
        self.longest = 0
        self.fired = [False] * len(self.kinds)
        self.pending = list(self.names)
        self.found = {}               # name -> {"time", "cpu", "runs", "first": path, "best": path, "pool"}
        self.failure_class = {n: type(f"Broken_{n.replace('-', '_')}", (_InvariantBroken,), {})
                              for n in self.names}
        self.targets = _targets(spec)
        self.last_progress = 0.0
        self.shrink_deadline = None
        self.take_hints = hints
        self.hints = {}                    # invariant -> (the steps its guided runs follow, the replicas they name:
                                           # the first ones), once taken (fuzz_hints.py)
        self.guides = {}                   # (invariant, replicas mapped onto) -> the hint's instance ids here
        from hypothesis import strategies as st
        self._swarm_bytes = (2 * len(self.kinds) + 2 * self.replicas + 8 + 7) // 8
        self._block = st.binary(min_size=BLOCK, max_size=BLOCK)

    # --- one Hypothesis test case: one execution ------------------------------------------------
    def _budget(self):
        now = self.clock()
        if stop.reason() or (self.board is not None and self.board.stopped()):
            raise _OutOfBudget
        if self.shrink_deadline is not None:
            if time.process_time() > self.shrink_deadline or self.shrink_runs >= SHRINK_RUNS:
                raise _OutOfBudget
        elif now > self.deadline or (self.max_examples is not None and self.search_runs >= self.max_examples):
            raise _OutOfBudget
        elif self.board is not None and all(n in self.found or self.board.beaten(n, self.search_runs + 1, self.worker)
                                            for n in self.names):
            raise _OutOfBudget                 # every invariant is broken, by this worker or sooner by another
        if now - self.last_progress >= 1.0:
            self.last_progress = now
            self._publish(now)

    def _publish(self, now):
        """Hand the counts on: to the parent process, or to this search's own count and progress callback."""
        if self.report is not None:
            self.report("stats", runs=self.runs, transitions=self.transitions, longest=self.longest,
                        seconds=now - self.start, hashes=self._take_hashes(), fired=self.fired)
            return
        self.distinct.add(self._take_hashes())
        if self.progress is not None:
            self.progress(runs=self.runs, transitions=self.transitions, distinct=len(self.distinct),
                          seconds=now - self.start, found=sorted(self.found))

    def _take_hashes(self):
        hashes, self.hashes = self.hashes, array("q")
        return hashes

    WEIGHTS = (1, 8, 64, 0)       # a kind's weight in a run, by its two swarm bits (0: the kind is off)
    SPEEDS = (1, 4, 16, 1)        # an active replica's weight in a run, by its two swarm bits
    EAGER_STEPS = 4               # per replica: most steps a run takes eagerly on passive replicas

    def _swarm(self, bits):
        """A run's configuration from its swarm bits: (weight per instance (0: not allowed), eager flag per
        instance, number of active replicas).

        Two bits per kind give its weight (off with p = 1/4; a kind allowed
        brings its enablers in, at weight 1 at least). The number of active
        replicas k is 2 with probability 1/2, 3 with 1/4, ..., and all of them
        with the rest (all of them when there are fewer than 3); the active ones
        are the first k, two bits each give their speed. Only they act (an
        instance is allowed when its first replica parameter, the one acting, is
        active); the others stay as they are unless an active one acts on them
        (a leader shrinks them out of its ISR, say), so a bug that needs a
        precise interleaving of two or three replicas is not diluted by the
        others: an instance in which an active replica acts on a passive one is
        *eager*, taken as soon as it is enabled (up to ``EAGER_STEPS`` per
        replica and run), so a leader drops the passive replicas from its ISR at
        once and the run is as if the partition had only the active ones. A slow
        active replica is one that lags: it applies LeaderAndIsr requests late,
        stays a zombie leader, fetches rarely. An instance's weight is its
        kind's times its replica's.
        """
        n = len(self.kinds)
        weight = [self.WEIGHTS[(bits >> (2 * k)) & 3] for k in range(n)]
        if not any(weight):
            weight = [1] * n
        for k in range(n):
            if weight[k]:
                for j in self.enablers[k]:
                    weight[j] = max(weight[j], 1)
        bits >>= 2 * n
        active = self.replicas
        if self.replicas >= 3:
            active = 2
            while active < self.replicas and bits & 1:
                active += 1
                bits >>= 1
            bits >>= 1
        speed = [self.SPEEDS[(bits >> (2 * r)) & 3] if r < active else 0 for r in range(self.replicas)]
        out, eager = self._instances(weight, speed)
        return out, eager, active

    def _instances(self, weight, speed):
        """(weight per instance (0: not allowed), eager flag per instance) for a weight per kind and a speed per
        replica (0: passive); see :meth:`_swarm`."""
        out, eager = [], []
        for k, (reps, chosen) in zip(self.kind_of, self.replica_params):
            if reps and not speed[reps[0]]:           # a passive replica acts: only to keep up, at once
                w = int(self.keep_up[k] and all(speed[x] for x in chosen))
                out.append(w)
                eager.append(bool(w))
                continue
            w = weight[k] * (speed[reps[0]] if reps else 1) * all(speed[x] for x in chosen)
            out.append(w)
            eager.append(bool(w) and any(not speed[x] for x in reps[1:]))
        return out, eager

    def _archive(self, active):
        """(archive, cell function, enabled function) of the runs in which the first ``active`` replicas act."""
        made = self.archives.get(active)
        if made is None:
            acting = [i for i, (reps, chosen) in enumerate(self.replica_params)
                      if (not reps or reps[0] < active or self.keep_up[self.kind_of[i]])
                      and all(x < active for x in chosen)]
            made = self.archives[active] = (
                _Archive(self.CELLS), self.cells.cell(tuple(r < active for r in range(self.replicas))),
                self.model.enabled if active == self.replicas else self.model.enabled_among(acting))
        return made

    CELLS = 1 << 16       # most cells an archive keeps
    CONTINUE = 20         # most steps of a run that starts from an archived cell

    def run_once(self, data):
        """One test case: runs of at most ``EPISODE`` steps in all (at most ``EPISODE_RUNS`` runs), each from the
        initial state or an archived cell; the archive takes what they reached once all of them passed."""
        from hypothesis import target
        self._budget()
        searching = self.shrink_deadline is None
        if searching:
            self.search_runs += 1
        else:
            self.shrink_runs += 1
        left, passed, counts, fresh = self.EPISODE, [], [0] * len(self.targets), 0
        choices = _Choices(data, self._block)
        for _ in range(self.EPISODE_RUNS):
            self.runs += 1
            archive, s, path, visits, broken = self._run(choices, left, counts)
            if broken:
                self._broken(broken, path)          # raises
            passed.append((archive, s, path, visits))
            left -= len(visits)
            if left <= 0:
                break
        if searching:
            for archive, s, path, visits in passed:
                if s is not None:
                    archive.pick(s)
                for key, group, state, n in visits:
                    fresh += archive.visit(key, group, state, path, n)
        target(float(fresh), label="new cells")
        for (label, _, _), n in zip(self.targets, counts):
            target(float(n), label=label)

    EPISODE = 256         # steps of one test case, in all its runs
    EPISODE_RUNS = 16     # most runs in one test case

    def _run(self, choices, most, counts):
        """One execution of at most ``most`` steps, its choices read from ``choices``; returns (archive, slot it
        started from or None, path, [(cell, group, state, steps to it)] of the states it reached, broken invariants)."""
        weight, eager, active = self._swarm(choices.take(self._swarm_bytes))
        archive, cell, enabled = self._archive(active)
        guide = self._guide(choices.take(4), active) if self.hints else None
        start = 0 if guide is not None else choices.take(5)
        s = archive.choose(start >> 8) if start & 3 and len(archive) else None
        if s is not None:
            path, r, steps = archive.paths[s].tolist(), tuple(archive.states[s]), self.CONTINUE
        else:
            path, r, steps = [], self.model.initial, self.max_steps
        began = len(path)
        eager_left = self.EAGER_STEPS * self.replicas if any(eager) else 0
        step, checks = self.model.step, self.active
        hashes, targets = self.hashes, self.targets
        visits = []
        block, pos = choices.block, choices.pos
        broken = [n for n, fn in checks if not fn(r)] if s is None else []
        cursor = 0
        for _ in range(min(steps, most) if not broken else 0):
            got = enabled(r)
            en = [i for i in got if weight[i]]
            hinted = guide is not None and cursor < len(guide) and guide[cursor] in got
            if hinted:
                if pos + 1 > BLOCK:
                    block, pos = choices.refill(), 0
                hinted = block[pos] < self.FOLLOW
                pos += 1
            if hinted:
                i = guide[cursor]
            elif not en:
                break
            elif eager_left and any(eager[i] for i in en):
                i = next(i for i in en if eager[i])
                eager_left -= 1
            elif len(en) > 1:
                if pos + 2 > BLOCK:
                    block, pos = choices.refill(), 0
                i = _pick(en, weight, block[pos] << 8 | block[pos + 1])
                pos += 2
            else:
                i = en[0]
            if guide is not None and cursor < len(guide) and i == guide[cursor]:
                cursor += 1
            before, r = r, step(r, i)
            path.append(i)
            hashes.append(hash(r))
            if targets:
                _count_targets(targets, before, r, counts)
            for n, fn in checks:
                if not fn(r):
                    broken.append(n)
            if broken:
                break
            c = cell(r)
            visits.append((hash(c), hash(c[0]), r, len(path)))
        choices.pos = pos
        self._account(path, began)
        return archive, s, path, visits, broken

    GUIDED = 4            # one run in GUIDED follows a lifted hint, once hints are taken
    FOLLOW = 192          # of 256: how often a guided run takes the path's next step when it is enabled
    HINT_SESSION = 1      # the session from which on runs take hints (the first runs without: no cost)

    def _guide(self, bits, active):
        """The lifted hint a run follows (its instance ids here), chosen by the 32-bit ``bits`` (None: the run
        follows none): in one run in ``GUIDED``, the path of an invariant not yet broken, its hint's replicas mapped
        onto a random choice of the ``active`` ones (the other replicas, in order, onto the rest)."""
        names = [n for n in self.pending if n in self.hints and self.hints[n][1] <= active]
        if bits % self.GUIDED or not names:
            return None
        bits //= self.GUIDED
        name = names[bits % len(names)]
        bits //= len(names)
        steps, named = self.hints[name]
        pool, onto = list(range(active)), []
        for _ in range(named):
            j, bits = bits % len(pool), bits // len(pool)
            onto.append(pool.pop(j))
        onto += [r for r in range(self.replicas) if r not in onto]
        key = (name, tuple(onto))
        guide = self.guides.get(key)
        if guide is None:
            guide = self.guides[key] = fuzz_hints.mapped(self.spec, self.spec, steps, self.instances, onto)
        return guide

    ABLATIONS = 8         # most searches at small bounds, each without one more action of a hint that does not lift

    def _take_hints(self):
        """Ask the exhaustive search at small bounds for hints (once, from session ``HINT_SESSION`` on) and lift each
        to this spec's bounds (:meth:`_lift`); ``self.hints``: invariant -> (the lifted path's steps as (action name,
        params), the replicas it names). A hint that does not lift is replaced by the counterexample the search
        finds without one of its actions (each action in the order the hint first takes it, at most
        ``ABLATIONS``), when that one lifts: the shortest counterexample at small bounds is not always the one
        that shows at large bounds. A hint none of them replaces is dropped."""
        small, steps = fuzz_hints.hints(self.spec, self.pending)
        self.instances = fuzz_hints.instance_index(self.spec)
        for name, hint in steps.items():
            lifted = self._lift(small, name, hint)
            for action in list(dict.fromkeys(a for a, _ in hint))[:self.ABLATIONS] if lifted is None else ():
                other = fuzz_hints.hints(self.spec, [name], fuzz_hints.ABLATION_STATES, excluded=action)[1].get(name)
                lifted = other and self._lift(small, name, other, again=True)
                if lifted:
                    break
            if lifted:
                self.hints[name] = lifted

    def _lift(self, small, name, hint, again=False):
        """(the path's steps, the replicas it names) of ``hint`` (steps at ``small``'s bounds) lifted to this spec's
        bounds (fuzz_hints.lift), or None. First with the hint's replicas the first ones and the others passive;
        then with every replica acting, the others shadowing one of the hint's replicas (fuzz_hints.shadowed),
        each in turn. Each lift but the first of a hint's own (``again`` False) expands at most
        ``fuzz_hints.RETRY_NODES`` nodes."""
        n = len(getattr(small, small.replica_domain))
        ids = fuzz_hints.mapped(small, self.spec, hint, self.instances, list(range(n)))
        holds = self.model.invariant(name)
        active = min(n, self.replicas)
        tries = [(ids, active)] + [(fuzz_hints.shadowed(self.spec, ids, self.instances, h, range(n, self.replicas)),
                                    self.replicas) for h in range(n) if n < self.replicas]
        for k, (path_ids, acting) in enumerate(tries):
            allowed, eager = self._instances([1] * len(self.kinds), [1] * acting + [0] * (self.replicas - acting))
            nodes = fuzz_hints.RETRY_NODES if again or k else fuzz_hints.LIFT_NODES
            path = fuzz_hints.lift(self.model, self._archive(acting)[2], allowed, eager, path_ids, holds,
                                   self.max_steps, nodes)
            if path is not None:
                return [(a.name, dict(a.params)) for a in (self.spec.actions[i] for i in path)], acting
        return None

    def _account(self, path, began):
        """Count a run's steps (``path[began:]`` are this run's own) and the action kinds that fired."""
        self.transitions += len(path) - began
        self.longest = max(self.longest, len(path))
        for i in path[began:]:
            self.fired[self.kind_of[i]] = True

    def _broken(self, broken, path):
        now = self.clock()
        for n in broken:
            rec = self.found.get(n)
            if rec is None:
                rec = self.found[n] = {"time": now - self.start, "cpu": time.process_time() - self.cpu_start,
                                       "setup": self.setup_cpu, "runs": self.search_runs, "worker": self.worker,
                                       "first": list(path), "best": list(path), "pool": {}}
                if self.report is not None:
                    self.report("found", name=n, rec={k: v for k, v in rec.items() if k != "pool"})
                elif self.on_violation is not None:     # saved now, replaced by the minimized one at the end
                    self.on_violation(_violation(self.spec, n, path))
            elif len(path) < len(rec["best"]):
                rec["best"] = list(path)
                rec["shrunk"] = now - self.start
            _keep(rec["pool"], path)
        if self.shrink_deadline is None:
            self.shrink_runs = 0
            beaten = self.board is not None and all(self.board.beaten(n, self.search_runs, self.worker)
                                                    for n in broken)
            # a find another worker made in fewer runs is not shrunk: it cannot be the one reported
            cpu = time.process_time()          # CPU time: the load does not cut shrinking short
            self.shrink_deadline = cpu if beaten else cpu + self.shrink_budget_s
        raise self.failure_class[broken[0]](f"{broken[0]} violated after {len(path)} steps")

    # --- sessions -----------------------------------------------------------------------------
    def session(self, k):
        from hypothesis import HealthCheck, Phase, Verbosity, given, seed, settings, strategies as st
        examples = SESSION_EXAMPLES
        if self.max_examples is not None:
            examples = max(1, min(examples, self.max_examples - self.search_runs))

        @settings(max_examples=examples, deadline=None, database=None, derandomize=self.derandomize,
                  phases=[Phase.generate, Phase.target, Phase.shrink], verbosity=Verbosity.quiet,
                  suppress_health_check=list(HealthCheck), report_multiple_bugs=False,
                  print_blob=False)
        @given(st.data())
        def fuzz_run(data):
            self.run_once(data)

        fuzz_run = seed(self.base_seed + k + (self.worker << 32))(fuzz_run)
        if k == self.HINT_SESSION and self.take_hints:
            self._take_hints()
        self.shrink_deadline = None
        self.active = [(n, fn) for n, fn in self.checks if n in self.pending]
        try:
            fuzz_run()
        except _OutOfBudget:
            pass
        except (Exception, BaseExceptionGroup):     # noqa: B902 — the failures found are in self.found
            pass
        finally:
            self.shrink_deadline = None

    def search(self):
        """Run sessions until every invariant is found or a budget ends the search."""
        self.setup_cpu = time.process_time() - self.cpu_start       # the model compiled, Hypothesis loaded
        k = 0
        while self.pending and self.clock() < self.deadline and not stop.reason() and \
                (self.max_examples is None or self.search_runs < self.max_examples):
            before = self.search_runs
            self.session(k)
            self.pending = [n for n in self.pending if n not in self.found]
            k += 1
            if self.search_runs == before:
                break                          # nothing ran: a budget, a stop or the board ended it

    def budget_hit(self):
        """Why the search ended with invariants left unfound (None when none is)."""
        if not self.pending:
            return None
        if stop.reason():
            return stop.reason()
        if self.max_examples is not None and self.search_runs >= self.max_examples:
            return f"max examples {self.max_examples}"
        return time_limit(self.clock, self.budget_s)

    def result(self, minimize_steps):
        self.distinct.add(self._take_hashes())
        return assemble(self.spec, self.names, self.model, self.found, minimize_steps, self.shrink_budget_s,
                        self.clock, distinct=len(self.distinct), retained=self.distinct.nbytes,
                        transitions=self.transitions, depth=self.longest + 1,
                        seconds=self.clock() - self.start, budget_hit=self.budget_hit(), runs=self.runs,
                        seed=self.base_seed, fired=[k for k, f in zip(self.kinds, self.fired) if f],
                        peak=peak_memory())


POOL = 6


def _keep(pool, path):
    """Keep the few shortest distinct failing runs: each is minimized, the shortest result wins."""
    key = tuple(path)
    if key in pool:
        return
    pool[key] = len(pool)
    if len(pool) > POOL:
        worst = max(pool, key=lambda p: (len(p), -pool[p]))
        del pool[worst]


def _violation(spec, name, path):
    """A run's violation as found (not minimized), replayed on the spec."""
    steps = minimize(spec, [spec.actions[i] for i in path], name, reduce=False)
    return Violation(name, None, len(steps), list(steps))


def assemble(spec, names, model, found, minimize_steps, shrink_budget_s, clock, *, distinct, retained, transitions,
             depth, seconds, budget_hit, runs, seed, fired, peak, workers=1):
    """The campaign's :class:`Result` from the finds (name -> record of the run that supplies the trace): each
    find's candidate runs minimized (when ``minimize_steps``), the shortest kept."""
    violations, report = {}, {}
    for n in names:
        rec = found.get(n)
        if rec is None:
            continue
        t0 = clock()
        candidates = sorted(set(rec["pool"]) | {tuple(rec["best"])}, key=lambda p: (len(p), p))
        steps = None
        until = time.process_time() + max(shrink_budget_s, 5.0)      # CPU time: the load does not cut it short
        for path in candidates if minimize_steps else candidates[:1]:
            left = until - time.process_time()
            if steps is not None and left <= 0:
                break
            got = minimize(spec, [spec.actions[i] for i in path], n, backend=model.backend(),
                           reduce=minimize_steps, time_limit=max(left, 1.0), clock=time.process_time)
            if steps is None or len(got) < len(steps):
                steps = got
        violations[n] = Violation(n, None, len(steps), list(steps))
        report[n] = {"seconds_to_find": round(rec["time"], 3), "cpu_seconds_to_find": round(rec["cpu"], 3),
                     "setup_cpu_seconds": round(rec["setup"], 3), "worker": rec["worker"],
                     "runs_to_find": rec["runs"], "found_length": len(rec["first"]),
                     "hypothesis_length": len(rec["best"]), "minimized_length": len(steps) - 1,
                     "shrink_seconds": round(rec.get("shrunk", rec["time"]) - rec["time"], 3),
                     "minimize_seconds": round(clock() - t0, 3)}
    return Result(
        invariants=list(names), violations=violations, distinct_states=distinct,
        transitions=transitions, depth=depth, seconds=seconds,
        peak_memory_bytes=peak, retained_bytes=retained, complete=False,
        budget_hit=budget_hit, never_fired=None, engine="fuzz", runs=runs, seed=seed, workers=workers, found=report,
        fired=fired)
