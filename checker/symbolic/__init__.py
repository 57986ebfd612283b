"""The symbolic engines: the transition relation over z3 terms and as CNF, bounded model checking, k-induction, and
proofs with lemmas learned from the reachable states."""
