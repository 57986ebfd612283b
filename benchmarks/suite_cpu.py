"""CPU time of every test in the suite: what each test costs, whatever the machine's load.

Wall times mean nothing on a shared, loaded machine; CPU seconds do. Each test is charged the CPU of the
pytest process (worker) that runs it plus that of its descendants: those waited for (RUSAGE_CHILDREN) and
those still alive when the test ends (a Spark JVM, say, read from /proc). Setup, call and teardown count.

Run the suite with the plugin, then rank:

    nice python -m pytest -q -n 2 -p suite_cpu --suite-cpu=/tmp/cpu.jsonl    # PYTHONPATH=benchmarks
    python benchmarks/suite_cpu.py /tmp/cpu.jsonl                             # per file, per test, per worker

The report gives per file and per test the CPU seconds, the total, each worker's CPU to start and collect,
and the expected wall on N idle cores: the suite in collection order handed out as xdist's ``load`` and
``worksteal`` schedulers do, each test taking its measured CPU, until the last worker finishes.
"""
import json
import os
import resource
import sys
import time
from collections import defaultdict


def _descendants_cpu():
    """CPU seconds of this process's live descendants, each with what it has waited for of its own."""
    tick = os.sysconf("SC_CLK_TCK")
    parent, cpu = {}, {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parent[int(name)] = int(fields[1])
        cpu[int(name)] = sum(int(x) for x in fields[11:15]) / tick     # utime stime cutime cstime
    me, total = os.getpid(), 0.0
    for pid in cpu:
        p = parent.get(pid)
        while p and p != me and p in parent:
            p = parent[p]
        if p == me:
            total += cpu[pid]
    return total


def _cpu():
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime + _descendants_cpu()


def pytest_addoption(parser):
    parser.addoption("--suite-cpu", default=None, help="append each test's CPU seconds to this JSON-lines file")


def pytest_configure(config):
    config._suite_cpu = config.getoption("--suite-cpu")


def _write(config, row):
    path = config._suite_cpu
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(row) + "\n")


def _worker(config):
    return os.environ.get("PYTEST_XDIST_WORKER", "main")


def pytest_collection_finish(session):
    _write(session.config, {"worker": _worker(session.config), "event": "collected", "cpu": _cpu(),
                            "t": time.time(), "order": [item.nodeid for item in session.items]})


try:
    import pytest

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(item, nextitem):
        c0, t0 = _cpu(), time.time()
        yield
        _write(item.config, {"worker": _worker(item.config), "test": item.nodeid, "cpu": _cpu() - c0,
                             "start": t0, "wall": time.time() - t0,
                             "long": item.get_closest_marker("long") is not None})
except ImportError:                 # the report below needs no pytest
    pass


def pytest_sessionfinish(session):
    _write(session.config, {"worker": _worker(session.config), "event": "finished", "cpu": _cpu(),
                            "t": time.time()})


def _simulate(order, cost, cores, steal):
    """When each of ``cores`` idle workers finishes the tests ``order`` costing ``cost[test]`` CPU seconds, handed
    out as xdist does: ``load`` (steal=False: a first chunk of an eighth of the suite each, in order, then more as a
    worker's queue runs low) or ``worksteal`` (halves, then an idle worker takes half the longest queue's tail).
    Returns (each worker's finishing time, the last test to finish)."""
    pending, queues, clock = list(order), [[] for _ in range(cores)], [0.0] * cores
    if steal:
        for i in range(cores):
            n = len(pending) // (cores - i)
            queues[i], pending = pending[:n], pending[n:]
    else:
        chunk = max(2, len(pending) // cores // 4)
        for q in queues:
            q.extend(pending[:chunk])
            del pending[:chunk]
    last = None
    while True:
        for i, q in enumerate(queues):          # refill or steal for the worker about to pick its next test
            if steal and len(q) < 2:
                victim = max(range(cores), key=lambda j: len(queues[j]))
                n = min(len(queues[victim]) // 2, max(0, len(queues[victim]) - 2))
                if n:
                    q.extend(queues[victim][-n:])
                    del queues[victim][-n:]
            elif not steal and pending and len(q) < max(2, len(pending) // cores // 4):
                n = max(2, len(pending) // cores // 2) - len(q)
                q.extend(pending[:n])
                del pending[:n]
        busy = [i for i in range(cores) if queues[i]]
        if not busy:
            return clock, last
        i = min(busy, key=clock.__getitem__)    # the worker free first takes its next test
        test = queues[i].pop(0)
        clock[i] += cost.get(test, 0.0)
        if clock[i] >= max(clock):
            last = test


def report(path, top=40, cores=2, order=None):
    rows = [json.loads(line) for line in open(path)]
    if order:                       # a file of node ids in collection order (pytest --collect-only -q)
        rows.append({"order": [line.strip() for line in open(order) if "::" in line]})
    tests = [r for r in rows if "test" in r]
    by_file, by_worker = defaultdict(float), defaultdict(float)
    for r in tests:
        by_file[r["test"].split("::")[0]] += r["cpu"]
        by_worker[r["worker"]] += r["cpu"]
    finished = {r["worker"]: r["cpu"] for r in rows if r.get("event") == "finished"}
    collected = {r["worker"]: r["cpu"] for r in rows if r.get("event") == "collected"}
    total = sum(r["cpu"] for r in tests)
    print(f"{len(tests)} tests, {total:.0f} CPU s in tests ({total / 60:.1f} CPU min)")
    for w in sorted(by_worker):
        extra = finished.get(w, 0) - by_worker[w]
        print(f"  worker {w}: {by_worker[w]:.0f} s in tests, {collected.get(w, 0):.1f} s to start and collect, "
              f"{extra:.1f} s outside tests in all")
    print("\nper file (CPU s):")
    for f, c in sorted(by_file.items(), key=lambda kv: -kv[1]):
        print(f"  {c:8.1f}  {f}")
    print(f"\nslowest {top} tests (CPU s, wall s):")
    for r in sorted(tests, key=lambda r: -r["cpu"])[:top]:
        print(f"  {r['cpu']:8.1f} {r['wall']:8.1f}  {'long ' if r['long'] else ''}{r['test']}")
    order = next((r["order"] for r in rows if "order" in r), None)
    if order is None:               # a run without the order: as the workers ran them, long tests first
        order = [r["test"] for r in sorted(tests, key=lambda r: (not r["long"], r["start"]))]
    cost = {r["test"]: r["cpu"] for r in tests}
    start = max(collected.values(), default=0)
    print(f"\nexpected wall on {cores} idle cores, from each test's CPU, {start:.0f} s to start and collect:")
    for name, steal in (("load", False), ("worksteal", True)):
        clock, last = _simulate(order, cost, cores, steal)
        print(f"  --dist {name:9}: {start + max(clock):4.0f} s = {(start + max(clock)) / 60:.1f} min; workers "
              f"busy {', '.join(f'{x:.0f}' for x in clock)} s; the last to finish: {last}")


if __name__ == "__main__":
    import argparse
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("jsonl")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--order", help="the collection order, from an older run that did not record it")
    a = parser.parse_args()
    report(a.jsonl, a.top, a.cores, a.order)
