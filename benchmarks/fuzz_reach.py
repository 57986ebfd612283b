"""Fuzzer reach: time to find and shrunk length of every expected violation in specs/, at 5 replicas.

    python benchmarks/fuzz_reach.py [--replicas 5] [--budget 60] [--seed 0] [--jobs 1]
                                    [--bound max_epochs=8 ...] [--only SPEC[/INVARIANT] ...] [--json FILE]

For every spec in ``specs.SPECS`` and every invariant it expects "violated",
fuzzes that invariant alone (``checker.fuzz.fuzz``, seed ``--seed``) at
``--replicas`` replicas, the spec's default bounds otherwise, raised by any
``--bound`` given (a bound is only ever raised: ``--bound max_epochs=8`` leaves a
spec whose default is higher alone). Each fuzz runs in its own process, on a
CPU-time clock (``fuzz(..., clock=time.process_time)``): the budget
(``--budget``, CPU seconds, shrinking and minimizing after it) and the time to
find (from the start of the fuzz, compilation included) are that process's CPU
time, so the figures hold whatever else loads the machine; the whole row's CPU
and wall time (search, shrinking, minimizing) are shown too. Lengths: the first failing run found, after Hypothesis's
shrinking, after ``checker.minimize``; "bfs" is the exhaustive engine's
shortest counterexample at the spec's default bounds (counterexamples/), for
scale only (the fuzzer never reads it). Prints a markdown table and the load
average; ``--json`` also writes one object per row.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _bounds(cls, replicas, raised):
    bounds = {"replicas": replicas}
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
    spec_name, invariant, bounds, budget, seed = task
    from isrcheck.checker.fuzz import fuzz
    from isrcheck.checker.budget import Budget
    from isrcheck.specs import SPECS
    cpu0, wall0 = time.process_time(), time.monotonic()
    try:
        spec = SPECS[spec_name](**bounds)
    except Exception as e:                      # noqa: BLE001 — a spec that does not load is a row, not a crash
        return {"spec": spec_name, "invariant": invariant, "bounds": bounds, "verdict": f"error: {e}",
                "bfs_shortest": _shortest(spec_name, invariant)}
    result = fuzz(spec, [invariant], Budget(seconds=budget), seed=seed, clock=time.process_time)
    row = {"spec": spec_name, "invariant": invariant, "bounds": bounds, "verdict": result.verdicts[invariant],
           "runs": result.runs, "transitions": result.transitions,
           "cpu_seconds": round(time.process_time() - cpu0, 1), "wall_seconds": round(time.monotonic() - wall0, 1),
           "bfs_shortest": _shortest(spec_name, invariant)}
    found = result.found.get(invariant)
    if found:
        row.update(found)
    return row


def _cell(row, budget):
    if row["verdict"].startswith("error"):
        return row["verdict"], "—"
    if row["verdict"] != "violated":
        return f"not found in {budget:g} CPU s", "—"
    return (f"{row['cpu_seconds_to_find']:.1f}",
            f"{row['found_length']} → {row['hypothesis_length']} → {row['minimized_length']}")


def main(argv=None):
    from isrcheck.specs import SPECS
    p = argparse.ArgumentParser(prog="fuzz_reach.py", description=__doc__.split("\n")[0])
    p.add_argument("--replicas", type=int, default=5)
    p.add_argument("--budget", type=float, default=60.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--bound", action="append", default=[], help="NAME=VALUE, raised where the default is lower")
    p.add_argument("--only", action="append", default=[], help="SPEC or SPEC/INVARIANT")
    p.add_argument("--json", help="also write the rows to this file (JSON lines)")
    args = p.parse_args(argv)
    raised = {k: int(v) for k, v in (b.split("=", 1) for b in args.bound)}
    tasks = []
    for name, cls in SPECS.items():
        for inv, verdict in cls.expected.items():
            if verdict != "violated":
                continue
            if args.only and not any(o in (name, f"{name}/{inv}") for o in args.only):
                continue
            tasks.append((name, inv, _bounds(cls, args.replicas, raised), args.budget, args.seed))
    start = time.monotonic()
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        rows = []
        for row in pool.map(_one, tasks):
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    if args.json:
        Path(args.json).write_text("".join(json.dumps(r) + "\n" for r in rows))
    extra = " ".join(f"{k}={v}" for k, v in raised.items())
    print(f"fuzz reach: replicas={args.replicas} {extra + ' ' if extra else ''}(raised only where a spec's default "
          f"is lower), budget {args.budget:g} CPU s per invariant, seed {args.seed}, {args.jobs} job(s); "
          f"{time.monotonic() - start:.0f} s in all; load average at the end {os.getloadavg()[0]:.2f}")
    print()
    print("| spec | invariant | bounds changed | found after (CPU s) | length first → Hypothesis → "
          "minimized | bfs shortest | row CPU / wall s |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for row in rows:
        t, lengths = _cell(row, args.budget)
        changed = ", ".join(f"{k}={v}" for k, v in row["bounds"].items())
        spent = f"{row['cpu_seconds']:.0f} / {row['wall_seconds']:.0f}" if "cpu_seconds" in row else "—"
        print(f"| {row['spec']} | {row['invariant']} | {changed} | {t} | {lengths} | {row['bfs_shortest']} | {spent} |")
    found = sum(r["verdict"] == "violated" for r in rows)
    print(f"\nfound {found} of {len(rows)}")


if __name__ == "__main__":
    main()
