"""The fuzzer: its compiled executor agrees with the backends, it finds the known bugs, finds nothing in KIP-320.

Budgets (2-core machine): compiled-model conformance over every spec ~10 s;
hw-truncation at replicas=5 ~10-15 s (found after ~2-5 s of search, then
shrinking and minimization); replicas=3 against BFS ~10 s; kip-320 8 s.
"""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time

import numpy as np
import pytest

from isrcheck.checker.exhaustive.bfs import search
from isrcheck.checker.engine.budget import Budget
from isrcheck.checker.engine.result import Result
from isrcheck.checker.fuzzing.fuzz import _Fuzzer, _pick
from isrcheck.checker.fuzzing.fuzzer import fuzz
from isrcheck.checker.fuzzing.fuzz_cells import Cells
from isrcheck.checker.traces.trace import from_steps, replay
from isrcheck.specs import SPECS
from isrcheck.model import backends

SEED = 20240611
STALE_LEADER_CPU = 60         # CPU seconds: the fuzz reach table's budget per violation


# ------------------------------------------------------------------------------------------
# the compiled executor computes what the backends compute
# ------------------------------------------------------------------------------------------
def _sample(spec, model, rng, walks=12, length=40, uniform=150):
    """States reached by random walks on the compiled model, plus uniform random well-typed rows."""
    rows = []
    for _ in range(walks):
        r = model.initial
        rows.append(r)
        for _ in range(length):
            en = model.enabled(r)
            if not en:
                break
            r = model.step(r, rng.choice(en))
            rows.append(r)
    lay = spec.layout
    for _ in range(uniform):
        rows.append(tuple(rng.randint(int(lo), int(hi)) for lo, hi in zip(lay.lo, lay.hi)))
    return rows


@pytest.mark.parametrize("name", sorted(SPECS))
def test_compiled_model_agrees_with_numpy_and_scalar_backends(name):
    spec = SPECS[name]()
    model = backends.compiled(spec)
    rng = random.Random(SEED)
    rows = _sample(spec, model, rng)
    batch = np.ascontiguousarray(np.array(rows, dtype=np.int8).T)
    enabled = [set(model.enabled(r)) for r in rows]
    guards = backends.batch(spec).guards(batch)
    for inst in spec.actions:
        guard = guards[inst.id]
        assert [inst.id in e for e in enabled] == guard.tolist(), inst.label
        idx = np.flatnonzero(guard)
        if idx.size == 0:
            continue
        written = backends.batch(spec).update(inst, batch, idx)._written
        for k, j in enumerate(idx[:50]):
            succ = model.step(rows[j], inst.id)
            for c, v in written.items():
                want = int(np.broadcast_to(np.asarray(v), idx.shape)[k])
                assert succ[c] == want, (inst.label, spec.layout.names[c])
    for inv_name, inv in spec.invariants.items():
        assert [model.holds(r, inv_name) for r in rows] == backends.batch(spec).holds(inv, batch).tolist(), inv_name
    # and the scalar backend on one walk
    row = backends.scalar(spec).initial_row()
    r = model.initial
    for _ in range(30):
        en = model.enabled(r)
        assert en == [a.id for a in backends.scalar(spec).enabled(row)]
        if not en:
            break
        i = rng.choice(en)
        r, row = model.step(r, i), backends.scalar(spec).step(row, spec.actions[i])
        assert r == tuple(int(v) for v in row)
        for inv_name, inv in spec.invariants.items():
            assert model.holds(r, inv_name) == backends.scalar(spec).holds(row, inv)


