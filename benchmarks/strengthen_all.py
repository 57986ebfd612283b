"""Proofs from the reachable set (checker.symbolic.strengthen), per spec: every invariant it expects to hold, proved together.

    python benchmarks/strengthen_all.py [--timeout SECONDS] [SPEC ...]

For each spec (default: all) at its default bounds: the reachable states, the verdict for
the conjunction of its expected-holds invariants, the lemmas learned, the SAT queries, and
the CPU seconds (the exhaustive search's share in brackets).
"""
import argparse
import time

from isrcheck.checker.engine.budget import Budget
from isrcheck.checker.symbolic.strengthen import strengthen
from isrcheck.specs import SPECS


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("specs", nargs="*")
    ap.add_argument("--timeout", type=float, default=600)
    args = ap.parse_args()
    print(f"{'spec':<22} {'holds':>5} {'verdict':<8} {'reachable':>10} {'lemmas':>7} {'queries':>8} {'CPU s':>12}")
    for name in args.specs or SPECS:
        spec = SPECS[name]()
        holds = [n for n, v in spec.expected.items() if v == "holds"]
        if not holds:
            continue
        cpu = time.process_time()
        r = strengthen(spec, holds, Budget(seconds=args.timeout))
        cpu = time.process_time() - cpu
        why = f"   {r.reason}" if r.reason else ""
        print(f"{name:<22} {len(holds):>5} {r.verdict:<8} {r.distinct_states or 0:>10,} {len(r.lemmas):>7,} "
              f"{r.queries:>8,} {cpu:>6.1f} ({r.phase_seconds.get('search', 0):.1f}){why}", flush=True)


if __name__ == "__main__":
    main()
