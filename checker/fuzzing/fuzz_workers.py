"""Fuzzing on every core: worker processes, each its own search (checker/fuzzing/fuzz.py), and the parent that merges them.

Worker w runs :class:`checker.fuzzing.fuzz._Fuzzer` with its own Hypothesis seeds (session k:
``seed + k + w * 2**32``) and its own archive; it streams its counts and the hashes
of the states it visits to the parent (which counts the distinct states of all of
them and shows progress) and reports each invariant it breaks, with the run that
broke it. The parent forks the workers, so they start from the spec already compiled.

Which trace is reported must not depend on which process the machine happens to run
faster. Each worker's search is a function of its seed alone (what it checks and
keeps never depends on the others), and a *board* in shared memory holds, per
invariant, the first find so far by (search runs of its worker, worker number). A
worker stops once every invariant is broken either by itself or by another worker
before its own next run; so the find with the fewest search runs (then the lowest
worker number) is always reported, as the parent sees once every worker has stopped.
A worker that breaks an invariant another already broke sooner does not shrink it.
A time budget, ``max_runs`` (split evenly between the workers) or a stop request
ends every worker like the search of one process; a stop, a signal to the parent,
or the parent's death is seen by the workers at their next run.

The parent minimizes the reported finds (checker.fuzzing.fuzz.assemble). ``--max-memory``
is shared: each worker stops at its share of it. Without ``fork`` (a platform
without it) the fuzz runs in this process alone.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import queue
import signal
import time
import traceback

from isrcheck.checker.engine import stop
from isrcheck.checker.exhaustive.bfs import peak_memory
from isrcheck.checker.fuzzing.fuzz import (_Distinct, _Fuzzer, _violation, action_kinds, assemble, cpu_clock,
                                           shrink_seconds, time_limit)

POLL = 0.2          # seconds between the parent's looks at signals and dead workers


class _Board:
    """What the workers share: per invariant the first find so far, and a stop flag."""

    NONE = (1 << 63) - 1

    def __init__(self, ctx, names, workers):
        self.index = {n: k for k, n in enumerate(names)}
        self.workers = workers
        self.best = ctx.Array("q", [self.NONE] * len(names))
        self.flag = ctx.Value("b", 0, lock=False)
        self.parent = os.getpid()

    def _key(self, run, worker):
        return run * self.workers + worker

    def beaten(self, name, run, worker):
        """Whether another worker broke ``name`` in fewer search runs than ``run`` (or as many, with a lower number)."""
        return self.best[self.index[name]] < self._key(run, worker)

    def record(self, name, run, worker):
        with self.best.get_lock():
            k = self.index[name]
            self.best[k] = min(self.best[k], self._key(run, worker))

    def stopped(self):
        """Whether the parent asked the workers to stop, or (seen from a worker) died."""
        return bool(self.flag.value) or (os.getpid() != self.parent and os.getppid() != self.parent)


def _work(args, worker, max_runs, start, board, out):
    """A worker process: its search, reported through ``out``."""
    signal.set_wakeup_fd(-1)                 # the parent's stop watcher is not ours
    signal.signal(signal.SIGINT, signal.SIG_IGN)       # the parent stops us through the board
    signal.signal(signal.SIGTERM, signal.SIG_DFL)

    def report(kind, **data):
        if kind == "found":
            board.record(data["name"], fz.search_runs, worker)
        out.put((kind, worker, data))

    try:
        spec, names, budget_s, seed, max_steps, derandomize, _, _, shrink_budget_s, backend, clock, _, hints = args
        fz = _Fuzzer(spec, names, budget_s, seed, max_steps, derandomize, None, max_runs, shrink_budget_s, backend,
                     clock, hints=hints, worker=worker, board=board, report=report, start=start)
        fz.search()
        out.put(("done", worker, {"found": fz.found, "runs": fz.runs, "search_runs": fz.search_runs,
                                  "transitions": fz.transitions, "longest": fz.longest, "fired": fz.fired,
                                  "seconds": fz.clock() - fz.start, "hashes": fz._take_hashes(),
                                  "peak": peak_memory()}))
    except BaseException:                     # noqa: BLE001 — the parent raises it, with the worker's traceback
        out.put(("error", worker, traceback.format_exc()))
    finally:
        out.close()
        out.join_thread()


def _runs_of(max_runs, workers, worker):
    """Worker ``worker``'s share of ``max_runs`` (None: no limit)."""
    if max_runs is None:
        return None
    return max_runs // workers + (worker < max_runs % workers)


