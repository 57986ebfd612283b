"""Liveness benchmark: every property of a configuration, against the invariant search of the same states.

    python benchmarks/liveness_bench.py                  # the default configurations
    python benchmarks/liveness_bench.py kip-320:max_crashes=2 kafka-1120

For each configuration (``SPEC[:BOUND=N,...]``, as in bench.py), in fresh processes: the
exhaustive invariant search (bench.py's measurement) and then checker/exhaustive/liveness.py on every
property of the spec, with the CPU seconds (exploration included), the bytes retained per state
and the peak memory of each.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time

from bench import parse

DEFAULTS = ["kip-320", "kafka-1120", "kip-320:max_crashes=2"]          # the last: 4.0 million states


def run_one(config):
    from isrcheck.checker.exhaustive import liveness
    from isrcheck.specs import SPECS
    name, bounds, _ = parse(config)
    spec = SPECS[name](**bounds)
    cpu = time.process_time()
    results = liveness.check(spec, list(spec.properties))
    cpu = time.process_time() - cpu
    first = next(iter(results.values()))
    return {"config": config, "distinct_states": first.distinct_states, "cpu_seconds": round(cpu, 2),
            "verdicts": {n: r.verdict for n, r in results.items()},
            "bytes_per_state": round(max(r.bytes_per_state for r in results.values()), 1),
            "peak_memory_mb": round(first.peak_memory_bytes / 2 ** 20)}


def main(argv):
    if argv[:1] == ["--one"]:
        print(json.dumps(run_one(argv[1])))
        return
    print(f"{'configuration':28} {'states':>11} {'cpu s':>7} {'B/state':>8} {'peak MB':>8} "
          f"{'invariant search: cpu s':>24} {'peak MB':>8}  verdicts")
    for config in argv or DEFAULTS:
        live = json.loads(subprocess.run([sys.executable, __file__, "--one", config], check=True,
                                         capture_output=True, text=True).stdout)
        bench = json.loads(subprocess.run([sys.executable, __file__.replace("liveness_bench", "bench"), "--one",
                                           config], check=True, capture_output=True, text=True).stdout)
        verdicts = " ".join(f"{n}={v}" for n, v in live["verdicts"].items())
        print(f"{config:28} {live['distinct_states']:>11,} {live['cpu_seconds']:>7} {live['bytes_per_state']:>8} "
              f"{live['peak_memory_mb']:>8} {bench['cpu_seconds']:>24} {bench['peak_memory_mb']:>8}  {verdicts}")


if __name__ == "__main__":
    main(sys.argv[1:])
