"""The checker's compiled loops (numba): the visited table's insert, the Spark engine's level-stamped visited
tables (``checker.spark.spark_visited``) and symmetry's canonical fingerprints.

Kept apart so that a run that needs neither (a small search: the visited set
is a sorted array until it is large, no --symmetry) never imports numba, whose
import alone costs about half a second of every process.
"""
from __future__ import annotations

import os

# numba imports scipy, whose OpenBLAS starts a buffer per thread at load and, under a tight address-space limit
# (ulimit -v), fails that allocation and may hang instead of raising: the search needs no BLAS threads
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numba  # noqa: E402  (after the setting above)
import numpy as np

WINDOW = 4096      # parents whose rows and sums ``canonical`` keeps at hand at once (a few hundred KB)


@numba.njit(nogil=True, cache=True)
def _slot_of(table, fp, slot):
    """The slot of ``table`` holding ``fp``, or the empty one where it goes: linear probing from ``slot``."""
    cap = np.uint64(table.size)
    while table[slot] != fp and table[slot] != 0:
        slot += np.uint64(1)
        if slot == cap:
            slot = np.uint64(0)
    return slot


@numba.njit(nogil=True, cache=True)
def insert(table, fps, new, count, limit, slot_shift):
    """Insert ``fps`` (no zeros) into one shard until it holds ``limit``; mark the new ones in ``new``.

    Returns (how many of ``fps`` were handled, the shard's count).
    """
    cap = np.uint64(table.size)
    for i in range(fps.size):
        if count >= limit:
            return i, count
        fp = fps[i]
        slot = _slot_of(table, fp, ((fp >> slot_shift) & np.uint64(0xFFFFFFFF)) * cap >> np.uint64(32))
        if table[slot] == 0:
            table[slot] = fp
            new[i] = True
            count += 1
    return fps.size, count


@numba.njit(nogil=True, cache=True)
def canonical(states, parents, sizes, col_start, val_start, columns, values, multipliers, perms, order, src, dest,
              renames_value, sig_columns, sig_kinds, sig_mult, sig_at, sig_replica, sig_term, wanted, out):
    """Canonical fingerprints of the ``wanted`` successors (``Symmetry.canonical_successors``; ``states`` is
    width x n).

    Signatures and renamed fingerprints are sums over cells, so a parent's are computed once (a renaming's
    fingerprint only when one of its successors needs it) and each successor's follow by the deltas of the few
    cells it writes: the same values modulo 2**64 as computing them from the successor's row. Parents go in
    windows of WINDOW, their successors part by part (each part's parents ascend), so every array is read in
    order and the window's rows and sums stay in cache.
    """
    width, n = states.shape
    replicas, renamings = perms.shape[1], perms.shape[0]
    window = max(1, min(n, WINDOW))
    rows = np.empty((window, width), dtype=states.dtype)
    parent_keys = np.empty((window, replicas), dtype=np.uint64)
    renamed = np.empty((window, renamings), dtype=np.uint64)    # a parent's fingerprint under each renaming ...
    known = np.zeros((window, renamings), dtype=np.bool_)       # ... once computed
    keys = np.empty(replicas, dtype=np.uint64)
    cells = np.empty((width, 3), dtype=np.int64)
    at = np.zeros(sizes.size + 1, dtype=np.int64)               # each part's next successor, then its end
    for part in range(sizes.size):
        at[part + 1] = at[part] + sizes[part]
    part_first = at.copy()
    for lo in range(0, n, window):
        hi = min(lo + window, n)
        for c in range(width):
            for r in range(lo, hi):
                rows[r - lo, c] = states[c, r]
        for r in range(hi - lo):
            for x in range(replicas):
                key = np.uint64(0)
                for t in range(sig_kinds.size):
                    v = np.int64(rows[r, sig_columns[x, t]])
                    if sig_kinds[t] == 1:             # a replica id: this one, another one, or none
                        v = 1 if v == x else (2 if 0 <= v < replicas else 16 + v)
                    key += sig_mult[t] * np.uint64(v)
                parent_keys[r, x] = key
        known[:] = False
        for part in range(sizes.size):
            n_part, first_col = sizes[part], col_start[part]
            i = at[part]
            while i < part_first[part + 1] and parents[i] < hi:
                if not wanted[i]:
                    i += 1
                    continue
                parent = parents[i] - lo
                q = i - part_first[part]
                moved = 0                           # the cells this successor changes: (column, new, old)
                for w in range(col_start[part + 1] - first_col):
                    c = columns[first_col + w]
                    new = np.int64(values[val_start[part] + w * n_part + q])
                    old = np.int64(rows[parent, c])
                    if new != old:
                        cells[moved, 0], cells[moved, 1], cells[moved, 2] = c, new, old
                        moved += 1
                for x in range(replicas):
                    keys[x] = parent_keys[parent, x]
                for j in range(moved):
                    c, new, old = cells[j, 0], cells[j, 1], cells[j, 2]
                    for e in range(sig_at[c], sig_at[c + 1]):
                        x, t = sig_replica[e], sig_term[e]
                        a, b = new, old
                        if sig_kinds[t] == 1:
                            a = 1 if a == x else (2 if 0 <= a < replicas else 16 + a)
                            b = 1 if b == x else (2 if 0 <= b < replicas else 16 + b)
                        keys[x] += sig_mult[t] * (np.uint64(a) - np.uint64(b))
                best = np.uint64(0xFFFFFFFFFFFFFFFF)
                for k in range(renamings):
                    ok = True
                    for p in range(1, replicas):
                        if keys[order[k, p - 1]] > keys[order[k, p]]:
                            ok = False
                            break
                    if not ok:
                        continue
                    if not known[parent, k]:
                        h = np.uint64(0)
                        for c in range(width):
                            v = np.int64(rows[parent, src[k, c]])
                            if renames_value[c] and 0 <= v < replicas:
                                v = perms[k, v]
                            h += multipliers[c] * np.uint64(v)
                        renamed[parent, k] = h
                        known[parent, k] = True
                    h = renamed[parent, k]
                    for j in range(moved):
                        c, a, b = cells[j, 0], cells[j, 1], cells[j, 2]
                        d = dest[k, c]
                        if renames_value[d]:
                            if 0 <= a < replicas:
                                a = perms[k, a]
                            if 0 <= b < replicas:
                                b = perms[k, b]
                        h += multipliers[d] * (np.uint64(a) - np.uint64(b))
                    if h < best:
                        best = h
                out[i] = best
                i += 1
            at[part] = i


