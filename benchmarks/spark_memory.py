"""Spark memory per executor: each executor's share of a search against the local engine's peak.

    python benchmarks/spark_memory.py                     # the capacity target at 2 epochs: local, then N = 2, 4
    python benchmarks/spark_memory.py --executors 2,4 kip-320:replicas=3,min_isr=2,max_epochs=2
    python benchmarks/spark_memory.py --executors 2 hw-truncation:replicas=2,max_epochs=2     # a quick check

Each run is a fresh process: the local engine (its peak resident memory, VmHWM), then the Spark engine on
``local-cluster[N,1,1024]`` for each N (N executor JVMs of one core and 1 GB, each with its own Python workers;
N partitions), whose answers must be the local engine's. An executor's share is sampled, and its peak kept:

- its processes: the executor JVM and every process under it (Spark's Python daemon and workers), resident
  memory (RSS: private and mapped file pages alike), once a second;
- the page cache its partition's files hold (the visited table, the frontier and successor files and its spares, the Parquet
  files: partition K is executor K's, as the search's partitions are its executors), counted page by page
  with ``mincore`` every few seconds;
- their sum at each sample. A process's pages of its partition's files that it has mapped are counted once, with
  the page cache (its resident memory less those mappings, read from ``/proc/PID/smaps``); its other mappings
  (another partition's files it reads, libraries) count with the process. The executor's JVM and its Python
  workers are also reported apart.

The driver (its JVM, which also runs local-cluster's master and workers, and its Python) is reported apart.
Every figure comes with the load average and free memory at the start and end of its run.
"""
from __future__ import annotations

import ctypes
import json
import mmap
import os
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

from spark_vs_local import CAPACITY, CAPACITY_INVARIANTS, _tree, parse

PAGE = mmap.PAGESIZE
_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]


def resident_bytes(path):
    """The bytes of ``path`` in the page cache now (mincore over a read-only map of it), 0 if it is gone."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return 0
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            return 0
        addr = _libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if addr in (None, ctypes.c_void_p(-1).value):
            return 0
        try:
            pages = np.zeros((size + PAGE - 1) // PAGE, dtype=np.uint8)
            _libc.mincore(addr, size, pages.ctypes.data)
            return int(np.count_nonzero(pages & 1)) * PAGE
        finally:
            _libc.munmap(addr, size)
    finally:
        os.close(fd)


def partition_files(workdir, p):
    """Partition ``p``'s files in a Spark workdir: its visited table, frontier directory, spare files (the pieces
    and successor files it wrote for levels since dropped, which it writes over), and Parquet files."""
    name = f"part-{p:05d}"
    found = [os.path.join(workdir, "visited", f"{name}.table")]
    for top in (os.path.join(workdir, "frontier-files", name), os.path.join(workdir, "frontier-files", "spares", name)):
        for d, _, files in os.walk(top):
            found += [os.path.join(d, f) for f in files]
    levels = os.path.join(workdir, "levels")
    for lv in os.listdir(levels) if os.path.isdir(levels) else ():
        found.append(os.path.join(levels, lv, f"{name}.parquet"))
    return found


def _rss(pid):
    try:
        with open(f"/proc/{pid}/statm") as fh:
            return int(fh.read().split()[1]) * PAGE
    except (OSError, IndexError):
        return 0


def _rss_outside(pid, counted):
    """``pid``'s resident bytes less those of its mappings of the files in ``counted`` (/proc/PID/smaps): the
    memory that is the process's own, apart from its partition's files, which the page cache count holds."""
    own = 0
    inside = False
    try:
        with open(f"/proc/{pid}/smaps") as fh:
            for line in fh:
                if line[0] in "0123456789abcdef" and "-" in line.split(" ", 1)[0]:
                    fields = line.split(None, 5)
                    inside = len(fields) == 6 and fields[5].rstrip("\n") in counted
                elif line.startswith("Rss:") and not inside:
                    own += int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return 0
    return own


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().split(b"\0")
    except OSError:
        return []


class ExecutorFootprint:
    """Per executor of this driver's local-cluster, the peak of its process tree's resident memory, of its
    partition's files in the page cache, and of their sum (see the module's docstring); and the driver's peak."""

    def __init__(self, workdir, executors, period=1.0, files_every=3):
        self.workdir, self.n, self.period, self.files_every = workdir, executors, period, files_every
        self.peak = {k: dict(processes=0, jvm=0, python=0, files=0, total=0) for k in range(executors)}
        self.driver_peak, self.files_now, self.samples = 0, [0] * executors, 0
        self.counted = [frozenset()] * executors
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _executors(self, tree):
        """{executor id: [its JVM and every process below it]}."""
        roots = {}
        for pid in tree:
            cmd = _cmdline(pid)
            if b"org.apache.spark.executor.CoarseGrainedExecutorBackend" in cmd and b"--executor-id" in cmd:
                roots[int(cmd[cmd.index(b"--executor-id") + 1])] = pid
        below = {}
        for k, root in roots.items():           # the executor's JVM first, then the processes below it
            below[k] = [root] + [pid for pid in tree if pid != root and self._under(pid, root, tree)]
        return below

    @staticmethod
    def _under(pid, root, tree):
        while pid and pid != root:
            pid = tree[pid][1] if pid in tree else None
        return pid == root

    def _sample(self):
        tree = _tree(os.getpid())
        executors = self._executors(tree)
        if self.samples % self.files_every == 0:
            self.counted = [frozenset(partition_files(self.workdir, k)) for k in range(self.n)]
            self.files_now = [sum(resident_bytes(f) for f in self.counted[k]) for k in range(self.n)]
        self.samples += 1
        inside = set()
        for k, pids in executors.items():
            if k >= self.n:                 # a replacement executor (none are lost here): counted as its slot
                k %= self.n
            inside |= set(pids)
            jvm = _rss_outside(pids[0], self.counted[k]) if pids else 0
            python = sum(_rss_outside(p, self.counted[k]) for p in pids[1:])
            processes = jvm + python
            peak = self.peak[k]
            peak["processes"] = max(peak["processes"], processes)
            peak["jvm"] = max(peak["jvm"], jvm)
            peak["python"] = max(peak["python"], python)
            peak["files"] = max(peak["files"], self.files_now[k])
            peak["total"] = max(peak["total"], processes + self.files_now[k])
        self.driver_peak = max(self.driver_peak, sum(_rss(p) for p in tree if p not in inside))

    def _run(self):
        while not self.done.wait(self.period):
            self._sample()

    def finish(self):
        self._sample()
        self.done.set()
        self.thread.join()
        return dict(per_executor=self.peak, driver=self.driver_peak)


