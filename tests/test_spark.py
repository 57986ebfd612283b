"""The Spark engine gives exactly the local engine's answers, for any partition count, through task failures.

One SparkContext for the module (``local[2,4]``: two threads, and up to four
attempts per task, since plain ``local[2]`` fails a job on its first task
failure). Each search is compared with ``checker.exhaustive.bfs.search`` on distinct
states, transitions, depth, verdicts, completeness, actions never fired, the
violating state's number and level, and every step of every trace (action and
state).
"""
from __future__ import annotations

import os

import numpy as np
import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from isrcheck.checker.exhaustive.bfs import search                                   # noqa: E402
from isrcheck.checker.engine.budget import Budget                               # noqa: E402
from isrcheck.checker.spark.spark_engine import spark_context, spark_search     # noqa: E402
from isrcheck.specs import SPECS                                          # noqa: E402

VIOLATED = ("hw-truncation", dict(replicas=2, max_epochs=2), ["no-committed-loss", "strong-isr"])
HOLDS = ("kip-320", dict(replicas=2, max_epochs=1), None)        # every invariant holds (~9k states, 18 levels)


@pytest.fixture(scope="module")
def sc():
    context, created = spark_context("local[2,4]", conf={"spark.driver.memory": "512m",
                                                         "spark.executor.memory": "512m"})
    yield context
    if created:
        context.stop()


def _setup(case):
    name, bounds, invariants = case
    spec = SPECS[name](**bounds)
    return spec, invariants or list(spec.invariants)


def assert_levels_measured(result):
    """One entry per level expanded, its new states adding up, both byte counts measured, and the Python workers'
    CPU seconds by section of the tasks: every level expanded and wrote its Parquet file, and the sections add
    up to no more than the two task threads could spend in the run (a task's time counted twice would)."""
    assert [m["level"] for m in result.levels] == list(range(1, len(result.levels) + 1))
    assert sum(m["new_states"] for m in result.levels) == result.distinct_states - 1
    assert all(m["shuffle_write_bytes"] > 0 and m["python_jvm_bytes"] > 0 for m in result.levels)
    for m in result.levels:
        stages = m["stage_cpu_seconds"]
        assert {"map: expand", "reduce: parquet write"} <= stages.keys() and min(stages.values()) >= 0
    assert 0 < sum(sum(m["stage_cpu_seconds"].values()) for m in result.levels) <= 2 * result.seconds


def assert_same(local, spark):
    assert spark.distinct_states == local.distinct_states
    assert spark.transitions == local.transitions
    assert spark.depth == local.depth
    assert spark.verdicts == local.verdicts
    assert spark.complete == local.complete
    assert spark.budget_hit == local.budget_hit
    assert spark.never_fired == local.never_fired
    assert set(spark.violations) == set(local.violations)
    for name, v in local.violations.items():
        w = spark.violations[name]
        assert (w.state_id, w.level) == (v.state_id, v.level), name
        assert len(w.steps) == len(v.steps), name
        for (a, row), (b, row2) in zip(v.steps, w.steps):
            assert (a.id if a else None) == (b.id if b else None), name
            assert np.array_equal(row, row2), name


def test_python_workers_keep_the_memory_their_tasks_free(sc):
    """The context's Python workers run with glibc's allocator set to serve every array from a heap it never
    trims (the settings the engine gives the executors' environment)."""
    seen = sc.parallelize(range(4), 2).map(
        lambda _: (os.environ.get("MALLOC_MMAP_MAX_"), os.environ.get("MALLOC_TRIM_THRESHOLD_"))).collect()
    assert set(seen) == {("0", str(1 << 62))}


# each partition count once per case (2 is also every test below): 1, the single owner, and 3, not a power of two
@pytest.mark.parametrize("partitions", [1, 3])
def test_violation_same_as_local(sc, partitions, tmp_path):
    spec, invariants = _setup(VIOLATED)
    local = search(spec, invariants)
    assert set(local.violations) == set(invariants)
    assert_same(local, spark_search(spec, invariants, partitions=partitions, workdir=str(tmp_path)))


