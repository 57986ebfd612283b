"""Property fuzzing: Hypothesis drives long random executions at bounds far beyond exhaustive reach.

API (the CLI's ``isrcheck fuzz`` calls these)::

    fuzz(spec, invariants, budget, seed=None, derandomize=False, progress=None, *,
         shrink_budget_s=None, backend="compiled", minimize_steps=True, clock=time.monotonic) -> Result

The fuzzer runs on model/backends.py's ``compiled(spec)``, the fast one-state-at-a-time
executor (``ScalarTuples`` for ``backend="scalar"``).

The spec's bounds are whatever spec instance is passed in (e.g.
``SPECS["hw-truncation"](replicas=5, max_epochs=8, max_crashes=3)``).
``fuzz`` raises KeyError for an invariant the spec does not have and
ValueError for a budget (checker/budget.py) without ``seconds``.

Result. A :class:`checker.result.Result` with ``engine`` "fuzz" (the CLI prints
the same report keys as for ``check``): ``violations[name].steps`` is
``[(ActionInstance or None, row)]``, replayed on the scalar backend;
``distinct_states`` counts the distinct fingerprints
(:class:`checker.fingerprint.Fingerprint`) of every state visited, computed
vectorized per run; ``transitions`` counts steps executed (shrinking
included); ``depth`` is the longest run plus one (states on it);
``complete`` is always False (fuzzing proves nothing), so an invariant not
found is "unknown" in ``verdicts``; ``budget_hit`` says which budget ended
the search when something was left unfound. Extra fields: ``runs`` (test
cases), ``seed`` (Hypothesis seed of the first session), ``found`` (per
invariant found: ``seconds_to_find`` (on ``clock``), ``cpu_seconds_to_find``
(CPU time of this process), ``found_length`` of the first failing
run, ``hypothesis_length`` after Hypothesis shrinking, ``minimized_length``
after :func:`checker.minimize.minimize`, ``shrink_seconds``,
``minimize_seconds``), ``fired`` (action kinds that fired at least once).

A run. One Hypothesis test case is one execution (``@given(st.data())``).
It first draws its configuration (``_Fuzzer._swarm``): a weight for every
action kind (swarm testing: 1, 8 or 64, or off with probability 1/4; every
kind allowed brings in, at weight 1 at least, the kinds on a shortest path to
a state where it is enabled, so no configuration is so small that nothing
happens), and which replicas are active and how fast. When at least two
replicas are active, only they act (an instance is allowed when its first
replica parameter, the acting one, is active) and an instance in which an
active replica acts on a passive one (a leader shrinking it out of its ISR) is
taken as soon as it is enabled: a bug that needs a precise interleaving of two
or three replicas is then not diluted by five. Replica speeds make laggards
(a replica that applies LeaderAndIsr late stays a zombie leader). Kind
weights pace the scarce resources (epochs, records, crashes) that a uniform
walk spends in its first steps. An instance's weight is its kind's times its
replica's; each step draws one enabled instance in proportion to it.

A run starts from the initial state or, with probability 3/4, from a state
of the corpus of the same set of active replicas: a sample of the new states
(by fingerprint) of earlier runs, kept with the path to them (at most
``CORPUS`` per set, then new ones replace old ones: a few hundred bytes
each, so up to about 250 MB over the 26 sets of 5 replicas in a long fuzz; a
run from the corpus takes at most ``CONTINUE`` steps,
one from the initial state ``max_steps``). So runs go on from states earlier
runs reached, as in Go-Explore, and deep interleavings are built a piece at a
time instead of in one lucky walk. Failing runs add nothing, and the corpus
is frozen while a failure is shrunk, so Hypothesis's replays stay exact.

The choices come from Hypothesis as one bytes draw per run (two bytes a step;
a new draw every ``BLOCK`` steps): measured against one draw per step or per
16 steps, this finds bugs several times sooner, because Hypothesis's span
mutations and prefix reuse then stop making most runs near-copies of earlier
ones, and each run costs fewer engine calls. After every step every requested
invariant not yet found is checked; the first violation fails the test case
(one exception class per invariant, so Hypothesis keeps them apart) and
Hypothesis shrinks it. ``hypothesis.target`` steers towards runs with more
of the events the spec declares as its ``fuzz_targets`` (e.g. leader changes,
truncations, crashes).

Budgets and sessions. ``budget.seconds`` (``budget_s`` below) bounds the search, in seconds of
``clock`` (wall time by default; ``time.process_time`` makes every budget
and ``seconds_to_find`` CPU time, independent of the machine's load); ``budget.max_runs`` (``max_examples``), when
given, also bounds the number of search runs, which makes a fuzz independent
of the machine's speed. Shrinking a failure may run ``shrink_budget_s``
longer (default ``min(10, max(2, budget_s / 10))``) and minimizing it as long
again (at least 5 s). Every failing run is recorded, and the few shortest
(plus Hypothesis's final one) are each minimized; the shortest result is
returned. The search runs in Hypothesis sessions of ``SESSION_EXAMPLES``
test cases (so Hypothesis's targeting phase runs in each) with
``settings(deadline=None, database=None, derandomize=derandomize, ...)``;
session k uses ``hypothesis.seed(seed + k)``. Without a seed, ``derandomize``
uses seed 0 and otherwise a random one (reported in ``seed``). A fuzz is thus
reproducible from its seed, given the same Hypothesis version and the same
loaded modules (Hypothesis mixes constants found in local modules into its
generation) and as long as no time budget cuts it short.

Backend. By default the fuzzer runs on :class:`model.backends.Compiled`: the spec's own
guards, updates and invariants traced into the same kind of graph as the
numpy batch kernels (model/compile.py) and emitted by ``tuple_kernel`` as
straight-line Python over tuples of ints, evaluated one state at a time like
the scalar backend and about a hundred times faster (tests/test_fuzz.py
checks it against the numpy and scalar backends for every spec). Every
counterexample returned is replayed on the scalar backend
(``model.backends.scalar``). ``backend="scalar"`` fuzzes on the scalar backend itself.

``benchmarks/fuzz_reach.py`` measures the time to find every expected
violation in specs/.
"""
from __future__ import annotations

