"""The Spark engine's level-stamped visited tables (checker.spark.spark_visited): what a retried, recomputed or resumed
task sees, rebuilding from the levels' files, growth, fingerprint 0, and a reader that races a writer."""
import os

import numpy as np
import pytest

from isrcheck.checker.spark import spark_visited as sv

rng = np.random.default_rng(29)


def fingerprints(n):
    return np.unique(rng.integers(1, 2 ** 64 - 1, n, dtype=np.uint64))


@pytest.fixture
def levels():
    """Five levels of new fingerprints of one partition (level 1: the initial state's)."""
    return {1: np.array([7], dtype=np.uint64), **{lv: fingerprints(500 * lv) for lv in range(2, 6)}}


def build(workdir, levels, through):
    for lv in range(2, through + 1):
        new, count = sv.insert_level(workdir, 0, lv, levels[lv], levels.__getitem__)
        assert new.all()
    return count


def test_new_means_first_in_priority_order_and_not_visited(tmp_path, levels):
    build(str(tmp_path), levels, 3)
    fresh = fingerprints(100)
    candidates = np.concatenate([fresh, levels[3][:10], fresh[:20], levels[1]])
    new, count = sv.insert_level(str(tmp_path), 0, 4, candidates, levels.__getitem__)
    assert new[:fresh.size].all() and not new[fresh.size:].any()           # repeats and visited ones are not new
    assert count == 1 + levels[2].size + levels[3].size + fresh.size


def test_lookup_sees_only_the_levels_asked_for(tmp_path, levels):
    build(str(tmp_path), levels, 4)
    table = sv.open_table(str(tmp_path), 0)
    assert sv.lookup(table, levels[3], 3).all()
    assert not sv.lookup(table, levels[4], 3).any()          # a later level's reads as not visited
    assert sv.lookup(table, levels[4], 4).all()
    assert not sv.lookup(table, fingerprints(50), 9).any()
    assert sv.open_table(str(tmp_path), 1) is None and not sv.lookup(None, levels[2], 4).any()


@pytest.mark.parametrize("again", [4, 3, 2], ids=["retried", "recomputed", "recomputed-early"])
def test_a_level_run_again_finds_the_same_new_states(tmp_path, levels, again):
    """A task that runs a level again (an attempt died mid-insert, a lost executor's levels recomputed, a resumed
    run) sees the set through the level before it, whatever later levels left in the table."""
    build(str(tmp_path), levels, 5)
    candidates = np.concatenate([levels[again], levels[again - 1][:5]])
    new, count = sv.insert_level(str(tmp_path), 0, again, candidates, levels.__getitem__)
    assert new[:levels[again].size].all() and not new[levels[again].size:].any()
    assert count == sum(levels[lv].size for lv in range(1, again + 1))
    table = sv.open_table(str(tmp_path), 0)
    later = np.concatenate([levels[lv] for lv in range(again + 1, 6)] or [np.zeros(0, dtype=np.uint64)])
    assert not sv.lookup(table, later, 9).any()                                     # later levels are gone
    assert int(table.head[sv.COMPLETE]) == int(table.head[sv.TOP]) == again


def test_a_lost_table_is_rebuilt_from_the_levels(tmp_path, levels):
    build(str(tmp_path), levels, 4)
    os.remove(sv.table_path(str(tmp_path), 0))
    asked = []
    new, count = sv.insert_level(str(tmp_path), 0, 5, np.concatenate([levels[5], levels[2]]),
                                 lambda lv: asked.append(lv) or levels[lv])
    assert asked == [1, 2, 3, 4]
    assert new[:levels[5].size].all() and not new[levels[5].size:].any()
    assert count == sum(v.size for v in levels.values())


def test_growth_keeps_every_stamp(tmp_path):
    big = fingerprints(200_000)
    sv.insert_level(str(tmp_path), 0, 2, big[:10], lambda lv: np.zeros(0, dtype=np.uint64))
    new, count = sv.insert_level(str(tmp_path), 0, 3, big, None)
    table = sv.open_table(str(tmp_path), 0)
    assert count == big.size and new[10:].all() and not new[:10].any()
    assert table.capacity >= big.size / sv.MAX_LOAD and table.capacity & (table.capacity - 1) == 0
    assert sv.lookup(table, big[:10], 2).all() and not sv.lookup(table, big[10:], 2).any()
    assert sv.lookup(table, big, 3).all()


