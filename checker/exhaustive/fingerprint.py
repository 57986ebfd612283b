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


WIDE_EXTRA_BITS = 31            # what the high half of lane 2 adds to lane 1's bits (see the module docstring)
TARGET = 1e-6                   # "auto" keeps the collision bound under this
WIDTHS = ("auto", "64", "96")


def pairs(n):
    return n * (n - 1) / 2


def collision_bound(hashed, bits, wide_from=None):
    """Upper bound on the chance that a fingerprint collision hid a state among ``hashed`` fingerprinted states
    (the birthday bound: each pair collides with probability at most 2**-bits). ``wide_from``: how many had
    been fingerprinted when the keys became wide (0: wide from the start, None: never): the pairs among those
    count at ``bits``, every pair at the wide keys' ``bits + WIDE_EXTRA_BITS``."""
    if wide_from is None:
        return min(1.0, pairs(hashed) / 2.0 ** bits)
    return min(1.0, pairs(wide_from) / 2.0 ** bits + pairs(hashed) / 2.0 ** (bits + WIDE_EXTRA_BITS))


def widen_now(width, hashed, coming, bits):
    """Whether a search with fingerprint ``width`` ("auto", "64", "96") that has ``hashed`` states and may find
    ``coming`` more before it can next widen should make its keys wide now: "96" at once, "auto" before the
    narrow keys' bound could pass half of TARGET (the other half covers how far ``coming`` is off)."""
    if width == "96":
        return True
    return width == "auto" and pairs(hashed + coming) / 2.0 ** bits > TARGET / 2


SCHEME = 2                      # which multipliers (``random_words``): a snapshot keeps the fingerprints it made


def random_words(seed, n):
    """``n`` pseudo-random 64-bit words from ``seed`` (splitmix64, vectorized: importing numpy.random for them cost
    8 ms of a small check's CPU)."""
    with np.errstate(over="ignore"):
        z = (np.arange(1, n + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)) + np.uint64(seed)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