def test_swarm_configurations_allow_what_their_kinds_need_and_only_active_replicas_act():
    spec = SPECS["kip-101"](replicas=4)
    fz = _Fuzzer(spec, ["no-committed-loss"], 1, 0, 10, True, None, None, None, "compiled")
    model, kinds, need = fz.model, fz.kinds, fz.enablers
    assert need[kinds.index("elect_leader")] == set()
    assert {kinds.index("elect_leader"), kinds.index("apply_leader_and_isr")} <= need[kinds.index("produce")]
    assert kinds.index("crash") in need[kinds.index("restart")] or kinds.index("shutdown") in need[
        kinds.index("restart")]
    rng = random.Random(SEED)
    width = 8 * fz._swarm_bytes
    actives = []
    for bits in [0, 2 ** width - 1] + [rng.getrandbits(width) for _ in range(400)]:
        weight, eager, active = fz._swarm(bits)
        on = {fz.kind_of[i] for i, w in enumerate(weight) if w}
        assert on, "a configuration is never empty"
        for k in on:
            assert need[k] <= on
        assert any(weight[i] for i in model.enabled(model.initial)), "something can happen initially"
        actives.append(active)
        for i, (reps, chosen) in enumerate(fz.replica_params):
            if reps and reps[0] >= active:
                assert weight[i] == 0, spec.actions[i].label        # passive replicas do not act
            assert eager[i] == (weight[i] > 0 and any(x >= active for x in reps[1:]))
    # the first k replicas act: two in about half the runs, three in a quarter, all four in the rest
    share = {k: actives.count(k) / len(actives) for k in (2, 3, 4)}
    assert set(actives) == {2, 3, 4} and 0.4 < share[2] < 0.6 and 0.15 < share[3] < 0.35, share


def test_a_step_is_drawn_in_proportion_to_the_weights():
    en, weight = [3, 5, 8], {3: 1, 5: 0, 8: 3}
    assert _pick(en, weight, 0) == 3
    counts = {i: 0 for i in en}
    for v in range(65536):
        counts[_pick(en, weight, v)] += 1
    assert counts == {3: 16384, 5: 0, 8: 49152}


def test_runs_start_from_archived_cells_that_their_paths_reach():
    spec = SPECS["hw-truncation"](replicas=3)
    fz = _Fuzzer(spec, ["log-matching"], 30, 0, 40, True, None, 60, None, "compiled")
    fz.search()
    model = fz.model
    assert set(fz.archives) == {2, 3}                            # two or all three replicas act
    for active, (archive, cell, enabled) in fz.archives.items():
        entries = list(zip(archive.keys, archive.paths, archive.states))
        assert len(entries) > 50 and len(set(archive.keys)) == len(entries)
        assert sum(archive.picked) > 0 and min(archive.seen) >= 1
        for key, path, state in random.Random(SEED).sample(entries, 30):
            r = model.initial
            for i in path:
                assert i in model.enabled(r)
                r = model.step(r, i)
            assert r == tuple(state) and hash(cell(r)) == key       # the path reaches the cell's state
            acting = [i for i in model.enabled(r) if not fz.replica_params[i][0] or fz.replica_params[i][0][0] < active]
            assert enabled(r) == acting                                 # the guards of the replicas acting
    assert fz.longest > 40, "runs from the archive go deeper than max_steps"


def test_cells_are_symmetric_in_the_replicas_and_leave_passive_ones_out():
    spec = SPECS["kip-101"](replicas=3)
    lay = spec.layout
    cells = Cells(lay)
    model = backends.compiled(spec)
    rng = random.Random(SEED)
    row = model.initial
    for _ in range(25):
        en = model.enabled(row)
        if not en:
            break
        row = model.step(row, rng.choice(en))
    state = lay.decode(row)

    def swapped(state, a, b):
        """The state with replicas a and b renamed into each other (every replica axis and replica value)."""
        out = {}
        for name, f in lay.fields.items():
            v = np.array(state[name])
            for k, axis in enumerate(f.axes):
                if axis == "replica":
                    idx = [slice(None)] * v.ndim
                    perm = list(range(f.shape[k]))
                    perm[a], perm[b] = perm[b], perm[a]
                    idx[k] = perm
                    v = v[tuple(idx)]
            if f.values == "replica":
                v = np.where(v == a, -1, v)
                v = np.where(v == b, a, v)
                v = np.where(v == -1, b, v)
            out[name] = v.tolist()
        return tuple(int(x) for x in lay.encode(out))

    every = cells.cell((True, True, True))
    assert every(swapped(state, 0, 2)) == every(row) == every(swapped(state, 1, 2))
    two = cells.cell((True, True, False))
    assert two(swapped(state, 0, 1)) == two(row)
    # a passive replica's own fields are not in the replicas' pictures, only in the global counts over passive ones
    other = list(row)
    other[lay.column("up", (2,))] = 1 - other[lay.column("up", (2,))]
    assert two(tuple(other))[1] == two(row)[1] and two(tuple(other))[0] != two(row)[0]
    assert every(tuple(other)) != every(row)


