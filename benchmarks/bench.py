"""Exhaustive-engine benchmark: distinct states, states/s, bytes per visited state, peak memory.

    python benchmarks/bench.py                       # the default configurations
    python benchmarks/bench.py kip-320:replicas=3,max_epochs=2 hw-truncation:max_crashes=2@log-matching

A configuration is ``SPEC[:BOUND=N,...][@INVARIANT]``; without an invariant, the
first one the spec expects to hold at its default bounds. A benchmark measures a
full search, so a configuration whose invariant breaks is reported as cut short.
Each configuration runs in a fresh process (so peak memory is its own). states/s is
reported against wall-clock time and against this process's CPU time: on a shared
machine the CPU figure is the one that measures the engine.
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


def run_one(config, symmetry=False):
    """Run in this process and return the measurements as a dict."""
    from isrcheck.checker.bfs import search
    from isrcheck.specs import SPECS
    name, bounds, invariant = parse(config)
    spec = SPECS[name](**bounds)
    invariant = invariant or next(n for n, v in spec.expected.items() if v == "holds")
    cpu = time.process_time()
    result = search(spec, [invariant], symmetry=symmetry)
    cpu = time.process_time() - cpu
    return {"config": config, "symmetry": symmetry, "complete": result.complete,
            "distinct_states": result.distinct_states,
            "transitions": result.transitions, "depth": result.depth, "seconds": round(result.seconds, 2),
            "cpu_seconds": round(cpu, 2), "states_per_second": round(result.states_per_second),
            "states_per_cpu_second": round(result.distinct_states / cpu),
            "bytes_per_state": round(result.bytes_per_state, 2),
            "peak_memory_mb": round(result.peak_memory_bytes / 2 ** 20)}


def main(argv):
    if argv[:1] == ["--one"]:
        print(json.dumps(run_one(argv[1], symmetry=argv[2:] == ["--symmetry"])))
        return
    symmetry = "--symmetry" in argv
    configs = [a for a in argv if not a.startswith("--")] or DEFAULTS
    print(f"{'configuration':72} {'states':>11} {'depth':>5} {'wall s':>7} {'cpu s':>7} "
          f"{'states/s':>10} {'st/cpu-s':>10} {'B/state':>8} {'peak MB':>8}")
    for config in configs:
        cmd = [sys.executable, __file__, "--one", config] + (["--symmetry"] if symmetry else [])
        r = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
        print(f"{config + (' +sym' if symmetry else ''):72} {r['distinct_states']:>11,} {r['depth']:>5} "
              f"{r['seconds']:>7} {r['cpu_seconds']:>7} {r['states_per_second']:>10,} "
              f"{r['states_per_cpu_second']:>10,} {r['bytes_per_state']:>8} {r['peak_memory_mb']:>8}"
              + ("" if r["complete"] else "  (cut short: the invariant broke)"))


if __name__ == "__main__":
    main(sys.argv[1:])
