"""Spark engine benchmark: per-level overhead at small frontiers, and throughput against the local engine.

    python benchmarks/spark_vs_local.py overhead                # per-level overhead on local[2]
    python benchmarks/spark_vs_local.py throughput              # the >= 10M-state comparison (minutes)
    python benchmarks/spark_vs_local.py throughput kip-101:unflushed_loss=1,max_crashes=2 --invariants log-matching
    python benchmarks/spark_vs_local.py throughput kip-320:replicas=3,min_isr=2,max_epochs=2 \
        --invariants no-committed-loss --pairs 2    # the capacity plan's target, two rounds alternating
    python benchmarks/spark_vs_local.py stages                  # CPU s per stage per million states, both engines
    python benchmarks/spark_vs_local.py capacity                # the capacity plan's figures (the 2-epoch target)
    python benchmarks/spark_vs_local.py growth                  # the target's levels at 1-4 epochs (minutes)
    python benchmarks/spark_vs_local.py                         # overhead and throughput

overhead: a spec of ~100 states and 10 levels, so that a level's work is
nothing and its time is Spark's: one job per level and several levels chained
per job (the engine's default for small levels) are timed as the slope between
a 1-level and a 10-level search (fixed costs cancel), after a warm-up search;
the latency of a trivial two-stage Spark job and the load average are printed
alongside, since a shared machine inflates every figure.

throughput: each engine runs once in a fresh process (its own peak memory;
the Spark run on ``local[2]``, two partitions); their answers must agree.
``--pairs N`` runs them N times, alternating, and prints the medians and the
ratio round by round (a shared machine's load falls on both).
states/s is given against wall-clock time and against the CPU time of the
whole process tree (driver, JVM, Python workers; the benchmark's own sampling
thread left out), the figure that measures the engines on a shared machine. The
Spark row adds the bytes its levels moved (``Result.levels``): through the shuffle (Spark's shuffle write metrics) and
between the JVM and the Python workers (the records' numpy payload), in all,
at the busiest level, and per state, and ``cpu_by_role``: its CPU seconds by
process (driver Python, JVM and its busiest threads, Python daemon, each
Python worker), sampled from /proc once a second, and ``stage_cpu_seconds``: the
Python workers' CPU seconds by section of the map and reduce tasks (the engine's
own per-level report, summed over levels). Both rows give the seconds at the end
of each level (``seconds_at_level_end``).

stages: the throughput comparison plus a third run of the local engine on one
worker thread with its pieces timed (expand, group, visited insert, pick,
materialize, invariants, level write; wrappers around its public methods,
``time.process_time``), and a table of both engines' CPU seconds per stage per
million states.

capacity: one Spark run (``local[2]``, two partitions, a workdir of its own)
of the capacity plan's target (docs/how-to/spark.md) at 2 epochs (87M states), for the
figures the plan scales: CPU seconds per million states by process, the peak
resident memory of the driver, the JVM and the Python workers (sampled once a
second), the bytes on disk by kind at the end (visited tables, Parquet files)
and at their peak (frontier and successor files), and per level its new
states, wall seconds, the workers' CPU seconds per million new states and the
successor-file bytes per new state.

growth: the capacity plan's target on the local engine at max_epochs 1 to 4
(complete at 1 and 2, cut at 150M states at 3 and 4), each level's new states
side by side with the ratio between consecutive epoch counts: what the state
count at the default bounds (4 epochs) is extrapolated from.
"""
from __future__ import annotations

import collections
import json
import os
import re
import statistics
import shutil
import subprocess
import sys
import tempfile
import threading
import time

THROUGHPUT = "hw-truncation:unflushed_loss=1,max_crashes=2"        # ~11.9 million states, 36 levels
THROUGHPUT_INVARIANTS = "single-leader-per-epoch"                    # holds there
CAPACITY = "kip-320:replicas=3,min_isr=2,max_epochs=2"               # the capacity plan's target at 2 epochs
CAPACITY_INVARIANTS = "no-committed-loss"
OVERHEAD = ("hw-truncation", dict(replicas=2, max_epochs=1, max_crashes=0, max_records=1, log_size=1))
SPARK_CONF = {"spark.driver.memory": "4g"}


def parse(config):
    name, _, rest = config.partition(":")
    bounds = {k: int(v) for k, v in (kv.split("=") for kv in rest.split(",") if kv)}
    return name, bounds


