"""64-bit Zobrist fingerprints of state rows, computed vectorized.

A state's fingerprint is the XOR over its columns of a random 64-bit word chosen
by (column, value). Any two distinct states collide with probability exactly
2**-64, and a successor's fingerprint follows from its parent's by XOR-ing out
the old and in the new word of each written column only.
"""
from __future__ import annotations

import itertools

import numpy as np


class Zobrist:
    def __init__(self, layout, seed=0x15C4EC):
        spans = (layout.hi - layout.lo + 1).astype(np.int64)
        offsets = np.concatenate([[0], np.cumsum(spans)[:-1]])
        self.base = offsets - layout.lo          # index of (column c, value v) is base[c] + v
        self.table = np.random.default_rng(seed).integers(0, 2 ** 64, int(spans.sum()), dtype=np.uint64,
                                                         endpoint=False)
        self.layout = layout
        self.column_tables = [self.table[o:o + s] for o, s in zip(offsets, spans)]   # indexed by value - lo
        self.lo = [int(v) for v in layout.lo]

    def full(self, batch):
        """Fingerprints of a column-major batch (width x n)."""
        h = np.zeros(batch.shape[1], dtype=np.uint64)
        for c in range(batch.shape[0]):
            h ^= self.table[self.base[c] + batch[c]]
        return h

    def delta(self, c, old, new):
        """What XOR-ing into a fingerprint replaces value ``old`` by ``new`` (array or constant) in column c."""
        words, lo = self.column_tables[c], self.lo[c]
        if lo:
            old, new = old - lo, new - lo
        return words[old] ^ words[new]


class Symmetry:
    """Canonical fingerprints under every renaming of the replicas."""

    def __init__(self, layout, zobrist, replicas):
        self.zobrist = zobrist
        self.renamings = []
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
            h = np.zeros(batch.shape[1], dtype=np.uint64)
            for c in range(batch.shape[0]):
                values = batch[src[c]]
                if c in value_maps:
                    vmap, lo = value_maps[c]
                    values = vmap[values.astype(np.int64) - lo]
                h ^= self.zobrist.table[self.zobrist.base[c] + values]
            best = h if best is None else np.minimum(best, h)
        return best
