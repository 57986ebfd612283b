"""The Spark engine's compiled loops (numba): the least tag of each fingerprint among a task's records, records
routed to their owners (a map task's repeats of a recent fingerprint merged first), and the winners' parents found
in their blocks and ordered for ``build``.

Imported by the tasks that need it, after ``checker.exhaustive.kernels`` (which sets up numba's import), so that
the driver never imports numba.
"""
from __future__ import annotations

from isrcheck.checker.exhaustive import kernels as _kernels  # noqa: F401  (numba's import, set up there)

import numba  # noqa: E402
import numpy as np  # noqa: E402


def least_tag_per_fingerprint(fps, tags):
    """Indices of the record with the least tag of each distinct fingerprint of ``fps`` (tags: unique uint64), in
    fingerprint order: what ``Search.group`` then ``Search.least_per_group`` give, in one sort of the fingerprints
    with each record's index packed below their high bits (numpy sorts values several times faster than it
    argsorts them) and one pass over it."""
    n = fps.size
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    bits = max(1, (n - 1).bit_length())
    packed = np.empty(n, dtype=np.uint64)
    _pack(fps, bits, packed)
    packed.sort()
    out = np.empty(n, dtype=np.int64)
    return out[:_least_tags(packed, bits, fps, tags, out)]


@numba.njit(nogil=True, cache=True)
def _pack(fps, bits, packed):
    """``packed``: each fingerprint's high bits, its index in the low ``bits``."""
    high = ~np.uint64((1 << bits) - 1)
    for i in range(fps.size):
        packed[i] = (fps[i] & high) | np.uint64(i)


@numba.njit(nogil=True, cache=True)
def _least_tags(packed, bits, fps, tags, out):
    """Over ``packed`` (sorted: a fingerprint's high bits, then a record's index in the low ``bits``), write to
    ``out`` the record of least tag of each fingerprint, in fingerprint order; returns how many. Records agreeing
    on their high bits are side by side; there, each fingerprint's are found by a sort of that run (a few
    records: the same state reached again, most often, read once; or two fingerprints sharing their high bits)."""
    low = np.uint64((1 << bits) - 1)
    n = packed.size
    members = np.empty(64, dtype=np.int64)         # a run's records, grown as needed
    keys = np.empty(64, dtype=np.uint64)
    k = 0
    i = 0
    while i < n:
        high = packed[i] >> np.uint64(bits)
        j = i + 1
        while j < n and packed[j] >> np.uint64(bits) == high:
            j += 1
        if j == i + 1:
            out[k] = np.int64(packed[i] & low)
            k += 1
            i = j
            continue
        best = np.int64(packed[i] & low)           # most often: one fingerprint, reached again
        same = True
        for m in range(i + 1, j):
            r = np.int64(packed[m] & low)
            if fps[r] != fps[best]:
                same = False
                break
            if tags[r] < tags[best]:
                best = r
        if same:
            out[k] = best
            k += 1
        else:
            if j - i > members.size:
                members = np.empty(2 * (j - i), dtype=np.int64)
                keys = np.empty(2 * (j - i), dtype=np.uint64)
            for m in range(j - i):             # by fingerprint (an insertion sort: a run has a few records)
                r = np.int64(packed[i + m] & low)
                f = fps[r]
                q = m
                while q > 0 and keys[q - 1] > f:
                    keys[q] = keys[q - 1]
                    members[q] = members[q - 1]
                    q -= 1
                keys[q] = f
                members[q] = r
            best = -1
            for m in range(j - i):
                r = members[m]
                if best >= 0 and fps[r] != fps[best]:
                    out[k] = best
                    k += 1
                    best = -1
                if best < 0 or tags[r] < tags[best]:
                    best = r
            out[k] = best
            k += 1
        i = j
    return k


class RecentSuccessors:
    """A map task's recent successors' records, held back in a direct-mapped table of ``2**bits`` slots (16 bytes
    each: 1 MB at the default, a core's cache) keyed by fingerprint: a record whose fingerprint is in its slot
    only lowers that slot's tag; one that finds another fingerprint there sends that one on (``route``), and
    ``drain`` sends what is left. A fingerprint then reaches its owner with tags among its own, the least of all
    of them among them: the owner's least tag is unchanged, on about a quarter fewer records."""

    def __init__(self, bits=16):
        self.fps = np.zeros(1 << bits, dtype=np.uint64)
        self.tags = np.zeros(1 << bits, dtype=np.uint64)
        self.used = np.zeros(1 << bits, dtype=np.bool_)
        self.shift = np.uint64(64 - bits)

    def drain(self, partitions):
        """The records still held, by owner (as ``route`` gives them); the table is empty after."""
        held = np.flatnonzero(self.used)
        self.used[:] = False
        return _by_owner(self.fps[held], self.tags[held], partitions)


def route(fps, parents, actions, prefix, partitions, recent):
    """Successors' records put through ``recent`` (``RecentSuccessors``): the ones it sends on, by owner
    (``_by_owner``). A successor's tag is ``prefix[parent] << 16 | action`` (``prefix``: its parents' numbers or keys, uint64)."""
    sent_fps, tags = np.empty(fps.size, dtype=np.uint64), np.empty(fps.size, dtype=np.uint64)
    n = _through(fps, parents, actions, prefix, recent.fps, recent.tags, recent.used, recent.shift, sent_fps, tags)
    return _by_owner(sent_fps[:n], tags[:n], partitions)


