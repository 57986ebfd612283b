"""The Spark engine's compiled loops (least tags, routing, winners' parents), its column-major piece files and its
records read into one array, against the plain numpy they replace."""
import os

import numpy as np
import pytest

from isrcheck.checker.exhaustive.bfs import Search
from isrcheck.checker.spark import spark_engine
from isrcheck.checker.spark.spark_kernels import (RecentSuccessors, _by_owner, least_tag_per_fingerprint, route,
                                                   winners_by_block)


def _records(seed, n=20_000, distinct=8_000):
    """Fingerprints with repeats (a state reached several times), 40 sharing all but their low 12 bits (so that
    the least-tag pass meets runs of several fingerprints), one of them 0, and unique tags in random order."""
    rng = np.random.default_rng(seed)
    fps = rng.integers(1, 1 << 63, distinct, dtype=np.uint64)
    fps[:40] = (fps[0] >> np.uint64(12) << np.uint64(12)) | rng.integers(0, 1 << 12, 40, dtype=np.uint64)
    fps[40] = 0
    fps = fps[rng.integers(0, distinct, n)]
    return fps, rng.permutation(n).astype(np.uint64) * np.uint64(3)


@pytest.mark.parametrize("seed", [1, 2])
def test_least_tag_per_fingerprint_is_group_then_least_per_group(seed):
    fps, tags = _records(seed)
    order, starts, unique = Search.group(fps)
    want = Search.least_per_group(order, starts, np.diff(np.append(starts, fps.size)), lambda k: np.take(tags, k))
    got = least_tag_per_fingerprint(fps, tags)
    assert np.array_equal(got, want) and np.array_equal(fps[got], unique)
    assert least_tag_per_fingerprint(fps[:0], tags[:0]).size == 0


@pytest.mark.parametrize("partitions", [1, 3])
def test_records_by_owner_in_their_order(partitions):
    fps, tags = _records(3)
    out_fps, out_tags, ends = _by_owner(fps, tags, partitions)
    assert ends[-1] == fps.size
    for q, (lo, hi) in enumerate(zip(np.append(0, ends[:-1]), ends)):
        mine = fps % np.uint64(partitions) == np.uint64(q)
        assert np.array_equal(out_fps[lo:hi], fps[mine]) and np.array_equal(out_tags[lo:hi], tags[mine])


def test_a_piece_built_in_place_is_the_file_np_save_makes(tmp_path):
    """Column batches put into a piece file's mapped columns make the very file np.save makes of their
    concatenation's transpose; an empty piece is an empty array."""
    rng = np.random.default_rng(4)
    whole = rng.integers(-5, 5, (66, 900), dtype=np.int8)
    batches = [whole[:, 100:400], rng.integers(-5, 5, (66, 37), dtype=np.int8)]
    piece = spark_engine._PieceFile(str(tmp_path), 3, 1, "rows-from-00000", 337, 66, 0)
    path = spark_engine._frontier_path(str(tmp_path), 3, 1, "rows-from-00000")
    piece.columns[:, 300:] = batches[1]
    piece.columns[:, :300] = batches[0]
    assert not os.path.exists(path)
    size = piece.close()
    spark_engine._save_array(str(tmp_path), 3, 1, "whole", np.concatenate(batches, axis=1).T)
    with open(path, "rb") as a, open(spark_engine._frontier_path(str(tmp_path), 3, 1, "whole"), "rb") as b:
        assert a.read() == b.read()
    rows = np.load(path)
    assert size == rows.nbytes and rows.shape == (337, 66) and np.shares_memory(spark_engine._columns(rows), rows)
    empty = spark_engine._PieceFile(str(tmp_path), 3, 2, "rows-from-00000", 0, 66, 0)
    assert empty.close() == 0
    assert np.load(spark_engine._frontier_path(str(tmp_path), 3, 2, "rows-from-00000")).shape == (0, 66)
    assert sorted(os.listdir(os.path.dirname(path))) == ["level-00003-rows-from-00000.npy", "level-00003-whole.npy"]