def test_holds_same_as_local(sc, tmp_path):
    """Small levels chained into jobs, larger ones a job each (``batch_states``) decided on records
    (``decide_from``), then chained again as the levels shrink: every level expanded once, the visited sets those
    of the local engine."""
    partitions = 2
    spec, invariants = _setup(HOLDS)
    local = search(spec, invariants)
    assert local.complete and not local.violations
    levels = []
    result = spark_search(spec, invariants, partitions=partitions, progress=lambda **kw: levels.append(kw),
                          workdir=str(tmp_path), batch_states=1500, decide_from=0)
    assert_same(local, result)
    decided = ["materialize: apply" in m["stage_cpu_seconds"] for m in result.levels]
    assert decided.index(True) > 0 and decided[-1] is False and sum(decided) >= 3      # chained, single, chained
    assert [kw["depth"] for kw in levels] == list(range(1, local.depth))
    assert levels[-1]["distinct"] == local.distinct_states
    assert all(kw["level_seconds"] > 0 for kw in levels)
    assert_levels_measured(result)
    assert_bytes_follow_the_new_states(result)
    assert_visited_sets_rebuilt(spec, result, tmp_path, partitions)


def assert_bytes_follow_the_new_states(result):
    """The bytes a level moves follow its new states, not the visited set (which never travels): the last
    level, which finds nothing new, moves less than the visited set's 8 bytes per state. The successors go
    through files beside the tasks (``successor_file_bytes``), and Spark carries only their paths and the tasks'
    counts: a few bytes per state."""
    peak = max(result.levels, key=lambda m: m["new_states"])
    last = result.levels[-1]
    assert last["new_states"] == 0
    assert last["python_jvm_bytes"] < 8 * result.distinct_states
    assert last["successor_file_bytes"] * 4 < peak["successor_file_bytes"]
    for key in ("python_jvm_bytes", "shuffle_write_bytes"):
        assert sum(m[key] for m in result.levels) < 40 * result.distinct_states, key
    assert sum(m["successor_file_bytes"] for m in result.levels) > 66 * result.distinct_states    # a row is 66 B


def assert_visited_sets_rebuilt(spec, result, workdir, partitions):
    """A partition's visited set is a table beside its tasks (checker.spark.spark_visited); lost, it is rebuilt from the
    levels' Parquet files (the reliable copy) to the same set; the partitions' sets are disjoint and hold every
    state."""
    from isrcheck.checker.spark import spark_visited
    from isrcheck.checker.exhaustive.bfs import Search
    from isrcheck.checker.spark.spark_engine import _Job, _level_fps
    from isrcheck.model import backends
    # the level that found nothing new, or later: a job chains levels past it
    last = int(spark_visited.open_table(str(workdir), 0).head[spark_visited.COMPLETE])
    assert last >= result.depth + 1

    def held(p):
        table = spark_visited.open_table(str(workdir), p)
        assert int(table.head[spark_visited.COMPLETE]) == last
        fps = table.slots[(table.slots != 0) & (table.stamps >= 1) & (table.stamps <= last)]
        return np.sort(fps), table.count

    kept = [held(p) for p in range(partitions)]
    assert all(fps.size == count for fps, count in kept)
    assert sum(fps.size for fps, _ in kept) == np.unique(np.concatenate([f for f, _ in kept])).size \
        == result.distinct_states
    init_fp = int(Search(spec, []).fingerprint.full(backends.scalar(spec).initial_row()[:, None])[0])
    job = _Job(workdir=str(workdir), init_fp=init_fp, owner0=init_fp % partitions)
    for p in range(partitions):
        os.remove(spark_visited.table_path(str(workdir), p))
        new, count = spark_visited.insert_level(str(workdir), p, last, kept[p][0][:3], _level_fps(job, p))
        assert not new.any() and count == kept[p][1]                 # rebuilt: every state of the levels is in
        assert np.array_equal(held(p)[0], kept[p][0])


def test_one_level_per_job_same_as_local(sc):
    """One job per level: the owners decide the new states on 16-byte (fingerprint, tag) records, and only the
    winners' rows are materialized, by their parents' partitions, and written once, so a level's files hold a row
    and five 8-byte words per new state (its fingerprint, its key twice, its place twice) and 16 bytes per
    successor routed: the same answers. (Chained levels route every successor with its row.)"""
    spec, invariants = _setup(VIOLATED)
    result = spark_search(spec, invariants, partitions=2, batch_states=0, decide_from=0)
    assert_same(search(spec, invariants), result)
    assert_levels_measured(result)
    width, routed = spec.layout.width, 0
    for m in result.levels:
        assert "materialize: apply" in m["stage_cpu_seconds"] and "map: successor rows" not in m["stage_cpu_seconds"]
        records = (m["successor_file_bytes"] - (width + 40) * m["new_states"]) / 16      # less the winners' files
        assert records == int(records) and records >= m["new_states"], m
        routed += records
    assert routed <= result.transitions


