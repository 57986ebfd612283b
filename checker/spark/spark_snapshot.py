"""Snapshots of a Spark search at job boundaries, to resume it after its driver died (``--checkpoint``/``--resume``).

The checkpoint directory is the run's workdir: the levels' Parquet files (the
numbering and the visited sets' reliable copy) are already there. A snapshot
adds each partition's frontier (``frontier/level-LLLLL/part-PPPPP.npz``, written
by its task with its SHA-256 beside it) and then ``spark-snapshot.json``, the
driver's counters and the frontier files' digests, written to a temporary name
and renamed: a driver killed at any moment leaves the previous snapshot usable.
The manifest names what was searched (:func:`checker.exhaustive.checkpoint.identity`, plus
the partition count and chunk); a resume must agree on it. Files of levels
beyond the snapshot, left by the killed run, are rewritten with the same bytes
by the resumed run (every task is deterministic).

Nothing read from a snapshot is trusted, as the local engine's checkpoints: the
manifest must be a regular file matching its own digest, its counters of their
types and ranges (levels, state numbers, actions and invariants of this search),
and each frontier file its digest, the dtypes and shapes the search writes, its
keys in order and its cells within the layout's bounds. Anything else is a
CheckpointError (exit 2); a frontier file is checked by the task that reads it,
which ends the job with :data:`DAMAGED` and the reason.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid

import numpy as np

from isrcheck.checker.spark import spark_visited
from isrcheck.checker.guards import userfile
from isrcheck.checker.exhaustive.checkpoint import CheckpointError, identity, manifest_digest, read_manifest

MANIFEST = "spark-snapshot.json"
FORMAT = 2                          # 2: the manifest's own digest and the frontier files' digests
DAMAGED = "isrcheck: damaged Spark snapshot"     # a task's error naming a frontier file it refused


def _frontier_path(workdir, level, index=None):
    d = os.path.join(workdir, "frontier", f"level-{level:05d}")
    return d if index is None else os.path.join(d, f"part-{index:05d}.npz")


def _file_digest(path):
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def save_frontier(workdir, level, index, part):
    """One partition's frontier record and its digest (a task writes them; atomic, deterministic)."""
    path = _frontier_path(workdir, level, index)
    spark_visited.make_dirs(workdir, os.path.dirname(path))
    tmp = f"{path}.tmp-{os.getpid()}-{uuid.uuid4().hex}"
    np.savez(f"{tmp}.npz", rows=part.rows, fps=part.fps, keys=part.keys, level_start=np.int64(part.level_start))
    with open(tmp, "w") as fh:
        fh.write(_file_digest(f"{tmp}.npz"))
    os.replace(f"{tmp}.npz", path)
    os.replace(tmp, f"{path}.sha256")


def load_frontier(workdir, level, index, check):
    """(rows, fps, keys, level_start) of one partition's saved frontier, checked against ``check`` (digest,
    level_start, lo, hi: the manifest's digest of the file, the level's first state number, the layout's field
    bounds); RuntimeError starting with DAMAGED otherwise."""
    digest, level_start, lo, hi = check
    path = _frontier_path(workdir, level, index)
    name = os.path.relpath(path, workdir)

    def bad(what):
        return RuntimeError(f"{DAMAGED}: --resume {workdir}: {name} {what}")
    try:
        os.close(userfile.open_regular(path, "snapshot frontier"))
        if _file_digest(path) != digest:
            raise bad("does not match its digest (edited or damaged)")
        with np.load(path, allow_pickle=False) as z:
            if sorted(z.files) != ["fps", "keys", "level_start", "rows"]:
                raise bad("does not hold a frontier")
            rows, fps, keys, start = z["rows"], z["fps"], z["keys"], z["level_start"]
    except (userfile.UserFileError, OSError, ValueError) as e:
        raise bad(f"cannot be read ({e})") from None
    n = keys.shape[0] if keys.ndim == 1 else -1
    if rows.dtype != np.int8 or rows.shape != (n, lo.size) or fps.dtype != np.uint64 or fps.shape != (n,) \
            or keys.dtype != np.uint64 or start.shape != () or int(start) != level_start:
        raise bad("does not hold this search's arrays (dtype, shape or level)")
    if np.any(keys[1:] <= keys[:-1]) or np.any(rows < lo) or np.any(rows > hi):
        raise bad("holds keys out of order or cells outside their fields' bounds")
    return rows, fps, keys, level_start


