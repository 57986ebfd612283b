"""What a state costs at this machine's memory bandwidth and latency, and how far each engine is from it.

    python benchmarks/physical_limit.py                     # the machine, then the default configuration
    python benchmarks/physical_limit.py --config tla-kip320:max_epochs=3 --states 0

Part 1 measures the machine with small C loops (compiled by model/cbuild.py, as the search's kernels are),
each on one core and then on every core at once (one thread a core, ctypes releasing the GIL):

- sequential read and write bandwidth over a buffer far larger than the caches (GB/s);
- memory latency: a dependent pointer chase through a random cycle over the buffer (ns a load);
- random-access throughput: independent 8-byte reads at random slots of a table of the visited set's size,
  with and without software prefetch 16 ahead, as the visited table's insert does (ns a probe);
- first touch: writing memory the process has not touched before (the kernel faults it in and clears it).

Part 2 counts, for one search (``--config``, stopped at ``--states``, 0: to the end, one worker, compiled
kernels, 64-bit and then 96-bit keys), what a state costs the memory (``search_costs``): its row read when
it is expanded and when its successors' rows are built from it, its fingerprint lanes; per successor the
lanes, parent and instance the expansion writes, the partition by shard reads and writes again, the insert
reads, its one probe into the visited table (a random slot: a cache line), and the build's scan; per new
state its row, lanes, parent and instance written, and the 6 bytes of the level files. Then the time those
bytes take at the measured bandwidth and those probes at the measured probe throughput, against the CPU time
the search took; and the hash work: multiply-adds of fingerprint deltas per successor (one per written cell
and lane).
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import subprocess
import sys
import threading
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from bench import parse  # noqa: E402  (one parser of configurations for every benchmark)

from isrcheck.model import cbuild  # noqa: E402

SOURCE = r"""
#include <stdint.h>
#include <string.h>
typedef int64_t i64; typedef uint64_t u64;
u64 seq_read(const u64 *a, i64 n, i64 reps) {
    u64 s = 0;
    for (i64 k = 0; k < reps; k++) for (i64 i = 0; i < n; i++) s += a[i];
    return s;
}
void seq_write(u64 *a, i64 n, i64 reps) {
    for (i64 k = 0; k < reps; k++) for (i64 i = 0; i < n; i++) a[i] = (u64)(i + k);
}
u64 chase(const u64 *next, i64 steps) {
    u64 p = 0;
    for (i64 i = 0; i < steps; i++) p = next[p];
    return p;
}
u64 probes(const u64 *table, i64 cap, const u64 *keys, i64 n, i64 prefetch) {
    u64 s = 0;
    for (i64 i = 0; i < n; i++) {
        if (prefetch && i + 16 < n) __builtin_prefetch(&table[(keys[i + 16] >> 32) * (u64)cap >> 32], 0, 0);
        s += table[(keys[i] >> 32) * (u64)cap >> 32];
    }
    return s;
}
"""

P, I = ctypes.c_void_p, ctypes.c_int64


def loops():
    lib = cbuild.load("physical-limit", SOURCE)
    for name, args, res in (("seq_read", [P, I, I], ctypes.c_uint64), ("seq_write", [P, I, I], None),
                            ("chase", [P, I], ctypes.c_uint64), ("probes", [P, I, P, I, I], ctypes.c_uint64)):
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, res
    return lib


def addr(a):
    return a.__array_interface__["data"][0]


def on_threads(n, work):
    """Run ``work(i)`` on n threads at once; the wall seconds of the slowest."""
    times = [0.0] * n
    barrier = threading.Barrier(n)

    def run(i):
        barrier.wait()
        t = time.perf_counter()
        work(i)
        times[i] = time.perf_counter() - t
    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return max(times)


def machine(lib, cores, mb, table_mb):
    """The machine's figures: {name: (one core, every core)}."""
    n = (mb << 20) // 8
    out = {}
    bufs = [np.ones(n, dtype=np.uint64) for _ in range(cores)]
    for name, fn in (("read GB/s", lib.seq_read), ("write GB/s", lib.seq_write)):
        fn(addr(bufs[0]), n, 1)
        one = on_threads(1, lambda i: fn(addr(bufs[i]), n, 4))
        every = on_threads(cores, lambda i: fn(addr(bufs[i]), n, 4))
        out[name] = (4 * n * 8 / one / 1e9, cores * 4 * n * 8 / every / 1e9)
    rng = np.random.default_rng(1)
    order = rng.permutation(n).astype(np.uint64)
    nxt = np.empty(n, dtype=np.uint64)
    nxt[order] = np.roll(order, -1)                 # one random cycle through every slot
    steps = 5_000_000
    lib.chase(addr(nxt), 1000)
    out["latency ns"] = (on_threads(1, lambda i: lib.chase(addr(nxt), steps)) / steps * 1e9,
                         on_threads(cores, lambda i: lib.chase(addr(nxt), steps)) / steps * 1e9)
    cap = (table_mb << 20) // 8
    table = np.ones(cap, dtype=np.uint64)
    keys = [rng.integers(0, 2 ** 64, 5_000_000, dtype=np.uint64, endpoint=False) for _ in range(cores)]
    for pf in (0, 1):
        lib.probes(addr(table), cap, addr(keys[0]), 100_000, pf)
        one = on_threads(1, lambda i: lib.probes(addr(table), cap, addr(keys[i]), keys[i].size, pf))
        every = on_threads(cores, lambda i: lib.probes(addr(table), cap, addr(keys[i]), keys[i].size, pf))
        out[f"random probe ns{' (prefetch)' if pf else ''}"] = (one / keys[0].size * 1e9,
                                                               every / keys[0].size * 1e9 / cores)
    del bufs, nxt, table
    fresh_mb = 512
    t = time.process_time()
    a = np.empty(fresh_mb << 20, dtype=np.uint8)
    a[::4096] = 1
    out["first touch GB/s (CPU)"] = (fresh_mb / 1024 / max(time.process_time() - t, 1e-9), None)
    return out


