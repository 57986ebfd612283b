"""Fuzzer reach: time to find and shrunk length of every expected violation in specs/, at 5 replicas.

    python benchmarks/fuzz_reach.py [--replicas 5] [--budget 60] [--seeds 5] [--first-seed 1] [--jobs 1]
                                    [--workers 1] [--bound max_epochs=8 ...] [--only SPEC[/INVARIANT] ...]
                                    [--find-only] [--hints on|off|both] [--json FILE]

For every spec in ``specs.SPECS`` and every invariant it expects "violated",
fuzzes that invariant alone (``checker.fuzzing.fuzzer.fuzz``, ``--workers`` processes) with each of
``--seeds`` seeds from ``--first-seed`` on, at ``--replicas`` replicas (0: the
spec's default), the spec's default bounds otherwise, raised by any ``--bound``
given (a bound is only ever raised: ``--bound max_epochs=8`` leaves a spec whose
default is higher alone). Each fuzz runs in its own process, on a CPU-time clock
(``fuzz(..., clock=time.process_time)``): the budget (``--budget``, CPU seconds,
shrinking and minimizing after it) and the time to find (from the start of the
fuzz, compiling the model included) are that process's CPU time, so the figures
hold whatever else loads the machine. With ``--workers N`` each worker searches for
``--budget`` CPU seconds of its own and the time to find is the CPU time of the worker
that found it, from its start: on N idle cores, about the wall time. A row gives how many seeds found it, the
median and the worst seed's CPU seconds to find (a seed that did not find it
counts as "> budget"), the median lengths (the first failing run found, after
Hypothesis's shrinking, after ``checker.traces.minimize``) and the CPU seconds the row
took in all (search, shrinking, minimizing, every seed). "bfs" is the exhaustive
engine's shortest counterexample at the spec's default bounds (counterexamples/),
for scale only (the fuzzer never reads it); "÷ bfs" is the median minimized
length over it. ``--find-only`` neither shrinks nor minimizes a find (the time to find is the same,
the row's CPU seconds far fewer; the lengths after the first are then "—"). ``--hints off`` fuzzes without the
hints of the exhaustive search at small bounds (``fuzz(..., hints=False)``); ``--hints both`` runs every fuzz
with and without them, alternating, and gives each its row. Prints a markdown table and the load average; ``--json`` also
writes one object per fuzz.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _bounds(cls, replicas, raised):
    bounds = {"replicas": replicas} if replicas else {}
    for k, v in raised.items():
        if k in cls.defaults and v > cls.defaults[k]:
            bounds[k] = v
    return bounds


def _shortest(spec_name, invariant):
    path = ROOT / "counterexamples" / spec_name / f"{invariant}.itf.json"
    try:
        return len(json.loads(path.read_text())["states"]) - 1
    except (OSError, ValueError, KeyError):
        return None


def _one(task):
    spec_name, invariant, bounds, budget, seed, workers, find_only, hints = task
    from isrcheck.checker.fuzzing.fuzzer import fuzz
    from isrcheck.checker.engine.budget import Budget
    from isrcheck.specs import SPECS
    cpu0, wall0 = time.process_time(), time.monotonic()
    row = {"spec": spec_name, "invariant": invariant, "bounds": bounds, "seed": seed, "find_only": find_only,
           "hints": hints}
    try:
        spec = SPECS[spec_name](**bounds)
    except Exception as e:                      # noqa: BLE001 — a spec that does not load is a row, not a crash
        return {**row, "verdict": f"error: {e}"}
    result = fuzz(spec, [invariant], Budget(seconds=budget), seed=seed, derandomize=True, clock=time.process_time,
                  workers=workers, hints=hints, **({"shrink_budget_s": 0.0, "minimize_steps": False} if find_only else {}))
    workers_cpu = resource.getrusage(resource.RUSAGE_CHILDREN)            # the worker processes, if any
    row.update(verdict=result.verdicts[invariant], runs=result.runs, transitions=result.transitions,
               cpu_seconds=round(time.process_time() - cpu0 + workers_cpu.ru_utime + workers_cpu.ru_stime, 2),
               wall_seconds=round(time.monotonic() - wall0, 2))
    found = result.found.get(invariant)
    if found:
        row.update(found)
    return row


def _median_length(found, key):
    return f"{statistics.median(r[key] for r in found):g}"


def table(done, rows, budget):
    """Print the markdown table of the fuzzes ``done`` for ``rows`` ((spec, invariant, bounds, hints) each)."""
    print("| spec | invariant | bounds | found | CPU s to find: median / worst | length first → Hypothesis → "
          "minimized (median) | bfs | ÷ bfs | row CPU s |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    found_rows = 0
    for name, inv, bounds, hints in rows:
        runs = [r for r in done if (r["spec"], r["invariant"], r.get("hints", True)) == (name, inv, hints)]
        errors = [r["verdict"] for r in runs if r["verdict"].startswith("error")]
        hits = [r for r in runs if r["verdict"] == "violated"]
        found_rows += len(hits) == len(runs)
        changed = (", ".join(f"{k}={v}" for k, v in bounds.items()) or "defaults") + ("" if hints else ", no hints")
        bfs = _shortest(name, inv)
        if errors:
            print(f"| {name} | {inv} | {changed} | {errors[0]} | — | — | {bfs} | — | — |")
            continue
        times = [r["cpu_seconds_to_find"] if r["verdict"] == "violated" else None for r in runs]
        missed = [t for t in times if t is None]
        ordered = sorted(t for t in times if t is not None) + [float("inf")] * len(missed)
        median = ordered[(len(ordered) - 1) // 2] if len(ordered) % 2 else \
            (ordered[len(ordered) // 2 - 1] + ordered[len(ordered) // 2]) / 2
        shown = f"> {budget:g}" if median == float("inf") else f"{median:.1f}"
        worst = f"> {budget:g}" if missed else f"{max(times):.1f}"
        shrunk = [r for r in hits if not r.get("find_only")]
        lengths = "—" if not hits else f"{_median_length(hits, 'found_length')} → " + (
            "— → —" if not shrunk else f"{_median_length(shrunk, 'hypothesis_length')} → "
                                       f"{_median_length(shrunk, 'minimized_length')}")
        ratio = "—" if not shrunk or not bfs else \
            f"{statistics.median(r['minimized_length'] for r in shrunk) / bfs:.2f}"
        print(f"| {name} | {inv} | {changed} | {len(hits)}/{len(runs)} | {shown} / {worst} | {lengths} | {bfs} | "
              f"{ratio} | {sum(r['cpu_seconds'] for r in runs):.0f} |")
    print(f"\nfound by every seed: {found_rows} of {len(rows)} violations")


def main(argv=None):
    from isrcheck.specs import SPECS
    p = argparse.ArgumentParser(prog="fuzz_reach.py", description=__doc__.split("\n")[0])
    p.add_argument("--replicas", type=int, default=5, help="0: each spec's default")
    p.add_argument("--budget", type=float, default=60.0, help="CPU seconds per fuzz")
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--first-seed", type=int, default=1)
    p.add_argument("--jobs", type=int, default=1, help="fuzzes at once")
    p.add_argument("--workers", type=int, default=1, help="worker processes of each fuzz")
    p.add_argument("--bound", action="append", default=[], help="NAME=VALUE, raised where the default is lower")
    p.add_argument("--only", action="append", default=[], help="SPEC or SPEC/INVARIANT")
    p.add_argument("--find-only", action="store_true",
                   help="neither shrink nor minimize what is found (the time to find is the same; lengths are the "
                        "first failing run's)")
    p.add_argument("--hints", choices=["on", "off", "both"], default="on",
                   help="fuzz with the exhaustive search's hints at small bounds, without, or both (alternating)")
    p.add_argument("--json", help="also write every fuzz to this file (JSON lines)")
    p.add_argument("--table", nargs="+", metavar="FILE",
                   help="fuzz nothing: print the table of the fuzzes in these files (--json's, or the JSON lines "
                        "printed on stderr, e.g. of a run cut short)")
    args = p.parse_args(argv)
    if args.table:
        done = [json.loads(line) for f in args.table for line in Path(f).read_text().splitlines()
                if line.startswith("{")]
        rows = {(r["spec"], r["invariant"], r.get("hints", True)): r["bounds"] for r in reversed(done)}
        table(done, [(name, inv, bounds, hints) for (name, inv, hints), bounds in reversed(rows.items())], args.budget)
        return
    raised = {k: int(v) for k, v in (b.split("=", 1) for b in args.bound)}
    rows = []
    for name, cls in SPECS.items():
        for inv, verdict in cls.expected.items():
            if verdict != "violated":
                continue
            if args.only and not any(o in (name, f"{name}/{inv}") for o in args.only):
                continue
            rows.append((name, inv, _bounds(cls, args.replicas, raised)))
    modes = {"on": [True], "off": [False], "both": [True, False]}[args.hints]
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    tasks = [(name, inv, bounds, args.budget, seed, args.workers, args.find_only, hints)
             for name, inv, bounds in rows for seed in seeds for hints in modes]      # with and without, alternating
    start = time.monotonic()
    done = []
    with ProcessPoolExecutor(max_workers=args.jobs, max_tasks_per_child=1) as pool:
        for run in pool.map(_one, tasks):
            done.append(run)
            print(json.dumps(run), file=sys.stderr, flush=True)
    if args.json:
        Path(args.json).write_text("".join(json.dumps(r) + "\n" for r in done))
    extra = " ".join(f"{k}={v}" for k, v in raised.items())
    print(f"fuzz reach: replicas={args.replicas or 'default'} {extra + ' ' if extra else ''}(raised only where a "
          f"spec's default is lower), budget {args.budget:g} CPU s per fuzz, seeds {seeds.start}..{seeds.stop - 1}, "
          f"{args.jobs} job(s) of {args.workers} worker(s); {time.monotonic() - start:.0f} s in all; load average at the end "
          f"{os.getloadavg()[0]:.2f}")
    print()
    table(done, [(name, inv, bounds, hints) for name, inv, bounds in rows for hints in modes], args.budget)


if __name__ == "__main__":
    main()
