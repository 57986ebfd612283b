"""The exhaustive engine against a naive scalar BFS, and its determinism, symmetry and budgets."""
import numpy as np
import pytest

from isrcheck.checker.exhaustive import bfs
from isrcheck.checker.exhaustive.bfs import search
from isrcheck.checker.engine.budget import Budget
from isrcheck.checker.traces.trace import from_steps, replay
from isrcheck.model.spec import action
from isrcheck.specs import SPECS
from isrcheck.specs.kip_320 import Kip320
from isrcheck.model import backends

TINY = dict(replicas=2, log_size=1, max_records=1, max_epochs=2, max_crashes=1)


def naive_bfs(spec, invariants):
    """Plain breadth-first search on the scalar backend with a Python set: (states, levels, first bad level)."""
    start = backends.scalar(spec).initial_row()
    seen = {start.tobytes()}
    frontier, depth = [start], 1
    first_bad = {}
    while frontier:
        for name in invariants:
            if name not in first_bad and any(not backends.scalar(spec).holds(r, spec.invariants[name]) for r in frontier):
                first_bad[name] = depth
        nxt = []
        for row in frontier:
            for inst in spec.actions:
                succ = backends.scalar(spec).step(row, inst)
                if succ is not None and succ.tobytes() not in seen:
                    seen.add(succ.tobytes())
                    nxt.append(succ)
        if nxt:
            depth += 1
        frontier = nxt
    return len(seen), depth, first_bad


@pytest.mark.parametrize("name, epochs", [("hw-truncation", 2), ("kip-320", 2)])
def test_engine_matches_naive_scalar_bfs(name, epochs):
    spec = SPECS[name](**{**TINY, "max_epochs": epochs, "max_crashes": 0})   # several hundred states
    invariants = list(spec.invariants)
    states, depth, first_bad = naive_bfs(spec, invariants)
    result = search(spec, invariants)
    assert result.complete
    assert result.distinct_states == states
    assert result.depth == depth
    assert {k for k, v in result.verdicts.items() if v == "violated"} == set(first_bad)
    for inv, level in first_bad.items():
        assert len(result.violations[inv].steps) == level


def test_trace_independent_of_chunk_size():
    spec = SPECS["hw-truncation"]()
    runs = [search(spec, ["no-committed-loss", "strong-isr"], chunk=c) for c in (1 << 18, 997, 64)]
    first = runs[0]
    for r in runs[1:]:
        assert r.distinct_states == first.distinct_states
        for inv, v in first.violations.items():
            got = r.violations[inv]
            assert got.state_id == v.state_id
            assert [a.label if a else None for a, _ in got.steps] == [a.label if a else None for a, _ in v.steps]


@pytest.mark.parametrize("size", [1, 5, 100, bfs.MIN_CHUNK - 1, 2 * bfs.MIN_CHUNK - 1, 2 * bfs.MIN_CHUNK, 85_404,
                                  3 * bfs.MIN_CHUNK + 7, 1_055_667, 2_000_000, 3_000_001, 10_000_000])