_TICK = os.sysconf("SC_CLK_TCK")


def _proc_stat(path):
    """(name, parent pid, own CPU seconds, reaped children's CPU seconds) from a /proc stat file."""
    with open(path) as fh:
        head, rest = fh.read().rsplit(")", 1)
    f = rest.split()
    return head.split("(", 1)[1], int(f[1]), (int(f[11]) + int(f[12])) / _TICK, (int(f[13]) + int(f[14])) / _TICK


def _tree(root):
    """{pid: (name, parent pid, own CPU s, reaped children's CPU s)} of ``root`` and its descendants."""
    info = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                info[int(entry)] = _proc_stat(f"/proc/{entry}/stat")
            except (OSError, IndexError):
                continue
    mine = {}
    for pid in info:
        q = pid
        while q and q != root:
            q = info[q][1] if q in info else None
        if q == root:
            mine[pid] = info[pid]
    return mine


def tree_cpu_seconds(pid=None):
    """CPU seconds (user + system, own and reaped children) of a process and all its descendants."""
    return sum(own + reaped for _, _, own, reaped in _tree(pid or os.getpid()).values())


class _Sampler:
    """Calls ``_sample`` every ``period`` seconds on a thread of its own from ``_start`` until ``_stop``."""

    def _start(self, period):
        self.root, self.period = os.getpid(), period
        self.own_cpu = 0.0          # the sampling thread's CPU seconds: the instrument's, not the engine's
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.done.wait(self.period):
            self._sample()
            self.own_cpu = time.thread_time()

    def _stop(self):
        """A last sample, then no more."""
        self._sample()
        self.done.set()
        self.thread.join()


class CpuByRole(_Sampler):
    """CPU seconds of this process tree by role, sampled from /proc while a Spark run goes on: the driver's
    Python, the JVM (and its busiest threads by name), the Python daemon and each Python worker it forked.
    A worker that exits between two samples loses at most one period's CPU; the sampling thread's own CPU
    (``own_cpu``) counts as the driver's here, and is left out of the run's CPU seconds."""

    def __init__(self, period=1.0):
        self.procs, self.cmdline, self.threads = {}, {}, {}
        self._start(period)

    def _sample(self):
        for pid, stat in _tree(self.root).items():
            self.procs[pid] = stat
            if pid not in self.cmdline:
                try:
                    with open(f"/proc/{pid}/cmdline") as fh:
                        self.cmdline[pid] = fh.read().replace("\0", " ")
                except OSError:
                    self.cmdline[pid] = ""
            if stat[0] == "java":
                for tid in os.listdir(f"/proc/{pid}/task") if os.path.isdir(f"/proc/{pid}/task") else ():
                    try:
                        self.threads[tid] = _proc_stat(f"/proc/{pid}/task/{tid}/stat")
                    except (OSError, IndexError):
                        continue

    def finish(self):
        """{roles: CPU s by role, workers: each Python worker's CPU s, jvm_threads: the JVM's busiest threads}."""
        self._stop()
        java = {p for p, stat in self.procs.items() if stat[0] == "java"}
        daemons = {p for p, stat in self.procs.items() if stat[1] in java and "daemon" in self.cmdline[p]}
        roles, workers = collections.Counter(), []
        for pid, (name, parent, own, _) in self.procs.items():
            role = ("driver python" if pid == self.root else "jvm" if name == "java" else
                    "python daemon" if pid in daemons else "python workers" if parent in daemons else name)
            roles[role] += own
            if role == "python workers":
                workers.append(round(own, 1))
        threads = collections.Counter()
        for name, _, own, _ in self.threads.values():
            threads[re.sub(r"[\d-]+$", "", name).strip() or name] += own
        return dict(roles={k: round(v, 1) for k, v in roles.most_common()}, workers=sorted(workers, reverse=True),
                    jvm_threads={k: round(v, 1) for k, v in threads.most_common(10)})