def test_spare_files_are_written_over_whole(tmp_path):
    """Dropped pieces of rows and successor files become their writers' spares (the largest few kept, other files
    removed, newer levels left); a piece or a successor file written over one is byte for byte what a new file
    would be (the spare's bytes beyond it cut), in the spare's place on disk."""
    workdir, rng = str(tmp_path), np.random.default_rng(5)
    for level, name, size in ((2, "rows-from-00000", 9_000), (2, "successors-from-00000", 700), (2, "keys", 80),
                              (3, "rows-from-00000", 500), (1, "rows-from-00000", 200), (1, "rows-from-00001", 300)):
        path = spark_engine._frontier_path(workdir, level, 0, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as fh:
            fh.write(rng.bytes(size))
    spark_engine._drop_frontiers(workdir, 1, below=3)      # one partition: each writer's largest spare is kept
    rows, successors = (spark_engine._spares(spark_engine._spares_dir(workdir, 0, kind))
                        for kind in ("rows", "successors"))
    assert [size for _, size in rows] == [9_000] and [size for _, size in successors] == [700]
    assert len(spark_engine._spares(spark_engine._spares_dir(workdir, 1, "rows"))) == 1
    assert sorted(os.listdir(os.path.dirname(spark_engine._frontier_path(workdir, 3, 0, "x")))) == [
        "level-00003-rows-from-00000.npy"]
    spare, spare_successors = os.stat(rows[0][0]).st_ino, os.stat(successors[0][0]).st_ino
    columns = rng.integers(-5, 5, (66, 40), dtype=np.int8)
    piece = spark_engine._PieceFile(workdir, 4, 1, "rows-from-00000", 40, 66, 0)
    piece.columns[:] = columns
    piece.close()
    path = spark_engine._frontier_path(workdir, 4, 1, "rows-from-00000")
    assert os.stat(path).st_ino == spare and not spark_engine._spares(spark_engine._spares_dir(workdir, 0, "rows"))
    assert np.array_equal(np.load(path), columns.T)
    files = spark_engine._SuccessorFiles(workdir, 4, 0)
    fps, tags = rng.integers(0, 1 << 60, 9, dtype=np.uint64), rng.integers(0, 1 << 60, 9, dtype=np.uint64)
    files.add(1, fps, tags)
    written = files.close()[1]
    assert os.stat(written).st_ino == spare_successors
    assert [a.tolist() for b in spark_engine._read_successors(written, 2) for a in b] == [fps.tolist(), tags.tolist()]
    assert os.path.getsize(written) < 700


@pytest.mark.parametrize("pieces", [False, True])
def test_winners_by_block_is_searchsorted_then_a_stable_sort(pieces):
    """Parents found among a partition's ranks (each owner's keys ascending, one owner's not: found all the same),
    mapped to blocks (one whole block, or three pieces whose places interleave), ordered by block then owner."""
    rng = np.random.default_rng(6 + pieces)
    level_start, n = 1_000, 5_000
    ranks = np.sort(rng.choice(40_000, n, replace=False)).astype(np.int64)
    lists = [np.sort((ranks[rng.integers(0, n, k)] + level_start).astype(np.uint64) << np.uint64(16)
                     | rng.integers(0, 60, k).astype(np.uint64)) for k in (3_000, 0, 2_000)]
    lists[2] = lists[2][::-1].copy()
    keys, sizes = np.concatenate(lists), np.array([w.size for w in lists], dtype=np.int64)
    if pieces:
        block = rng.integers(0, 3, n)
        block_end = np.cumsum(np.bincount(block, minlength=3))
        into = np.empty(n, dtype=np.int64)
        for b, end in enumerate(block_end):
            their = np.flatnonzero(block == b)
            into[their] = np.arange(end - their.size, end)
    else:
        into, block_end = None, np.array([n])
    at, order, bounds = winners_by_block(keys, sizes, level_start, ranks, into, block_end, 16)
    want = np.searchsorted(ranks, (keys >> np.uint64(16)).astype(np.int64) - level_start)
    want = want if into is None else into[want]
    run = np.searchsorted(block_end, want, side="right") * 3 + np.repeat(np.arange(3), sizes)
    by = np.argsort(run, kind="stable")
    assert np.array_equal(order, by) and np.array_equal(at, want[by])
    assert np.array_equal(bounds, np.searchsorted(run[by], np.arange(block_end.size * 3 + 1)))
    stranger = keys.copy()
    stranger[7] = np.uint64(level_start + 40_001) << np.uint64(16)          # a parent the partition lacks
    assert winners_by_block(stranger, sizes, level_start, ranks, into, block_end, 16) is None


def test_records_are_read_into_one_array_each(tmp_path):
    """Successor files of (fingerprint, tag) batches read into one array of each, sources beside them."""
    rng = np.random.default_rng(8)
    files, want = [], []
    for q, counts in ((2, (5, 0, 300)), (0, ()), (1, (70,))):
        out = spark_engine._SuccessorFiles(str(tmp_path), 4, q)
        for k in counts:
            batch = rng.integers(0, 1 << 63, (2, k), dtype=np.uint64)
            out.add(0, batch[0], batch[1])
            want.append((batch[0], batch[1], np.full(k, q, dtype=np.int32)))
        files += [(path, q) for path in out.close().values()]
    got = spark_engine._read_records(files)
    assert all(np.array_equal(g, np.concatenate([w[k] for w in want])) for k, g in enumerate(got))


def test_recent_successors_keep_each_fingerprints_least_tag():
    """Records routed through a small table of recent successors (chunk by chunk, then drained) are fewer, each a
    record of its fingerprint, and keep every fingerprint with its least tag: the owners' winners are unchanged."""
    fps, _ = _records(9)
    parents = (np.arange(fps.size) // 4).astype(np.uint32)                # four successors each: unique tags
    actions = (np.arange(fps.size) % 4).astype(np.uint16)
    prefix = np.random.default_rng(10).permutation(1 << 20)[:5_000].astype(np.uint64)
    tags = (prefix[parents] << np.uint64(16)) | actions.astype(np.uint64)
    recent = RecentSuccessors(bits=10)
    sent = [route(fps[lo:lo + 7_000], parents[lo:lo + 7_000], actions[lo:lo + 7_000], prefix, 3, recent)
            for lo in range(0, fps.size, 7_000)] + [recent.drain(3)]
    assert not recent.used.any()
    got_fps = np.concatenate([f[lo:hi] for f, _, ends in sent for lo, hi in zip(np.append(0, ends[:-1]), ends)])
    got_tags = np.concatenate([t[lo:hi] for _, t, ends in sent for lo, hi in zip(np.append(0, ends[:-1]), ends)])
    for f, _, ends in sent:                             # by owner
        assert all((f[lo:hi] % np.uint64(3) == q).all() for q, (lo, hi) in enumerate(zip(np.append(0, ends[:-1]),
                                                                                          ends)))
    assert fps.size // 2 < got_fps.size < fps.size
    record = dict(zip(tags.tolist(), fps.tolist()))
    assert all(record[t] == f for t, f in zip(got_tags.tolist(), got_fps.tolist()))   # each a record of its own
    want, got = least_tag_per_fingerprint(fps, tags), least_tag_per_fingerprint(got_fps, got_tags)
    assert np.array_equal(fps[want], got_fps[got]) and np.array_equal(tags[want], got_tags[got])