@numba.njit(nogil=True, cache=True)
def stamped_insert(slots, stamps, zero, fps, stamp, new):
    """Insert ``fps`` (repeats allowed) into a level-stamped table (``checker.spark.spark_visited``) with room for all of
    them, stamping the ones it lacks with ``stamp`` and marking them in ``new`` (a repeat is not new). ``zero``
    is the stamp of fingerprint 0 (which marks an empty slot), as a 1-element array. Returns how many it
    added."""
    cap = np.uint64(slots.size)
    added = 0
    for i in range(fps.size):
        fp = fps[i]
        if fp == 0:
            if zero[0] == 0:
                zero[0] = stamp
                new[i] = True
                added += 1
            continue
        slot = _slot_of(slots, fp, (fp >> np.uint64(32)) * cap >> np.uint64(32))
        if slots[slot] == 0:
            stamps[slot] = stamp           # before the fingerprint: a reader that finds it finds its stamp
            slots[slot] = fp
            new[i] = True
            added += 1
    return added


@numba.njit(nogil=True, cache=True)
def stamped_lookup(slots, stamps, zero, fps, through, seen):
    """Mark in ``seen`` the ``fps`` a level-stamped table holds with a stamp from 1 to ``through``."""
    cap = np.uint64(slots.size)
    for i in range(fps.size):
        fp = fps[i]
        if fp == 0:
            seen[i] = 1 <= zero[0] <= through
            continue
        slot = _slot_of(slots, fp, (fp >> np.uint64(32)) * cap >> np.uint64(32))
        seen[i] = slots[slot] == fp and 1 <= stamps[slot] <= through


@numba.njit(nogil=True, cache=True)
def stamped_copy(slots, stamps, through, to_slots, to_stamps):
    """Copy the entries stamped 1 to ``through`` of one level-stamped table into another (empty, larger or equal);
    returns how many."""
    cap = np.uint64(to_slots.size)
    count = 0
    for j in range(slots.size):
        fp, s = slots[j], stamps[j]
        if fp == 0 or s < 1 or s > through:
            continue
        slot = _slot_of(to_slots, fp, (fp >> np.uint64(32)) * cap >> np.uint64(32))
        to_stamps[slot] = s
        to_slots[slot] = fp
        count += 1
    return count
