"""Exhaustive-engine benchmark: distinct states, states/s, bytes per visited state, peak memory.

    python benchmarks/bench.py                       # the default configurations
    python benchmarks/bench.py kip-320:replicas=3,max_epochs=2 hw-truncation:max_crashes=2@log-matching
    python benchmarks/bench.py --workers 1 --kernels numpy kip-320   # one core, the reference kernels
    python benchmarks/bench.py --max-states 20000000 kip-320:replicas=3,min_isr=2,max_epochs=2

A configuration is ``SPEC[:BOUND=N,...][@INVARIANT]``; without an invariant, the
first one the spec expects to hold at its default bounds. A benchmark measures a
full search, so a configuration whose invariant breaks is reported as cut short.
Each configuration runs in a fresh process (so peak memory is its own). states/s is
reported against wall-clock time and against this process's CPU time (all its threads;
``cpu/wall`` is how many cores it kept busy): on a shared machine the CPU figure is
the one that measures the engine. ``--workers`` (default: every core) and ``--kernels``
(native, numpy or auto; default native, compiled before the clock starts) are the
search's; ``--max-states`` cuts a configuration too large for the time at hand.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time

DEFAULTS = [
    "kip-320",
    "kip-101",
    "kip-320:max_epochs=5,max_crashes=2",                                  # 10.9 million states
    "hw-truncation:unflushed_loss=1,max_crashes=2@single-leader-per-epoch",  # 11.9 million states
]


def parse(config):
    config, _, invariant = config.partition("@")
    name, _, rest = config.partition(":")
    bounds = {k: int(v) for k, v in (kv.split("=") for kv in rest.split(",") if kv)}
    return name, bounds, invariant or None


def run_one(config, symmetry=False, workers=None, kernels="native", max_states=None):
    """Run in this process and return the measurements as a dict."""
    from isrcheck.checker.exhaustive.bfs import search
    from isrcheck.checker.engine.budget import Budget
    from isrcheck.model import backends
    from isrcheck.specs import SPECS
    name, bounds, invariant = parse(config)
    spec = SPECS[name](**bounds)
    invariant = invariant or next(n for n, v in spec.expected.items() if v == "holds")
    if kernels == "native":
        backends.native(spec).load()            # compiled (or loaded from the cache) before the clock starts
    cpu = time.process_time()
    result = search(spec, [invariant], symmetry=symmetry, workers=workers, kernels=kernels,
                    budget=Budget(max_states=max_states))
    cpu = time.process_time() - cpu
    return {"config": config, "symmetry": symmetry, "complete": result.complete, "cut": result.budget_hit,
            "distinct_states": result.distinct_states,
            "transitions": result.transitions, "depth": result.depth, "seconds": round(result.seconds, 2),
            "cpu_seconds": round(cpu, 2), "states_per_second": round(result.states_per_second),
            "states_per_cpu_second": round(result.distinct_states / cpu),
            "bytes_per_state": round(result.bytes_per_state, 2),
            "peak_memory_mb": round(result.peak_memory_bytes / 2 ** 20),
            "cpu_per_wall": round(cpu / result.seconds, 2)}


def option(argv, name, default, kind=str):
    """The value after ``name`` in argv (both removed), or the default."""
    if name not in argv:
        return default
    i = argv.index(name)
    value = kind(argv[i + 1])
    del argv[i:i + 2]
    return value


def main(argv):
    argv = list(argv)
    workers = option(argv, "--workers", None, int)
    kernels = option(argv, "--kernels", "native")
    max_states = option(argv, "--max-states", None, int)
    if argv[:1] == ["--one"]:
        print(json.dumps(run_one(argv[1], symmetry=argv[2:] == ["--symmetry"], workers=workers, kernels=kernels,
                                 max_states=max_states)))
        return
    symmetry = "--symmetry" in argv
    configs = [a for a in argv if not a.startswith("--")] or DEFAULTS
    print(f"kernels {kernels}, workers {workers or 'every core'}")
    print(f"{'configuration':60} {'states':>11} {'depth':>5} {'wall s':>7} {'cpu s':>7} {'cpu/wall':>8} "
          f"{'states/s':>10} {'st/cpu-s':>10} {'B/state':>8} {'peak MB':>8}")
    for config in configs:
        cmd = [sys.executable, __file__, "--one", config, "--kernels", kernels] + (
            ["--symmetry"] if symmetry else []) + (["--workers", str(workers)] if workers else []) + (
            ["--max-states", str(max_states)] if max_states else [])
        r = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
        print(f"{config + (' +sym' if symmetry else ''):60} {r['distinct_states']:>11,} {r['depth']:>5} "
              f"{r['seconds']:>7} {r['cpu_seconds']:>7} {r['cpu_per_wall']:>8} {r['states_per_second']:>10,} "
              f"{r['states_per_cpu_second']:>10,} {r['bytes_per_state']:>8} {r['peak_memory_mb']:>8}"
              + ("" if r["complete"] else f"  (cut short: {r['cut'] or 'the invariant broke'})"))


if __name__ == "__main__":
    main(sys.argv[1:])
