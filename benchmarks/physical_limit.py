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
kernels, 64-bit and 96-bit keys), the bytes a state moves and the probes it makes: per expanded state its
row is read (width bytes) and its fingerprint (8 or 16); per successor 8 + 8 + 4 + 2 bytes are written
(lanes, parent, action) and read back by the partition, which writes them again in shard order (8 + 4 + 4)
and the insert reads them, probing the table once (a random 8- or 12-byte slot: a cache line); per new state
the build writes its row, its lanes, parent and action, and the level files keep 6 bytes. Then the time
those bytes and probes take at the measured bandwidth and probe throughput, against the CPU time the search
took; and the hash work (multiply-adds by delta) per successor.
"""
from __future__ import annotations

import argparse
import ctypes
import os
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
    """(result, CPU seconds, {quantity: per state}) of one search on the compiled kernels, one worker."""
    from isrcheck.checker.bfs import search
    from isrcheck.checker.budget import Budget
    from isrcheck.specs import SPECS
    name, bounds, _ = parse(config)
    spec = SPECS[name](**bounds)
    search(spec, [], workers=1, kernels="native", fingerprint=fingerprint, budget=Budget(max_states=1000))
    t = time.process_time()
    r = search(spec, [], workers=1, kernels="native", fingerprint=fingerprint,
               budget=Budget(max_states=states or None))
    cpu = time.process_time() - t
    width = spec.layout.width
    lanes = 2 if fingerprint == "96" else 1
    succ = r.transitions / r.distinct_states                 # successors per state (self-loops left out)
    read = width + 8 * lanes + succ * (8 * lanes + 4 + 2 + 8 + 4 * lanes + 4)
    written = succ * (8 * lanes + 4 + 2 + 8 + 4 * lanes + 4 + 1) + width + 8 * lanes + 4 + 2 + 6
    return r, cpu, {"row bytes": width, "successors": succ, "bytes read": read, "bytes written": written,
                    "probes": succ, "multiply-adds": None}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", default="kip-320:replicas=3,min_isr=2,max_epochs=2")
    p.add_argument("--states", type=int, default=10_000_000, help="stop the search here (0: to the end)")
    p.add_argument("--buffer-mb", type=int, default=1024, help="bandwidth and latency buffer (MB)")
    p.add_argument("--table-mb", type=int, default=256, help="table the random probes go to (MB)")
    args = p.parse_args(argv)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    print(f"{time.strftime('%Y-%m-%d %H:%M %Z')}, {cores} cores, load average {os.getloadavg()[0]:.1f}")
    figures = machine(loops(), cores, args.buffer_mb, args.table_mb)
    print(f"{'':28s} {'one core':>10s} {f'{cores} cores':>10s}")
    for k, (one, every) in figures.items():
        print(f"{k:28s} {one:>10.2f} {'' if every is None else f'{every:>10.2f}'}")
    bandwidth = min(figures["read GB/s"][0], figures["write GB/s"][0]) * 1e9
    probe = figures["random probe ns (prefetch)"][0]
    for fingerprint in ("64", "96"):
        r, cpu, c = search_costs(args.config, args.states, fingerprint)
        moved = c["bytes read"] + c["bytes written"]
        memory_ns = moved / bandwidth * 1e9
        probe_ns = c["probes"] * probe
        print(f"\n{args.config}, {fingerprint}-bit keys: {r.distinct_states:,} states, {r.transitions:,} transitions, "
              f"{cpu:.2f} CPU s = {cpu / r.distinct_states * 1e9:.0f} ns a state "
              f"({r.distinct_states / cpu:,.0f} states/CPU-s); load average {os.getloadavg()[0]:.1f}")
        print(f"  per state: {c['successors']:.2f} successors (probes), {c['bytes read']:.0f} bytes read, "
              f"{c['bytes written']:.0f} written: {memory_ns:.0f} ns at {bandwidth / 1e9:.1f} GB/s, probes "
              f"{probe_ns:.0f} ns at {probe:.1f} ns each; bound {max(memory_ns, probe_ns):.0f} to "
              f"{memory_ns + probe_ns:.0f} ns a state; the search is {cpu / r.distinct_states * 1e9 / (memory_ns + probe_ns):.1f}x that")
    print(f"\nload average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
