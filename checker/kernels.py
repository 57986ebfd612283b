"""The checker's compiled loops (numba): the visited table's insert and symmetry's canonical fingerprints.

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
from numba.typed import List as shard_list  # noqa: E402  (the visited table's shards, as insert_batch takes them)


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
        slot = ((fp >> slot_shift) & np.uint64(0xFFFFFFFF)) * cap >> np.uint64(32)
        while True:
            here = table[slot]
            if here == fp:
                break
            if here == 0:
                table[slot] = fp
                new[i] = True
                count += 1
                break
            slot += np.uint64(1)
            if slot == cap:
                slot = np.uint64(0)
    return fps.size, count


@numba.njit(nogil=True, cache=True)
def insert_batch(shards, counts, fps, bounds, new, slot_shift, first, last):
    """``insert`` each shard's part ``fps[bounds[s]:bounds[s + 1]]`` (shards first..last - 1), all of which it
    has room for."""
    for s in range(first, last):
        lo, hi = bounds[s], bounds[s + 1]
        if lo < hi:
            table = shards[s]
            _, counts[s] = insert(table, fps[lo:hi], new[lo:hi], counts[s], table.size, slot_shift)


@numba.njit(nogil=True, cache=True)
def canonical(states, parents, sizes, col_start, val_start, columns, values, multipliers, perms, order, src,
               renames_value, sig_columns, sig_kinds, sig_mult, out):
    width = states.shape[1]
    keys = np.empty(perms.shape[1], dtype=np.uint64)
    state = np.empty(width, dtype=states.dtype)
    i = 0
    for part in range(sizes.size):
        n = sizes[part]
        for q in range(n):
            parent = parents[i]
            for c in range(width):
                state[c] = states[parent, c]
            for k in range(col_start[part + 1] - col_start[part]):
                state[columns[col_start[part] + k]] = values[val_start[part] + k * n + q]
            out[i] = _smallest(state, keys, multipliers, perms, order, src, renames_value, sig_columns, sig_kinds,
                               sig_mult)
            i += 1


@numba.njit(nogil=True, cache=True)
def _smallest(state, keys, multipliers, perms, order, src, renames_value, sig_columns, sig_kinds, sig_mult):
    """One state's smallest fingerprint over the renamings that sort its replicas' signatures."""
    replicas = perms.shape[1]
    for r in range(replicas):
        key = np.uint64(0)
        for t in range(sig_kinds.size):
            v = np.int64(state[sig_columns[r, t]])
            if sig_kinds[t] == 1:                 # a replica id: this one, another one, or none
                v = 1 if v == r else (2 if 0 <= v < replicas else 16 + v)
            key += sig_mult[t] * np.uint64(v)
        keys[r] = key
    best = np.uint64(0xFFFFFFFFFFFFFFFF)
    for k in range(perms.shape[0]):
        ok = True
        for p in range(1, replicas):
            if keys[order[k, p - 1]] > keys[order[k, p]]:
                ok = False
                break
        if not ok:
            continue
        h = np.uint64(0)
        for c in range(state.size):
            v = np.int64(state[src[k, c]])
            if renames_value[c] and 0 <= v < replicas:
                v = perms[k, v]
            h += multipliers[c] * np.uint64(v)
        if h < best:
            best = h
    return best