def search_costs(config, states, fingerprint):
    """(result, CPU seconds, per-state costs) of one search on the compiled kernels, one worker: successors (each a
    probe into the table), bytes read and written (see the module docstring) and multiply-adds of fingerprint
    deltas per successor."""
    from isrcheck.checker.exhaustive.bfs import search
    from isrcheck.checker.engine.budget import Budget
    from isrcheck.checker.exhaustive.coverage import FIRED
    from isrcheck.model.backends import trace_action
    from isrcheck.model.c_kernels import _writes
    from isrcheck.model.compile import Graph
    from isrcheck.specs import SPECS
    name, bounds, _ = parse(config)
    spec = SPECS[name](**bounds)
    search(spec, [], workers=1, kernels="native", fingerprint=fingerprint, budget=Budget(max_states=1000))
    t = time.process_time()
    r = search(spec, [], workers=1, kernels="native", fingerprint=fingerprint,
               budget=Budget(max_states=states or None))
    cpu = time.process_time() - t
    width, lanes = spec.layout.width, 2 if fingerprint == "96" else 1
    s = r.transitions / r.distinct_states                # successors a state: each one probe into the table
    writes = np.array([len(_writes(trace_action(spec, a, Graph())._written)) for a in spec.actions])
    adds = float((r.coverage.counts[FIRED] * writes).sum()) * lanes / r.transitions
    wide = lanes == 2
    per_successor_read = (16 + 8 * wide          # the partition: lane 1 twice (count, scatter), lane 2 once
                          + 8 + 4 * wide + 4 + 1  # the insert: the key in shard order, its position, its mark
                          + 8 * lanes + 4 + 2)    # the build's scan: lanes, parent, instance
    per_successor_written = (8 * lanes + 4 + 2    # the expansion: lanes, parent, instance
                             + 4 + 8 + 4 * wide   # the partition: position, key in shard order
                             + 1 + 1)             # the fresh mark: cleared, set
    read = 2 * width + 8 * lanes + s * per_successor_read       # the state's row when expanded and when built
    written = width + 8 * lanes + 6 + 6 + s * per_successor_written     # its row, lanes, parent, action; level files
    return r, cpu, {"successors": s, "read": read, "written": written, "adds": adds}


