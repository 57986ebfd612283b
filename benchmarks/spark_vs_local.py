"""Spark engine benchmark: per-level overhead at small frontiers, and throughput against the local engine.

    python benchmarks/spark_vs_local.py overhead                # per-level overhead on local[2]
    python benchmarks/spark_vs_local.py throughput              # the >= 10M-state comparison (minutes)
    python benchmarks/spark_vs_local.py throughput kip-101:unflushed_loss=1,max_crashes=2 --invariants log-matching
    python benchmarks/spark_vs_local.py                         # both

overhead: a spec of ~100 states and 10 levels, so that a level's work is
nothing and its time is Spark's: one job per level and several levels chained
per job (the engine's default for small levels) are timed as the slope between
a 1-level and a 10-level search (fixed costs cancel), after a warm-up search;
the latency of a trivial two-stage Spark job and the load average are printed
alongside, since a shared machine inflates every figure.

throughput: each engine runs once in a fresh process (its own peak memory;
the Spark run on ``local[2]``, two partitions); their answers must agree.
states/s is given against wall-clock time and against the CPU time of the
whole process tree (driver, JVM, Python workers), the figure that measures the
engines on a shared machine. The Spark row adds the bytes its levels moved
(``Result.levels``): through the shuffle (Spark's shuffle write metrics) and
between the JVM and the Python workers (the records' numpy payload), in all,
at the busiest level, and per state.
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

THROUGHPUT = "hw-truncation:unflushed_loss=1,max_crashes=2"        # ~11.9 million states, 36 levels
THROUGHPUT_INVARIANTS = "single-leader-per-epoch"                    # holds there
OVERHEAD = ("hw-truncation", dict(replicas=2, max_epochs=1, max_crashes=0, max_records=1, log_size=1))
SPARK_CONF = {"spark.driver.memory": "4g"}


def parse(config):
    name, _, rest = config.partition(":")
    bounds = {k: int(v) for k, v in (kv.split("=") for kv in rest.split(",") if kv)}
    return name, bounds


def tree_cpu_seconds(pid=None):
    """CPU seconds (user + system, own and reaped children) of a process and all its descendants."""
    pid = pid or os.getpid()
    tick = os.sysconf("SC_CLK_TCK")
    parent_of, cpu = {}, {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parent_of[int(entry)] = int(fields[1])
        cpu[int(entry)] = sum(int(x) for x in fields[11:15]) / tick
    total = 0.0
    for p in cpu:
        q = p
        while q and q != pid:
            q = parent_of.get(q)
        if q == pid:
            total += cpu[p]
    return total


# --- one engine run (in its own process) ------------------------------------------------------
def run_one(engine, config, invariants, partitions):
    from isrcheck.specs import SPECS
    name, bounds = parse(config)
    spec = SPECS[name](**bounds)
    last = [0.0]

    def progress(depth, frontier, distinct, seconds, **_):
        if seconds - last[0] >= 10:
            last[0] = seconds
            print(f"  [{engine}] level {depth}: frontier {frontier:,}, {distinct:,} states, {seconds:.0f}s",
                  file=sys.stderr, flush=True)

    if engine == "local":
        from isrcheck.checker.bfs import search
        result = search(spec, invariants, progress=progress)
        cpu = tree_cpu_seconds()
    else:
        from isrcheck.checker.spark_engine import spark_context, spark_search
        sc, _ = spark_context("local[2]", partitions, SPARK_CONF)
        result = spark_search(spec, invariants, partitions=partitions, progress=progress)
        cpu = tree_cpu_seconds()             # before stopping: the JVM and its Python workers still run
        sc.stop()
    moved = {}
    if result.levels:                        # Spark: the bytes each level moved (shuffle, JVM <-> Python)
        for key in ("shuffle_write_bytes", "python_jvm_bytes"):
            per_level = [m[key] or 0 for m in result.levels]
            moved[key] = sum(per_level)
            moved["peak_level_" + key] = max(per_level)
            moved[key + "_per_state"] = round(sum(per_level) / result.distinct_states, 1)
    return {"engine": engine, "config": config, "invariants": invariants, "partitions": partitions,
            "distinct_states": result.distinct_states, "transitions": result.transitions,
            "depth": result.depth, "verdicts": result.verdicts, "seconds": round(result.seconds, 1),
            "cpu_seconds": round(cpu, 1), "states_per_second": round(result.states_per_second),
            "states_per_cpu_second": round(result.distinct_states / cpu) if cpu else None,
            "cpu_seconds_per_million_states": round(cpu / result.distinct_states * 1e6, 2),
            "peak_memory_mb": round(result.peak_memory_bytes / 2 ** 20), **moved}


def throughput(config, invariants, partitions=2):
    rows = []
    for engine in ("local", "spark"):
        cmd = [sys.executable, __file__, "--one", engine, config, ",".join(invariants), str(partitions)]
        print(f"running {engine} on {config} ...", flush=True)
        out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout
        rows.append(json.loads(out.strip().splitlines()[-1]))
        print(json.dumps(rows[-1]), flush=True)
    local, spark = rows
    same = all(local[k] == spark[k] for k in ("distinct_states", "transitions", "depth", "verdicts"))
    print(f"\n{config} [{', '.join(invariants)}]: same answers: {same}")
    print(f"{'engine':8} {'states':>12} {'seconds':>9} {'states/s':>10} {'cpu s':>9} "
          f"{'states/cpu s':>12} {'peak MB':>8}")
    for r in rows:
        print(f"{r['engine']:8} {r['distinct_states']:>12,} {r['seconds']:>9} {r['states_per_second']:>10,} "
              f"{r['cpu_seconds']:>9} {r['states_per_cpu_second']:>12,} {r['peak_memory_mb']:>8}")
    return rows


# --- per-level overhead -----------------------------------------------------------------------
def overhead(reps=3):
    from isrcheck.checker.spark_engine import spark_context, spark_search
    from isrcheck.checker.budget import Budget
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
    what = argv[0] if argv and argv[0] in ("overhead", "throughput") else None
    rest = argv[1:] if what else argv
    invariants = THROUGHPUT_INVARIANTS
    if "--invariants" in rest:
        i = rest.index("--invariants")
        invariants = rest[i + 1]
        rest = rest[:i] + rest[i + 2:]
    if what in (None, "overhead"):
        overhead()
    if what in (None, "throughput"):
        throughput(rest[0] if rest else THROUGHPUT, invariants.split(","))


if __name__ == "__main__":
    main(sys.argv[1:])
