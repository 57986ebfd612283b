"""Exhaustive breadth-first search over column-major batches of states.

Level by level: each chunk of the frontier is expanded, successors get linear
fingerprints by delta, and only fingerprints new to the visited set are
materialized as rows. States are numbered in BFS order; a new state's canonical
discovery is the one with the smallest (parent number, action instance), so
numbering, parents and traces do not depend on the chunk size or the kernels.

On the compiled kernels (model/c_kernels.py: C, where there is a compiler) a
chunk's successors come out in (parent, action) order and go into the visited
table in that order (checker/exhaustive/table.c), so the first of equal fingerprints is the
canonical discovery; the new ones' rows are built from their parents'. On numpy's
kernels (small searches, symmetry, no compiler; numba's where a level is large) a
chunk is expanded action by action (a guard is a boolean vector over the chunk,
an update computes only the written columns of the enabled rows), its successors
are grouped by one sort of their fingerprints and the smallest (parent, action)
of each new group is picked. Kept in RAM per visited state: its fingerprint in
the visited set's table (10.7 to 16 bytes; 16 to 24 for 96-bit keys); its parent number (4) and action
instance (2) go to a file per level (from 64K states), and the rows of a level being built do too
when the memory limit comes near (:mod:`checker.exhaustive.levels`).
"""
from __future__ import annotations

import contextlib
import os
import threading
import time

import numpy as np

from isrcheck.checker.exhaustive import checkpoint as checkpoint_mod, levels
from isrcheck.checker.engine import stop
from isrcheck.checker.engine.budget import UNLIMITED
from isrcheck.checker.exhaustive.coverage import ENABLED, FIRED, Coverage
from isrcheck.checker.exhaustive.fingerprint import WIDTHS, Fingerprint, Symmetry, widen_now
from isrcheck.checker.engine.result import Result, Violation
from isrcheck.checker.exhaustive.visited import GROUPS, VisitedSet
from isrcheck.model import backends

NO_PARENT = np.uint32(0xFFFFFFFF)
NUMBERED = int(NO_PARENT)   # states the 32-bit parent numbers can name: the search stops before it expands more
NO_ACTION = np.uint16(0xFFFF)
CHUNK_SHARE = 8         # under a memory limit a chunk's transient arrays stay near 1/CHUNK_SHARE of it
LEVEL_SPLIT = 8         # a level is cut into about this many chunks (for the workers), but for ...
# ... chunks smaller than this. Each chunk costs a call per action instance, and numpy chunks on two threads hold
# the GIL in turn: tla-kip320 3/2/2/2 (widest level 85,404) with 2 workers took 0.51 s of CPU (and of wall) in one
# chunk per level, 0.78 s (0.64 s wall) in chunks from 32K, 1.14 s (0.81 s) from 16K; tla-kip320 3/2/2/3 and
# kip-320:max_epochs=5,max_crashes=2 took about 5% less wall and 8% less CPU from 128K than from 64K.
MIN_CHUNK = 1 << 17
PIECE = 1 << 15         # states: on the compiled kernels with several workers a chunk is expanded in pieces this large
PIECES_FROM = 1 << 16  # ... from a level this large (on smaller ones a second thread costs more CPU than it saves)