class Footprint(_Sampler):
    """Peak resident memory of this process tree by role (driver Python, JVM, the other Python processes
    together: Spark's daemon and workers) and peak bytes on disk under a workdir by its top directory, sampled
    once a second; a file's bytes are its allocated blocks (a visited table is sparse until filled)."""

    def __init__(self, workdir, period=1.0):
        self.workdir = workdir
        self.rss, self.disk = collections.Counter(), collections.Counter()
        self.page = os.sysconf("SC_PAGE_SIZE")
        self._start(period)

    def disk_now(self):
        """{top directory of the workdir: allocated bytes}."""
        now = collections.Counter()
        for top in os.listdir(self.workdir) if os.path.isdir(self.workdir) else ():
            for d, _, files in os.walk(os.path.join(self.workdir, top)):
                for name in files:
                    try:
                        now[top] += os.stat(os.path.join(d, name)).st_blocks * 512
                    except FileNotFoundError:           # renamed or dropped meanwhile
                        continue
        return now

    def _sample(self):
        now = collections.Counter()
        for pid, (name, *_) in _tree(self.root).items():
            try:
                with open(f"/proc/{pid}/statm") as fh:
                    resident = int(fh.read().split()[1]) * self.page
            except (OSError, IndexError):
                continue
            now["driver python" if pid == self.root else "jvm" if name == "java" else "python workers"] += resident
        for role, b in now.items():
            self.rss[role] = max(self.rss[role], b)
        for top, b in self.disk_now().items():
            self.disk[top] = max(self.disk[top], b)

    def finish(self):
        """(peak resident bytes by role, peak bytes on disk by top directory)."""
        self._stop()
        return dict(self.rss), dict(self.disk)


# --- the local engine's own stages (one worker thread, its methods timed) -------------------------
LOCAL_STAGES = (("checker.exhaustive.bfs", "Search", "expand", "expand"),
                ("checker.exhaustive.bfs", "Search", "group", "group"),
                ("checker.exhaustive.visited", "VisitedSet", "insert", "visited insert"),
                ("checker.exhaustive.bfs", "Search", "pick", "pick"),
                ("checker.exhaustive.bfs", "Search", "materialize", "materialize"),
                ("checker.exhaustive.bfs", "Search", "_violations", "invariants"),
                ("checker.exhaustive.levels", "Frontier", "block", "frontier block"),
                ("checker.exhaustive.levels", "LevelWriter", "append", "level write"),
                ("checker.exhaustive.levels", "LevelWriter", "finish", "level write"))


def time_local_stages():
    """Wrap the local engine's pieces with CPU timers; returns the {stage: CPU s} they fill. One worker thread
    only (process_time is the whole process's): the caller runs the search with workers=1."""
    import importlib
    seconds = collections.Counter()
    for module, cls, name, stage in LOCAL_STAGES:
        owner = getattr(importlib.import_module("isrcheck." + module), cls)
        raw = owner.__dict__[name]
        static = isinstance(raw, staticmethod)
        fn = raw.__func__ if static else raw

        def timed(*args, _fn=fn, _stage=stage, **kw):
            t = time.process_time()
            try:
                return _fn(*args, **kw)
            finally:
                seconds[_stage] += time.process_time() - t
        setattr(owner, name, staticmethod(timed) if static else timed)
    return seconds


