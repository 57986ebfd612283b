"""The Spark engine's least-tag loop and its column-major piece files, against the plain numpy they replace."""
import numpy as np
import pytest

from isrcheck.checker.exhaustive.bfs import Search
from isrcheck.checker.spark import spark_engine
from isrcheck.checker.spark.spark_kernels import least_tag_per_fingerprint, route


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
def test_route_is_by_owner_in_the_records_order(partitions):
    fps, _ = _records(3)
    rng = np.random.default_rng(5)
    parents = np.sort(rng.integers(0, 5_000, fps.size)).astype(np.uint32)
    actions = rng.integers(0, 60, fps.size).astype(np.uint16)
    prefix = rng.integers(0, 1 << 40, 5_000).astype(np.uint64)
    tags = (prefix[parents] << np.uint64(16)) | actions.astype(np.uint64)
    out_fps, out_tags, ends = route(fps, parents, actions, prefix, partitions)
    assert ends[-1] == fps.size
    for q, (lo, hi) in enumerate(zip(np.append(0, ends[:-1]), ends)):
        mine = fps % np.uint64(partitions) == np.uint64(q)
        assert np.array_equal(out_fps[lo:hi], fps[mine]) and np.array_equal(out_tags[lo:hi], tags[mine])


def test_a_piece_is_saved_as_its_batches_put_end_to_end(tmp_path):
    """Column batches written row by row make the very file np.save makes of their concatenation's transpose."""
    rng = np.random.default_rng(4)
    whole = rng.integers(-5, 5, (66, 900), dtype=np.int8)
    batches = [whole[:, 100:400], rng.integers(-5, 5, (66, 37), dtype=np.int8)]
    size = spark_engine._save_columns(str(tmp_path), 3, 1, "rows-from-00000", batches)
    spark_engine._save_array(str(tmp_path), 3, 1, "whole", np.concatenate(batches, axis=1).T)
    path = spark_engine._frontier_path(str(tmp_path), 3, 1, "rows-from-00000")
    with open(path, "rb") as a, open(spark_engine._frontier_path(str(tmp_path), 3, 1, "whole"), "rb") as b:
        assert a.read() == b.read()
    rows = np.load(path)
    assert size == rows.nbytes and rows.shape == (337, 66) and np.shares_memory(spark_engine._columns(rows), rows)