import itertools
import random
from array import array
import time
from collections import deque

import numpy as np

from isrcheck.checker import stop
from isrcheck.checker.bfs import peak_memory
from isrcheck.checker.result import Result, Violation
from isrcheck.checker.fingerprint import Fingerprint
from isrcheck.checker.minimize import minimize
from isrcheck.model import backends

DEFAULT_MAX_STEPS = 120
SESSION_EXAMPLES = 1000
BLOCK = 256             # most steps whose choices one Hypothesis draw provides (two bytes each)


# ======================================================================================
# The fuzzer
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


def _replica_params(spec):
    """Per action instance, its replica parameters in order (the first is the replica acting)."""
    return [[a.params[p] for p, d in a.fn.__isrcheck_action__.items() if d == spec.replica_domain]
            for a in spec.actions]


class _Fuzzer:
    def __init__(self, spec, invariants, budget_s, seed, max_steps, derandomize, progress,
                 max_examples, shrink_budget_s, backend, clock=time.monotonic, on_violation=None):
        self.spec = spec
        self.on_violation = on_violation
        self.names = list(invariants)
        self.budget_s = budget_s
        self.max_steps = max_steps
        self.derandomize = derandomize
        self.progress = progress
        self.max_examples = max_examples
        self.shrink_budget_s = min(10.0, max(2.0, budget_s / 10)) if shrink_budget_s is None else shrink_budget_s
        self.clock = clock
        self.start = self.clock()
        self.cpu_start = time.process_time()
        self.deadline = self.start + budget_s
        self.base_seed = seed if seed is not None else (0 if derandomize else random.getrandbits(32))
        if backend == "compiled":
            self.model = backends.compiled(spec)
        elif backend == "scalar":
            self.model = backends.ScalarTuples(spec)
        else:
            raise ValueError(f"unknown fuzz backend {backend!r}")
        self.checks = [(n, self.model.invariant(n)) for n in self.names]
        self.kinds = list(dict.fromkeys(a.name for a in spec.actions))
        self.kind_of = [self.kinds.index(a.name) for a in spec.actions]
        self.enablers = _enablers(self.model, spec, self.kinds)
        self.replica_params = _replica_params(spec)
        self.replicas = spec.layout.replicas
        self.fingerprint = Fingerprint(spec.layout)
        self.fingerprints = set()
        self.runs = self.transitions = self.search_runs = 0
        self.longest = 0
        self.fired = [False] * len(self.kinds)
        self.pending = list(self.names)
        self.found = {}               # name -> {"time", "first": path, "best": path}
        self.failure_class = {n: type(f"Broken_{n.replace('-', '_')}", (_InvariantBroken,), {})
                              for n in self.names}
        self.targets = _targets(spec)
        self.last_progress = 0.0
        self.shrink_deadline = None
        from hypothesis import strategies as st
        swarm_bytes = (2 * len(self.kinds) + 3 * self.replicas + 7) // 8
        self._swarm_strategy = st.binary(min_size=swarm_bytes, max_size=swarm_bytes)
        block = min(BLOCK, max_steps)
        self._block_strategy = st.binary(min_size=2 * block, max_size=2 * block)
        self._start_strategy = st.binary(min_size=3, max_size=3)
        self.corpus = {}          # active replicas -> [(path, state)]: states runs start from (see run_once)

    # --- one Hypothesis test case: one execution ------------------------------------------------
    def _budget(self):
        now = self.clock()
        if stop.reason():
            raise _OutOfBudget
        if self.shrink_deadline is not None:
            if now > self.shrink_deadline:
                raise _OutOfBudget
        elif now > self.deadline or (self.max_examples is not None and self.search_runs >= self.max_examples):
            raise _OutOfBudget
        if self.progress is not None and now - self.last_progress >= 1.0:
            self.last_progress = now
            self.progress(runs=self.runs, transitions=self.transitions, distinct=len(self.fingerprints),
                          seconds=now - self.start, found=sorted(self.found))

    WEIGHTS = (1, 8, 64, 0)       # a kind's weight in a run, by its two swarm bits (0: the kind is off)
    SPEEDS = (1, 4, 16)           # an active replica's weight in a run
    EAGER_STEPS = 4               # per replica: most steps a run takes eagerly on passive replicas

    def _swarm(self, bits):
        """A run's configuration from its swarm bits: the weight of each action instance (0: not allowed).

        Two bits per kind give its weight (off with p = 1/4; a kind allowed
        brings its enablers in, at weight 1 at least). Three bits per replica
        say whether it is active (p = 1/2) and how fast: when at least two are
        active, only they act (an instance is allowed when its first replica
        parameter, the one acting, is active); the others stay as they are
        unless an active one acts on them (a leader shrinks them out of its
        ISR, say), so a bug that needs a precise interleaving of two or three
        replicas is not diluted by the others: an instance in which an active
        replica acts on a passive one is *eager*, taken as soon as it is
        enabled (up to ``EAGER_STEPS`` per replica and run), so a leader drops
        the passive replicas from its ISR at once and the run is as if the
        partition had only the active ones. A slow active replica is one that
        lags: it applies LeaderAndIsr requests late, stays a zombie leader,
        fetches rarely. An instance's weight is its kind's times its
        replica's. Returns (weight per instance, eager flag per instance).
        """
        if isinstance(bits, bytes):
            bits = int.from_bytes(bits, "little")
        n = len(self.kinds)
        weight = [self.WEIGHTS[(bits >> (2 * k)) & 3] for k in range(n)]
        if not any(weight):
            weight = [1] * n
        for k in range(n):
            if weight[k]:
                for j in self.enablers[k]:
                    weight[j] = max(weight[j], 1)
        bits >>= 2 * n
        code = [(bits >> (3 * r)) & 7 for r in range(self.replicas)]
        if sum(c >= 4 for c in code) >= 2:
            speed = [self.SPEEDS[c & 3] if c >= 4 and c & 3 < 3 else (1 if c == 7 else 0) for c in code]
        else:
            speed = [1] * self.replicas
        out, eager = [], []
        for k, reps in zip(self.kind_of, self.replica_params):
            w = weight[k] * (speed[reps[0]] if reps else 1)
            out.append(w)
            eager.append(bool(w) and any(not speed[x] for x in reps[1:]))
        return out, eager, tuple(s > 0 for s in speed)

    def run_once(self, data):
        from hypothesis import target
        self._budget()
        self.runs += 1
        if self.shrink_deadline is None:
            self.search_runs += 1
        weight, eager, active = self._swarm(data.draw(self._swarm_strategy, label="swarm"))
        eager_left = self.EAGER_STEPS * self.replicas if any(eager) else 0
        block, pos = b"", 0
        model, checks = self.model, self.active
        start = int.from_bytes(data.draw(self._start_strategy, label="start"), "little")
        corpus = self.corpus.setdefault(active, [])
        if start % 4 and corpus:
            prefix, r = corpus[(start >> 2) % len(corpus)]
            prefix, r = prefix.tolist(), tuple(r)
            steps = self.CONTINUE
        else:
            prefix, r = (), model.initial
            steps = self.max_steps
        rows, path = [r], list(prefix)
        broken = [n for n, fn in checks if not fn(r)]
        for _ in range(steps if not broken else 0):
            en = [i for i in model.enabled(r) if weight[i]]
            if not en:
                break
            if eager_left and any(eager[i] for i in en):
                i = next(i for i in en if eager[i])
                eager_left -= 1
            elif len(en) > 1:
                if pos == len(block):
                    block, pos = data.draw(self._block_strategy), 0
                i = _pick(en, weight, block[pos] << 8 | block[pos + 1])
                pos += 2
            else:
                i = en[0]
            r = model.step(r, i)
            path.append(i)
            rows.append(r)
            broken = [n for n, fn in checks if not fn(r)]
            if broken:
                break
        keep = not broken and self.shrink_deadline is None
        counts = self._account(rows, path[len(prefix):], path, corpus if keep else None)
        for (label, _, _), n in zip(self.targets, counts):
            target(float(n), label=label)
        if broken:
            now = self.clock()
            for n in broken:
                rec = self.found.get(n)
                if rec is None:
                    rec = self.found[n] = {"time": now - self.start, "cpu": time.process_time() - self.cpu_start,
                                           "first": list(path), "best": list(path), "pool": {}}
                    if self.on_violation is not None:     # saved now, replaced by the minimized one at the end
                        self.on_violation(self._violation(n, path))
                elif len(path) < len(rec["best"]):
                    rec["best"] = list(path)
                    rec["shrunk"] = now - self.start
                self._keep(rec["pool"], path)
            if self.shrink_deadline is None:
                self.shrink_deadline = now + self.shrink_budget_s
            raise self.failure_class[broken[0]](f"{broken[0]} violated after {len(path)} steps")

    def _violation(self, name, path):
        """A run's violation as found (not minimized), replayed on the spec."""
        steps = minimize(self.spec, [self.spec.actions[i] for i in path], name, reduce=False)
        return Violation(name, None, len(steps), list(steps))

    POOL = 6

    def _keep(self, pool, path):
        """Keep the few shortest distinct failing runs: each is minimized, the shortest result wins."""
        key = tuple(path)
        if key in pool:
            return
        pool[key] = len(pool)
        if len(pool) > self.POOL:
            worst = max(pool, key=lambda p: (len(p), -pool[p]))
            del pool[worst]

    CORPUS = 20_000       # most states kept to start runs from, per set of active replicas
    SAMPLE_BITS = 3       # a new state joins the corpus when these top bits of its fingerprint are 0 (1 in 8)
    MAX_DEPTH = 400       # deepest state kept in the corpus
    CONTINUE = 20         # most steps of a run that starts from a corpus state

    def _account(self, rows, steps, path, corpus):
        """Count a run's steps and distinct states; return its count of each fuzz target.

        ``rows`` are the states from the run's start on, ``steps`` the actions
        taken from there, ``path`` all the run's actions; when ``corpus`` is
        given, a sample of the new states joins it with the paths to them.
        """
        self.transitions += len(steps)
        self.longest = max(self.longest, len(path))
        for i in steps:
            self.fired[self.kind_of[i]] = True
        width = len(rows[0])
        batch = np.fromiter(itertools.chain.from_iterable(rows), dtype=np.int8,
                            count=len(rows) * width).reshape(len(rows), width)
        fps = self.fingerprint.full(batch.T).tolist()
        if corpus is not None:
            seen, depth = self.fingerprints, len(path) - len(steps)
            for j in range(1, len(rows)):
                fp = fps[j]
                if fp >> (64 - self.SAMPLE_BITS) == 0 and fp not in seen and depth + j <= self.MAX_DEPTH:
                    entry = (array("H", path[:depth + j]), array("b", rows[j]))      # compact: 2 and 1 bytes
                    if len(corpus) < self.CORPUS:
                        corpus.append(entry)
                    else:
                        corpus[fp % self.CORPUS] = entry
        self.fingerprints.update(fps)
        return target_counts(self.targets, batch)

    # --- sessions -----------------------------------------------------------------------------
    def session(self, k):
        from hypothesis import HealthCheck, Phase, Verbosity, given, seed, settings, strategies as st
        examples = SESSION_EXAMPLES
        if self.max_examples is not None:
            examples = max(1, min(examples, self.max_examples - self.search_runs))

        @settings(max_examples=examples, deadline=None, database=None, derandomize=self.derandomize,
                  phases=[Phase.generate, Phase.target, Phase.shrink], verbosity=Verbosity.quiet,
                  suppress_health_check=list(HealthCheck), report_multiple_bugs=len(self.pending) > 1,
                  print_blob=False)
        @given(st.data())
        def fuzz_run(data):
            self.run_once(data)

        fuzz_run = seed(self.base_seed + k)(fuzz_run)
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

    def run(self, minimize_steps=True):
        k = 0
        while self.pending and self.clock() < self.deadline and not stop.reason() and \
                (self.max_examples is None or self.search_runs < self.max_examples):
            before = self.search_runs
            self.session(k)
            self.pending = [n for n in self.pending if n not in self.found]
            k += 1
            if self.search_runs == before and not self.found:
                break                          # nothing ran (should not happen): do not spin
        return self.result(minimize_steps and not stop.reason())     # a stop keeps the traces unminimized

    def result(self, minimize_steps):
        spec = self.spec
        violations, found = {}, {}
        for n in self.names:
            rec = self.found.get(n)
            if rec is None:
                continue
            t0 = self.clock()
            candidates = sorted(set(rec["pool"]) | {tuple(rec["best"])}, key=lambda p: (len(p), p))
            steps = None
            until = t0 + max(self.shrink_budget_s, 5.0)
            for path in candidates if minimize_steps else candidates[:1]:
                left = until - self.clock()
                if steps is not None and left <= 0:
                    break
                got = minimize(spec, [spec.actions[i] for i in path], n, backend=self.model.backend(),
                               reduce=minimize_steps, time_limit=max(left, 1.0))
                if steps is None or len(got) < len(steps):
                    steps = got
            violations[n] = Violation(n, None, len(steps), list(steps))
            found[n] = {"seconds_to_find": round(rec["time"], 3), "cpu_seconds_to_find": round(rec["cpu"], 3),
                        "found_length": len(rec["first"]),
                        "hypothesis_length": len(rec["best"]), "minimized_length": len(steps) - 1,
                        "shrink_seconds": round(rec.get("shrunk", rec["time"]) - rec["time"], 3),
                        "minimize_seconds": round(self.clock() - t0, 3)}
        budget_hit = None
        if self.pending:
            if stop.reason():
                budget_hit = stop.reason()
            elif self.max_examples is not None and self.search_runs >= self.max_examples:
                budget_hit = f"max examples {self.max_examples}"
            else:
                budget_hit = f"time limit {self.budget_s:g}s"
        return Result(
            invariants=list(self.names), violations=violations, distinct_states=len(self.fingerprints),
            transitions=self.transitions, depth=self.longest + 1, seconds=self.clock() - self.start,
            peak_memory_bytes=peak_memory(), retained_bytes=8 * len(self.fingerprints), complete=False,
            budget_hit=budget_hit, never_fired=None, engine="fuzz", runs=self.runs, seed=self.base_seed, found=found,
            fired=[k for k, f in zip(self.kinds, self.fired) if f])