# --- one engine run (in its own process) ------------------------------------------------------
def run_one(engine, config, invariants, partitions):
    from isrcheck.specs import SPECS
    name, bounds = parse(config)
    spec = SPECS[name](**bounds)
    last, level_end, level_walls = [0.0], {}, {}

    def progress(depth, frontier, distinct, seconds, level_seconds=None, **_):
        level_end[depth] = round(seconds, 1)
        level_walls[depth] = None if level_seconds is None else round(level_seconds, 2)
        if seconds - last[0] >= 10:
            last[0] = seconds
            print(f"  [{engine}] level {depth}: frontier {frontier:,}, {distinct:,} states, {seconds:.0f}s",
                  file=sys.stderr, flush=True)

    stages = None
    if engine in ("local", "local-stages"):
        from isrcheck.checker.exhaustive.bfs import search
        if engine == "local-stages":
            stages = time_local_stages()
        t0 = tree_cpu_seconds()
        result = search(spec, invariants, progress=progress, workers=1 if stages is not None else None)
        cpu = tree_cpu_seconds()
        if stages is not None:
            stages["other (search loop, kernel choice, imports)"] = cpu - t0 - sum(stages.values())
        by_role = None
    else:
        from isrcheck.checker.spark.spark_engine import spark_context, spark_search
        sampler = CpuByRole()
        sc, _ = spark_context("local[2]", partitions, SPARK_CONF)
        workdir = tempfile.mkdtemp(prefix="isrcheck-capacity-") if engine == "spark-capacity" else None
        footprint = None if workdir is None else Footprint(workdir)
        result = spark_search(spec, invariants, partitions=partitions, progress=progress, workdir=workdir)
        # before stopping: the JVM and its Python workers still run; less the samplers' own CPU
        cpu = tree_cpu_seconds() - sampler.own_cpu - (0.0 if footprint is None else footprint.own_cpu)
        by_role = sampler.finish()
        if footprint is not None:
            end = footprint.disk_now()
            rss, disk = footprint.finish()
            shutil.rmtree(workdir, ignore_errors=True)
        sc.stop()
    moved = {}
    if result.levels:                        # Spark: the bytes each level moved (shuffle, JVM <-> Python)
        for key in ("shuffle_write_bytes", "python_jvm_bytes"):
            per_level = [m[key] or 0 for m in result.levels]
            moved[key] = sum(per_level)
            moved["peak_level_" + key] = max(per_level)
            moved[key + "_per_state"] = round(sum(per_level) / result.distinct_states, 1)
        stages = collections.Counter()
        for m in result.levels:
            stages.update(m.get("stage_cpu_seconds") or {})
    extra = {}
    if engine == "spark-capacity":
        extra = dict(peak_rss_bytes=rss, peak_disk_bytes=disk, disk_bytes_at_end=dict(end),
                     level_table=[dict(level=m["level"], new_states=m["new_states"],
                                       seconds=level_walls.get(m["level"]),
                                       worker_cpu_seconds=round(sum(m["stage_cpu_seconds"].values()), 2),
                                       successor_file_bytes=m["successor_file_bytes"]) for m in result.levels])
    return {"engine": engine, "config": config, "invariants": invariants, "partitions": partitions, **extra,
            "distinct_states": result.distinct_states, "transitions": result.transitions,
            "depth": result.depth, "verdicts": result.verdicts, "seconds": round(result.seconds, 1),
            "cpu_seconds": round(cpu, 1), "states_per_second": round(result.states_per_second),
            "states_per_cpu_second": round(result.distinct_states / cpu) if cpu else None,
            "cpu_seconds_per_million_states": round(cpu / result.distinct_states * 1e6, 2),
            "peak_memory_mb": round(result.peak_memory_bytes / 2 ** 20), **moved,
            "cpu_by_role": by_role, "seconds_at_level_end": level_end,
            "stage_cpu_seconds": None if stages is None else {k: round(v, 2) for k, v in stages.most_common()}}


def throughput(config, invariants, partitions=2, engines=("local", "spark"), pairs=1):
    """Each engine in turn, ``pairs`` times over (alternating, so that a change in the machine's load falls on
    both); the rows of the first round, and with several rounds each engine's medians and the ratio's."""
    runs = collections.defaultdict(list)
    for k in range(pairs):
        for engine in engines:
            cmd = [sys.executable, __file__, "--one", engine, config, ",".join(invariants), str(partitions)]
            print(f"running {engine} on {config} (round {k + 1} of {pairs}, load average "
                  f"{os.getloadavg()[0]:.1f}) ...", flush=True)
            out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout
            runs[engine].append(json.loads(out.strip().splitlines()[-1]))
            print(json.dumps(runs[engine][-1]), flush=True)
    rows = [runs[engine][0] for engine in engines]
    local, spark = rows[:2]
    same = all(r[k] == local[k] for k in ("distinct_states", "transitions", "depth", "verdicts")
               for engine in engines[:2] for r in runs[engine])
    print(f"\n{config} [{', '.join(invariants)}]: same answers: {same}")
    print(f"{'engine':8} {'states':>12} {'seconds':>9} {'states/s':>10} {'cpu s':>9} "
          f"{'states/cpu s':>12} {'peak MB':>8}")
    for engine in engines:
        for r in runs[engine]:
            print(f"{r['engine']:8} {r['distinct_states']:>12,} {r['seconds']:>9} {r['states_per_second']:>10,} "
                  f"{r['cpu_seconds']:>9} {r['states_per_cpu_second']:>12,} {r['peak_memory_mb']:>8}")
    if pairs > 1:
        cpu = {e: statistics.median(r["cpu_seconds"] for r in runs[e]) for e in engines[:2]}
        ratios = [l["cpu_seconds"] / s["cpu_seconds"]
                  for l, s in zip(runs[engines[0]], runs[engines[1]])]
        print(f"median CPU s: {', '.join(f'{e} {c}' for e, c in cpu.items())}; {engines[1]}'s states per CPU "
              f"second against {engines[0]}'s, round by round: {', '.join(f'{x:.0%}' for x in ratios)}, "
              f"median {statistics.median(ratios):.0%}")
    return rows