@pytest.mark.parametrize("most", [64, 4096, bfs.MIN_CHUNK, 1 << 18])
def test_a_level_is_cut_by_its_size_alone(size, most):
    """The chunks of a level depend on its size and the chunk limit alone. Where the limit binds they are ``most``
    states each (the Spark engine reproduces that cut); otherwise an even number of equal chunks of at least
    MIN_CHUNK (two workers finish together), and a level under two of them is one chunk."""
    step = bfs.chunk_step(size, most)
    count = -(-size // step)
    assert 1 <= step <= most
    assert (count - 1) * step < size <= count * step
    if most < bfs.MIN_CHUNK or -(-size // bfs.LEVEL_SPLIT) >= most:
        assert step == most
    else:
        assert count == 1 or (count % 2 == 0 and step >= bfs.MIN_CHUNK // 2 and count <= bfs.LEVEL_SPLIT)
        if size < 2 * bfs.MIN_CHUNK and size <= most:
            assert count == 1               # a small level is one chunk: numpy on two threads costs more


@pytest.mark.parametrize("most", [64, bfs.MIN_CHUNK, 1 << 18])
def test_an_empty_level_has_a_chunk_size(most):
    """A Spark partition can hold none of a level's states: its chunk count divides by the step."""
    assert bfs.chunk_step(0, most) == most


def test_violation_trace_replays_and_is_shortest():
    spec = SPECS["hw-truncation"]()
    result = search(spec, ["no-committed-loss"])
    steps = result.violations["no-committed-loss"].steps
    assert replay(spec, from_steps(spec, "no-committed-loss", "local", steps)).ok
    # shortest: no state before the last one violates, and a search to one level less finds nothing
    shallower = search(spec, ["no-committed-loss"], budget=Budget(max_depth=len(steps) - 1))
    assert "no-committed-loss" not in shallower.violations
    assert shallower.budget_hit


def test_symmetry_reduces_states_and_keeps_verdicts():
    spec = SPECS["kip-101"](**TINY)
    plain = search(spec, list(spec.invariants))
    reduced = search(spec, list(spec.invariants), symmetry=True)
    assert reduced.verdicts == plain.verdicts
    assert plain.distinct_states / 2 <= reduced.distinct_states < plain.distinct_states
    # a canonical fingerprint is the fingerprint of one of the state's renamings: the symmetric search hashes the
    # same concrete states as the plain one, so it never claims better collision odds
    assert reduced.collision_probability >= plain.collision_probability > 0
    for inv, v in reduced.violations.items():
        assert len(v.steps) == len(plain.violations[inv].steps)
        assert replay(spec, from_steps(spec, inv, "local", v.steps)).ok


def test_budgets_stop_and_report():
    spec = SPECS["kip-320"]()
    by_states = search(spec, ["no-committed-loss"], budget=Budget(max_states=5000))
    assert by_states.budget_hit.startswith("max states")
    assert not by_states.complete and by_states.verdicts["no-committed-loss"] == "unknown"
    assert by_states.distinct_states >= 5000
    by_depth = search(spec, ["no-committed-loss"], budget=Budget(max_depth=5))
    assert by_depth.depth == 5 and by_depth.budget_hit.startswith("max depth")
    by_time = search(spec, ["no-committed-loss"], budget=Budget(seconds=1e-9))
    assert by_time.budget_hit.startswith("time limit")


@pytest.mark.parametrize("n", [1000, 300_000])
def test_group_orders_fingerprints_that_share_their_high_bits(n):
    """Search.group packs each fingerprint's index into its low bits: fingerprints that differ only there come
    out of the one sort interleaved, and only their runs are sorted again. The result is a stable sort by the
    whole fingerprint, whatever the ties (here a tenth repeated, and pairs one apart)."""
    rng = np.random.default_rng(n)
    fp = rng.integers(0, 2 ** 64 - 1, n, dtype=np.uint64)
    fp[:n // 10] = fp[n // 10:2 * (n // 10)]                        # repeats
    fp[2 * (n // 10):2 * (n // 10) + 50] = fp[:50] + np.uint64(1)   # high bits shared, low bits not
    rng.shuffle(fp)
    order, starts, unique = bfs.Search.group(fp)
    assert np.array_equal(order, np.argsort(fp, kind="stable"))
    assert np.array_equal(unique, np.unique(fp)) and np.array_equal(fp[order][starts], unique)


def test_the_search_stops_before_its_32_bit_parent_numbers_overflow(monkeypatch):
    """The local engine stores parent numbers as uint32: it stops (a budget, exit 3 in the CLI) once a level
    takes the states past what they can name, never expanding a state whose number they cannot hold; here the
    limit is lowered to 5,000 to show it."""
    spec = SPECS["kip-320"]()
    monkeypatch.setattr(bfs, "NUMBERED", 5000)
    result = search(spec, ["no-committed-loss"], chunk=512)
    assert "32-bit parent numbers" in result.budget_hit and not result.complete
    assert result.verdicts["no-committed-loss"] == "unknown"
    cut = search(spec, ["no-committed-loss"], chunk=512, budget=Budget(max_states=5000))
    assert (result.distinct_states, result.depth) == (cut.distinct_states, cut.depth)     # the same chunk


def test_retained_bytes_per_state_at_most_16_and_6_for_small_levels():
    """At most 16 bytes a fingerprint in the visited table (8 in the sorted array numpy's small searches keep),
    and the parent numbers and actions of levels under 64K states, which stay in memory (6 bytes a state)."""
    result = search(SPECS["kip-320"](), ["no-committed-loss"])
    assert result.bytes_per_state <= 16 + 6


class NeverFires(Kip320):
    """kip-320 plus an action whose guard some well-typed state satisfies, but no reachable one."""
    name = "never-fires"

    @action(r="REPLICAS")
    def impossible(self, s, r):
        """Enabled only when a replica's HW passed its log end: unreachable."""
        s.require(s.hw[r] > s.leo[r])
        s.hw[r] = s.leo[r]


def test_actions_that_never_fire_are_reported():
    result = search(NeverFires(max_epochs=2), ["no-committed-loss"])
    assert result.complete
    assert result.never_fired == ["impossible"]


def test_actions_disabled_in_every_typed_state_are_dropped_at_load():
    spec = SPECS["kip-320"](max_crashes=0)
    assert not {"crash", "shutdown"} & {a.name for a in spec.actions}
    assert {"crash", "shutdown"} <= {a.name for a in SPECS["kip-320"]().actions}


def test_collision_probability_is_small_and_grows_with_states():
    small = search(SPECS["kip-320"](**TINY), ["no-committed-loss"])
    big = search(SPECS["kip-320"](), ["no-committed-loss"])
    assert 0 < small.collision_probability < big.collision_probability < 1e-6


def explore(spec, invariants, **kw):
    """A search's result and every state it found, in the order it numbered them."""
    found = []
    result = search(spec, invariants, on_states=lambda rows: found.append(rows.copy()), **kw)
    return result, np.concatenate(found, axis=1)


def test_fingerprints_widened_midway_give_the_same_search_and_a_smaller_bound(monkeypatch):
    """With the collision target made tiny, "auto" starts on numpy's kernels, moves to the compiled ones at a
    level of 5K states, keeps the second lane a few levels before it makes the keys wide, near 100K (the
    lanes of the levels before it kept them found again): the same states in the same order and the same
    violations as 64-bit keys on numpy, and as 96-bit keys from the start; the bound counts the narrow keys'
    pairs at 2**-bits and the rest at the wide keys' bits."""
    from isrcheck.checker.exhaustive import fingerprint
    from isrcheck.model.c_kernels import CKernels
    spec, names = SPECS["kip-101"](), ["log-matching", "strong-isr"]      # holds: every state; violated at 31
    narrow, rows = explore(spec, names, kernels="numpy", fingerprint="64")
    wide, wide_rows = explore(spec, names, kernels="native", fingerprint="96")
    monkeypatch.setattr(bfs, "COMPILED_FROM", 5_000)
    monkeypatch.setattr(CKernels, "compiled", False)                 # as on a machine that never compiled them
    monkeypatch.setattr(fingerprint, "TARGET", 2e-8)                 # widen near 300K states, not 4M
    phases = []
    widen = bfs.Search._widen
    monkeypatch.setattr(bfs.Search, "_widen", lambda self, visited, *a: phases.append(
        (self.kept_lanes is not None, visited.wide)) or widen(self, visited, *a))
    widened, widened_rows = explore(spec, names, fingerprint="auto")
    assert (False, False) in phases and (True, False) in phases and (False, True) in phases     # keep, then wide
    assert 50_000 < widened.wide_from < 600_000 and wide.wide_from == 0 and narrow.wide_from is None
    assert widened.fingerprint_width == f"64-bit, 96-bit from {widened.wide_from:,} states"
    for other, other_rows in ((wide, wide_rows), (widened, widened_rows)):
        assert (other.distinct_states, other.transitions, other.depth) == (
            narrow.distinct_states, narrow.transitions, narrow.depth)
        assert np.array_equal(other_rows, rows)
        assert {n: v.state_id for n, v in other.violations.items()} == {n: v.state_id for n, v in narrow.violations.items()}
    n, bits = narrow.distinct_states, narrow.fingerprint_bits
    assert narrow.collision_probability == pytest.approx(n * (n - 1) / 2 / 2 ** bits)
    assert widened.collision_probability == pytest.approx(
        widened.wide_from * (widened.wide_from - 1) / 2 / 2 ** bits + n * (n - 1) / 2 / 2 ** (bits + 31))
    assert wide.collision_probability < widened.collision_probability < narrow.collision_probability


def test_fingerprints_by_delta_match_full_fingerprints():
    """The delta fingerprint of every successor equals its full fingerprint."""
    from isrcheck.checker.exhaustive.bfs import Search
    spec = SPECS["kip-320"](**TINY)
    s = Search(spec, ["no-committed-loss"])
    rng = np.random.default_rng(7)
    row = backends.scalar(spec).initial_row()
    rows = [row]
    for _ in range(200):
        enabled = backends.scalar(spec).enabled(row)
        row = backends.scalar(spec).step(row, enabled[rng.integers(len(enabled))])
        rows.append(row)
    batch = np.stack(rows, axis=1)
    fps = s.fingerprint.full(batch)
    for _, parents, cols, h in s.expand(batch, fps):
        succ = batch[:, parents].copy()
        for c, v in cols.items():
            succ[c] = v
        assert (s.fingerprint.full(succ) == h).all()


def test_ctrl_c_stops_cleanly_and_keeps_what_was_found(monkeypatch):
    """An interrupt mid-search ends it like a budget: violations found so far keep their traces."""
    from isrcheck.checker.exhaustive.bfs import Search
    calls = {"n": 0}

    def interrupted_later(successors):
        def successors_or_interrupt(self, *args):
            calls["n"] += 1
            if calls["n"] == 12:
                raise KeyboardInterrupt
            return successors(self, *args)
        return successors_or_interrupt

    for pipeline in ("_successors", "_compiled_successors"):       # numpy and numba's kernels, or the compiled ones
        monkeypatch.setattr(Search, pipeline, interrupted_later(getattr(Search, pipeline)))
    spec = SPECS["kip-320"]()
    result = search(spec, ["single-acting-leader", "no-committed-loss"])
    assert result.budget_hit == "Ctrl-C" and not result.complete
    assert result.verdicts == {"single-acting-leader": "violated", "no-committed-loss": "unknown"}
    steps = result.violations["single-acting-leader"].steps
    assert not backends.scalar(spec).holds(steps[-1][1], spec.invariants["single-acting-leader"])
    assert 0 < result.distinct_states < 694_386


def test_wide_search_resumed_from_a_snapshot_is_the_uninterrupted_one(tmp_path):
    """A search with 96-bit keys snapshots them whole (lane 2's high halves beside lane 1) and, resumed, finds the
    same states, transitions and violations, and says its keys were wide from the start."""
    spec, names = SPECS["kip-101"](), ["log-matching", "strong-isr"]
    whole = search(spec, names, kernels="native", fingerprint="96")
    cut = search(spec, names, kernels="native", fingerprint="96", budget=Budget(max_depth=20),
                 checkpoint=str(tmp_path), checkpoint_every=0)
    assert cut.budget_hit and cut.distinct_states < whole.distinct_states
    resumed = search(spec, names, checkpoint=str(tmp_path), resume=True, checkpoint_every=0)   # "auto": wide still
    assert (resumed.distinct_states, resumed.transitions, resumed.depth, resumed.wide_from) == \
        (whole.distinct_states, whole.transitions, whole.depth, 0)
    assert {n: v.state_id for n, v in resumed.violations.items()} == {n: v.state_id for n, v in whole.violations.items()}


def test_symmetric_search_resumed_from_a_snapshot_is_the_uninterrupted_one(tmp_path):
    """A resumed symmetric search finds the same states, transitions and violations (the frontier's own
    fingerprints, which group a chunk's successors before their canonical forms, come back with it)."""
    spec = SPECS["kip-320"](replicas=3, log_size=1, max_records=1, max_epochs=2, max_crashes=0)
    names = list(spec.invariants)
    whole = search(spec, names, symmetry=True)
    cut = search(spec, names, symmetry=True, budget=Budget(max_depth=6), checkpoint=str(tmp_path), checkpoint_every=0)
    assert cut.budget_hit and cut.distinct_states < whole.distinct_states
    resumed = search(spec, names, symmetry=True, checkpoint=str(tmp_path), resume=True, checkpoint_every=0)
    assert (resumed.distinct_states, resumed.transitions, resumed.depth) == \
        (whole.distinct_states, whole.transitions, whole.depth)
    assert {n: v.state_id for n, v in resumed.violations.items()} == {n: v.state_id for n, v in whole.violations.items()}


@pytest.mark.parametrize("kernels", ["numpy", "native"])
def test_a_search_without_some_actions_never_takes_them(kernels):
    spec = SPECS["kip-101"]()
    crash = [a.id for a in spec.actions if a.name == "crash"]
    whole = search(spec, ["no-committed-loss"], workers=1, kernels=kernels)
    cut = search(spec, ["no-committed-loss"], workers=1, kernels=kernels, excluded=crash)
    assert (whole.distinct_states, cut.distinct_states) == (193_918, 124_876)     # the same on both kernels
    assert whole.coverage.counts[:, crash].any() and not cut.coverage.counts[:, crash].any()
    # kafka-3.5's shortest loss (16 states) starts with a controlled shutdown; without one it takes 18
    spec = SPECS["kafka-3.5"]()
    shutdown = [a.id for a in spec.actions if a.name == "controlled_shutdown"]
    v = search(spec, ["no-committed-loss"], workers=1, excluded=shutdown).violations["no-committed-loss"]
    assert len(v.steps) == 18 and not any(a is not None and a.id in shutdown for a, _ in v.steps)
    assert len(search(spec, ["no-committed-loss"], workers=1).violations["no-committed-loss"].steps) == 16
    with pytest.raises(ValueError, match="every action"):
        bfs.Search(spec, [], fingerprint="96", excluded=shutdown)