def fuzz(spec, invariants, budget, seed=None, derandomize=False, progress=None, *, shrink_budget_s=None,
         backend="compiled", minimize_steps=True, clock=time.monotonic, on_violation=None):
    """Fuzz ``spec`` for the named invariants for about ``budget.seconds`` seconds; see the module doc.

    ``budget`` (checker/budget.py): ``seconds`` (required), ``max_steps`` (the longest execution;
    DEFAULT_MAX_STEPS when None), ``max_runs`` (search runs at most; none when None).

    ``progress``, when given, is called about once a second with keyword
    arguments ``runs``, ``transitions``, ``distinct``, ``seconds``, ``found``;
    ``on_violation(violation)`` as soon as an invariant is first broken (not yet
    minimized). A stop request (:mod:`checker.stop`) ends the run like the budget,
    and the traces found are then kept unminimized.
    """
    unknown = [n for n in invariants if n not in spec.invariants]
    if unknown:
        raise KeyError(f"spec {spec.name} has no invariant {unknown[0]!r}")
    if budget.seconds is None:
        raise ValueError("fuzz needs a time budget (Budget(seconds=...))")
    fz = _Fuzzer(spec, invariants, budget.seconds, seed, budget.max_steps or DEFAULT_MAX_STEPS, derandomize, progress,
                 budget.max_runs, shrink_budget_s, backend, clock, on_violation)
    return fz.run(minimize_steps)