def chunk_step(size, most):
    """The chunk size for a level of ``size`` states, chunks at most ``most``. Where that limit binds (a level of
    more than LEVEL_SPLIT of them, or a limit under MIN_CHUNK) the chunks are ``most`` states, as the Spark
    engine's max_states cut assumes; otherwise up to LEVEL_SPLIT chunks of at least MIN_CHUNK states, an even
    number of equal ones (two workers finish the level together). It depends on the level alone, never on the
    number of workers: the chunks decide where a --max-states search stops."""
    if not size or most < MIN_CHUNK or -(-size // LEVEL_SPLIT) >= most:
        return most
    n = min(LEVEL_SPLIT, size // MIN_CHUNK)
    n = max(n - n % 2, -(-size // most), 1)
    n += n % 2 if n > 1 else 0
    return -(-size // n)


def sorted_unique(values):
    """np.unique for fingerprints, by sort and mask (numpy's hash-based unique is far slower on uint64)."""
    s = np.sort(values)
    keep = np.ones(s.size, dtype=bool)
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]


def peak_memory():
    return stop.peak_bytes()


def all_cores():
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


# "auto" kernels: numpy until a level reaches NATIVE_FROM states, or NATIVE_CACHED_FROM when the native kernels
# are compiled already. Measured (kip-101, kip-320 defaults): the native kernels save ~0.27 us of CPU per state
# (1.37M vs 1.0M states per CPU second), compiling a spec's costs ~20 s of CPU once per machine (less when
# other specs share its actions), and loading them from the cache ~0.6 s per process (kip-101 defaults, 0.9M
# states: 1.4 s of CPU on numpy, 1.8 s native from the cache, 27 s native compiling): small runs never pay it.
# From a level of 256K when compiled (tla-kip320 3/2/2/3, 10M states, widest level 1.06M: whole process 9.9 s
# with the switch at 1M, 7.3-7.5 s on native kernels from the start, idle; stop 28, under a load of 9, best and
# median of 3: 7.74 / 7.78 s with the switch at 512K, 7.34 / 7.38 s at 256K, and
# kip-320:max_epochs=5,max_crashes=2 9.20 / 9.52 s against 8.72 / 8.81 s; the default configurations' widest
# levels are 91K to 111K). Importing numba and loading a spec's kernels takes ~320 MB of address space: under an
# address-space limit (ulimit -v) without that room "auto" stays on numpy (stop.room_for), where numba's import
# would fail or its scipy's OpenBLAS could spin.
NATIVE_FROM = 1 << 22
NATIVE_CACHED_FROM = 1 << 18
NATIVE_MEMORY = 512 << 20           # numba, LLVM and the loaded kernels: "auto" keeps numpy if the limit has no room
# With a C compiler the search runs on the compiled kernels instead (model/c_kernels.py, checker/exhaustive/table.c): from
# the first level when they are compiled already (loading them takes a millisecond). Compiling a spec's takes 1.5
# to 3 s of CPU, once per machine (per spec and bounds), more than a search of a million states on numpy: a
# level of COMPILE_AHEAD_FROM states in a configuration an earlier process searched too starts the compiler in
# the background, and the search moves to the compiled kernels at the first level after they are ready (a later
# search starts on them); a level of COMPILED_FROM states waits for them. One-off and small searches never
# compile (the gate's dozens of configurations on a fresh CI machine: 49 s against 116 s when each compiled).
COMPILE_AHEAD_FROM = 1 << 16
COMPILED_FROM = 1 << 22


class Abandoned(Exception):
    """A chunk's turn will never come: an earlier chunk failed, or the search stopped."""


class Turns:
    """Chunk k inserts into a group of the visited set's shards only after chunk k - 1 has: the order that keeps
    each new state's smallest (parent, action) discovery, whatever the number of workers. Chunks follow each
    other group by group, so chunk k inserts into the first groups while chunk k - 1 finishes the last."""

    def __init__(self, groups=GROUPS):
        self._cond = threading.Condition()
        self._next = [0] * groups   # per group, the chunk whose turn it is
        self._failed = None         # the first chunk that failed (or -1 once the search stopped taking chunks)

    def wait(self, k, group):
        with self._cond:
            self._cond.wait_for(lambda: self._next[group] == k or (self._failed is not None and self._failed < k))
            if self._next[group] != k:
                raise Abandoned

    def done(self, k, group):
        with self._cond:
            self._next[group] = k + 1
            self._cond.notify_all()

    @contextlib.contextmanager
    def turn(self, k, group):
        """Chunk k's turn at a group (not passed on if the chunk fails: ``fail`` says so)."""
        self.wait(k, group)
        yield
        self.done(k, group)

    def skip(self, k):
        """Chunk k has nothing to insert: pass its turn at every group."""
        for group in range(len(self._next)):
            self.wait(k, group)
            self.done(k, group)

    def fail(self, k):
        with self._cond:
            self._failed = k if self._failed is None else min(self._failed, k)
            self._cond.notify_all()


def _new_cells(update):
    """A numpy update's written cells: {column: int8 values, or a constant}."""
    return {c: v.astype(np.int8, copy=False) if isinstance(v, np.ndarray) else int(v)
            for c, v in update._written.items()}


class Search:
    """``kernels``: "native" (the compiled kernels, model/c_kernels.py, or without a C compiler numba's,
    model/native.py), "numpy" (model/compile.py, the reference) or "auto" (from the level where compiled
    kernels pay: see COMPILED_FROM and NATIVE_FROM). ``workers``: threads expanding chunks
    ahead of the one being deduplicated (default: every core); the results do not depend on it.
    ``fingerprint``: "64", "96" (wide keys: needs the compiled kernels, so a C compiler, and no symmetry) or
    "auto" (64 until the collision bound could pass ``fingerprint.TARGET``, then wide, on the compiled kernels;
    see ``fingerprint.widen_now``). ``excluded``: ids of action instances the search never takes (the
    search of a spec without them; not on the compiled kernels)."""

    def __init__(self, spec, invariants, symmetry=False, chunk=1 << 18, workers=None, kernels="auto",
                 fingerprint="auto", excluded=()):
        self.spec = spec
        self.excluded = sorted(set(excluded))
        self.invariants = [spec.invariants[name] for name in invariants]
        self.fingerprint = Fingerprint(spec.layout)
        self.symmetry = Symmetry(spec.layout, self.fingerprint) if symmetry else None
        self.chunk = chunk
        self.workers = workers or all_cores()
        if kernels not in ("auto", "native", "numpy"):
            raise ValueError(f"unknown kernels {kernels!r}")
        if str(fingerprint) not in WIDTHS:
            raise ValueError(f"unknown fingerprint width {fingerprint!r}")
        self.kernels = kernels
        self.width = str(fingerprint)
        self.native = None          # the native kernels, once chosen
        self.compiled = None        # the compiled kernels (model/c_kernels.py), once chosen
        self.compile_failed = False
        self._candidate = None      # the compiled kernels not loaded yet (knows whether they are compiled)
        self._compiler = None       # the compiler compiling them in the background, once started (False: none)
        self.wide_from = None       # states found when the keys became wide (0: from the start)
        self._scratch = threading.local()   # each worker's buffers for the compiled kernels
        self.kept_lanes = None
        self.pool = None            # the worker threads while a search runs with several
        if self.width == "96" and self.excluded:
            raise ValueError("96-bit fingerprints need the compiled kernels, which take every action")
        if self.width == "96":
            if symmetry or kernels == "numpy":
                raise ValueError("96-bit fingerprints need the compiled kernels, without --symmetry")
            self._use_compiled()    # raises CompileError when there is no working C compiler

    def _use_compiled(self):
        """Load the compiled kernels (compiling them first if needed) and the visited table's C loops."""
        from isrcheck.checker.exhaustive.visited import table_loops
        from isrcheck.model.c_kernels import CKernels
        table_loops()
        self.compiled = (self._candidate or CKernels(self.spec)).load()

    def _choose_compiled(self, level_size, hashed):
        """Switch to the compiled kernels when the policy says so (they give the numpy kernels' results): not
        under symmetry (its canonical fingerprints are numba's) nor with "numpy"; "native" and wide keys at once,
        "auto" once they are compiled or a level is large enough to pay for compiling them."""
        if self.compiled is not None or self.compile_failed or self.kernels == "numpy" or self.symmetry is not None \
                or self.excluded:
            return
        from isrcheck.model import cbuild
        if cbuild.compiler() is None:
            self.compile_failed = True
            return
        if self._candidate is None:
            from isrcheck.model.c_kernels import CKernels
            self._candidate = CKernels(self.spec)
        ready = bool(self._compiler) and self._compiler.poll() is not None
        wanted = (self.kernels == "native" or level_size >= COMPILED_FROM or self._candidate.compiled or ready
                  or widen_now(self.width, hashed, 0, self.fingerprint.bits))
        if wanted:
            if self._compiler:
                self._compiler.wait()               # the compile started ahead, rather than another one
            try:
                self._use_compiled()
            except cbuild.CompileError:
                self.compile_failed = True          # numpy and numba's kernels, as without a compiler
        elif level_size >= COMPILE_AHEAD_FROM and self._compiler is None:
            self._compiler = self._candidate.start() or False

    def _choose_kernels(self, level_size):
        """Switch to the native kernels when the policy says so (they give the numpy kernels' results)."""
        if self.native is None and self.kernels != "numpy" and (
                self.kernels == "native" or stop.room_for(NATIVE_MEMORY) and (level_size >= NATIVE_FROM or (
                    level_size >= NATIVE_CACHED_FROM and backends.native(self.spec).compiled))):
            self.native = backends.native(self.spec).load()

    # --- successor generation ----------------------------------------------------------
    def expand(self, batch, fps, coverage=None):
        """Every enabled (parent, action) of a chunk whose successor differs from its parent.

        Returns parts ``(action id, parent rows, {column: new values or a constant}, fingerprints)``,
        one per action instance that fired; rows ascend within a part. ``coverage`` (a
        :class:`checker.exhaustive.coverage.Coverage`) counts each instance's enabled rows and its moves.
        """
        spec, fp = self.spec, self.fingerprint
        if self.native is not None:
            parts, enabled, fired = self.native.expand(batch, fps, fp.multipliers)
            if self.excluded:
                parts = [p for p in parts if p[0] not in self.excluded]
                enabled[self.excluded] = fired[self.excluded] = 0
            if coverage is not None:
                coverage.counts[ENABLED] += enabled
                coverage.counts[FIRED] += fired
            return parts
        parts, guards = [], backends.batch(spec).guards(batch)
        for inst in spec.actions:
            if inst.id in self.excluded:
                continue
            rows = np.flatnonzero(guards[inst.id])
            if rows.size == 0:
                continue
            if coverage is not None:
                coverage.counts[ENABLED, inst.id] += rows.size
            update = backends.batch(spec).update(inst, batch, rows)
            new_cols = _new_cells(update)
            # drop self-loops: no cell moved, so the fingerprint's delta is 0
            parent_fp = np.take(fps, rows)
            h = parent_fp.copy()
            for c, v in new_cols.items():
                h += fp.delta(c, update.old[c], v)
            moved = h != parent_fp
            if not moved.all():
                rows, h = rows[moved], h[moved]
                new_cols = {c: v[moved] if isinstance(v, np.ndarray) else v for c, v in new_cols.items()}
            if rows.size:
                parts.append((inst.id, rows, new_cols, h))
                if coverage is not None:
                    coverage.counts[FIRED, inst.id] += rows.size
        return parts

    @staticmethod
    def materialize(batch, parts, picks, parents):
        """Rows of chosen successors: ``picks`` are (part index, position in part) pairs, in output order, and
        ``parents`` their parents' rows in the batch."""
        part_of, pos = picks
        by_part = np.argsort(part_of.astype(np.int16), kind="stable")     # a radix sort
        bounds = np.searchsorted(part_of[by_part], np.arange(len(parts) + 1))
        out = np.take(batch, parents, axis=1)       # far faster than batch[:, parents] on int8
        for p, (_, _, cols, _) in enumerate(parts):
            dest = by_part[bounds[p]:bounds[p + 1]]
            if dest.size:
                src = pos[dest]
                for c, v in cols.items():
                    out[c][dest] = v[src] if isinstance(v, np.ndarray) else v     # 1-D indexing: twice as fast
        return out

    def apply(self, batch, fps, actions):
        """The successor of each parent (column ``i`` of ``batch``, fingerprint ``fps[i]``) by action instance
        ``actions[i]``, enabled there and moving it (as ``expand`` found): ``batch`` becomes the successors, in
        place; returns their fingerprints. What ``expand`` then ``materialize`` give, for chosen pairs only:
        one kernel call per run of equal actions, so parents sharing an action should be side by side."""
        out = np.empty_like(fps)
        lo = 0
        for hi in np.append(np.flatnonzero(actions[1:] != actions[:-1]) + 1, actions.size).tolist():
            a = int(actions[lo])
            if self.native is not None:
                h, cols = self.native.apply(a, batch[:, lo:hi], fps[lo:hi], self.fingerprint.multipliers)
            else:
                update = backends.batch(self.spec).update(self.spec.actions[a], batch, np.arange(lo, hi))
                cols = _new_cells(update)
                h = fps[lo:hi].copy()
                for c, v in cols.items():
                    h += self.fingerprint.delta(c, update.old[c], v)
            out[lo:hi] = h
            for c, v in cols.items():
                batch[c, lo:hi] = v
            lo = hi
        return out

    @staticmethod
    def group(succ_fp):
        """Equal fingerprints side by side: (order, starts, unique) where ``succ_fp[order]`` is sorted, ``starts``
        are its groups' first positions and ``unique`` their fingerprints (sorted, distinct).

        One sort of the fingerprints, each with its successor's index packed into the low bits (a stable order
        within a group, the successors' own).
        """
        n = succ_fp.size
        low = np.uint64((1 << max(1, (n - 1).bit_length())) - 1)
        packed = succ_fp & ~low
        packed |= np.arange(n, dtype=np.uint64)
        packed.sort()
        order = (packed & low).view(np.int64)
        fps = np.take(succ_fp, order)
        start = np.empty(n, dtype=bool)
        start[0] = True
        np.not_equal(fps[1:], fps[:-1], out=start[1:])
        unique = fps[start]
        if unique.size > 1 and not (unique[1:] > unique[:-1]).all():
            # fingerprints that agree on their high bits interleave (a few per million-successor batch): sort
            # just the runs of equal high bits that are out of order, by whole fingerprint. The runs ascend by
            # those bits, so one sort of their members puts each back in its own positions
            high = packed & ~low
            run = np.zeros(n, dtype=np.int64)
            np.cumsum(high[1:] != high[:-1], out=run[1:])
            at = np.flatnonzero(np.isin(run, run[1:][fps[1:] < fps[:-1]]))     # the runs out of order
            order[at] = order[at[np.lexsort((order[at], fps[at]))]]
            fps = np.take(succ_fp, order)
            np.not_equal(fps[1:], fps[:-1], out=start[1:])
            unique = fps[start]
        return order, np.flatnonzero(start), unique

    @staticmethod
    def least_per_group(order, first, size, key):
        """Per group of ``order`` (``group``'s) starting at ``first`` with ``size`` members, the member with the
        smallest ``key(members)`` (unique keys). Most groups have one member, so keys are computed only where
        there are more."""
        winners = np.take(order, first)
        shared = np.flatnonzero(size > 1)
        if shared.size:
            counts = size[shared]
            offsets = np.cumsum(counts) - counts
            members = np.take(order, np.repeat(first[shared] - offsets, counts) + np.arange(int(counts.sum())))
            k = key(members)
            winners[shared] = members[k == np.repeat(np.minimum.reduceat(k, offsets), counts)]
        return winners

    def pick(self, parts, order, starts, fresh):
        """The canonical discovery of each fresh group (``fresh``: indices into ``starts``): the successor with the
        smallest (parent, action) key. Returns (indices into the concatenated successors, in (parent, action)
        order, their parent rows, their action ids)."""
        n = order.size
        parent = np.concatenate([p[1] for p in parts])
        action_id = np.repeat(np.array([p[0] for p in parts], dtype=np.int64), [p[1].size for p in parts])
        # (parent, action) is unique per successor, so the smallest key names the canonical discovery
        first = starts[fresh]
        winners = self.least_per_group(order, first, np.append(starts[1:], n)[fresh] - first,
                                       lambda m: np.take(parent, m) * len(self.spec.actions) + np.take(action_id, m))
        key = (np.take(parent, winners) * len(self.spec.actions) + np.take(action_id, winners)) * n + winners
        key.sort()
        winners = key % n
        return winners, np.take(parent, winners), np.take(action_id, winners)

    # --- the search ------------------------------------------------------------------------
    def run(self, max_states=None, max_depth=None, time_limit=None, progress=None, on_states=None,
            on_violation=None, checkpoint=None, resume=False, checkpoint_every=60.0):
        """Search level by level until every invariant is violated or no new state is found.

        With no invariants it explores every reachable state (within the budgets).
        ``on_states(rows)`` is called with each batch of newly discovered states
        (column-major, one column per state), the initial state first: together they
        are every state visited, each once. ``on_violation(violation)`` is called
        as soon as an invariant's first violation is found, its steps filled in.
        A stop request (:mod:`checker.engine.stop`: a signal, the memory limit) or a
        MemoryError ends the search like a budget, after the chunk in progress.
        ``checkpoint`` (a directory) receives a snapshot at the end of a level when
        ``checkpoint_every`` seconds have passed since the last one; with
        ``resume`` the search continues from the snapshot there (max_states and
        max_depth count from the start of the search, time_limit from now).
        """
        try:
            spec = self.spec
            start = time.perf_counter()
            self.snapshot_time, self.snapshot_bytes = None, 0
            limit = stop.memory_limit()
            if limit is not None:           # a chunk's successors take about 2 KB per row of 100 cells: a sliver of it
                self.chunk = min(self.chunk, max(1 << 12, limit // (CHUNK_SHARE * 16 * max(spec.layout.width, 1))))
            coverage = self.coverage = Coverage(spec.actions)
            violations = {}
            pending = list(self.invariants)
            ident = checkpoint and self.identity()
            if resume:
                frontier, visited, parents, actions, level_start, transitions, depth, elapsed = \
                    self._restore(checkpoint, ident, coverage, violations, pending, on_violation)
            else:
                elapsed = 0.0
                init = backends.scalar(spec).initial_row()[:, None]
                init_fp = self.fingerprint.full(init)
                key_fp = init_fp if self.symmetry is None else self.symmetry.canonical(init)
                self._choose_compiled(1, 1)
                if self.width == "96":
                    visited = VisitedSet.of(key_fp, self.fingerprint.full(init, lane=2) >> np.uint64(32))
                    self.wide_from = 0
                else:
                    visited = VisitedSet.of(key_fp, compiled=self.compiled is not None)
                parents = [np.array([NO_PARENT], dtype=np.uint32)]
                actions = [np.array([NO_ACTION], dtype=np.uint16)]
                level_start = [0]
                for name, _ in self._record(self._violations(init, pending), 0, 1, pending, violations):
                    violations[name].steps = [(None, backends.scalar(spec).initial_row())]
                    if on_violation is not None:
                        on_violation(violations[name])
                if on_states is not None:
                    on_states(init)
                frontier = levels.Frontier(init, init_fp)
                transitions, depth = 0, 1
            budget_hit, complete = None, False
            last_snapshot = time.perf_counter()
            self.kept_lanes = None          # (lane 1, lane 2) of the states from level lanes_from on, kept to widen

            while frontier.size and (pending or not self.invariants):
                if max_depth is not None and depth >= max_depth:
                    budget_hit = f"max depth {max_depth}"
                    break
                next_id = level_start[-1] + frontier.size
                level = levels.LevelWriter(spec.layout.width)
                # the same chunks for any number of workers: they decide where a --max-states search stops
                step = chunk_step(frontier.size, self.chunk)
                # what the next level may add, for the fingerprint width: its states' successors, at the rate so far
                coming = int(frontier.size * max(1.0, transitions / max(1, level_start[-1])))
                self._choose_compiled(frontier.size, next_id + coming)
                if self.compiled is None:
                    self._choose_kernels(frontier.size)
                else:
                    visited.use_loops()
                    self._widen(visited, frontier, step, next_id, coming, depth)
                pieces = self._pieces(frontier.size, step)
                chunks = self._chunks(frontier, pieces, visited, list(pending))
                spill_failed = None
                for cs, _, last in pieces:
                    kept, before = level.size, dict(violations)
                    try:
                        counts, moves, found, bad = next(chunks)
                        coverage.counts[:FIRED + 1] += counts
                        transitions += moves
                        if found is None:
                            continue
                        rows, row_fps, win_parent, win_action = found
                        hits = self._record(bad, next_id + level.size, depth + 1, pending, violations)
                        if on_states is not None:
                            on_states(rows)
                        if self.kept_lanes is not None:
                            self.kept_lanes.append(row_fps)
                        win_parent = (np.int64(level_start[-1] + cs) + win_parent).astype(np.uint32)
                        win_action = win_action.astype(np.uint16)
                        level.append(rows, row_fps, win_parent, win_action)
                        coverage.add_new(win_action)
                    except (KeyboardInterrupt, MemoryError) as e:   # stop cleanly: what was found so far is kept
                        budget_hit = "Ctrl-C" if isinstance(e, KeyboardInterrupt) else stop.out_of_memory()
                        if level.size == kept:      # this chunk's states were not kept, so neither are its violations
                            pending += [inv for inv in self.invariants if inv.name in violations.keys() - before.keys()]
                            violations = before
                        break
                    except OSError as e:            # the level's spill file could not be written
                        budget_hit = f"level spill failed ({e.strerror or e})"
                        spill_failed = e
                        break
                    for name, k in hits:
                        v = violations[name]
                        v.steps = self.trace(int(win_parent[k]), level_start, parents, actions, int(win_action[k]))
                        if on_violation is not None:
                            on_violation(v)
                    if progress is not None:
                        progress(depth=depth, frontier=frontier.size, distinct=next_id + level.size,
                                 seconds=elapsed + time.perf_counter() - start, snapshot=self.snapshot_time)
                    if not last:                    # the budgets are looked at between chunks
                        continue
                    if max_states is not None and next_id + level.size >= max_states:
                        budget_hit = f"max states {max_states}"
                        break
                    if next_id + level.size >= NUMBERED:
                        budget_hit = (f"{NUMBERED:,} states, as many as the local engine's 32-bit parent numbers "
                                      f"name (--engine spark numbers 2**48)")
                        break
                    if time_limit is not None and time.perf_counter() - start > time_limit:
                        budget_hit = f"time limit {time_limit:g}s"
                        break
                    budget_hit = stop.reason()
                    if budget_hit:
                        break
                chunks.close()              # chunks taken on ahead of a stop are dropped
                if not level.size:
                    complete = budget_hit is None
                    break
                try:
                    if spill_failed:                    # part of the level's rows is not on disk
                        raise spill_failed
                    following, level_parents, level_actions = level.finish()
                except (MemoryError, OSError) as e:     # the level cannot be kept: the levels before it are the result
                    budget_hit = budget_hit or (stop.out_of_memory() if isinstance(e, MemoryError)
                                                else f"level files could not be written ({e.strerror or e})")
                    lost = [name for name, v in violations.items() if v.level > depth]
                    pending += [inv for inv in self.invariants if inv.name in lost]
                    violations = {name: v for name, v in violations.items() if name not in lost}
                    break
                frontier.discard()
                frontier = following
                if frontier.files is not None or limit is not None and stop.resident_bytes() >= levels.SPILL_AT * limit:
                    stop.release_free_memory()  # near the limit: the dropped level stays in malloc's arenas otherwise
                level_start.append(next_id)
                parents.append(level_parents)
                actions.append(level_actions)
                if budget_hit:
                    break
                depth += 1
                if checkpoint and time.perf_counter() - last_snapshot >= checkpoint_every:
                    try:
                        self._snapshot(checkpoint, ident, frontier, visited, parents, actions,
                                       level_start, coverage, violations, transitions, depth,
                                       elapsed + time.perf_counter() - start)
                    except OSError as e:
                        budget_hit = f"checkpoint write failed ({e.strerror or e})"
                        break
                    last_snapshot = time.perf_counter()

            self.tree = (level_start, parents, actions)     # for traces to any state numbered (checker/exhaustive/liveness.py)
            for v in violations.values():
                v.steps = self.trace(v.state_id, *self.tree)
            retained = visited.nbytes + sum(a.nbytes for a in parents + actions if not isinstance(a, np.memmap))
            never = coverage.never_fired()
            return Result(
                invariants=[i.name for i in self.invariants], violations=violations,
                distinct_states=sum(a.size for a in parents), transitions=transitions, depth=depth,
                seconds=elapsed + time.perf_counter() - start, peak_memory_bytes=peak_memory(),
                retained_bytes=retained, complete=complete, budget_hit=budget_hit,
                never_fired=never if complete else [], fingerprint_bits=self.fingerprint.bits,
                wide_from=self.wide_from, renamings=self.symmetry.renamings if self.symmetry else 1,
                coverage=coverage)
        finally:
            if self.pool is not None:       # the workers of this search end with it
                with self.pool:
                    self.pool = None

    # --- checkpoints ------------------------------------------------------------------------
    def identity(self):
        return checkpoint_mod.identity(self.spec, [i.name for i in self.invariants], self.symmetry is not None)

    def _snapshot(self, directory, ident, frontier, visited, parents, actions, level_start, coverage,
                  violations, transitions, depth, seconds):
        """Everything the search needs to go on from the start of level ``depth``: a consistent snapshot."""
        rows, fps = frontier.in_memory()
        fps = fps if fps.ndim == 1 else fps[0]
        keys = visited.values()
        arrays = {"visited": keys[0] if visited.wide else keys, "parents": np.concatenate(parents),
                  "actions": np.concatenate(actions), "frontier": rows, "frontier_fps": fps, "coverage": coverage.counts}
        if visited.wide:
            arrays["visited_high"] = keys[1]        # lane 2's high halves (checker/exhaustive/visited.py)
        counters = {"depth": depth, "transitions": transitions, "level_start": level_start, "seconds": seconds,
                    "violations": {n: [v.state_id, v.level] for n, v in violations.items()},
                    "wide_from": self.wide_from}
        self.snapshot_bytes = checkpoint_mod.write(directory, ident, arrays, counters)
        self.snapshot_time = time.time()

    def _restore(self, directory, ident, coverage, violations, pending, on_violation):
        """The search as snapshotted in ``directory``, every part of it checked first (checker/exhaustive/checkpoint.py; the
        violations' paths replayed): a trace is written (``on_violation``) only from a snapshot found whole."""
        arrays, c = checkpoint_mod.read(directory, ident, self.spec.layout, len(self.spec.actions))
        if "visited_high" in arrays:
            from isrcheck.model.cbuild import CompileError
            try:
                visited = VisitedSet.of(arrays["visited"], arrays["visited_high"])
            except CompileError as e:
                raise checkpoint_mod.CheckpointError(f"--resume {directory}: the snapshot's fingerprints are "
                                                     f"96-bit, which need the compiled kernels: {e}") from None
            self.wide_from = c.get("wide_from") or 0
        else:
            visited = VisitedSet.of(arrays["visited"])
        level_start = [int(x) for x in c["level_start"]]
        bounds = level_start[1:]
        parents = np.split(arrays["parents"], bounds)
        actions = np.split(arrays["actions"], bounds)
        for level in range(1, len(parents)):
            parents[level], actions[level] = levels.kept(parents[level]), levels.kept(actions[level])
        coverage.counts[:] = arrays["coverage"]
        for name, (state_id, level) in c["violations"].items():
            inv = next(i for i in pending if i.name == name)
            pending.remove(inv)
            v = violations[name] = Violation(name, int(state_id), int(level))
            try:
                v.steps = self.trace(v.state_id, level_start, parents, actions)
            except RuntimeError:            # a step not enabled on replay
                v.steps = None
            if v.steps is None or backends.scalar(self.spec).holds(v.steps[-1][1], inv):
                raise checkpoint_mod.CheckpointError(f"--resume {directory}: the snapshot's path to its violation "
                                                     f"of {name} does not replay to one (damaged)")
        self.snapshot_time = c.get("written")
        # the frontier's own fingerprints, which expansion adds its deltas to (older snapshots held canonical ones
        # under symmetry)
        frontier = levels.Frontier(arrays["frontier"], self.fingerprint.full(arrays["frontier"]))
        if on_violation is not None:
            for v in violations.values():
                on_violation(v)
        return (frontier, visited, parents, actions, level_start,
                int(c["transitions"]), int(c["depth"]), float(c["seconds"]))

    def _chunk(self, frontier, k, start, count, visited, turns, invariants):
        """Piece ``k`` of the level (``count`` states from ``start``: see ``_pieces``), start to end: expanded, its
        successors grouped by fingerprint, the groups inserted into the visited set when ``turns`` says it is
        this piece's turn, the fresh ones' rows built and checked against ``invariants``. Runs on a worker thread
        (everything but the insert runs alongside other pieces).

        Returns (enabled and fired counts per action instance, transitions, found, first violations) where found
        is (rows, fingerprints, parent rows in the piece, action ids) or None, and first violations is
        {invariant name: column in rows} for the invariants the rows break.
        """
        try:
            coverage = Coverage(self.spec.actions)
            if self.compiled is not None:
                found, moves = self._compiled_successors(*frontier.block(start, count, contiguous=False), visited,
                                                         turns, k, coverage)
            else:
                batch, fps = frontier.block(start, count)
                parts = self.expand(batch, fps, coverage)
                found, moves = self._successors(batch, parts, visited, turns, k)
        except BaseException:
            turns.fail(k)
            raise
        bad = {} if found is None else self._violations(found[0], invariants)
        return coverage.counts[:FIRED + 1], moves, found, bad

    def _pieces(self, size, step):
        """[(start, states, whether it ends a chunk)] of the pieces a level of ``size`` states is expanded in: its
        chunks of ``step`` states, or on the compiled kernels with several workers, those cut into pieces of
        PIECE states, which keep both cores busy on the levels of a single chunk. The budgets are looked at
        where a chunk ends, so the pieces change no answer."""
        piece = step if self.compiled is None or self.workers == 1 or size < PIECES_FROM else min(step, PIECE)
        out = []
        for cs in range(0, size, step):
            end = min(cs + step, size)
            out += [(ps, min(piece, end - ps), ps + piece >= end) for ps in range(cs, end, piece)]
        return out

    def _chunks(self, frontier, pieces, visited, invariants):
        """The level's pieces (see ``_chunk``) in order; with several workers, up to that many at once on the
        thread pool (the compiled and native kernels release the GIL, numpy does in its loops) while the caller
        takes them."""
        turns = Turns()
        tasks = [(self._chunk, frontier, k, ps, n, visited, turns, invariants) for k, (ps, n, _) in enumerate(pieces)]
        if self.workers == 1 or len(tasks) == 1:
            for fn, *args in tasks:
                yield fn(*args)
            return
        if self.pool is None:
            from concurrent.futures import ThreadPoolExecutor       # (and logging): only a search on several workers
            self.pool = ThreadPoolExecutor(self.workers, thread_name_prefix="isrcheck-search")
        ahead = [self.pool.submit(*task) for task in tasks[:self.workers + 1]]
        try:
            for task in tasks[self.workers + 1:]:
                done = ahead.pop(0).result()
                ahead.append(self.pool.submit(*task))
                yield done
            while ahead:
                yield ahead.pop(0).result()
        finally:
            turns.fail(-1)                  # a stop: pieces waiting for their turn give up, the rest are dropped
            for future in ahead:
                future.cancel()
            for future in ahead:
                if not future.cancelled():
                    future.exception()      # wait: no piece inserts into the visited set after the search moves on

    def _successors(self, batch, parts, visited, turns, k):
        """The new states reached from chunk ``k`` of the frontier (``parts``: its ``expand``), added to the
        visited set in its turn.

        Returns ((rows, fingerprints, parent rows in the chunk, action ids) or None, transitions taken).
        """
        moves = sum(p[1].size for p in parts)
        if not parts:
            turns.skip(k)
            return None, moves
        sizes = np.array([p[1].size for p in parts])
        part_start = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        plain_fp = np.concatenate([p[3] for p in parts])
        succ_fp = plain_fp if self.symmetry is None else self._canonical(batch, parts, sizes, plain_fp)
        order, starts, unique = self.group(succ_fp)
        # in chunk order: the smallest (parent, action) wins
        fresh = np.flatnonzero(visited.insert(unique, lambda group: turns.turn(k, group)))
        if fresh.size == 0:
            return None, moves
        winners, win_parent, win_action = self.pick(parts, order, starts, fresh)
        part_w = np.searchsorted(part_start, winners, side="right") - 1
        rows = self.materialize(batch, parts, (part_w, winners - part_start[part_w]), win_parent)
        return (rows, plain_fp[winners], win_parent, win_action), moves

    def _compiled_successors(self, batch, fps, visited, turns, k, coverage):
        """``_successors`` on the compiled kernels: every successor of chunk ``k`` in (parent, action) order,
        inserted into the visited set in that order in its turn (so the first discovery of a new state is the
        one marked), then the new ones' rows built. Lane 2 of the fingerprints is computed when the keys are
        wide or the search keeps it to widen them later."""
        kernels, fp = self.compiled, self.fingerprint
        lanes = visited.wide or self.kept_lanes is not None
        fps, fps2 = (fps[0], fps[1] if lanes else None) if fps.ndim == 2 else (
            fps, kernels.fingerprint(batch, fp.lane2) if lanes else None)
        scratch = getattr(self._scratch, "buffers", None)
        if scratch is None:
            from isrcheck.model.c_kernels import Scratch
            scratch = self._scratch.buffers = Scratch()
        h1, h2, parent, action = kernels.expand(batch, fps, fps2, fp.multipliers, fp.lane2 if lanes else None,
                                                coverage.counts[ENABLED], coverage.counts[FIRED], scratch)
        fresh = visited.insert_ordered(h1, h2, lambda group: turns.turn(k, group), scratch)
        new = int(np.count_nonzero(fresh))
        if not new:
            return None, h1.size
        return kernels.build(batch, fresh, h1, h2, parent, action, new), h1.size

    def _widen(self, visited, frontier, step, found, coming, depth):
        """At the start of a level (``depth``: the one being built; ``found`` states so far, ``coming``: what the
        level may add): make the visited set's keys wide when ``fingerprint.widen_now`` says so, and from half
        that count on keep the new states' lane 2 (lanes of earlier levels are found again then: keeping them
        costs a tenth of finding a state again, but most searches never widen)."""
        bits = self.fingerprint.bits
        if visited.wide or self.width == "64":
            return
        if widen_now(self.width, found, coming, bits):          # "96" (a narrow snapshot resumed) or "auto"
            kept = self.kept_lanes or []
            lanes_from = self.lanes_from if self.kept_lanes is not None else depth
            replayed = self._replayed_lanes(lanes_from) if lanes_from else []
            lanes = np.concatenate(replayed + kept, axis=1)
            self.kept_lanes = None
            visited.widen(lanes[0], lanes[1])
            self.wide_from = found
        elif self.kept_lanes is None and widen_now(self.width, 2 * found, 2 * coming, bits):
            self.kept_lanes, self.lanes_from = [], depth - 1        # the frontier's level on
            for cs in range(0, frontier.size, step):
                rows, fps = frontier.block(cs, step, contiguous=False)
                self.kept_lanes.append(np.stack([fps, self.compiled.fingerprint(rows, self.fingerprint.lane2)]))

    def _replayed_lanes(self, count):
        """[(lane 1, lane 2)] of the states of the first ``count`` levels, found again by a search on the compiled
        kernels (the states that were found before the search kept lane 2)."""
        lanes, again = [], Search(self.spec, [], chunk=self.chunk, workers=self.workers, kernels="native",
                                  fingerprint="64")
        again.run(max_depth=count, on_states=lambda rows: lanes.append(np.stack(
            [self.compiled.fingerprint(rows, m) for m in (self.fingerprint.multipliers, self.fingerprint.lane2)])))
        return lanes

    def _canonical(self, batch, parts, sizes, plain_fp):
        """The canonical fingerprints of a chunk's successors (``parts``, of ``sizes``; their own fingerprints
        ``plain_fp``), computed once per distinct successor: about half of a chunk's successors
        are states another one of them reached too."""
        order, starts, _ = self.group(plain_fp)
        first = np.take(order, starts)              # each distinct successor's first occurrence
        wanted = np.zeros(plain_fp.size, dtype=bool)
        wanted[first] = True
        canon = self.symmetry.canonical_successors(batch, np.concatenate([p[1] for p in parts]),
                                                   *self.patches(parts, sizes), wanted)
        canon[order] = np.repeat(canon[first], np.diff(np.append(starts, plain_fp.size)))
        return canon

    @staticmethod
    def patches(parts, sizes):
        """The cells each part's successors write: (sizes, column offsets, value offsets, columns, values)."""
        col_start = np.cumsum([0] + [len(p[2]) for p in parts])
        val_start = np.cumsum([0] + [len(p[2]) * n for p, n in zip(parts, sizes)])
        columns = np.array([c for p in parts for c in p[2]], dtype=np.int64)
        values = np.empty(int(val_start[-1]), dtype=np.int8)
        for (_, _, cols, _), lo, n in zip(parts, val_start, sizes):
            for k, v in enumerate(cols.values()):
                values[lo + k * n:lo + (k + 1) * n] = v
        return sizes, col_start, val_start[:-1], columns, values

    def _violations(self, rows, invariants):
        """{invariant name: its first violating column in rows} for the ``invariants`` the rows break."""
        bad = {}
        if self.compiled is not None:
            for inv in invariants:
                hit = self.compiled.first_violation(inv.name, rows)
                if hit >= 0:
                    bad[inv.name] = hit
            return bad
        kernels = backends.batch(self.spec) if self.native is None else self.native
        for inv in invariants:
            hit = np.flatnonzero(~kernels.holds(inv, rows))
            if hit.size:
                bad[inv.name] = int(hit[0])
        return bad

    @staticmethod
    def _record(bad, first_id, level, pending, violations):
        """Record the first violations ``bad`` ({invariant: column}) of rows numbered from ``first_id`` for the
        invariants still pending. Returns [(invariant, column in rows)] for those recorded."""
        hits = []
        for inv in list(pending):
            if inv.name in bad:
                violations[inv.name] = Violation(inv.name, first_id + bad[inv.name], level)
                pending.remove(inv)
                hits.append((inv.name, bad[inv.name]))
        return hits

    def trace(self, state_id, level_start, parents, actions, then=None):
        """Replay the path to a state, then action ``then`` if given, on the scalar backend: [(action or None, row)]."""
        path = [] if then is None else [then]
        level = int(np.searchsorted(level_start, state_id, side="right")) - 1
        sid = state_id
        while level > 0:
            k = sid - level_start[level]
            path.append(int(actions[level][k]))
            sid = int(parents[level][k])
            level -= 1
        row = backends.scalar(self.spec).initial_row()
        steps = [(None, row)]
        for a in reversed(path):
            inst = self.spec.actions[a]
            row = backends.scalar(self.spec).step(row, inst)
            if row is None:
                raise RuntimeError(f"internal error: {inst.label} not enabled on replay")
            steps.append((inst, row))
        return steps


def search(spec, invariants, symmetry=False, chunk=1 << 18, budget=UNLIMITED, workers=None, kernels="auto",
           fingerprint="auto", excluded=(), **options):
    """Run the exhaustive search for the named invariants within ``budget`` (its max_states, max_depth and
    seconds) on ``workers`` threads with ``kernels`` ("auto", "native" or "numpy") and ``fingerprint`` width
    ("auto", "64", "96": see :class:`Search`); ``options`` are :meth:`Search.run`'s others (progress,
    on_violation, checkpoint, ...)."""
    return run_within(Search(spec, invariants, symmetry=symmetry, chunk=chunk, workers=workers, kernels=kernels,
                             fingerprint=fingerprint, excluded=excluded), budget, **options)


def run_within(searcher, budget, **options):
    """``searcher.run(...)`` (a :class:`Search`) within a :class:`checker.engine.budget.Budget`'s limits."""
    return searcher.run(max_states=budget.max_states, max_depth=budget.max_depth, time_limit=budget.seconds,
                        **options)