# ------------------------------------------------------------------------------------------
# finding the known bugs
# ------------------------------------------------------------------------------------------
def _check_violation(spec, result, invariant):
    v = result.violations[invariant]
    trace = from_steps(spec, invariant, "fuzz", v.steps, seed=result.seed)
    assert replay(spec, trace).ok, replay(spec, trace).message
    return v


@pytest.fixture(scope="module")
def five_replicas():
    """hw-truncation at replicas=5, 8 epochs, 3 crashes: far beyond exhaustive reach."""
    spec = SPECS["hw-truncation"](replicas=5, max_epochs=8, max_crashes=3)
    start = time.monotonic()
    result = fuzz(spec, ["no-committed-loss"], Budget(seconds=60, max_runs=3000), derandomize=True,
                  shrink_budget_s=3)
    return spec, result, time.monotonic() - start


def test_fuzz_finds_hw_truncation_loss_at_five_replicas(five_replicas):
    spec, result, seconds = five_replicas
    assert isinstance(result, Result) and result.engine == "fuzz" and result.never_fired is None
    assert result.verdicts == {"no-committed-loss": "violated"}
    assert not result.complete and result.budget_hit is None
    v = _check_violation(spec, result, "no-committed-loss")
    info = result.found["no-committed-loss"]
    print(f"\nreplicas=5: found after {info['seconds_to_find']:.1f}s "
          f"(run of {info['found_length']} steps; Hypothesis shrank it to {info['hypothesis_length']}, "
          f"minimize to {info['minimized_length']}); whole fuzz {seconds:.1f}s, "
          f"{result.runs} runs, {result.transitions} steps, {result.distinct_states} distinct states")
    assert info["seconds_to_find"] < 60
    assert len(v.steps) - 1 == info["minimized_length"] <= info["hypothesis_length"] <= info["found_length"]
    assert result.distinct_states > 100 and result.transitions >= result.distinct_states - 1
    assert result.depth > 1 and result.runs > 0


def test_fuzz_explains_its_counterexample(five_replicas):
    spec, result, _ = five_replicas
    lines = spec.presentation.explain(result.violations["no-committed-loss"].steps, "no-committed-loss")
    kinds = {line.kind for line in lines}
    assert {"acked", "violated"} <= kinds
    # the record the deposed leader acknowledges is one a follower truncated to its HW before it was elected
    assert any("truncated to its local HW" in line.text for line in lines)


@pytest.mark.long
def test_fuzz_finds_the_kip_101_stale_leader_loss_at_five_replicas():
    """The classic 15-step loss of KIP-101 (a leader on an older epoch answers OffsetsForLeaderEpoch with
    UNDEFINED, the follower truncates to its HW and then leads without the record) at five replicas."""
    spec = SPECS["kip-101"](replicas=5)
    result = fuzz(spec, ["no-committed-loss"], Budget(seconds=STALE_LEADER_CPU), seed=3, derandomize=True,
                  clock=time.process_time)
    assert result.verdicts == {"no-committed-loss": "violated"}, result.budget_hit
    v = _check_violation(spec, result, "no-committed-loss")
    info = result.found["no-committed-loss"]
    print(f"\nkip-101, 5 replicas: {info}")
    assert info["cpu_seconds_to_find"] < STALE_LEADER_CPU
    # the exhaustive engine's shortest is 15 steps at 2 replicas; here three more drop the passive replicas
    assert info["minimized_length"] <= 1.5 * 15
    lines = spec.presentation.explain(v.steps, "no-committed-loss")
    assert any("older epoch" in line.text for line in lines), [line.text for line in lines]