def fuzz_in_workers(args, workers, minimize_steps):
    """``checker.fuzzing.fuzzer.fuzz`` on ``workers`` processes; see the module doc."""
    spec, names, budget_s, seed, max_steps, derandomize, progress, max_runs, shrink_budget_s, backend, clock, \
        on_violation, _ = args
    if "fork" not in mp.get_all_start_methods():
        fz = _Fuzzer(*args)
        fz.search()
        return fz.result(minimize_steps and not stop.reason())
    if max_runs is not None:
        workers = max(1, min(workers, max_runs))
    ctx = mp.get_context("fork")
    board = _Board(ctx, names, workers)
    out = ctx.Queue()
    start = clock()
    shared_clock = not cpu_clock(clock)          # one clock for every process; else each its own CPU time
    limit = stop.memory_limit()
    if limit is not None:
        stop.set_max_memory(limit // workers)          # each worker's share, inherited by the fork
    try:
        procs = [ctx.Process(target=_work, daemon=True, name=f"isrcheck-fuzz-{w}",
                             args=(args, w, _runs_of(max_runs, workers, w), start if shared_clock else None,
                                   board, out)) for w in range(workers)]
        for p in procs:
            p.start()
    finally:
        if limit is not None:
            stop.set_max_memory(limit)
    parent = _Parent(spec, names, workers, progress, on_violation, clock, start, shared_clock)
    try:
        parent.collect(procs, out, board)
    finally:
        board.flag.value = 1
        for p in procs:
            p.join(timeout=5)
            if p.is_alive():
                p.kill()
                p.join()
    return parent.result(args, minimize_steps)


class _Parent:
    """The parent's side: what the workers report, merged."""

    def __init__(self, spec, names, workers, progress, on_violation, clock, start, shared_clock):
        self.spec, self.names, self.workers = spec, names, workers
        self.progress, self.on_violation, self.clock, self.start = progress, on_violation, clock, start
        self.shared_clock = shared_clock
        self.distinct = _Distinct()
        self.stats = [{"runs": 0, "transitions": 0, "longest": 0, "seconds": 0.0, "fired": None}
                      for _ in range(workers)]
        self.done = {}
        self.first = {}            # name -> the first find reported (a worker's record, its pool left out)
        self.peaks = []
        self.last = time.monotonic()

    def collect(self, procs, out, board):
        while len(self.done) < len(procs):
            try:
                kind, w, data = out.get(timeout=POLL)
            except queue.Empty:
                if stop.reason():
                    board.flag.value = 1
                for w, p in enumerate(procs):
                    if w not in self.done and not p.is_alive() and p.exitcode is not None:
                        self.done[w] = None            # killed before it could report: its finds so far count
                self._show()
                continue
            if kind == "error":
                board.flag.value = 1
                raise RuntimeError(f"fuzz worker {w} failed:\n{data}")
            if kind == "found":
                if data["name"] not in self.first:
                    self.first[data["name"]] = data["rec"]
                    if self.on_violation is not None:
                        self.on_violation(_violation(self.spec, data["name"], data["rec"]["first"]))
                continue
            self.distinct.add(data["hashes"])
            self.stats[w] = {k: data[k] for k in ("runs", "transitions", "longest", "seconds", "fired")}
            if kind == "done":
                self.done[w] = data
                self.peaks.append(data["peak"])
            if stop.reason():
                board.flag.value = 1
            self._show()

    def _show(self):
        now = time.monotonic()            # about once a second, whatever the campaign's clock
        if self.progress is not None and now - self.last >= 1.0:
            self.last = now
            self.progress(runs=sum(s["runs"] for s in self.stats),
                          transitions=sum(s["transitions"] for s in self.stats),
                          distinct=len(self.distinct), seconds=self.seconds(), found=sorted(self.first))

    def seconds(self):
        """The campaign's time so far: on a shared clock, since it began; on a CPU clock, the CPU time of the
        parent and of every worker."""
        spent = self.clock() - self.start
        return spent if self.shared_clock else spent + sum(s["seconds"] for s in self.stats)

    def _found(self):
        """Per invariant, the find reported: the one with the fewest search runs, then the lowest worker number."""
        found = {}
        for data in self.done.values():
            for name, rec in ({} if data is None else data["found"]).items():
                if name not in found or (rec["runs"], rec["worker"]) < (found[name]["runs"], found[name]["worker"]):
                    found[name] = rec
        for name, rec in self.first.items():       # a worker stopped before its report: its find as first sent
            found.setdefault(name, {**rec, "pool": {}})
        return found

    def result(self, args, minimize_steps):
        spec, names, budget_s, seed, _, _, _, max_runs, shrink_budget_s, backend, clock, _, _ = args
        found = self._found()
        pending = [n for n in names if n not in found]
        budget_hit = None
        if pending:
            if stop.reason():
                budget_hit = stop.reason()
            elif max_runs is not None and all(d is not None and d["search_runs"] >= _runs_of(max_runs, self.workers, w)
                                              for w, d in self.done.items()):
                budget_hit = f"max examples {max_runs}"
            else:
                budget_hit = time_limit(clock, budget_s)
        from isrcheck.model import backends
        model = backends.compiled(spec) if backend == "compiled" else backends.ScalarTuples(spec)
        kinds = action_kinds(spec)
        fired = [any(s["fired"][k] for s in self.stats if s["fired"] is not None) for k in range(len(kinds))]
        return assemble(spec, names, model, found, minimize_steps and not stop.reason(),
                        shrink_seconds(budget_s, shrink_budget_s), clock,
                        distinct=len(self.distinct), retained=self.distinct.nbytes,
                        transitions=sum(s["transitions"] for s in self.stats),
                        depth=max(s["longest"] for s in self.stats) + 1, seconds=self.seconds(),
                        budget_hit=budget_hit, runs=sum(s["runs"] for s in self.stats), seed=seed,
                        fired=[k for k, f in zip(kinds, fired) if f], peak=peak_memory() + sum(self.peaks),
                        workers=self.workers)

