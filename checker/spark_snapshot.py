"""Snapshots of a Spark search at job boundaries, to resume it after its driver died (``--checkpoint``/``--resume``).

The checkpoint directory is the run's workdir: the levels' Parquet files (the
numbering and the visited sets' reliable copy) are already there. A snapshot
adds each partition's frontier (``frontier/level-LLLLL/part-PPPPP.npz``, written
by its task) and then ``spark-snapshot.json``, the driver's counters, written to
a temporary name and renamed: a driver killed at any moment leaves the previous
snapshot usable. The manifest names what was searched
(:func:`checker.checkpoint.identity`, plus the partition count and chunk); a
resume must agree on it. Files of levels beyond the snapshot, left by the killed
run, are rewritten with the same bytes by the resumed run (every task is
deterministic).
"""
from __future__ import annotations

import json
import os
import shutil
import uuid

import numpy as np

from isrcheck.checker import spark_visited
from isrcheck.checker.checkpoint import CheckpointError, identity

MANIFEST = "spark-snapshot.json"


def _frontier_path(workdir, level, index=None):
    d = os.path.join(workdir, "frontier", f"level-{level:05d}")
    return d if index is None else os.path.join(d, f"part-{index:05d}.npz")


def save_frontier(workdir, level, index, part):
    """One partition's frontier record (a task writes it; atomic, deterministic)."""
    path = _frontier_path(workdir, level, index)
    spark_visited.make_dirs(workdir, os.path.dirname(path))
    tmp = f"{path}.tmp-{os.getpid()}-{uuid.uuid4().hex}.npz"
    np.savez(tmp, rows=part.rows, fps=part.fps, keys=part.keys, level_start=np.int64(part.level_start))
    os.replace(tmp, path)


def load_frontier(workdir, level, index):
    """(rows, fps, keys, level_start) of one partition's saved frontier."""
    with np.load(_frontier_path(workdir, level, index)) as z:
        return z["rows"], z["fps"], z["keys"], int(z["level_start"])


def write(workdir, spec, invariants, symmetry, partitions, chunk, state):
    """Name the frontier saved for ``state["depth"]`` and the driver's counters; drop older frontiers."""
    doc = {"identity": {**identity(spec, invariants, symmetry), "partitions": partitions, "chunk": chunk},
           "state": state}
    path = os.path.join(workdir, MANIFEST)
    tmp = f"{path}.tmp-{uuid.uuid4().hex}"
    with open(tmp, "w") as fh:
        json.dump(doc, fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    keep = os.path.basename(_frontier_path(workdir, state["depth"]))
    for name in os.listdir(os.path.join(workdir, "frontier")):
        if name != keep:
            shutil.rmtree(os.path.join(workdir, "frontier", name), ignore_errors=True)


def manifest(workdir):
    """The snapshot manifest in ``workdir``; CheckpointError if there is none (checked before Spark starts)."""
    try:
        with open(os.path.join(workdir, MANIFEST)) as fh:
            return json.load(fh)
    except FileNotFoundError:
        raise CheckpointError(f"--resume {workdir}: no Spark snapshot there ({MANIFEST})") from None
    except (OSError, ValueError) as e:
        raise CheckpointError(f"--resume {workdir}: unreadable {MANIFEST} ({e})") from None


def state(doc, workdir, spec, invariants, symmetry, partitions, chunk):
    """The driver's counters of a snapshot manifest; CheckpointError if it is another search's."""
    want = {**identity(spec, invariants, symmetry), "partitions": partitions, "chunk": chunk}
    got = doc.get("identity", {})
    for key, value in want.items():
        if got.get(key) != value:
            raise CheckpointError(f"--resume {workdir}: the snapshot's {key} is {got.get(key)!r}, this run's "
                                  f"{value!r}")
    return doc["state"]