def write(workdir, spec, invariants, symmetry, partitions, chunk, state):
    """Name the frontier saved for ``state["depth"]`` (its files' digests) and the driver's counters; drop older
    frontiers."""
    level = state["depth"]
    digests = []
    for index in range(partitions):
        with open(f"{_frontier_path(workdir, level, index)}.sha256") as fh:
            digests.append(fh.read())
    doc = {"identity": {**identity(spec, invariants, symmetry), "partitions": partitions, "chunk": chunk},
           "format": FORMAT, "state": state, "frontier_sha256": digests}
    doc["digest"] = manifest_digest(doc)
    path = os.path.join(workdir, MANIFEST)
    tmp = f"{path}.tmp-{uuid.uuid4().hex}"
    with open(tmp, "w") as fh:
        json.dump(doc, fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    keep = os.path.basename(_frontier_path(workdir, level))
    for name in os.listdir(os.path.join(workdir, "frontier")):
        if name != keep:
            shutil.rmtree(os.path.join(workdir, "frontier", name), ignore_errors=True)


def manifest(workdir, spec, invariants, symmetry, chunk):
    """The snapshot manifest in ``workdir``, checked before Spark starts: a regular file of this isrcheck's format
    matching its digest, of this search (all but the partition count, :func:`state`'s), its counters of their
    types and ranges; CheckpointError otherwise."""
    where = f"--resume {workdir}"
    doc = read_manifest(os.path.join(workdir, MANIFEST), where, "Spark snapshot")
    if doc.get("format") != FORMAT:
        raise CheckpointError(f"{where}: {MANIFEST} is not a Spark snapshot manifest of this isrcheck")
    if doc.get("digest") != manifest_digest(doc):
        raise CheckpointError(f"{where}: {MANIFEST} does not match its digest (edited or damaged)")
    _same_search(doc, where, {**identity(spec, invariants, symmetry), "chunk": chunk})
    _check_counters(doc.get("state"), where, spec, invariants)
    return doc


def _same_search(doc, where, want):
    got = doc.get("identity")
    got = got if isinstance(got, dict) else {}
    for key, value in want.items():
        if got.get(key) != value:
            raise CheckpointError(f"{where}: the snapshot's {key} is {got.get(key)!r}, this run's {value!r}")


def state(doc, workdir, partitions):
    """The driver's counters of a checked manifest (:func:`manifest`) and its frontier files' digests, once the
    partition count is known; CheckpointError if it is not the snapshot's."""
    where = f"--resume {workdir}"
    _same_search(doc, where, {"partitions": partitions})
    digests = doc.get("frontier_sha256")
    if not isinstance(digests, list) or len(digests) != partitions or not all(isinstance(d, str) for d in digests):
        raise CheckpointError(f"{where}: {MANIFEST}: no digest for each of the {partitions} partitions' frontier "
                              f"files")
    return doc["state"], digests


def _check_counters(s, where, spec, invariants):
    """CheckpointError unless the counters ``s`` are of their types and ranges for this search."""
    def count(v):
        return isinstance(v, int) and not isinstance(v, bool) and v >= 0

    def bad(what):
        return CheckpointError(f"{where}: {MANIFEST}: {what}")
    if not isinstance(s, dict):
        raise bad("no counters")
    depth, sizes = s.get("depth"), s.get("level_sizes")
    if not count(depth) or depth < 1:
        raise bad("'depth' is not a positive integer")
    if not isinstance(sizes, list) or len(sizes) != depth or sizes[:1] != [1] \
            or not all(count(n) and n > 0 for n in sizes):
        raise bad(f"'level_sizes' is not {depth} positive state counts from 1")
    if s.get("level_start") != [sum(sizes[:i]) for i in range(depth)]:
        raise bad("'level_start' is not each level's first state number")
    if not count(s.get("transitions")) or not count(s.get("visited_states")) or not isinstance(s.get("moved"), list):
        raise bad("'transitions', 'visited_states' or 'moved' is not a count")
    fired, pending, violations = s.get("fired"), s.get("pending"), s.get("violations")
    if not isinstance(fired, list) or len(fired) != len(spec.actions) or not all(isinstance(f, bool) for f in fired):
        raise bad(f"'fired' is not a flag per action of the spec ({len(spec.actions)})")
    if not isinstance(pending, list) or not isinstance(violations, dict) \
            or sorted(pending + list(violations)) != sorted(invariants):
        raise bad("'pending' and 'violations' do not name this search's invariants once each")
    for name, found in violations.items():
        if not (isinstance(found, list) and len(found) == 2 and all(count(x) for x in found)
                and 1 <= found[1] <= depth and sum(sizes[:found[1] - 1]) <= found[0] < sum(sizes[:found[1]])):
            raise bad(f"the violation of {name!r} is not [state number, its level]")