@pytest.mark.parametrize("faults, batch_states", [
    ((("map", 3, 1), ("reduce", 4, 0), ("materialize", 5, 1)), 0),
    ((("map", 3, 1), ("reduce", 4, 0)), None)], ids=["one-level-jobs", "chained-levels"])
def test_task_failure_is_retried(sc, faults, batch_states, tmp_path):
    """The first attempt of one task of each stage fails (after writing its files: Parquet for reduce and
    decide, pieces for materialize); the answer is unchanged."""
    spec, invariants = _setup(VIOLATED)
    group = f"isrcheck-fault-{batch_states}"
    kw = {} if batch_states is None else {"batch_states": batch_states, "decide_from": 0}
    sc.setJobGroup(group, "fault injection test")
    try:
        result = spark_search(spec, invariants, partitions=2, workdir=str(tmp_path), _fault=faults, **kw)
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    assert_same(search(spec, invariants), result)
    tracker = sc.statusTracker()
    failed = sum(tracker.getStageInfo(s).numFailedTasks
                 for j in tracker.getJobIdsForGroup(group) for s in tracker.getJobInfo(j).stageIds
                 if tracker.getStageInfo(s) is not None)
    assert failed == len(faults)
    for level in (4, 5, 6):                 # no temporary file left behind
        files = sorted(p.name for p in (tmp_path / "levels" / f"level-{level:05d}").iterdir())
        assert files == ["part-00000.parquet", "part-00001.parquet"]
    assert not list(tmp_path.glob("frontier-files/*/*.tmp-*"))


def test_budgets_same_as_local(sc):
    """max_states stops at the local engine's chunk boundary (a small chunk, to cut mid-level, in a level decided
    on records, then in a chained one); max_depth too."""
    spec, invariants = _setup(HOLDS)
    for budget in (Budget(max_states=1500), Budget(max_states=200), Budget(max_states=1), Budget(max_depth=6)):
        local = search(spec, invariants, chunk=64, budget=budget)
        assert local.budget_hit
        assert_same(local, spark_search(spec, invariants, partitions=2, chunk=64, budget=budget, batch_states=300,
                                        decide_from=0))


def test_levels_past_32_bit_numbers_are_not_chained(sc, monkeypatch):
    """A chained level tags successors with parent keys, which overflow past 2**32 states: from there every level
    runs as a job of its own, tagged with parent numbers (48 bits). With the threshold at 0, every level: the
    same answers as the local engine, one job per level."""
    from isrcheck.checker.spark import spark_engine
    spec, invariants = _setup(VIOLATED)
    local = search(spec, invariants)
    jobs = []
    for below in (spark_engine.CHAIN_BELOW, 0):
        monkeypatch.setattr(spark_engine, "CHAIN_BELOW", below)
        before = set(sc.statusTracker().getJobIdsForGroup())
        assert_same(local, spark_search(spec, invariants, partitions=2))
        jobs.append(len(set(sc.statusTracker().getJobIdsForGroup()) - before))
    assert jobs[0] < local.depth <= jobs[1]


@pytest.mark.long
def test_max_states_cut_in_a_level_of_default_chunks(sc):
    """With the default chunk, the level expanded at depth 12 (305,475 states) is two chunks of 152,738
    (checker.exhaustive.bfs.chunk_step), not one of 256K: the Spark engine stops after the chunk the local engine stops
    after (before, the two stopped at 1,020,722 and 1,115,325 states)."""
    spec = SPECS["tla-kip320"](replicas=3, log_size=2, max_records=2, max_epochs=3)
    budget = Budget(max_states=1_000_000)
    local = search(spec, list(spec.invariants), budget=budget)
    assert local.budget_hit == "max states 1000000" and local.depth == 13
    assert_same(local, spark_search(spec, list(spec.invariants), partitions=2, budget=budget))


def test_symmetry_same_as_local(sc):
    """Canonical fingerprints route and deduplicate, in chained levels and in levels decided on records."""
    spec, invariants = _setup(VIOLATED)
    assert_same(search(spec, invariants, symmetry=True),
                spark_search(spec, invariants, partitions=2, symmetry=True, batch_states=300, decide_from=0))


def test_time_limit(sc):
    spec, invariants = _setup(HOLDS)
    result = spark_search(spec, invariants, partitions=2, budget=Budget(seconds=0.5))
    assert result.budget_hit == "time limit 0.5s"
    assert not result.complete
    assert set(result.verdicts.values()) == {"unknown"}

