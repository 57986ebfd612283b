"""The headline proof at 2 and 3 replicas: KIP-320 never loses an acknowledged record, for every depth.

    python benchmarks/prove_kip320.py            # replicas 2 and 3
    python benchmarks/prove_kip320.py 3

Runs ``isrcheck prove --spec kip-320 --invariant no-committed-loss --replicas N`` in-process with the
spec's 25 lemmas and prints one line per replica count: verdict, k, CPU seconds. Exits 1 unless every
proof succeeds. The 3-replica proof (1.5-2.5 min of CPU) left the test suite for its 10-minute budget;
tests/test_symbolic.py keeps the 2-replica one.
"""
from __future__ import annotations

import sys
import time

from isrcheck.checker.symbolic.induction import prove
from isrcheck.specs.kip_320 import Kip320


def main(counts):
    ok = True
    for replicas in counts:
        proof = Kip320.proofs["no-committed-loss"]
        spec = Kip320(replicas=replicas, **proof["settings"])
        start = time.process_time()
        result = prove(spec, "no-committed-loss", 1, lemmas=list(proof["lemmas"]))
        print(f"kip-320 no-committed-loss replicas={replicas}: {result.verdict} (k=1, "
              f"{len(proof['lemmas'])} lemmas) in {time.process_time() - start:.1f} s CPU", flush=True)
        ok &= result.verdict == "proved"
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main([int(a) for a in sys.argv[1:]] or [2, 3]))
