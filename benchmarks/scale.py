"""Does the exhaustive engine keep its pace as the state space grows, and what does symmetry cost?

    python benchmarks/scale.py                    # 10M states, then the whole 87.3M, each with and without symmetry
    python benchmarks/scale.py --sizes 1000000,10000000 --config kip-320:replicas=3,min_isr=2,max_epochs=2
    python benchmarks/scale.py --workers 1 --no-symmetry --fingerprint 64   # one core, plain, 64-bit keys

One search per line, each in a fresh process (so peak memory is its own), all on
one configuration (``SPEC[:BOUND=N,...]``, default the production one at 2
epochs: ``kip-320 --replicas 3 --set min_isr=2 --max-epochs 2``, 87,318,455
states), exploring every state (no invariant), stopped at each size of
``--sizes`` (``all``: to the end). Reported: states, depth, wall and CPU seconds,
CPU/wall, states per wall and per CPU second, peak resident memory and that divided by the
states, the engine's retained bytes per state, and the fingerprint width it used; then states/s at the largest
size over states/s at the smallest (goal: at least 0.8), and with symmetry over
without at each size (goal: at least 0.5). On a shared machine the CPU figures are
the ones that measure the engine; all of them are upper bounds of its cost. Run there
under a real-time priority (``chrt -r 1 python benchmarks/scale.py ...``, as root), the
searches take both cores whenever they are ready, and wall times and CPU/wall are the
engine's again (the kernel keeps 5% of each second for everything else).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from bench import parse  # noqa: E402  (one parser of configurations for every benchmark)

CONFIG = "kip-320:replicas=3,min_isr=2,max_epochs=2"
SIZES = "10000000,all"


def run_one(config, size, symmetry, workers, fingerprint):
    from isrcheck.checker.exhaustive.bfs import search
    from isrcheck.checker.engine.budget import Budget
    from isrcheck.specs import SPECS
    name, bounds, _ = parse(config)
    if not symmetry:                # compiled kernels ready before the clock starts (a first search compiles them)
        search(SPECS[name](**bounds), [], kernels="native", budget=Budget(max_states=1000))
    cpu = time.process_time()
    result = search(SPECS[name](**bounds), [], symmetry=symmetry, workers=workers or None,
                    fingerprint="64" if symmetry else fingerprint,
                    budget=Budget(max_states=None if size == "all" else int(size)))
    cpu = time.process_time() - cpu
    return {"states": result.distinct_states, "depth": result.depth, "complete": result.complete,
            "seconds": result.seconds, "cpu_seconds": cpu, "peak": result.peak_memory_bytes,
            "retained_per_state": result.bytes_per_state, "fingerprints": result.fingerprint_width}


def option(argv, name, default):
    return argv[argv.index(name) + 1] if name in argv else default


def main(argv):
    if argv[:1] == ["--one"]:
        print(json.dumps(run_one(argv[1], argv[2], argv[3] == "sym", int(argv[4]), argv[5])))
        return
    config = option(argv, "--config", CONFIG)
    sizes = option(argv, "--sizes", SIZES).split(",")
    workers = option(argv, "--workers", "0")                 # 0: every core
    fingerprint = option(argv, "--fingerprint", "auto")      # symmetric searches: 64 (96-bit keys need plain ones)
    kinds = ("no",) if "--no-symmetry" in argv else ("no", "sym")
    print(f"{config}, workers {workers if workers != '0' else 'every core'}, fingerprint {fingerprint}, "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"{'size':>10} {'sym':>4} {'states':>12} {'depth':>5} {'wall s':>8} {'cpu s':>8} {'cpu/wall':>8} "
          f"{'states/s':>10} {'st/cpu-s':>10} {'peak MB':>8} {'peak B/st':>9} {'kept B/st':>9}  fingerprints")
    rate = {}
    for size in sizes:
        for sym in kinds:
            out = subprocess.run([sys.executable, __file__, "--one", config, size, sym, workers, fingerprint],
                                 check=True, capture_output=True, text=True).stdout
            r = json.loads(out.strip().splitlines()[-1])
            rate[size, sym] = r["states"] / r["cpu_seconds"]
            print(f"{size:>10} {sym:>4} {r['states']:>12,} {r['depth']:>5} {r['seconds']:>8.1f} {r['cpu_seconds']:>8.1f} "
                  f"{r['cpu_seconds'] / r['seconds']:>8.2f} {r['states'] / r['seconds']:>10,.0f} "
                  f"{rate[size, sym]:>10,.0f} {r['peak'] / 2 ** 20:>8,.0f} {r['peak'] / r['states']:>9.1f} "
                  f"{r['retained_per_state']:>9.1f}  {r['fingerprints']}"
                  + ("" if r["complete"] or size != "all" else "  (not complete)"), flush=True)
    for sym in kinds:
        print(f"states/CPU-s at {sizes[-1]} over at {sizes[0]} ({sym} symmetry): "
              f"{rate[sizes[-1], sym] / rate[sizes[0], sym]:.2f} (goal >= 0.8)")
    if "sym" in kinds:
        for size in sizes:
            print(f"symmetry's states/CPU-s over plain at {size}: {rate[size, 'sym'] / rate[size, 'no']:.2f} "
                  f"(goal >= 0.5)")
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main(sys.argv[1:])
