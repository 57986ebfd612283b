"""The visited set: 64-bit fingerprints in an open-addressing table (no Python object per state).

The table is split into 256 shards by a fingerprint's top 8 bits; each shard is
a uint64 array probed linearly from a slot taken from the next 32 bits (0
marks an empty slot, so fingerprint 0 is kept as a flag). A shard grows on its
own before a batch that could take it past 3/4 full, by half again (or to 3/4
full with the whole batch, when that is more), so it is about 1/2 to 3/4 full:
10.7 to 16 bytes per fingerprint, and a growth copies 1/256 of the set, never
the whole of it. Near the memory limit, where every shard growing by half
would not fit, shards fill up to 9/10 instead (down to 8.9 bytes per
fingerprint) and then grow only to 3/4 full (``VisitedSet._make_room``). Each
shard is its own anonymous memory map, returned to the system when a growth
replaces it. Inserting a batch is one call of a compiled loop per shard it
has fingerprints for, which marks those that were new; the kernel releases the
GIL and a shard is touched by one call only, so threads that own disjoint shards
can insert without locks. The shards are a Python list of arrays (a numba typed
list would compile its methods in every process: 1.7 s of CPU, at the switch
from the sorted array, while every other thread waits).

Until it holds ``TABLE_FROM`` fingerprints the set is one sorted array instead
(membership by binary search, a merge per batch): a small search then never
imports numba, whose import and cached kernels cost more than the whole search.
Once numba is imported anyway (the search chose its native kernels) the table
takes over from ``TABLE_LOADED_FROM``: its merges copy the whole array, which
from a million fingerprints costs more than the table's cached insert.
Under a memory limit with no room for numba's compiler it stays sorted (8 bytes
a fingerprint, slower merges, but nothing to load).
"""
from __future__ import annotations

import contextlib
import mmap
import sys

import numpy as np

from isrcheck.checker import stop

SHARD_BITS = 8
SHARDS = 1 << SHARD_BITS
SLOT_SHIFT = np.uint64(64 - SHARD_BITS - 32)     # the 32 bits below the shard bits pick the first slot
MAX_LOAD = 0.75
GROWTH = 1.5
DENSE_LOAD = 0.9                # how full a shard may get when the memory limit has no room for the growth
RESERVE_SHARE = 8               # a growth leaves 1/8 of the memory limit to the rest of the search
FIRST_CAPACITY = 64
HUGE_FROM = 4 << 20             # bytes: a shard this large asks for huge pages (numpy's own threshold)
TABLE_FROM = 1 << 23            # fingerprints: below, a sorted array (8 bytes each)
TABLE_LOADED_FROM = 1 << 20     # the same once numba is imported
COMPILE_MEMORY = 512 << 20      # what importing numba and compiling the insert can take
GROUPS = 8                      # groups of shards: the unit of the insert order between threads
GROUP_SHARDS = SHARDS // GROUPS


def _any_time(group):
    return contextlib.nullcontext()


def _zeros(size):
    """A shard of ``size`` empty slots in its own anonymous memory map, not from malloc: a shard of up to 32 MB
    would come from glibc's arenas (under its dynamic mmap threshold), and the shards a growth frees stayed
    resident there as free memory (7.3 GB of them when the 3-epoch production run's table grew to 10.9 GB);
    a map is returned to the system as soon as the shard is dropped. From 4 MB it asks for transparent huge
    pages, as numpy does for its own arrays (where the system leaves them to ``madvise``): a probe's random
    slot then rarely misses the TLB, and a growth faults in 2 MB pages, not 4 KB ones (a 256 MB shard filled
    to 0.7: 1.8-2.1 s against 2.4-2.5 s, 256 page faults against 131,072)."""
    try:
        shard = mmap.mmap(-1, size * 8, flags=mmap.MAP_PRIVATE)      # not shmem
    except OSError as e:            # ENOMEM: an address-space limit, like numpy's MemoryError
        raise MemoryError(f"no memory for a visited-set shard of {size * 8} bytes") from e
    if size * 8 >= HUGE_FROM and hasattr(mmap, "MADV_HUGEPAGE"):
        shard.madvise(mmap.MADV_HUGEPAGE)
    return np.frombuffer(shard, dtype=np.uint64)