class Fingerprint:
    def __init__(self, layout, seed=0x15C4EC):
        self.multipliers = random_words(seed, layout.width)
        # the second lane of wide fingerprints: independent multipliers (see ``collision_bound``)
        self.lane2 = random_words(seed ^ 0x5DEECE66D, layout.width)
        self.layout = layout
        widest = int((layout.hi - layout.lo).max()) if layout.width else 1
        self.bits = 64 - (max(widest, 1).bit_length() - 1)      # the largest 2-adic valuation of a difference

    def full(self, batch, lane=1):
        """Fingerprints of a column-major batch (width x n): lane 1, or the wide fingerprints' lane 2."""
        multipliers = self.multipliers if lane == 1 else self.lane2
        h = np.zeros(batch.shape[1], dtype=np.uint64)
        for c in range(batch.shape[0]):
            h += batch[c].astype(np.uint64) * multipliers[c]
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
    """Canonical fingerprints under every renaming of the replicas (the indices of the ``"replica"`` axes).

    Each replica gets a signature that a renaming carries along with it: its own
    cells (those whose replica indices all name it), for every other replica axis
    position the sum of its row's other cells, and for each replica-valued cell
    whether it names this replica, no replica, or another one; signatures are
    hashed to 64 bits. Only the renamings that put the replicas in ascending
    signature order are tried (one, unless signatures tie), and the smallest
    fingerprint among them is the state's canonical one. That set of renamed
    states is the same for every state of an orbit, so the count of canonical
    fingerprints is exactly the count of orbits (ties, hash ties included, only
    try more renamings). Signatures and renamed fingerprints are sums over cells, so a successor's follow from
    its parent's by the deltas of the cells it writes: per parent, its signatures and the renamed fingerprints
    its successors need (about one); per successor, a few multiply-adds (``checker.exhaustive.kernels.canonical``).
    """

    def __init__(self, layout, fingerprint):
        self.fingerprint = fingerprint
        replicas = layout.replicas
        perms = list(itertools.permutations(range(replicas)))
        self.perms = np.array(perms, dtype=np.int64).reshape(len(perms), replicas)
        self.order = np.argsort(self.perms, axis=1)          # the replica each renaming puts at position 0, 1, ...
        self.src = np.empty((len(perms), layout.width), dtype=np.int64)
        for k, perm in enumerate(perms):
            for f in layout.fields.values():
                for idx in f.cells():
                    moved = tuple(perm[i] if ax == "replica" else i for i, ax in zip(idx, f.axes or (None,) * len(idx)))
                    self.src[k, layout.column(f.name, moved)] = layout.column(f.name, idx)
        self.renames_value = np.array([f.values == "replica" for f in layout.field_of], dtype=np.bool_)
        columns, kinds, terms = [], [], []         # per signature term: each replica's column, how it is read
        for f in layout.fields.values():
            axes = f.axes or (None,) * len(f.shape)
            rep_axes = [j for j, ax in enumerate(axes) if ax == "replica"]
            kind = 1 if f.values == "replica" else 0
            for idx in f.cells():
                if not rep_axes:
                    if kind:
                        columns.append([layout.column(f.name, idx)] * replicas)
                        kinds.append(1)
                        terms.append((f.name, idx))
                    continue
                first = idx[rep_axes[0]]
                if any(idx[j] != first for j in rep_axes):
                    continue
                columns.append([layout.column(f.name, tuple(r if j in rep_axes else i for j, i in enumerate(idx)))
                                for r in range(replicas)])
                kinds.append(kind)
                terms.append((f.name, tuple(None if j in rep_axes else i for j, i in enumerate(idx))))
            def rest(idx):
                return tuple(i for k, i in enumerate(idx) if k not in rep_axes)
            for j in rep_axes if len(rep_axes) > 1 else []:     # r's row along axis j: its other cells, summed
                rows = [sorted((idx for idx in f.cells()
                                if idx[j] == r and not all(idx[k] == r for k in rep_axes)), key=rest)
                        for r in range(replicas)]
                for cells in zip(*rows):
                    columns.append([layout.column(f.name, idx) for idx in cells])
                    kinds.append(kind)
                    terms.append((f.name, "row", j, rest(cells[0])))
        names = sorted(set(terms), key=repr)
        mult = random_words(0x5147, max(len(names), 1))
        self.sig_columns = np.array(columns, dtype=np.int64).reshape(len(columns), replicas).T.copy()
        self.sig_kinds = np.array(kinds, dtype=np.int64)
        self.sig_mult = np.array([mult[names.index(t)] for t in terms], dtype=np.uint64)
        self.dest = np.argsort(self.src, axis=1)        # where renaming k puts each column
        # per column, the (replica, term) signature entries that read it: sig_at[c]..sig_at[c + 1]
        entries = sorted((c, r, t) for (r, t), c in np.ndenumerate(self.sig_columns))
        self.sig_at = np.searchsorted(np.array([c for c, _, _ in entries], dtype=np.int64), np.arange(layout.width + 1))
        self.sig_replica = np.array([r for _, r, _ in entries], dtype=np.int64)
        self.sig_term = np.array([t for _, _, t in entries], dtype=np.int64)

    @property
    def renamings(self):
        """How many replica renamings a canonical state may stand for (replicas!)."""
        return self.perms.shape[0]

    def canonical(self, batch):
        """The smallest fingerprint over the signature-sorting replica renamings of each state (columns of batch)."""
        n = batch.shape[1]
        return self.canonical_successors(batch, np.arange(n), np.array([n]), np.zeros(2, dtype=np.int64),
                                         np.zeros(1, dtype=np.int64), np.empty(0, dtype=np.int64),
                                         np.empty(0, dtype=np.int8), np.ones(n, dtype=bool))

    def canonical_successors(self, batch, parents, sizes, col_start, val_start, columns, values, wanted):
        """Canonical fingerprints of successors given in parts by their parents' columns in ``batch`` and the cells
        written: part p has ``sizes[p]`` successors, writes ``columns[col_start[p]:col_start[p + 1]]``, and the
        k-th of those cells of its q-th successor is ``values[val_start[p] + k * sizes[p] + q]``. Only the
        ``wanted`` ones (a mask) are computed: the others' entries are left undefined."""
        out = np.empty(parents.size, dtype=np.uint64)
        from isrcheck.checker.exhaustive.kernels import canonical
        canonical(np.ascontiguousarray(batch), parents, sizes, col_start, val_start, columns, values,
                  self.fingerprint.multipliers, self.perms, self.order, self.src, self.dest, self.renames_value,
                  self.sig_columns, self.sig_kinds, self.sig_mult, self.sig_at, self.sig_replica, self.sig_term, wanted, out)
        return out
