"""The visited set's table, levels spilled to disk, and symmetry's canonical form against brute force."""
import itertools
import subprocess
import sys

import numpy as np
import pytest

from isrcheck.checker.exhaustive import levels
from isrcheck.checker.engine import stop
from isrcheck.checker.exhaustive.bfs import search
from isrcheck.checker.exhaustive.visited import VisitedSet
from isrcheck.specs import SPECS


@pytest.mark.parametrize("table_from", [0, 6000, 1 << 30], ids=["table", "sorted-then-table", "sorted"])
def test_insert_says_which_are_new_and_grows(table_from):
    """The same answers from the table, from the sorted array a small set is, and across the switch."""
    rng = np.random.default_rng(3)
    visited, seen = VisitedSet(table_from=table_from), set()
    for size in (1, 50, 5000, 40000):
        fps = rng.integers(0, 2 ** 64, size, dtype=np.uint64, endpoint=False)
        fps[: size // 3] = rng.choice(np.array(sorted(seen) or [0], dtype=np.uint64), size // 3)  # some seen
        fps[-1] = 0                                                        # 0 marks an empty slot: kept apart
        fps = np.unique(fps)
        new = visited.insert(fps)
        assert new.tolist() == [int(f) not in seen for f in fps]
        seen.update(int(f) for f in fps)
        assert len(visited) == len(seen)
        assert visited.values().tolist() == sorted(seen)
    assert visited.nbytes <= 16 * len(visited) + 8 * 64 * 256      # at least 1/2 full, but for the first slots
    assert (visited.sorted is None) == (table_from < 1 << 30)


def test_ordered_inserts_mark_the_first_of_each_new_key_and_grow_midway():
    """The compiled table (checker/exhaustive/table.c) takes keys in discovery order, repeats included: the first of each
    key it lacked is marked, later repeats and known keys are not; shards grow in the middle of a batch. Wide
    keys differ by either lane; widening keeps exactly the set, and its values come back whole."""
    rng = np.random.default_rng(11)
    visited, seen = VisitedSet(compiled=True), {}
    for size in (1, 70, 9000, 120_000):
        h1 = rng.integers(0, 2 ** 64, size, dtype=np.uint64, endpoint=False)
        h1[: size // 3] = rng.choice(np.array(list(seen) or [0], dtype=np.uint64), size // 3)     # some seen
        h1[size // 2:] = h1[: size - size // 2]                                                    # repeats
        h1[-1] = 0
        fresh = visited.insert_ordered(h1, None)
        expected = []
        for f in h1.tolist():
            expected.append(f not in seen)
            seen.setdefault(f, len(seen))
        assert fresh.astype(bool).tolist() == expected and len(visited) == len(seen)
    assert visited.values().tolist() == sorted(seen)
    assert visited.nbytes <= 16 * len(visited) + 8 * 4096 * 256     # small shards grow to 4096 slots at once
    keys = np.array(list(seen), dtype=np.uint64)                    # in the order they were found
    lane2 = rng.integers(0, 2 ** 64, keys.size, dtype=np.uint64, endpoint=False)
    lane2[keys == 0] = 0                                           # (0, 0): the wide set's flag
    visited.widen(keys, lane2)
    assert visited.wide and len(visited) == keys.size
    other = lane2 ^ np.uint64(1 << 40)                             # same lane 1, another lane 2 (high half)
    both = np.concatenate([keys[:500], keys[:500], keys[:20]])
    fresh = visited.insert_ordered(both, np.concatenate([other[:500], lane2[:500], other[:20]]))
    assert fresh.tolist() == [1] * 500 + [0] * 520 and len(visited) == keys.size + 500
    h1, high = visited.values()
    pairs = sorted(zip(keys.tolist() + keys[:500].tolist(),
                       (lane2 >> np.uint64(32)).tolist() + (other[:500] >> np.uint64(32)).tolist()))
    assert sorted(zip(h1.tolist(), high.tolist())) == pairs and (np.diff(h1.astype(float)) >= 0).all()
    again = VisitedSet.of(h1, high)
    assert len(again) == len(visited) and not again.insert_ordered(h1, high.astype(np.uint64) << np.uint64(32)).any()


def test_a_shard_has_room_for_its_whole_batch_before_it_goes_in(monkeypatch):
    """A sorted batch inserted into a shard too small for it would pile into the lowest slots and take quadratic
    time (66 s for the 8M fingerprints a search holds when the sorted array becomes the table): every shard
    must have room for all it is given."""
    from isrcheck.checker.exhaustive import kernels
    calls = []
    real = kernels.insert

    def insert(table, fps, new, count, limit, slot_shift):
        calls.append((table.size, fps.size, count))
        return real(table, fps, new, count, limit, slot_shift)

    monkeypatch.setattr(kernels, "insert", insert)
    rng = np.random.default_rng(5)
    visited = VisitedSet(table_from=1000)
    for size in (900, 200_000, 30_000):
        assert visited.insert(np.unique(rng.integers(1, 2 ** 64, size, dtype=np.uint64, endpoint=False))).all()
    assert len(calls) > 256 and all(count + n <= 0.75 * table for table, n, count in calls)


def test_near_the_memory_limit_shards_fill_denser_then_grow_less_then_stop(monkeypatch):
    """Where growing every shard by half has no room, shards fill up to DENSE_LOAD and then grow just to MAX_LOAD
    full, within the room there is; with none left the insert stops the search (MemoryError) naming the memory
    limit, before a shard passes DENSE_LOAD."""
    from isrcheck.checker.exhaustive import kernels, visited as visited_mod
    loads = []
    real = kernels.insert

    def insert(table, fps, new, count, limit, slot_shift):
        loads.append((count + fps.size) / table.size)
        return real(table, fps, new, count, limit, slot_shift)

    monkeypatch.setattr(kernels, "insert", insert)
    rng = np.random.default_rng(7)
    room_bytes = [0]
    visited = VisitedSet(table_from=0, room=lambda n: visited.nbytes + n <= room_bytes[0])
    inserted = 0

    def batch(size):
        nonlocal inserted
        fps = np.unique(rng.integers(1, 2 ** 64, size, dtype=np.uint64, endpoint=False))
        assert visited.insert(fps).all()
        inserted += fps.size

    room_bytes[0] = 1 << 30                     # room: the usual growth, at most 3/4 full
    for _ in range(4):
        batch(20_000)
    assert max(loads) <= visited_mod.MAX_LOAD and len(visited) == inserted
    grown = visited.nbytes
    room_bytes[0] = grown                       # no room at all: shards fill denser, up to 9/10, none grows
    while max(loads) <= 0.85:
        batch(2_000)
    assert visited.nbytes == grown and max(loads) <= visited_mod.DENSE_LOAD
    room_bytes[0] = int(grown * 1.3)            # room for 1.3x, not 1.5x: the shards that must grow go to 3/4 full
    loads.clear()
    batch(int(len(visited) * 0.1))
    assert grown < visited.nbytes <= room_bytes[0] and max(loads) <= visited_mod.DENSE_LOAD
    assert visited.values().size == inserted == len(visited)
    room_bytes[0] = visited.nbytes              # no room again: fills to 9/10, then stops
    limit = stop.resident_bytes() + (4 << 20)   # a limit the reserve for the rest of the search is past
    stop.set_max_memory(limit)
    try:
        with pytest.raises(MemoryError):
            for _ in range(100):
                batch(5_000)
        assert stop.out_of_memory() == stop.reason() == f"memory limit {stop.format_size(limit)}"
    finally:
        stop.set_max_memory(None)
    assert max(loads) <= visited_mod.DENSE_LOAD


def test_small_searches_never_import_numba():
    """A search that stays small keeps the sorted array, so the process never pays numba's import."""
    code = ("import sys; from isrcheck.checker.exhaustive.bfs import search; from isrcheck.specs import SPECS; "
            "r = search(SPECS['kip-101'](), ['log-matching']); print(r.distinct_states, 'numba' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    states, numba_loaded = proc.stdout.split()
    assert int(states) > 100_000 and numba_loaded == "False"


def explore(spec, invariants=(), **kw):
    states = []
    result = search(spec, list(invariants), on_states=lambda rows: states.append(rows.copy()), **kw)
    return result, np.concatenate(states, axis=1)


def test_spilled_levels_give_the_same_search(monkeypatch):
    spec = SPECS["kip-320"](max_epochs=2)
    plain, plain_rows = explore(spec, spec.invariants, chunk=1 << 12)
    monkeypatch.setattr(levels, "SPILL_AT", 0.0)        # every level to disk
    spills = []
    spill = levels.LevelWriter._spill
    monkeypatch.setattr(levels.LevelWriter, "_spill", lambda self: spills.append(spill(self)))
    stop.set_max_memory(1 << 50)
    try:
        spilled, spilled_rows = explore(spec, spec.invariants, chunk=1 << 12)
    finally:
        stop.set_max_memory(None)
    assert len(spills) == spilled.depth - 1
    assert spilled.distinct_states == plain.distinct_states and spilled.depth == plain.depth
    assert np.array_equal(spilled_rows, plain_rows)                       # same numbering
    assert {n: v.state_id for n, v in spilled.violations.items()} == {n: v.state_id for n, v in plain.violations.items()}
    assert spilled.retained_bytes <= 16 * spilled.distinct_states


def orbit_count(spec, rows):
    """Orbits among the given states: each renamed under every replica permutation, the smallest row kept."""
    layout = spec.layout
    best = None
    for perm in itertools.permutations(range(layout.replicas)):
        out = np.empty_like(rows)
        for f in layout.fields.values():
            axes = f.axes or (None,) * len(f.shape)
            for idx in f.cells():
                moved = tuple(perm[i] if ax == "replica" else i for i, ax in zip(idx, axes))
                col = rows[layout.column(f.name, idx)]
                if f.values == "replica":
                    named = (col >= 0) & (col < layout.replicas)
                    col = np.where(named, np.array(perm, dtype=np.int8)[np.where(named, col, 0)], col)
                out[layout.column(f.name, moved)] = col
        renamed = out.T
        if best is None:
            best = renamed.copy()
            continue
        differs = renamed != best
        first = differs.argmax(axis=1)
        k = np.arange(renamed.shape[0])
        smaller = differs.any(axis=1) & (renamed[k, first] < best[k, first])
        best[smaller] = renamed[smaller]
    return np.unique(np.ascontiguousarray(best).view(np.dtype((np.void, best.shape[1])))).size


@pytest.mark.parametrize("name, bounds", [
    ("kip-101", dict(replicas=2, log_size=1, max_records=1, max_epochs=2, max_crashes=1)),
    ("kip-320", dict(replicas=3, log_size=1, max_records=1, max_epochs=2, max_crashes=0)),
    ("tla-kip320", dict(replicas=3, log_size=1, max_records=1, max_epochs=2)),
    ("kip-966", dict(replicas=3, log_size=1, max_records=1, max_epochs=1, max_crashes=0)),
])
def test_symmetry_counts_exactly_the_orbits(name, bounds):
    spec = SPECS[name](**bounds)
    _, rows = explore(spec)
    reduced = search(spec, [], symmetry=True)
    assert reduced.complete
    assert reduced.distinct_states == orbit_count(spec, rows) < rows.shape[1]


def test_a_spill_that_cannot_be_written_stops_like_a_budget(monkeypatch):
    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(levels, "SPILL_AT", 0.0)
    monkeypatch.setattr(levels.tempfile, "TemporaryFile", full_disk)
    stop.set_max_memory(1 << 50)
    try:
        result = search(SPECS["kip-320"](max_epochs=2), ["no-committed-loss"])
    finally:
        stop.set_max_memory(None)
    assert result.budget_hit == "level spill failed (No space left on device)"
    assert not result.complete and result.verdicts["no-committed-loss"] == "unknown"
    assert result.distinct_states == 1 and result.depth == 1