def test_fingerprint_zero(tmp_path):
    zero = np.zeros(1, dtype=np.uint64)
    new, count = sv.insert_level(str(tmp_path), 0, 2, np.concatenate([zero, zero]), lambda lv: zero[:0])
    assert new.tolist() == [True, False] and count == 1
    table = sv.open_table(str(tmp_path), 0)
    assert not sv.lookup(table, zero, 1).any() and sv.lookup(table, zero, 2).all()
    new, _ = sv.insert_level(str(tmp_path), 0, 2, zero, lambda lv: zero[:0])       # run again: still new
    assert new.all()


def test_a_reader_opened_before_a_growth_sees_a_subset(tmp_path, levels):
    """A map task maps a table while its owner grows it into a new file: the reader keeps the old one, which
    holds a subset of the set (a successor is kept that could be dropped, never the reverse)."""
    build(str(tmp_path), levels, 2)
    before = sv.open_table(str(tmp_path), 0)
    big = fingerprints(50_000)
    sv.insert_level(str(tmp_path), 0, 3, big, levels.__getitem__)
    after = sv.open_table(str(tmp_path), 0)
    assert after.capacity > before.capacity
    assert sv.lookup(before, levels[2], 3).all() and not sv.lookup(before, big, 3).any()
    assert sv.lookup(after, big, 3).all()


def test_not_a_table(tmp_path):
    path = sv.table_path(str(tmp_path), 0)
    os.makedirs(os.path.dirname(path))
    with open(path, "wb") as fh:
        fh.write(b"\0" * 8192)
    assert sv.open_table(str(tmp_path), 0) is None
    new, count = sv.insert_level(str(tmp_path), 0, 2, fingerprints(10), lambda lv: np.array([7], dtype=np.uint64))
    assert new.all() and count == 11                       # replaced by a table rebuilt from the levels


def test_a_task_never_makes_the_workdir_again(tmp_path):
    """Tasks make the directories below the workdir they write in; once the driver has removed the workdir (a
    stopped or cancelled search), a task still running fails instead of leaving a tree of files behind."""
    workdir = tmp_path / "run"
    workdir.mkdir()
    sv.make_dirs(str(workdir), str(workdir / "frontier-files" / "part-00001"))
    assert (workdir / "frontier-files" / "part-00001").is_dir()
    sv.make_dirs(str(workdir), str(workdir / "frontier-files" / "part-00001"))        # already there: nothing
    (workdir / "frontier-files" / "part-00001").rmdir()
    (workdir / "frontier-files").rmdir()
    workdir.rmdir()
    with pytest.raises(FileNotFoundError):
        sv.make_dirs(str(workdir), str(workdir / "frontier-files" / "part-00001"))
    with pytest.raises(FileNotFoundError):
        sv.insert_level(str(workdir), 0, 2, fingerprints(5), lambda lv: fingerprints(1))
    assert not workdir.exists()


def test_fill_to_writes_zeros_instead_of_a_hole(tmp_path):
    """A file filled to a size keeps its bytes, is zeros past them, and has blocks for all of them (no hole); a
    longer file is cut to the size."""
    path = tmp_path / "f"
    with open(path, "wb+", buffering=0) as fh:
        fh.write(b"\x07" * 100)
        sv.fill_to(fh.fileno(), 3 * sv.ZEROS + 5)
    data = path.read_bytes()
    assert data[:100] == b"\x07" * 100 and data[100:] == bytes(3 * sv.ZEROS - 95)
    assert os.stat(path).st_blocks * 512 >= 3 * sv.ZEROS
    with open(path, "r+b", buffering=0) as fh:
        sv.fill_to(fh.fileno(), 50)
    assert path.read_bytes() == b"\x07" * 50