def engine_seconds(config, states, engine):
    """(states, CPU seconds) of the local engine on ``engine``'s kernels ("compiled", "numba" or "numpy"; 64-bit
    keys, one worker), in a process of its own (numba's: one without a C compiler), kernels ready beforehand."""
    env = dict(os.environ, CC="/nonexistent") if engine == "numba" else None
    out = subprocess.run([sys.executable, __file__, "--engine", engine, "--config", config, "--states", str(states)],
                         check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


def one_engine(config, states, engine):
    from isrcheck.checker.exhaustive.bfs import search
    from isrcheck.checker.engine.budget import Budget
    from isrcheck.specs import SPECS
    name, bounds, _ = parse(config)
    kernels = "numpy" if engine == "numpy" else "native"
    search(SPECS[name](**bounds), [], kernels=kernels, budget=Budget(max_states=300_000))     # kernels ready
    t = time.process_time()
    r = search(SPECS[name](**bounds), [], workers=1, kernels=kernels, fingerprint="64",
               budget=Budget(max_states=states or None))
    print(json.dumps([r.distinct_states, time.process_time() - t]))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", default="kip-320:replicas=3,min_isr=2,max_epochs=2")
    p.add_argument("--states", type=int, default=10_000_000, help="stop the search here (0: to the end)")
    p.add_argument("--buffer-mb", type=int, default=1024, help="bandwidth and latency buffer (MB)")
    p.add_argument("--table-mb", type=int, default=256, help="table the random probes go to (MB)")
    p.add_argument("--engines", default="compiled,numba,numpy",
                   help="the local engine's kernels to time on the same search (64-bit keys, one worker)")
    p.add_argument("--engine", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.engine:
        return one_engine(args.config, args.states, args.engine)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    print(f"{time.strftime('%Y-%m-%d %H:%M %Z')}, {cores} cores, load average {os.getloadavg()[0]:.1f}")
    figures = machine(loops(), cores, args.buffer_mb, args.table_mb)
    print(f"{'':28s} {'one core':>10s} {f'{cores} cores':>10s}")
    for k, (one, every) in figures.items():
        print(f"{k:28s} {one:>10.2f} {'' if every is None else f'{every:>10.2f}'}")
    bandwidth = min(figures["read GB/s"][0], figures["write GB/s"][0]) * 1e9
    probe = figures["random probe ns (prefetch)"][0]
    bounds = {}
    for fingerprint in ("64", "96"):
        r, cpu, c = search_costs(args.config, args.states, fingerprint)
        per_state = cpu / r.distinct_states * 1e9
        memory_ns = (c["read"] + c["written"]) / bandwidth * 1e9
        probe_ns = c["successors"] * probe
        print(f"\n{args.config}, {fingerprint}-bit keys, one worker: {r.distinct_states:,} states, "
              f"{r.transitions:,} transitions, {cpu:.2f} CPU s: {per_state:.0f} ns a state "
              f"({r.distinct_states / cpu:,.0f} states/CPU-s); load average {os.getloadavg()[0]:.1f}")
        print(f"  a state: {c['successors']:.2f} successors (probes), {c['read']:.0f} bytes read and "
              f"{c['written']:.0f} written, {c['adds'] * c['successors']:.0f} multiply-adds "
              f"({c['adds']:.1f} a successor)")
        print(f"  at {bandwidth / 1e9:.1f} GB/s and {probe:.1f} ns a probe: bytes {memory_ns:.0f} ns, probes "
              f"{probe_ns:.0f} ns, together {memory_ns + probe_ns:.0f} ns: the search takes "
              f"{per_state / (memory_ns + probe_ns):.1f}x that")
        bounds[fingerprint] = memory_ns + probe_ns
    for engine in [e for e in args.engines.split(",") if e]:
        states, seconds = engine_seconds(args.config, args.states, engine)
        print(f"the local engine on {engine} kernels, 64-bit keys, one worker: {states / seconds:,.0f} states/CPU-s, "
              f"{seconds / states * 1e9:.0f} ns a state: {seconds / states * 1e9 / bounds['64']:.1f}x the 64-bit "
              f"bound above; load average {os.getloadavg()[0]:.1f}")
    print(f"\nload average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