def stages(config, invariants, partitions=2):
    """Throughput, plus the local engine's stages on one worker; then CPU s per stage per million states."""
    rows = throughput(config, invariants, partitions, engines=("local", "spark", "local-stages"))
    spark, timed = rows[1], rows[2]
    million = spark["distinct_states"] / 1e6
    workers = (spark["cpu_by_role"] or {}).get("roles", {}).get("python workers", 0.0)
    in_tasks = sum(spark["stage_cpu_seconds"].values())
    print(f"\nCPU s per million states ({spark['distinct_states']:,} states)")
    print(f"spark: Python workers {workers / million:.2f} (in the tasks' sections {in_tasks / million:.2f}, "
          f"outside them: worker start and Spark's task protocol {(workers - in_tasks) / million:.2f}), "
          f"whole process tree {spark['cpu_seconds'] / million:.2f}")
    for name, s in sorted(spark["stage_cpu_seconds"].items(), key=lambda kv: -kv[1]):
        print(f"  {name:40} {s / million:6.3f}")
    print(f"local engine, one worker thread: whole process {timed['cpu_seconds'] / million:.2f} "
          f"(the default run on every core: {rows[0]['cpu_seconds'] / million:.2f})")
    for name, s in sorted(timed["stage_cpu_seconds"].items(), key=lambda kv: -kv[1]):
        print(f"  {name:40} {s / million:6.3f}")
    return rows


def capacity(config, invariants, partitions=2):
    """One Spark run in a workdir of its own, with its footprint: the capacity plan's per-state figures."""
    cmd = [sys.executable, __file__, "--one", "spark-capacity", config, ",".join(invariants), str(partitions)]
    print(f"running spark on {config} ...", flush=True)
    r = json.loads(subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout.strip().splitlines()[-1])
    print(json.dumps(r), flush=True)
    n, million, gb = r["distinct_states"], r["distinct_states"] / 1e6, 1e9
    roles = r["cpu_by_role"]["roles"]
    print(f"\n{config} [{', '.join(invariants)}] on local[{partitions}]: {n:,} states, {r['depth']} levels, "
          f"{r['seconds']} s wall, {r['cpu_seconds']} CPU s ({r['cpu_seconds_per_million_states']} per million states)")
    print("CPU s per million states by process: " + ", ".join(f"{k} {v / million:.3f}" for k, v in roles.items()))
    print("peak resident memory: " + ", ".join(f"{k} {v / gb:.2f} GB" for k, v in r["peak_rss_bytes"].items()))
    print("bytes on disk per state at the end: " + ", ".join(
        f"{k} {v / n:.1f}" for k, v in sorted(r["disk_bytes_at_end"].items())))
    print("peak bytes on disk: " + ", ".join(f"{k} {v / gb:.2f} GB" for k, v in sorted(r["peak_disk_bytes"].items())))
    print(f"{'level':>5} {'new states':>12} {'wall s':>7} {'worker CPU s/M':>14} {'successor B/state':>17}")
    for m in r["level_table"]:
        if m["new_states"]:
            print(f"{m['level']:>5} {m['new_states']:>12,} {m['seconds'] or 0:>7.2f} "
                  f"{m['worker_cpu_seconds'] / m['new_states'] * 1e6:>14.2f} "
                  f"{m['successor_file_bytes'] / m['new_states']:>17.1f}")
    return r