def test_shrunk_trace_at_three_replicas_is_close_to_the_shortest():
    # the shortest counterexample, from the exhaustive engine at small bounds (larger bounds can only
    # allow shorter ones, so this is an upper bound on the shortest at the fuzzed bounds)
    small = SPECS["hw-truncation"](replicas=3, max_records=1, max_epochs=3)
    shortest = len(search(small, ["no-committed-loss"]).violations["no-committed-loss"].steps) - 1
    assert shortest == 12
    spec = SPECS["hw-truncation"](replicas=3)
    # 2000 runs find it for about half the seeds, 6000 for each of seeds 0-5: a budget, not a lucky seed
    result = fuzz(spec, ["no-committed-loss"], Budget(seconds=60, max_runs=6000), derandomize=True,
                  shrink_budget_s=3)
    v = _check_violation(spec, result, "no-committed-loss")
    print(f"\nreplicas=3: BFS shortest {shortest}, fuzz {result.found['no-committed-loss']}")
    assert len(v.steps) - 1 <= 1.5 * shortest


def test_kip_320_survives_fuzzing():
    spec = SPECS["kip-320"](replicas=3, max_epochs=6, max_crashes=2)
    holds = [n for n, verdict in spec.expected.items() if verdict == "holds"]
    result = fuzz(spec, holds, Budget(seconds=8), derandomize=True, clock=time.process_time)   # the load cuts nothing
    assert result.violations == {}
    assert set(result.verdicts.values()) == {"unknown"}          # fuzzing proves nothing
    assert result.budget_hit == "CPU time limit 8s"
    assert result.transitions > 1000 and result.distinct_states > 1000
    assert {"elect_leader", "produce", "fetch", "truncate_by_epoch", "crash"} <= set(result.fired)


def test_fuzz_is_deterministic_under_a_seed():
    spec = SPECS["kip-101"]()
    a = fuzz(spec, ["no-committed-loss"], Budget(seconds=60, max_runs=40), seed=7)
    b = fuzz(spec, ["no-committed-loss"], Budget(seconds=60, max_runs=40), seed=7)
    c = fuzz(spec, ["no-committed-loss"], Budget(seconds=60, max_runs=40), seed=8)
    assert (a.runs, a.transitions, a.distinct_states) == (b.runs, b.transitions, b.distinct_states)
    assert (a.runs, a.transitions, a.distinct_states) != (c.runs, c.transitions, c.distinct_states)
    assert a.seed == 7 and a.budget_hit == "max examples 40"


def test_two_workers_split_the_runs_and_repeat_under_a_seed():
    spec = SPECS["kip-101"]()
    a = fuzz(spec, ["hw-log-matching"], Budget(seconds=60, max_runs=41), seed=7, workers=2)
    b = fuzz(spec, ["hw-log-matching"], Budget(seconds=60, max_runs=41), seed=7, workers=2)
    one = fuzz(spec, ["hw-log-matching"], Budget(seconds=60, max_runs=21), seed=7)
    assert a.workers == 2 and a.budget_hit == "max examples 41" and a.verdicts == {"hw-log-matching": "unknown"}
    assert (a.runs, a.transitions, a.distinct_states, a.depth) == (b.runs, b.transitions, b.distinct_states, b.depth)
    # worker 0 runs what one worker runs with its share of the test cases (21 of 41); worker 1 runs others
    assert one.transitions < a.transitions and one.distinct_states < a.distinct_states <= a.transitions + 2


def test_the_board_orders_finds_by_search_runs_then_worker():
    import multiprocessing
    from isrcheck.checker.fuzzing.fuzz_workers import _Board
    board = _Board(multiprocessing.get_context("fork"), ["x", "y"], 3)
    assert not board.beaten("x", 10**9, 2) and not board.stopped()
    board.record("x", 5, 1)
    assert board.beaten("x", 6, 0) and board.beaten("x", 5, 2)            # later, or as late with a higher number
    assert not board.beaten("x", 5, 0) and not board.beaten("x", 4, 2)    # sooner, or as soon with a lower number
    board.record("x", 7, 0)                                               # a later find does not replace it
    assert not board.beaten("x", 5, 0) and not board.beaten("y", 100, 2)
    board.flag.value = 1
    assert board.stopped()