@numba.njit(nogil=True, cache=True)
def _through(fps, parents, actions, prefix, slot_fps, slot_tags, used, shift, out_fps, out_tags):
    """Each successor into its slot of the table (a Fibonacci hash of its fingerprint); ``out``: the records it
    evicts; returns how many."""
    k = 0
    for i in range(fps.size):
        f = fps[i]
        t = (prefix[np.int64(parents[i])] << np.uint64(16)) | np.uint64(actions[i])
        s = np.int64((f * np.uint64(0x9E3779B97F4A7C15)) >> shift)
        if used[s]:
            if slot_fps[s] == f:
                if t < slot_tags[s]:
                    slot_tags[s] = t
                continue
            out_fps[k] = slot_fps[s]
            out_tags[k] = slot_tags[s]
            k += 1
        used[s] = True
        slot_fps[s] = f
        slot_tags[s] = t
    return k


def _by_owner(fps, tags, partitions):
    """Records by owner (a fingerprint modulo ``partitions``), each owner's in their order (a counting sort:
    stable), as (fingerprints, tags, ends): owner q's are ``[ends[q - 1], ends[q])``."""
    out_fps, out_tags = np.empty(fps.size, dtype=np.uint64), np.empty(fps.size, dtype=np.uint64)
    ends = np.zeros(partitions, dtype=np.int64)
    _route(fps, tags, np.uint64(partitions), out_fps, out_tags, ends)
    return out_fps, out_tags, ends


@numba.njit(nogil=True, cache=True)
def _route(fps, tags, partitions, out_fps, out_tags, ends):
    for i in range(fps.size):
        ends[np.int64(fps[i] % partitions)] += 1
    at = np.empty(ends.size, dtype=np.int64)
    total = 0
    for q in range(ends.size):
        at[q] = total
        total += ends[q]
        ends[q] = total
    for i in range(fps.size):
        q = np.int64(fps[i] % partitions)
        out_fps[at[q]] = fps[i]
        out_tags[at[q]] = tags[i]
        at[q] += 1


def winners_by_block(keys, sizes, level_start, ranks, into, block_end, action_bits):
    """A partition's winners (``keys``: each owner's list of their keys, ``sizes`` long, put end to end, each in key
    order) found among its states of the level they come from and ordered for ``build``: (``at``, their parents'
    indices into the blocks put end to end; ``keys`` and ``order``, how they are reordered; ``bounds``, where each
    run starts), by parent block, then owner, each run in key order (a stable counting sort). ``ranks``: the
    partition's states' numbers less ``level_start``, ascending (in key order); ``into``: each of those states'
    index into the blocks, or None when the blocks are one, in key order. None when a winner's parent is not among
    ``ranks``."""
    n_owners, n_blocks = sizes.size, block_end.size
    at = np.empty(keys.size, dtype=np.int64)
    run = np.empty(keys.size, dtype=np.int64)
    bounds = np.zeros(n_blocks * n_owners + 1, dtype=np.int64)
    identity = into is None
    ok = _find_parents(keys, sizes, np.uint64(level_start), ranks, np.arange(0) if identity else into, identity,
                       block_end, np.uint64(action_bits), at, run, bounds)
    if not ok:
        return None
    order = np.empty(keys.size, dtype=np.int64)
    out_at = np.empty(keys.size, dtype=np.int64)
    _counting_sort(run, at, bounds, order, out_at)
    return out_at, order, bounds


@numba.njit(nogil=True, cache=True)
def _find_parents(keys, sizes, level_start, ranks, into, identity, block_end, action_bits, at, run, bounds):
    """``at``: each winner's parent's index into the blocks, ``run``: its (block, owner) run, ``bounds[r + 1]``: the
    count of run r. A walk along ``ranks`` per owner (its keys ascend), a binary search where one does not."""
    n = ranks.size
    i = 0
    for o in range(sizes.size):
        r = 0
        for _ in range(sizes[o]):
            p = np.int64((keys[i] >> action_bits) - level_start)
            if r < n and ranks[r] > p:          # not ascending: from the start
                r = 0
            if r < n and ranks[r] < p:          # the first rank >= p after r: a galloping search
                lo, hi, step = r + 1, r + 1, 1
                while hi < n and ranks[hi] < p:
                    lo = hi + 1
                    step *= 2
                    hi = r + step
                hi = min(hi, n)
                while lo < hi:
                    mid = (lo + hi) >> 1
                    if ranks[mid] < p:
                        lo = mid + 1
                    else:
                        hi = mid
                r = lo
            if r >= n or ranks[r] != p:
                return False
            g = r if identity else into[r]
            b, hi = 0, block_end.size - 1       # the block holding g: the first ending after it
            while b < hi:
                mid = (b + hi) >> 1
                if block_end[mid] <= g:
                    b = mid + 1
                else:
                    hi = mid
            at[i] = g
            run[i] = b * sizes.size + o
            bounds[run[i] + 1] += 1
            i += 1
    return True


@numba.njit(nogil=True, cache=True)
def _counting_sort(run, at, bounds, order, out_at):
    """``order``: the winners by run, stable; ``out_at``: ``at`` in that order; ``bounds``: the runs' starts."""
    for r in range(bounds.size - 1):
        bounds[r + 1] += bounds[r]
    fill = bounds[:-1].copy()
    for i in range(run.size):
        d = fill[run[i]]
        order[d] = i
        out_at[d] = at[i]
        fill[run[i]] += 1