def growth(limit=150_000_000):
    """The target's new states per level at max_epochs 1-4 (3 and 4 cut at ``limit`` states), and their ratios."""
    from isrcheck.checker.exhaustive.bfs import search
    from isrcheck.checker.engine.budget import Budget
    from isrcheck.specs import SPECS
    name, bounds = parse(CAPACITY)
    levels = {}
    for epochs in (1, 2, 3, 4):
        spec = SPECS[name](**{**bounds, "max_epochs": epochs})
        sizes = levels[epochs] = {}
        t = time.perf_counter()
        result = search(spec, [CAPACITY_INVARIANTS], budget=Budget(max_states=None if epochs < 3 else limit),
                        progress=lambda depth, frontier, **_: sizes.__setitem__(depth, frontier))
        print(f"max_epochs={epochs}: {result.distinct_states:,} states, {result.depth} levels, "
              f"{'complete' if result.complete else result.budget_hit}, {time.perf_counter() - t:.0f} s", flush=True)
    print(f"{'level':>5} " + " ".join(f"{f'{e} epochs':>12}" for e in levels) + "   ratios 2/1, 3/2, 4/3")
    for depth in sorted(set().union(*levels.values())):
        row = [levels[e].get(depth) for e in levels]
        ratios = [f"{b / a:5.2f}" if a and b else "    -" for a, b in zip(row, row[1:])]
        print(f"{depth:>5} " + " ".join(f"{n:>12,}" if n else f"{'-':>12}" for n in row) + "   " + " ".join(ratios))
    return levels


# --- per-level overhead -----------------------------------------------------------------------
def overhead(reps=3):
    from isrcheck.checker.spark.spark_engine import spark_context, spark_search
    from isrcheck.checker.engine.budget import Budget
    from isrcheck.specs import SPECS
    sc, _ = spark_context("local[2]", 2, SPARK_CONF)
    name, bounds = OVERHEAD
    spec = SPECS[name](**bounds)
    inv = ["log-matching"]
    full = spark_search(spec, inv, partitions=2)                     # warm-up: workers, spec, JIT
    levels = full.depth - 1
    print(f"{name} {bounds}: {full.distinct_states} states, {levels} levels")

    def trivial_job():
        rdd = sc.parallelize([(0, 0), (1, 1)], 2).partitionBy(2)
        t = time.perf_counter()
        rdd._jrdd.count()
        return time.perf_counter() - t

    trivial_job()
    out = {}
    for label, batch in (("one level per job", 0), ("chained levels (default)", None)):
        slopes = []
        for _ in range(reps):
            kw = {} if batch is None else {"batch_states": batch}
            t = time.perf_counter()
            spark_search(spec, inv, partitions=2, budget=Budget(max_depth=2), **kw)
            one = time.perf_counter() - t
            t = time.perf_counter()
            spark_search(spec, inv, partitions=2, **kw)
            many = time.perf_counter() - t
            slopes.append((many - one) / (levels - 1))
        out[label] = statistics.median(slopes)
        print(f"  {label:26}: {out[label]:.3f} s per level (runs: {', '.join(f'{s:.3f}' for s in slopes)})")
    base = statistics.median(trivial_job() for _ in range(5))
    print(f"  trivial 2-stage Spark job : {base:.3f} s   "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    sc.stop()
    return out


def main(argv):
    if argv[:1] == ["--one"]:
        engine, config, invariants, partitions = argv[1], argv[2], argv[3].split(","), int(argv[4])
        print(json.dumps(run_one(engine, config, invariants, partitions)))
        return
    what = argv[0] if argv and argv[0] in ("overhead", "throughput", "stages", "capacity", "growth") else None
    rest = argv[1:] if what else argv
    invariants = THROUGHPUT_INVARIANTS
    if "--invariants" in rest:
        i = rest.index("--invariants")
        invariants = rest[i + 1]
        rest = rest[:i] + rest[i + 2:]
    pairs = 1
    if "--pairs" in rest:
        i = rest.index("--pairs")
        pairs = int(rest[i + 1])
        rest = rest[:i] + rest[i + 2:]
    if what in (None, "overhead"):
        overhead()
    if what in (None, "throughput"):
        throughput(rest[0] if rest else THROUGHPUT, invariants.split(","), pairs=pairs)
    if what == "stages":
        stages(rest[0] if rest else THROUGHPUT, invariants.split(","))
    if what == "growth":
        growth()
    if what == "capacity":
        capacity(rest[0] if rest else CAPACITY, (CAPACITY_INVARIANTS if "--invariants" not in argv
                                                 else invariants).split(","))


if __name__ == "__main__":
    main(sys.argv[1:])