def test_fuzz_rejects_unknown_invariants():
    spec = SPECS["kip-101"]()
    with pytest.raises(KeyError):
        fuzz(spec, ["no-such-invariant"], Budget(seconds=1))


# ------------------------------------------------------------------------------------------
# what the runs steer by: replicas chosen, passive replicas keeping up, groups of cells
# ------------------------------------------------------------------------------------------
def test_passive_replicas_only_keep_up_and_are_never_chosen():
    spec = SPECS["kafka-14617"](replicas=3)
    assert spec.fuzz_keep_up == ("apply_metadata",)
    fz = _Fuzzer(spec, ["strong-isr"], 1, 0, 10, True, None, None, None, "compiled")
    by_label = {a.label: i for i, a in enumerate(spec.actions)}
    # fence_broker(r, l): l, a replica or none, is chosen (the leader the controller elects)
    assert fz.replica_params[by_label["fence_broker(r=0, l=2)"]] == ([0], [2])
    assert fz.replica_params[by_label["fence_broker(r=0, l=3)"]] == ([0], [])
    rng = random.Random(SEED)
    width = 8 * fz._swarm_bytes
    seen = set()
    for bits in [rng.getrandbits(width) for _ in range(200)]:
        weight, eager, active = fz._swarm(bits)
        seen.add(active)
        for i, (reps, chosen) in enumerate(fz.replica_params):
            name = spec.actions[i].name
            if any(x >= active for x in chosen):
                assert weight[i] == 0, spec.actions[i].label
            elif reps and reps[0] >= active:       # a passive replica applies the metadata log at once, nothing else
                assert (weight[i], eager[i]) == ((1, True) if name == "apply_metadata" else (0, False)), name
    assert seen == {2, 3}


def test_a_keep_up_action_the_spec_lacks_is_a_declaration_error():
    from isrcheck.model.expr import DeclarationError

    class Typo(SPECS["kip-101"]):
        fuzz_keep_up = ("apply_metdata",)
    with pytest.raises(DeclarationError, match="fuzz_keep_up: no action 'apply_metdata'"):
        Typo()


def test_runs_start_from_the_group_picked_least():
    from isrcheck.checker.fuzzing.fuzz import _Archive
    archive = _Archive(cap=4)
    state, path = (0, 1), [1, 2, 3]
    for key, group in [(10, 1), (11, 1), (12, 1), (13, 2)]:
        assert archive.visit(key, group, state, path, 2)
    assert not archive.visit(10, 1, state, path, 1) and archive.paths[0].tolist() == [1]     # a shorter path kept
    picks = {1: 0, 2: 0}
    for x in range(400):
        s = archive.choose(x * 7919)
        archive.pick(s)
        picks[archive.group_of[s]] += 1
    assert picks[2] > 150, picks          # the lone cell of group 2: far more often than one cell in four
    assert archive.visit(17, 3, state, path, 2)          # full: takes slot 17 % 4 == 1, group 1 keeps two cells
    assert sorted(g for g, _ in archive.groups) == [1, 2, 3] and len(archive.groups[archive.group_index[1]][1]) == 2
    assert archive.visit(21, 3, state, path, 2) and archive.visit(25, 3, state, path, 2)   # slot 1 again, twice
    assert archive.visit(18, 3, state, path, 2) and archive.visit(19, 3, state, path, 2)   # slots 2 and 3
    assert sorted(g for g, _ in archive.groups) == [1, 3]            # group 2 lost its only cell and went
    assert all(archive.group_of[s] == g for g, slots in archive.groups for s in slots)


def test_the_fuzz_command_budgets_cpu_time(tmp_path):
    script = os.path.join(os.path.dirname(sys.executable), "isrcheck")
    r = subprocess.run([script, "fuzz", "--spec", "kip-320", "--invariant", "no-committed-loss", "--budget", "2s",
                        "--seed", "1", "--workers", "2", "--no-progress", "--format", "json", "--out", str(tmp_path)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 3, r.stderr
    report = json.loads(r.stdout)
    assert report["budget_hit"] == "CPU time limit 2s"
    # two workers, each searching for 2 CPU seconds: the report counts the CPU time of every fuzzing process
    assert 4 <= report["seconds"] < 8, report["seconds"]
