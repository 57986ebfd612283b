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
shard from 256 KB is its own anonymous memory map, returned to the system when a growth
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

The search on the compiled kernels (``checker.exhaustive.bfs``, model/c_kernels.py) drives the table through its C
loops (checker/exhaustive/table.c, loaded in a millisecond: numba is never imported) with ``insert_ordered``: every
successor of a chunk, repeats included, in the order of its discovery (first partitioned by shard, so each
shard's keys are read in sequence), so the first of equal fingerprints is the one marked fresh; a shard
that reaches 3/4 full in the middle of a batch grows there (keys in discovery order are spread over the
table: no pile-up). Such a table starts at 4096 slots a shard (8 MB: a growth costs page faults and a Python
call), so under three million states it takes more than 16 bytes a fingerprint. A table may also be wide (``widen``):
96-bit keys, lane 1 and the high half of lane 2 (checker/exhaustive/fingerprint.py), in 12-byte slots (16 to 24
bytes a key).
"""
from __future__ import annotations

import contextlib
import mmap
import sys

import numpy as np

from isrcheck.checker.engine import stop

SHARD_BITS = 8
SHARDS = 1 << SHARD_BITS
SLOT_SHIFT = np.uint64(64 - SHARD_BITS - 32)     # the 32 bits below the shard bits pick the first slot
MAX_LOAD = 0.75
GROWTH = 1.5
DENSE_LOAD = 0.9                # how full a shard may get when the memory limit has no room for the growth
RESERVE_SHARE = 8               # a growth leaves 1/8 of the memory limit to the rest of the search
UNASKED = 64 << 20              # bytes: a growth this small (and under 1/64 of the memory limit) is not checked
                                # against the limits (``_room``)
FIRST_CAPACITY = 64
COMPILED_FIRST = 4096           # slots: a compiled table's shards start this large (8 MB in all): a growth costs page
                                # faults and a Python call, 6% of a search of 737K states when they started at 512
HUGE_FROM = 4 << 20             # bytes: a shard this large asks for huge pages (numpy's own threshold)
MAPPED_FROM = 256 << 10         # bytes: a shard this large is a memory map of its own (``_zeros``)
PAGE = 4096
TABLE_FROM = 1 << 23            # fingerprints: below, a sorted array (8 bytes each)
TABLE_LOADED_FROM = 1 << 20     # the same once numba is imported
COMPILE_MEMORY = 512 << 20      # what importing numba and compiling the insert can take
GROUPS = 8                      # groups of shards: the unit of the insert order between threads
GROUP_SHARDS = SHARDS // GROUPS


def _any_time(group):
    return contextlib.nullcontext()


_TABLE = None


def table_loops():
    """checker/exhaustive/table.c's loops, compiled on first use (model/cbuild.py); raises cbuild.CompileError without a
    C compiler."""
    global _TABLE
    if _TABLE is None:
        import ctypes
        import os
        from isrcheck.model import cbuild
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "table.c")
        with open(path) as fh:
            text = fh.read()
        import hashlib
        lib = cbuild.load("table-" + hashlib.sha256(text.encode()).hexdigest()[:24], text)
        p, i = ctypes.c_void_p, ctypes.c_int64
        lib.isr_partition.argtypes = [p, p, i, p, p, p, p]
        lib.isr_partition.restype = None
        lib.isr_insert.argtypes = [p, p, p, p, i, p, p, p, p, p, i, i, p, p]
        lib.isr_insert.restype = i
        lib.isr_rehash64.argtypes = lib.isr_rehash96.argtypes = [p, i, p, i]
        lib.isr_rehash64.restype = lib.isr_rehash96.restype = None
        _TABLE = lib
    return _TABLE


def _addr(a):
    return None if a is None else a.__array_interface__["data"][0]


def _zeros(size, wide=False):
    """A shard of ``size`` empty slots (8 bytes each, 12 when ``wide``); from MAPPED_FROM bytes in its own anonymous
    memory map, not from malloc: a shard of up to 32 MB
    would come from glibc's arenas (under its dynamic mmap threshold), and the shards a growth frees stayed
    resident there as free memory (7.3 GB of them when the 3-epoch production run's table grew to 10.9 GB);
    a map is returned to the system as soon as the shard is dropped. From 4 MB it asks for transparent huge
    pages, as numpy does for its own arrays (where the system leaves them to ``madvise``): a probe's random
    slot then rarely misses the TLB, and a growth faults in 2 MB pages, not 4 KB ones (a 256 MB shard filled
    to 0.7: 1.8-2.1 s against 2.4-2.5 s, 256 page faults against 131,072)."""
    nbytes = size * (12 if wide else 8)
    if nbytes < MAPPED_FROM:        # from malloc's heap, whose pages a small search reuses (no page faults)
        table = np.zeros(size * 3 if wide else size, dtype=np.uint32 if wide else np.uint64)
    else:
        try:
            shard = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE)      # not shmem
        except OSError as e:            # ENOMEM: an address-space limit, like numpy's MemoryError
            raise MemoryError(f"no memory for a visited-set shard of {nbytes} bytes") from e
        if nbytes >= HUGE_FROM and hasattr(mmap, "MADV_HUGEPAGE"):
            shard.madvise(mmap.MADV_HUGEPAGE)
        table = np.frombuffer(shard, dtype=np.uint32 if wide else np.uint64)
    # written before it is read: a page first read maps the shared zero page, and the write that follows
    # replaces it with a flush of every core's TLB (an interrupt to the other workers: 7% of a 2-worker search)
    table[::PAGE // table.itemsize] = 0
    return table


def _room(nbytes):
    """Whether the table may take ``nbytes`` more: they and 1/RESERVE_SHARE of the memory limit fit under it (and
    under the address-space limit). Growths under UNASKED bytes and 1/64 of the limit are not asked about: the
    memory limit is polled between chunks anyway, and a small search's hundreds of growths would each read /proc."""
    limit = stop.memory_limit()
    if nbytes < (UNASKED if limit is None else min(UNASKED, limit >> 6)):
        return True
    return stop.room_for(nbytes + (0 if limit is None else limit // RESERVE_SHARE))


class VisitedSet:
    def __init__(self, table_from=None, room=_room, compiled=False):
        self.table_from = table_from        # None: TABLE_FROM, or TABLE_LOADED_FROM once numba is imported
        self.room = room                    # room(nbytes): whether the table may grow by that much
        self.sorted = np.empty(0, dtype=np.uint64)      # the set while small; None once it is the table
        self.shards = None
        self.counts = np.zeros(SHARDS, dtype=np.int64)
        self.sizes = np.full(SHARDS, FIRST_CAPACITY, dtype=np.int64)     # each shard's slots
        self.zero = np.zeros(1, dtype=np.uint8)         # whether the key that marks an empty slot is in the set
        self.loops = table_loops() if compiled else None    # checker/exhaustive/table.c, or None: numba's insert
        self.wide = False                   # 96-bit keys (``widen``)
        self.addrs = np.zeros(SHARDS, dtype=np.uint64)      # each shard's address, for the C loops
        self.limits = np.zeros(SHARDS, dtype=np.int64)      # how full each shard may get before it grows
        self._where = {id(a): _addr(a) for a in (self.addrs, self.sizes, self.counts, self.limits, self.zero)}

    def use_loops(self):
        """From now on the table goes through checker/exhaustive/table.c's loops (``insert_ordered`` needs them)."""
        if self.loops is None:
            self.loops = table_loops()

    def __len__(self):
        if self.sorted is not None:
            return self.sorted.size
        return int(self.counts.sum()) + int(self.zero[0])

    @property
    def nbytes(self):
        if self.sorted is not None:
            return self.sorted.nbytes
        return sum(s.nbytes for s in self.shards)

    @property
    def slot_bytes(self):
        return 12 if self.wide else 8

    @staticmethod
    def _split(fps):
        """Shard boundaries of sorted fingerprints."""
        edges = np.arange(SHARDS + 1, dtype=np.uint64) << np.uint64(64 - SHARD_BITS)
        bounds = np.searchsorted(fps, edges[:-1])
        return np.append(bounds, fps.size)

    def insert(self, fps, turn=None):
        """Add sorted, distinct fingerprints (a narrow set); returns the mask of those that were not in the set.

        ``turn(g)`` (a context manager; default: none needed) holds the caller's turn at group ``g`` of the
        shards: several threads insert at once, each group in their order (``checker.exhaustive.bfs.Turns``). The sorted
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
                    table_from = TABLE_LOADED_FROM if "numba" in sys.modules or self.loops else TABLE_FROM
                if self.sorted.size + fps.size < table_from or not stop.room_for(COMPILE_MEMORY):
                    return self._insert_sorted(fps)     # small, or no room for numba under the memory limit
                self.to_table()
                self._insert_groups(fps, bounds, new, range(GROUPS))
                return new
            self._insert_groups(fps, bounds, new, [0])
        for g in range(1, GROUPS):
            with turn(g):
                self._insert_groups(fps, bounds, new, [g])
        return new

    def to_table(self):
        """Move a set that is still the sorted array into the table."""
        if self.sorted is None:
            return
        kept, self.sorted = self.sorted, None
        self._new_shards()
        self._insert_groups(kept, self._split(kept), np.zeros(kept.size, dtype=bool), range(GROUPS))

    def _new_shards(self):
        self.shards = [None] * SHARDS
        first = COMPILED_FIRST if self.loops is not None else FIRST_CAPACITY
        for s in range(SHARDS):
            self._set_shard(s, _zeros(first, self.wide), first)

    def _set_shard(self, s, table, size):
        self.shards[s] = table
        self.sizes[s] = size
        self.addrs[s] = _addr(table)
        self.limits[s] = int(size * MAX_LOAD)

    def _insert_sorted(self, fps):
        at = np.searchsorted(self.sorted, fps)
        new = np.take(self.sorted, at, mode="clip") != fps if self.sorted.size else np.ones(fps.size, dtype=bool)
        self.sorted = np.insert(self.sorted, at[new], fps[new])
        return new

    def _insert_groups(self, fps, bounds, new, groups):
        """Insert into the table the fingerprints of the given shard groups (``bounds``: ``_split(fps)``)."""
        for g in groups:
            first, last = g * GROUP_SHARDS, (g + 1) * GROUP_SHARDS
            if g == 0 and fps.size and fps[0] == 0:
                new[0] = not self.zero[0]
                self.zero[0] = 1
                bounds = bounds.copy()
                bounds[0] = 1
            given = np.diff(bounds[first:last + 1])
            need = self.counts[first:last] + given
            for s in first + np.flatnonzero(need > self.sizes[first:last] * MAX_LOAD):
                self._make_room(s, int(need[s - first]))
            if self.loops is not None:
                self._insert_compiled(fps, None, None, bounds, g, new.view(np.uint8), self.sizes)
                continue
            for s in first + np.flatnonzero(given):
                lo, hi = int(bounds[s]), int(bounds[s + 1])
                from isrcheck.checker.exhaustive import kernels
                table = self.shards[s]
                _, self.counts[s] = kernels.insert(table, fps[lo:hi], new[lo:hi], int(self.counts[s]), table.size,
                                                   SLOT_SHIFT)

    def insert_ordered(self, h1, h2, turn=None, scratch=None):
        """Add keys in the order given, repeats allowed (the table's C loops: ``compiled``); returns a uint8 mask
        of the first of each key the set lacked. ``h1``, ``h2``: the lanes (``h2`` only for a wide set).
        ``turn`` as for ``insert``; ``scratch``: a ``c_kernels.Scratch`` whose buffers to use, or None."""
        turn = turn or _any_time
        h2 = h2 if self.wide else None
        n = h1.size

        def buffer(name, dtype):
            return np.empty(n, dtype=dtype) if scratch is None else scratch.get(name, n, dtype)
        perm, s1 = buffer("perm", np.uint32), buffer("s1", np.uint64)
        s2 = buffer("s2", np.uint32) if h2 is not None else None
        fresh = buffer("fresh", np.uint8)
        bounds = np.empty(SHARDS + 1, dtype=np.int64)
        self.loops.isr_partition(_addr(h1), _addr(h2), n, _addr(perm), _addr(s1), _addr(s2), _addr(bounds))
        fresh[:] = 0
        switch = self.sorted is not None
        with contextlib.ExitStack() as held:
            if switch:                              # the switch to the table takes every group's turn
                for g in range(GROUPS):
                    held.enter_context(turn(g))
                self.to_table()
            for g in range(GROUPS):
                with contextlib.nullcontext() if switch else turn(g):
                    self._insert_compiled(s1, s2, perm, bounds, g, fresh, self.limits)
        return fresh

    def _insert_compiled(self, s1, s2, perm, bounds, group, fresh, limits):
        """The keys of shard group ``group`` (``bounds``: each shard's in ``s1``, and ``s2`` for a wide set, in
        ``isr_partition``'s order: ``perm`` maps them back) into the table by the C loops, each shard up to its
        entry in ``limits``: ``self.limits``, where it grows (or, where the memory limit leaves no room, fills
        denser: ``_make_room``) and goes on; or its size, where the caller made room for them all."""
        pos = np.array(bounds[:-1], dtype=np.int64)
        where = self._where
        args = (where[id(self.addrs)], where[id(self.sizes)], where[id(self.counts)], where[id(limits)], self.wide,
                _addr(s1), _addr(s2), _addr(perm), _addr(pos), _addr(bounds), group * GROUP_SHARDS,
                (group + 1) * GROUP_SHARDS, _addr(fresh), where[id(self.zero)])
        while True:
            s = self.loops.isr_insert(*args)
            if s < 0:
                return
            if not self._make_room(s, int(self.counts[s]) + 1):
                self.limits[s] = int(self.sizes[s] * DENSE_LOAD)

    def _make_room(self, s, need):
        """Make shard ``s`` room for ``need`` fingerprints before a batch goes in: a sorted batch inserted into a
        table too small for it piles its first fingerprints into the lowest slots (each probe then walks the
        whole pile: quadratic), so a shard never grows in the middle of a sorted batch.

        It grows by ``GROWTH`` when there is room for every shard of its size to do the same (fingerprints are
        uniform: they all grow within a few batches, before the memory limit is polled again); otherwise it
        fills up to ``DENSE_LOAD`` (linear probing stays fast there: docs/internals/how-it-works.md), then grows just enough
        to be ``MAX_LOAD`` full. With no room even for that the search must stop: MemoryError, whose reason is
        the memory limit when that is what has no room. Returns whether it grew.
        """
        size, slot = int(self.sizes[s]), self.slot_bytes
        alike = int(np.count_nonzero(self.sizes <= size))
        usual = max(int(size * GROWTH) + 1, int(need / MAX_LOAD) + 1)
        least = int(need / MAX_LOAD) + 1
        if self.room((usual - size) * slot * alike):
            self._grow(s, usual)
            return True
        if need <= size * DENSE_LOAD:
            return False
        if self.room((least - size) * slot * alike):
            self._grow(s, least)
            return True
        limit = stop.memory_limit()
        if limit is not None and stop.resident_bytes() + (least - size) * slot * alike + limit // RESERVE_SHARE >= limit:
            raise MemoryError(stop.memory_limit_reached())
        raise MemoryError("no address space left to grow the visited set")

    def _grow(self, s, size):
        """Move shard ``s`` into a table of ``size`` slots."""
        old = self.shards[s]
        table = _zeros(size, self.wide)
        if self.loops is not None:
            rehash = self.loops.isr_rehash96 if self.wide else self.loops.isr_rehash64
            rehash(_addr(old), int(self.sizes[s]), _addr(table), size)
        else:
            from isrcheck.checker.exhaustive.kernels import insert
            kept = old[old != 0]
            insert(table, kept, np.zeros(kept.size, dtype=bool), 0, table.size, SLOT_SHIFT)
        self._set_shard(s, table, size)

    def widen(self, h1, h2):
        """Make the table wide: its keys become (lane 1, lane 2) for the lanes given, which must be those of every
        fingerprint it holds (the first of repeats is kept)."""
        if self.sorted is not None:
            self.to_table()
        before = len(self)
        narrow, self.wide = self.shards, True
        for s, size in enumerate(self.sizes.tolist()):
            self._set_shard(s, _zeros(size, True), size)
        self.counts[:] = 0
        self.zero[0] = 0
        del narrow
        fresh = self.insert_ordered(h1, h2)
        if len(self) != before or int(fresh.sum()) != before:
            raise RuntimeError(f"internal error: widening {before:,} fingerprints gave {len(self):,}")

    def values(self):
        """Every key in the set, sorted (for checkpoints): lane 1, and for a wide set lane 2's high halves (uint32)
        beside it, the pairs in order."""
        if self.sorted is not None:
            return self.sorted
        if not self.wide:
            parts = [s[s != 0] for s in self.shards]
            if self.zero[0]:
                parts.insert(0, np.zeros(1, dtype=np.uint64))
            return np.sort(np.concatenate(parts))
        slots = np.concatenate([s.reshape(-1, 3) for s in self.shards])
        slots = slots[slots.any(axis=1)]
        if self.zero[0]:
            slots = np.concatenate([np.zeros((1, 3), dtype=np.uint32), slots])
        h1 = slots[:, 0].astype(np.uint64) | slots[:, 1].astype(np.uint64) << np.uint64(32)
        order = np.lexsort((slots[:, 2], h1))
        return h1[order], slots[order, 2].copy()

    @classmethod
    def of(cls, fps, high=None, compiled=False):
        """A set holding the given keys: sorted distinct fingerprints, or (``high``: lane 2's high halves beside
        them) a wide set's ``values``."""
        visited = cls(compiled=compiled or high is not None)
        if high is None:
            visited.insert(fps)
        else:
            visited.sorted, visited.wide = None, True
            visited._new_shards()
            visited.insert_ordered(fps, high.astype(np.uint64) << np.uint64(32))
        return visited
