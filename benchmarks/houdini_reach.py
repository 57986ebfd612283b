"""How far automatic lemmas get: per spec and expected-holds invariant, the auto-lemma proof's verdict.

    python benchmarks/houdini_reach.py [SPEC ...]

For each spec (default: all) at its default bounds: the exhaustive engine's reachable
states, the candidates mined from them, one Houdini run (shared by the spec's invariants),
then per invariant the verdict of the auto-lemma proof (k=1), the number of lemmas and the
CPU seconds (Houdini's share counted once, on the spec's line).
"""
import sys
import time

from checker.houdini import discover, prove_invariant
from specs import SPECS


def main(names):
    print(f"{'spec':<22} {'invariant':<38} {'verdict':<14} {'lemmas':>7} {'CPU s':>7}")
    for name in names or SPECS:
        spec = SPECS[name]()
        holds = [n for n, v in spec.expected.items() if v == "holds"]
        cpu = time.process_time()
        found = discover(spec, holds)
        cpu = time.process_time() - cpu
        print(f"{name:<22} {'(houdini)':<38} {'':<14} {len(found.survivors):>7} {cpu:>7.1f}   "
              f"{found.reachable_states:,} states, {found.mined} mined, {found.candidates} candidates, "
              f"{found.rounds} rounds", flush=True)
        for inv in holds:
            cpu = time.process_time()
            result = prove_invariant(spec, inv, found)
            cpu = time.process_time() - cpu
            why = f"   {result.reason}" if result.verdict != "proved" and result.reason else ""
            print(f"{'':<22} {inv:<38} {result.verdict:<14} {len(result.lemmas):>7} {cpu:>7.1f}{why}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
