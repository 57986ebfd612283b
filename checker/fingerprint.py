"""64-bit fingerprints of state rows, computed vectorized by multiply-add only.

A state's fingerprint is ``sum over columns c of R[c] * value[c]`` modulo 2**64,
with a random 64-bit multiplier ``R[c]`` per column. It is linear, so a
successor's fingerprint follows from its parent's by adding
``R[c] * (new - old)`` for each written column only: a few vector multiply-adds,
where table-based (Zobrist) hashing needs two gathers per column, which numpy
does several times slower. Linear hashing is universal: for two distinct states,
the fingerprints agree exactly when ``sum R[c] * delta[c] = 0 (mod 2**64)``; if
``delta[c]`` is a nonzero difference divisible by at most ``2**v``, that has
probability ``2**-(64 - v)`` over the random multiplier of that column. Cell
differences are below a column's span, so ``bits`` = 64 - max(v) is what the
collision bound uses.
"""
from __future__ import annotations

import itertools

import numpy as np


class Fingerprint:
    def __init__(self, layout, seed=0x15C4EC):
        self.multipliers = np.random.default_rng(seed).integers(0, 2 ** 64, layout.width, dtype=np.uint64,
                                                                endpoint=False)
        self.layout = layout
        widest = int((layout.hi - layout.lo).max()) if layout.width else 1
        self.bits = 64 - (max(widest, 1).bit_length() - 1)      # the largest 2-adic valuation of a difference

    def full(self, batch):
        """Fingerprints of a column-major batch (width x n)."""
        h = np.zeros(batch.shape[1], dtype=np.uint64)
        for c in range(batch.shape[0]):
            h += batch[c].astype(np.uint64) * self.multipliers[c]
        return h

    def delta(self, c, old, new):
        """What adding to a fingerprint replaces value ``old`` by ``new`` (array or constant) in column c."""
        if isinstance(new, np.ndarray):
            d = new.astype(np.uint64)
            d -= old.astype(np.uint64)       # wraps modulo 2**64, as negative values do
        else:
            d = np.uint64(new % 2 ** 64) - old.astype(np.uint64)
        d *= self.multipliers[c]
        return d


class Symmetry:
    """Canonical fingerprints under every renaming of the replicas (the indices of the ``"replica"`` axes)."""

    def __init__(self, layout, fingerprint):
        self.fingerprint = fingerprint
        self.renamings = []
        replicas = layout.replicas
        for perm in itertools.permutations(range(replicas)):
            src = np.arange(layout.width)
            value_maps = {}
            for f in layout.fields.values():
                for idx in f.cells():
                    moved = tuple(perm[i] if ax == "replica" else i for i, ax in zip(idx, f.axes or (None,) * len(idx)))
                    src[layout.column(f.name, moved)] = layout.column(f.name, idx)
                if f.values == "replica":
                    vmap = np.arange(f.lo, f.hi + 1, dtype=np.int8)
                    for old in range(replicas):
                        vmap[old - f.lo] = perm[old]
                    for idx in f.cells():
                        value_maps[layout.column(f.name, idx)] = (vmap, f.lo)
            self.renamings.append((src, value_maps))

    def canonical(self, batch):
        """The smallest fingerprint over all replica renamings of each state."""
        best = None
        for src, value_maps in self.renamings:
            renamed = batch[src]
            for c, (vmap, lo) in value_maps.items():
                renamed[c] = vmap[renamed[c].astype(np.int64) - lo]
            h = self.fingerprint.full(renamed)
            best = h if best is None else np.minimum(best, h)
        return best
