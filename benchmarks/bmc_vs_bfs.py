"""Shortest counterexamples: the exhaustive engine against bounded model checking (z3 + CaDiCaL).

    python benchmarks/bmc_vs_bfs.py                          # every spec, every expected violation
    python benchmarks/bmc_vs_bfs.py acks-1 kip-320 --timeout 30
    python benchmarks/bmc_vs_bfs.py --timeout 600 --json rows.jsonl > table.md

For every spec in ``specs.SPECS`` (or those named) and every invariant its
``expected`` dict says is "violated" at the default bounds, this runs

1. ``checker.exhaustive.bfs.search(spec, [inv])``: the length of the shortest trace (in
   states, the initial state counting 1) and the CPU seconds it took;
2. ``checker.symbolic.bmc.bmc(spec, [inv], depth)`` with depth = that length and a
   time limit per violation (``--timeout``, default 600 s of wall-clock time):
   the length of the trace it found, or how deep it got before the time ran out.

Both engines find a violation at its smallest depth, so the lengths must agree;
"DIFFERS" in the last column would be a bug in one of them. Rows run one after
the other in this process (both engines are single-threaded) and print as they finish, as
a markdown table on stdout; ``--json FILE`` appends one JSON line per row too,
so an interrupted run keeps what it measured. CPU seconds (time.process_time)
measure the engine on a shared machine; the BMC time limit is wall-clock.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

from isrcheck.checker.exhaustive.bfs import search
from isrcheck.checker.symbolic.bmc import bmc
from isrcheck.checker.engine.budget import Budget
from isrcheck.specs import SPECS


def measure(name, inv, timeout):
    row = {"spec": name, "invariant": inv, "timeout_s": timeout}
    spec = SPECS[name]()                     # built outside the timing: about 0.2 s CPU, not the engine's
    cpu = time.process_time()
    result = search(spec, [inv])
    row["bfs_cpu_s"] = round(time.process_time() - cpu, 2)
    row["bfs_wall_s"] = round(result.seconds, 2)
    if inv not in result.violations:
        row["bfs_len"] = None
        row["note"] = f"BFS found no violation (complete={result.complete}, budget={result.budget_hit})"
        return row
    depth = row["bfs_len"] = len(result.violations[inv].steps)
    spec = SPECS[name]()
    cpu = time.process_time()
    try:
        res = bmc(spec, [inv], depth, Budget(seconds=timeout))
    except Exception as e:                   # an untranslatable spec, an internal error: report, go on
        row["bmc_cpu_s"] = round(time.process_time() - cpu, 2)
        row["bmc_error"] = f"{type(e).__name__}: {e}"
        return row
    row["bmc_cpu_s"] = round(time.process_time() - cpu, 2)
    row["bmc_wall_s"] = round(res.seconds, 2)
    row["bmc_depth_checked"] = res.depth
    row["bmc_budget"] = res.budget_hit
    row["bmc_len"] = len(res.violations[inv].steps) if inv in res.violations else None
    row["same"] = row["bmc_len"] == depth
    return row


def cells(row):
    bmc_len = row.get("bmc_len")
    if "bmc_error" in row:
        found, same = f"error: {row['bmc_error']}", ""
    elif row.get("bfs_len") is None:
        found, same = "(not run)", row.get("note", "")
    elif bmc_len is not None:
        found, same = str(bmc_len), "same" if row["same"] else "DIFFERS"
    elif row["bmc_budget"] and row["bmc_budget"].startswith("z3 time limit"):
        found, same = f"not reached in {row['timeout_s']:g} s (deepest level checked: {row['bmc_depth_checked']})", ""
    else:                                    # z3 gave up, or no violation up to the BFS length (a bug)
        found, same = f"none ({row['bmc_budget']}; deepest level checked: {row['bmc_depth_checked']})", "DIFFERS?"
    return [row["spec"], row["invariant"], str(row.get("bfs_len")), f"{row['bfs_cpu_s']:.2f}",
            found, f"{row['bmc_cpu_s']:.2f}" if "bmc_cpu_s" in row else "", same]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("specs", nargs="*", help="spec names (default: all of specs.SPECS)")
    ap.add_argument("--timeout", type=float, default=600.0, help="BMC wall-clock seconds per violation (600)")
    ap.add_argument("--json", metavar="FILE", help="append one JSON line per row to FILE")
    args = ap.parse_args(argv)
    unknown = [s for s in args.specs if s not in SPECS]
    if unknown:
        ap.error(f"unknown spec(s) {', '.join(unknown)}; known: {', '.join(SPECS)}")
    names = args.specs or list(SPECS)
    print("| spec | invariant | BFS length | BFS CPU s | BMC length | BMC CPU s | same |")
    print("|---|---|---:|---:|---|---:|---|", flush=True)
    for name in names:
        for inv in [i for i, v in SPECS[name]().expected.items() if v == "violated"]:
            row = measure(name, inv, args.timeout)
            print("| " + " | ".join(cells(row)) + " |", flush=True)
            if args.json:
                with open(args.json, "a") as f:
                    f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