def _room(nbytes):
    """Whether the table may take ``nbytes`` more: they and 1/RESERVE_SHARE of the memory limit fit under it (and
    under the address-space limit)."""
    limit = stop.memory_limit()
    return stop.room_for(nbytes + (0 if limit is None else limit // RESERVE_SHARE))


class VisitedSet:
    def __init__(self, table_from=None, room=_room):
        self.table_from = table_from        # None: TABLE_FROM, or TABLE_LOADED_FROM once numba is imported
        self.room = room                    # room(nbytes): whether the table may grow by that much
        self.sorted = np.empty(0, dtype=np.uint64)      # the set while small; None once it is the table
        self.shards = None
        self.counts = np.zeros(SHARDS, dtype=np.int64)
        self.sizes = np.full(SHARDS, FIRST_CAPACITY, dtype=np.int64)     # each shard's slots
        self.has_zero = False

    def __len__(self):
        if self.sorted is not None:
            return self.sorted.size
        return int(self.counts.sum()) + self.has_zero

    @property
    def nbytes(self):
        if self.sorted is not None:
            return self.sorted.nbytes
        return sum(s.nbytes for s in self.shards)

    @staticmethod
    def _split(fps):
        """Shard boundaries of sorted fingerprints."""
        edges = np.arange(SHARDS + 1, dtype=np.uint64) << np.uint64(64 - SHARD_BITS)
        bounds = np.searchsorted(fps, edges[:-1])
        return np.append(bounds, fps.size)

    def insert(self, fps, turn=None):
        """Add sorted, distinct fingerprints; returns the mask of those that were not in the set.

        ``turn(g)`` (a context manager; default: none needed) holds the caller's turn at group ``g`` of the
        shards: several threads insert at once, each group in their order (``checker.bfs.Turns``). The sorted
        array, and the switch from it to the table, take every group's turn.
        """
        turn = turn or _any_time
        bounds = self._split(fps)
        new = np.zeros(fps.size, dtype=bool)
        with contextlib.ExitStack() as held:
            held.enter_context(turn(0))
            if self.sorted is not None:
                for g in range(1, GROUPS):
                    held.enter_context(turn(g))
                table_from = self.table_from
                if table_from is None:
                    table_from = TABLE_LOADED_FROM if "numba" in sys.modules else TABLE_FROM
                if self.sorted.size + fps.size < table_from or not stop.room_for(COMPILE_MEMORY):
                    return self._insert_sorted(fps)     # small, or no room for numba under the memory limit
                kept, self.sorted = self.sorted, None
                self.shards = [_zeros(FIRST_CAPACITY) for _ in range(SHARDS)]
                self._insert_groups(kept, self._split(kept), np.zeros(kept.size, dtype=bool), range(GROUPS))
                self._insert_groups(fps, bounds, new, range(GROUPS))
                return new
            self._insert_groups(fps, bounds, new, [0])
        for g in range(1, GROUPS):
            with turn(g):
                self._insert_groups(fps, bounds, new, [g])
        return new

    def _insert_sorted(self, fps):
        at = np.searchsorted(self.sorted, fps)
        new = np.take(self.sorted, at, mode="clip") != fps if self.sorted.size else np.ones(fps.size, dtype=bool)
        self.sorted = np.insert(self.sorted, at[new], fps[new])
        return new

    def _insert_groups(self, fps, bounds, new, groups):
        """Insert into the table the fingerprints of the given shard groups (``bounds``: ``_split(fps)``)."""
        from isrcheck.checker import kernels
        for g in groups:
            first, last = g * GROUP_SHARDS, (g + 1) * GROUP_SHARDS
            if g == 0 and fps.size and fps[0] == 0:
                new[0] = not self.has_zero
                self.has_zero = True
                bounds = bounds.copy()
                bounds[0] = 1
            given = np.diff(bounds[first:last + 1])
            need = self.counts[first:last] + given
            for s in first + np.flatnonzero(need > self.sizes[first:last] * MAX_LOAD):
                self._make_room(s, int(need[s - first]))
            for s in first + np.flatnonzero(given):
                lo, hi = int(bounds[s]), int(bounds[s + 1])
                table = self.shards[s]
                _, self.counts[s] = kernels.insert(table, fps[lo:hi], new[lo:hi], int(self.counts[s]), table.size,
                                                   SLOT_SHIFT)

    def _make_room(self, s, need):
        """Make shard ``s`` room for ``need`` fingerprints before a batch goes in: a sorted batch inserted into a
        table too small for it piles its first fingerprints into the lowest slots (each probe then walks the
        whole pile: quadratic), so a shard never grows in the middle of a batch.

        It grows by ``GROWTH`` when there is room for every shard of its size to do the same (fingerprints are
        uniform: they all grow within a few batches, before the memory limit is polled again); otherwise it
        fills up to ``DENSE_LOAD`` (linear probing stays fast there: docs/internals/how-it-works.md), then grows just enough
        to be ``MAX_LOAD`` full. With no room even for that the search must stop: MemoryError, whose reason is
        the memory limit when that is what has no room.
        """
        size = int(self.sizes[s])
        alike = int(np.count_nonzero(self.sizes <= size))
        usual, least = max(int(size * GROWTH), int(need / MAX_LOAD)) + 1, int(need / MAX_LOAD) + 1
        if self.room((usual - size) * 8 * alike):
            return self._grow(s, usual)
        if need <= size * DENSE_LOAD:
            return None
        if self.room((least - size) * 8 * alike):
            return self._grow(s, least)
        limit = stop.memory_limit()
        if limit is not None and stop.resident_bytes() + (least - size) * 8 * alike + limit // RESERVE_SHARE >= limit:
            raise MemoryError(stop.memory_limit_reached())
        raise MemoryError("no address space left to grow the visited set")

    def _grow(self, s, size):
        """Move shard ``s`` into a table of ``size`` slots."""
        from isrcheck.checker.kernels import insert
        old = self.shards[s]
        kept = old[old != 0]
        table = self.shards[s] = _zeros(size)
        self.sizes[s] = size
        insert(table, kept, np.zeros(kept.size, dtype=bool), 0, table.size, SLOT_SHIFT)

    def values(self):
        """Every fingerprint in the set, sorted (for checkpoints)."""
        if self.sorted is not None:
            return self.sorted
        parts = [s[s != 0] for s in self.shards]
        if self.has_zero:
            parts.insert(0, np.zeros(1, dtype=np.uint64))
        return np.sort(np.concatenate(parts))

    @classmethod
    def of(cls, fps):
        """A set holding the given fingerprints (sorted, distinct)."""
        visited = cls()
        visited.insert(fps)
        return visited