def machine():
    """The load average and the free memory now."""
    with open("/proc/meminfo") as fh:
        info = dict(line.split(":", 1) for line in fh)
    return dict(load=round(os.getloadavg()[0], 1), available_gb=round(int(info["MemAvailable"].split()[0]) / 2 ** 20, 1))


def run_one(engine, config, invariants, executors):
    from isrcheck.specs import SPECS
    name, bounds = parse(config)
    spec = SPECS[name](**bounds)
    before = machine()
    t = time.perf_counter()
    if engine == "local":
        from isrcheck.checker.engine import stop
        from isrcheck.checker.exhaustive.bfs import search
        result = search(spec, invariants)
        extra = dict(peak_bytes=stop.peak_bytes())
    else:
        from isrcheck.checker.spark.spark_engine import spark_context, spark_search
        sc, _ = spark_context(f"local-cluster[{executors},1,1024]", executors,
                              {"spark.driver.memory": "2g", "spark.executor.memory": "1g"})
        status = sc._jsc.sc().getExecutorMemoryStatus()
        deadline = time.monotonic() + 300
        while status.size() < executors + 1 and time.monotonic() < deadline:     # the driver counts as one
            time.sleep(0.5)
            status = sc._jsc.sc().getExecutorMemoryStatus()
        workdir = tempfile.mkdtemp(prefix="isrcheck-memory-")
        footprint = ExecutorFootprint(workdir, executors)
        try:
            result = spark_search(spec, invariants, partitions=executors, workdir=workdir)
        finally:
            extra = footprint.finish()
            disk = subprocess.run(["du", "-sb", workdir], capture_output=True, text=True).stdout.split()[0]
            subprocess.run(["rm", "-rf", workdir])
            sc.stop()
        extra["workdir_bytes_at_end"] = int(disk)
    return dict(engine=engine, executors=executors, config=config, distinct_states=result.distinct_states,
                transitions=result.transitions, depth=result.depth, verdicts=result.verdicts,
                seconds=round(time.perf_counter() - t, 1), machine_before=before, machine_after=machine(), **extra)


def main(argv):
    if argv[:1] == ["--one"]:
        print(json.dumps(run_one(argv[1], argv[2], argv[3].split(","), int(argv[4]))))
        return
    counts = [2, 4]
    if "--executors" in argv:
        i = argv.index("--executors")
        counts = [int(n) for n in argv[i + 1].split(",")]
        argv = argv[:i] + argv[i + 2:]
    config = argv[0] if argv else CAPACITY
    invariants = CAPACITY_INVARIANTS if config == CAPACITY else "no-committed-loss"
    rows = []
    for engine, n in [("local", 0)] + [("spark", n) for n in counts]:
        print(f"running {engine}{f' on local-cluster[{n},1,1024]' if n else ''} on {config} ...", flush=True)
        out = subprocess.run([sys.executable, __file__, "--one", engine, config, invariants, str(n)], check=True,
                             stdout=subprocess.PIPE, text=True).stdout
        rows.append(json.loads(out.strip().splitlines()[-1]))
        print(json.dumps(rows[-1]), flush=True)
    local, gb = rows[0], 2 ** 30
    print(f"\n{config} [{invariants}]: {local['distinct_states']:,} states; local engine peak "
          f"{local['peak_bytes'] / gb:.2f} GB ({local['seconds']} s)")
    for r in rows[1:]:
        same = all(r[k] == local[k] for k in ("distinct_states", "transitions", "depth", "verdicts"))
        print(f"local-cluster[{r['executors']},1,1024]: same answers {same}, {r['seconds']} s, driver "
              f"{r['driver'] / gb:.2f} GB, workdir {r['workdir_bytes_at_end'] / gb:.2f} GB at the end; "
              f"load {r['machine_before']['load']}-{r['machine_after']['load']}")
        for k, e in sorted(r["per_executor"].items(), key=lambda kv: int(kv[0])):
            print(f"  executor {k}: processes {e['processes'] / gb:.2f} GB (JVM {e['jvm'] / gb:.2f}, Python workers "
                  f"{e['python'] / gb:.2f}), files in the page cache "
                  f"{e['files'] / gb:.2f} GB, together {e['total'] / gb:.2f} GB = "
                  f"{e['total'] / local['peak_bytes']:.0%} of the local engine's peak")
    return rows


if __name__ == "__main__":
    main(sys.argv[1:])
