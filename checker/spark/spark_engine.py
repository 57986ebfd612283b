"""Exhaustive breadth-first search on Spark: the local engine's search, partitioned by fingerprint.

``spark_search`` gives exactly the answers of :func:`checker.exhaustive.bfs.search`
(distinct states, transitions, depth, verdicts, completeness, actions never
fired, the violating state's number and level, and the same shortest trace with
ties broken the same way) for any number of partitions.

Data flow: the RDD API, files beside the tasks, Spark's shuffle for their paths
-------------------------------------------------------------------------------
Partition ``p`` owns the states whose (canonical) fingerprint is ``p`` modulo
the partition count. After level L the search is one persisted RDD, ``R_L``,
with a single record per partition (a :class:`_Part`) standing for its share of
level L (rows, one state per row, fingerprints and sort keys), which is in the
partition's frontier files, beside its visited set (a level-stamped table): see
"Visited sets and frontiers beside the tasks" below. Every file a task reads or
writes is in the workdir, which every executor and the driver share; Spark's
shuffle carries only paths and counts. A level of ``decide_from`` states or more
is a job of three stages:

- map (level L -> L+1, partition q): expand q's share of level L chunk by chunk
  (``Search.expand``, on the kernels the local engine's policy picks for the
  level's size: ``kernels``); write each successor to its owner as a 16-byte
  (fingerprint, tag) record, the tag being ``parent number << 16 | action``
  (routed in one pass: ``checker.spark.spark_kernels``;
  ``frontier-files/part-P/level-L-successors-from-Q.npy``, atomic), a
  fingerprint the task reached again while its record was still held back in a
  small table (``RecentSuccessors``) merged into that record (the least tag).
- decide (level L+1, partition p): from every map task's records (read
  straight into one array each) keep the smallest tag per fingerprint (one
  sort and one pass:
  ``checker.spark.spark_kernels``), add those fingerprints to p's visited
  table in that order: the ones it lacked are the new states, and a winner's tag
  is its key. Write the level's (fingerprint, parent, action) to
  ``levels/level-LLLLL/part-PPPPP.parquet`` and p's keys and fingerprints, and
  give each parent partition q the keys of the winners it routed and their places among p's
  (``level-L-{winners,winner-places}-from-P.npy`` in q's directory).
- materialize (partition q): the winners' rows, from q's rows of level L and
  the winning action, checked against the pending invariants and written once,
  to their owner, as a piece of its level (``level-L-{rows,places}-from-Q.npy``,
  column-major, by block of their parents and in key order within one; their
  fingerprints are the owner's ``level-L-fps.npy``, in key order, which its
  decide task wrote, or under symmetry, where that task has the canonical ones
  only, ``level-L-fps-from-Q.npy``); the next job's map expands a partition's
  pieces as they are.

A level decided on records runs on the local engine's compiled kernels
(``model/c_kernels.py``) where a worker has them, as the local engine does: the
map's expand gives every successor as flat arrays, and the materialize task
builds a block's winners for an owner from their parents' columns in one call
(``build``), parents ascending, straight into the owner's piece file mapped in
memory (no array of the rows, no copy to write); without them (no C compiler, symmetry, ``kernels="numpy"``)
the numpy or numba kernels do the same work (``Search.apply``, one call per run
of equal actions) and the files are the same.

So only a winner's row is materialized, where its parent's row is, and written
once; a successor that loses costs 16 bytes at most. The job's last stage counts the
pieces' paths in the JVM; ``R_{L+1}``, made from them, is computed by the next
job's first stage.

Smaller levels cost more in Spark's per-stage scheduling than in rows: while they
are small (``batch_states``) the driver chains up to eight levels into one job,
one stage per level: each task reduces level L and expands it at once, one
Python pass, and the partition's keys ride the shuffle to its next task as a
record; the map drops the successors that their owners' visited tables hold and
routes the rest with their rows, and the reduce keeps the smallest tag per
fingerprint, gathers the new states' rows, checks them and writes them as the
partition's frontier files. A level between the two is a job of its own on the
same path (two stages). Only a job's last level is cached.

Visited sets and frontiers beside the tasks (bytes per level grow with the new states only)
-------------------------------------------------------------------------------------------
Between the JVM and the Python workers, and through the shuffle, a level moves
only paths and counts. A partition's share of a level is in its frontier files
(``frontier-files/part-PPPPP/level-LLLLL-{rows,fps,keys}.npy``, or the pieces
above; atomic, deterministic) and the record that stands for it has no arrays,
so the cache holds no states and the next map task reads them from the files;
files older than the newest reliable checkpoint of the level RDD are deleted by
the driver (a recomputation after a lost executor starts there at the earliest),
but for the pieces of rows and the successor files: those become spares that
their writers write later ones over (``_spare``), the pages of a file the page
cache holds costing less to write again than a new file's.
A level of ``CHECKPOINT_FROM`` states or more is checkpointed at once (its
records are a few bytes), so the frontier files of about two levels are kept at
the widest. Each
partition's visited set is a level-stamped table in a file,
``visited/part-PPPPP.table`` under the workdir (:mod:`checker.spark.spark_visited`):
the reduce (or decide) task of level L+1 adds the level's new fingerprints in
place (their slots, not a copy of the whole set), and a chained level's map task
maps the tables to drop successors their owners have seen (stamps 1..L). The
tables are a cache, not the record of truth: the reliable copy is the per-level
Parquet files, whose fingerprint columns are exactly each partition's new
states, so a reduce task that finds no table, or one short of its level (another
machine's, dropped when a run resumes), adds the missing levels from them, and
one holding later stamps (a retried or recomputed level) is first cut back to
its level: the set a task sees is a deterministic function of the Parquet
files. (Keeping the sets in cached
co-partitioned RDD records instead costs their whole size JVM -> Python -> JVM
every level: about 4.7 GB for 12M states, the first design.)

The driver learns each level's outcome from task summaries sent through an
accumulator keyed by (level, partition) and, for a materialize task, (level,
"materialize", partition), so a recomputed task changes nothing;
the job's action is a JVM-side count, so no extra Python pass runs over the
cached records. A summary carries the CPU seconds of the task's sections
(``stage_cpu_seconds``: expand, group, successor files, sort and dedup, visited
table, apply, ...), reported per level. Nothing lives in executor-side globals but the spec,
re-instantiated from its class and bounds once per Python worker: a retried
task reads its inputs from the cache, the shuffle, the visited tables and the
Parquet files of the previous level again and produces the same record. Every ``checkpoint_every``
levels the level RDD is checkpointed (``workdir/checkpoints``) to bound
lineage and recomputation after a lost executor.

State numbering (what makes the answers identical)
--------------------------------------------------
The local engine numbers the states of a level in the order of their canonical
discovery ``(parent number, action instance)``: the smallest such pair among
all discoveries of the state in that level. Here each level-L state carries
that pair packed into one uint64 sort key ``K = parent number << 16 | action``
(unique within the level: a (parent, action) pair has one successor), and
its number is ``start of level L + rank of K among all level-L keys``.

A partition holds an arbitrary (fingerprint-chosen) subset of a level, so a
rank is global; but the ranks of level L are needed only one stage later, so
they come from the Parquet files of level L, complete once the stage that
wrote them is over (the shuffle is the barrier), and the driver never handles
per-state data. The map task of a job's first level knows its states' numbers:
the level's files are complete (the previous job wrote them), so it ranks its
keys among the other partitions' (their frontier key files, else their Parquet
files) and tags each successor with ``parent number << 16 | action``, which is
the successor's own key if it wins; it also counts the transitions per chunk of
parent numbers itself. A chained level's map task knows only its states' keys
(the other partitions write theirs alongside), and since keys and numbers are in
the same order it tags each successor with ``K(parent) << 16 | action``, which
orders successors exactly as (parent number, action) does. Either way the
reduce task picks the smallest tag per fingerprint; for parent keys it reads the
level-L keys from the files and turns each winner's ``K(parent)`` into the
parent's number (``level start + sum over files of searchsorted``), giving the
winner's own key and the Parquet row.
A tag or key packs a parent number below 2**48; a chained level's tag packs a
parent's key, so levels are chained only while every state number is below
2**32 (``CHAIN_BELOW``): a search may go on to 2**48 states, where the local
engine stops at 2**32 (its parent numbers are uint32).
The first violating state of an invariant is the smallest key
violating it in the first level where any partition reports one; the driver
ranks it against that level's files. ``max_states`` cuts the level where the
local engine's chunked loop stops (its chunks of parents,
``checker.exhaustive.bfs.chunk_step`` of the level's size and ``chunk``): the reduce tasks
report transitions per chunk of parent numbers.

Traces: from the violating state, the driver reads each earlier level's keys
from its Parquet files, indexes them by rank for the parent and the action, and
replays the path on the scalar backend (``Search.trace``).

Budgets: ``max_depth`` and ``max_states`` stop where the local engine stops;
``time_limit`` is checked after each level, and a job still running at the
deadline is cancelled (the levels it finished are kept).

Fault tolerance in local mode needs a master with task retries, e.g.
``local[2,4]`` (``local[N]`` fails the job on the first task failure). On a
cluster, ``workdir`` must be a POSIX path that every executor and the driver
can read and write at the same path: shared storage (every file of the search is
there; the Parquet files are the numbering barrier). The driver writes the run's
id there (``RUN_FILE``) and every task checks it: an executor that does not see
it (a workdir on the driver's own disk, or another run's) ends the search with
``SparkSetupError``. Nothing else on an executor's machine is used but Spark's
own directories.

Executors in their own processes (``local-cluster``, standalone, YARN...): their
Python workers run the driver's interpreter (``sys.executable``) unless
``PYSPARK_PYTHON`` names another; the spec travels as its class and bounds, by
name when a new process can import its module, by value (cloudpickle) when it
comes from a user's ``FILE.py:CLASS`` (a private module only the driver has);
task summaries come back through an accumulator.
"""
from __future__ import annotations

import gc
import importlib.util
import inspect
import mmap
import os
import re
import shutil
import sys
import tempfile
import threading
import time
import uuid

import numpy as np

from isrcheck.checker.spark import spark_snapshot, spark_visited
from isrcheck.checker.engine import stop as stopping
from isrcheck.checker.exhaustive.bfs import Search, chunk_step, search as bfs_search
from isrcheck.checker.engine.budget import UNLIMITED
from isrcheck.checker.exhaustive.checkpoint import CheckpointError
from isrcheck.checker.engine.result import Result, Violation
from isrcheck.checker.exhaustive.fingerprint import Symmetry
from isrcheck.model import backends

try:
    from pyspark.accumulators import AccumulatorParam
except ImportError:                      # pyspark missing: spark_search fails when called, not on import
    AccumulatorParam = object

INSTALL_HINT = "pip install 'isrcheck[spark]'"


def missing_dependencies():
    """The Spark engine's packages that are not installed (they are the ``spark`` extra, not core)."""
    return [name for name in ("pyspark", "pyarrow") if importlib.util.find_spec(name) is None]

ACTION_BITS = 16
ACTION_MASK = np.uint64((1 << ACTION_BITS) - 1)
MAX_KEY = np.uint64(1 << (64 - ACTION_BITS))      # a chained level's tag packs a key and one more action
CHAIN_BELOW = 1 << 32       # levels are chained while every state number is below this: their keys are below MAX_KEY
CHECKPOINT_EVERY = 8
CHECKPOINT_FROM = 1 << 20      # a job expanding a level of this many states is checkpointed whatever the count
DECIDE_FROM = 1 << 19          # a level of this many states is decided on (fingerprint, tag) records
BATCH_STATES = 50_000          # chain levels into one job while the predicted states stay below this
MAX_BATCH = 8


def local_chunk():
    """The local engine's default chunk (``checker.exhaustive.bfs.search``): its max_states granularity, reproduced here."""
    return inspect.signature(bfs_search).parameters["chunk"].default


# ---------------------------------------------------------------------------------------------
# records, caches, helpers
# ---------------------------------------------------------------------------------------------
class _Part:
    """One partition's share of the search after a level: the single record of its RDD partition.

    In the cached level RDD the arrays are None: they are in the partition's frontier files (``_frontier``),
    whole, or in pieces, one from each partition that materialized some of them (``pieces``: those partitions),
    their fingerprints in the partition's file of them in key order, which its decide task wrote, or under
    symmetry (where that task knows the canonical ones only) in each piece (``piece_fps``).
    """

    def __init__(self, rows, fps, keys, level_start, pieces=None, piece_fps=False):
        self.rows = rows                # int8, n x width (a state per row): owned states of the newest level
        self.fps = fps                  # uint64 (n,): their full fingerprints (expand's delta base)
        self.keys = keys                # uint64 (n,), sorted: parent number << 16 | action
        self.level_start = level_start  # number of the level's first state
        self.pieces = pieces            # the partitions whose piece files hold the rows, or None: whole files
        self.piece_fps = piece_fps      # whether each piece holds its states' fingerprints


class _Job:
    """What the tasks of one level need (pickled into the closure; the spec travels as class + bounds)."""

    def __init__(self, **kw):
        self.__dict__.update(kw)


class _Summaries(AccumulatorParam):
    """Task summaries keyed by (level, partition): merging is idempotent, so a recomputed task changes nothing."""

    def zero(self, value):
        return {}

    def addInPlace(self, a, b):
        a.update(b)
        return a


RUN_FILE = ".isrcheck-run"          # in the workdir: the id of the run using it
NOT_SHARED = "isrcheck: the workdir is not this run's here"


def _claim(workdir):
    """Mark ``workdir`` as this run's (atomically); the run's id, which its tasks check (``_check_workdir``)."""
    run = uuid.uuid4().hex
    path = os.path.join(workdir, RUN_FILE)
    with open(f"{path}.tmp-{run}", "w") as fh:
        fh.write(run)
    os.replace(f"{path}.tmp-{run}", path)
    return run


def _release(workdir):
    try:
        os.remove(os.path.join(workdir, RUN_FILE))
    except FileNotFoundError:
        pass


def _check_workdir(workdir, run):
    """A task's check that the workdir it sees is its run's: else the executors do not share it with the driver
    (or another run took it over), and every file a task reads or writes there would be another one's."""
    try:
        with open(os.path.join(workdir, RUN_FILE)) as fh:
            if fh.read() == run:
                return
    except OSError:
        pass
    import socket
    raise RuntimeError(f"{NOT_SHARED} (host {socket.gethostname()})")


_WORKER_CACHE = {}


def _worker_search(job):
    """The spec and a Search over it, built once per Python worker process (after the task's workdir check); what
    the worker holds then is frozen out of the cyclic garbage collector's view (``gc.freeze``)."""
    _check_workdir(job.workdir, job.run)
    # by name: a spec class pickled by value (a user's file) is a new object in every task
    key = (job.spec_class.__module__, job.spec_class.__qualname__, job.bounds, job.symmetry, job.chunk, job.kernels)
    found = _WORKER_CACHE.get(key)
    if found is None:
        spec = job.spec_class(**dict(job.bounds))
        search = Search(spec, [], symmetry=job.symmetry, chunk=job.chunk, kernels=job.kernels)
        sym = Symmetry(spec.layout, search.fingerprint) if job.symmetry else None
        found = _WORKER_CACHE[key] = (spec, search, sym)
    spec, search, sym = found
    # the local engine's kernel policy, on the whole level's size: native kernels load here (compiled once per
    # machine, numba's disk cache: model/native.py) and stay for the rest of the worker's life
    search._choose_kernels(job.level_size)
    if job.records_only and not job.symmetry:
        # and its compiled kernels (model/c_kernels.py) for a level decided on records, where they are used
        search._choose_compiled(job.level_size, 0)
    # what the worker holds now (modules, numba's dispatchers and types, the spec, the kernels) leaves the cyclic
    # collector's view: a reused Python worker runs a full collection after every task (pyspark.daemon), which
    # otherwise walks those ~150K objects each time, some 70 ms a task; a later task's garbage is collected as before
    gc.freeze()
    return found


def _ship_spec_class(spec_class):
    """Pickle the spec's class by value when executors could not import it by name.

    A spec from ``FILE.py:CLASS`` lives in a private module that only the driver
    has (``checker.command_line.registry``): its code must travel with the tasks. A class in an
    importable module (the built-in specs, a plugin) travels by name.
    """
    top = spec_class.__module__.split(".")[0]
    finders = [f for f in sys.meta_path if hasattr(f, "find_spec")]      # not sys.modules: how a new process finds it
    if any(f.find_spec(top, None) is not None for f in finders):
        return
    from pyspark import cloudpickle
    cloudpickle.register_pickle_by_value(sys.modules[top])


def _ident(k):
    return k


def _bind(fn, job):
    def task(index, records):
        return fn(job, index, records)
    return task


def _first_per_fingerprint(fp):
    """Index of the first occurrence of each distinct fingerprint, in fingerprint order."""
    if fp.size == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.argsort(fp)
    s = fp[order]
    starts = np.ones(s.size, dtype=bool)
    np.not_equal(s[1:], s[:-1], out=starts[1:])
    return np.minimum.reduceat(order, np.flatnonzero(starts))


def _key_order(keys):
    """``np.argsort`` of distinct uint64 keys: one sort of the keys with their indices packed below them when both
    fit in 64 bits (numpy sorts values several times faster than it argsorts them), else an argsort."""
    n = keys.size
    bits = max(1, (n - 1).bit_length())
    if n == 0 or int(keys.max()) >> (64 - bits):
        return np.argsort(keys)
    packed = keys << np.uint64(bits)
    packed |= np.arange(n, dtype=np.uint64)
    packed.sort()
    return (packed & np.uint64((1 << bits) - 1)).view(np.int64)


def _ranks(key_lists, keys):
    """Rank of each key among the union of sorted key arrays (keys are distinct across arrays)."""
    r = np.zeros(keys.size, dtype=np.int64)
    for k in key_lists:
        if k.size:
            r += np.searchsorted(k, keys)
    return r


def _level_path(workdir, level, index=None):
    d = os.path.join(workdir, "levels", f"level-{level:05d}")
    return d if index is None else os.path.join(d, f"part-{index:05d}.parquet")


def _write_level(workdir, level, index, fps, keys):
    """A partition's (fingerprint, parent, action) of a level, in key order; atomic and deterministic."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    path = _level_path(workdir, level, index)
    tmp = _temporary(workdir, path)
    table = pa.table({"fingerprint": pa.array(fps, type=pa.uint64()),
                      "parent": pa.array(keys >> np.uint64(ACTION_BITS), type=pa.uint64()),
                      "action": pa.array((keys & ACTION_MASK).astype(np.uint16), type=pa.uint16())})
    pq.write_table(table, tmp, compression="none", use_dictionary=False, write_statistics=False)
    os.replace(tmp, path)


def _level_fps(job, index):
    """``lv -> partition index's new (canonical) fingerprints of level lv``, from the levels' Parquet files (the
    reliable copy its visited table is rebuilt from: ``checker.spark.spark_visited``)."""
    def level_fps(lv):
        import pyarrow.parquet as pq
        if lv == 1:
            return np.array([job.init_fp] if index == job.owner0 else [], dtype=np.uint64)
        t = pq.ParquetFile(_level_path(job.workdir, lv, index)).read(columns=["fingerprint"], use_threads=False)
        return t.column("fingerprint").to_numpy().astype(np.uint64)
    return level_fps


_FRONTIER_ARRAYS = ("rows", "fps", "keys")


def _frontier_path(workdir, level, index, name):
    return os.path.join(workdir, "frontier-files", f"part-{index:05d}", f"level-{level:05d}-{name}.npy")


def _temporary(workdir, path):
    """A temporary path beside ``path`` in the workdir, its directory made: a file is written there and moved to
    ``path`` once whole (atomic)."""
    spark_visited.make_dirs(workdir, os.path.dirname(path))
    return f"{path}.tmp-{os.getpid()}-{uuid.uuid4().hex}"


def _save_array(workdir, level, index, name, array):
    """One of a partition's files of a level, beside the tasks (atomic, deterministic); its size in bytes."""
    path = _frontier_path(workdir, level, index, name)
    tmp = _temporary(workdir, path)
    with open(tmp, "wb") as fh:
        np.save(fh, array)
    os.replace(tmp, path)
    return array.nbytes


class _PieceFile:
    """A state-per-row int8 array (n x width) saved as ``_save_array`` saves one stored column-major, made in place:
    ``columns`` (width x n, a cell's states contiguous) is the file's data mapped from the page cache, where the
    rows are built (no array of them; a new file's bytes are written as zeros first, ``spark_visited.fill_to``,
    then each page is written once more where the rows go next); ``close`` unmaps it and puts the file at its
    path (atomic), returning its size in bytes. Views of ``columns`` must be gone by then.

    The file is one of its writer's spares (``_spare``) when there is one: every byte of it is written again."""

    def __init__(self, workdir, level, index, name, n, width, writer):
        from numpy.lib import format as npy
        self.path = _frontier_path(workdir, level, index, name)
        self.tmp = _temporary(workdir, self.path)
        self.nbytes = n * width
        spare = _spare(workdir, writer, "rows", self.tmp, self.nbytes)
        with open(self.tmp, "r+b" if spare else "wb+", buffering=0) as fh:
            npy.write_array_header_1_0(fh, {"descr": npy.dtype_to_descr(np.dtype(np.int8)), "fortran_order": True,
                                            "shape": (n, width)})
            start = fh.tell()
            spark_visited.fill_to(fh.fileno(), start + self.nbytes)
            self.map = mmap.mmap(fh.fileno(), start + self.nbytes)
        self.columns = np.frombuffer(self.map, dtype=np.int8, count=self.nbytes, offset=start).reshape(width, n)

    def close(self):
        self.columns = None
        self.map.close()
        os.replace(self.tmp, self.path)
        return self.nbytes


def _save_frontier(workdir, level, index, part):
    """A partition's share of a level as files beside the tasks; the record that stands for it in the cache has
    no arrays, so the level never travels JVM -> Python -> JVM."""
    for name in _FRONTIER_ARRAYS:
        _save_array(workdir, level, index, name, getattr(part, name))
    return _Part(None, None, None, part.level_start)


def _frontier_blocks(workdir, level, index, part, mapped=False):
    """``part``'s share of a level as blocks ``(rows, fps, places)``, and its keys in order: its arrays as they are,
    or its frontier files (one block in key order, ``places`` None), or its pieces, one from each partition that
    materialized some of its states (``_materialize_task``), each with its states' places in key order. Arrays
    read whole (the numpy and numba kernels take no read-only ones), or ``mapped`` read-only from the page cache
    (for the compiled kernels, which read them in place)."""
    def load(name):
        path = _frontier_path(workdir, level, index, name)
        try:
            return np.load(path, mmap_mode="r") if mapped else np.load(path)
        except ValueError:                      # an empty array cannot be mapped
            return np.load(path)
    if part.rows is not None:
        return [(part.rows, part.fps, None)], part.keys
    keys = np.load(_frontier_path(workdir, level, index, "keys"))
    if part.pieces is None:
        return [(load("rows"), load("fps"), None)], keys
    places = [np.load(_frontier_path(workdir, level, index, f"places-from-{q:05d}")) for q in part.pieces]
    if part.piece_fps:
        fps = [load(f"fps-from-{q:05d}") for q in part.pieces]
    else:
        in_key_order = load("fps")
        fps = [np.take(in_key_order, at) for at in places]
    blocks = [(load(f"rows-from-{q:05d}"), f, at) for q, f, at in zip(part.pieces, fps, places)]
    if sum(b[2].size for b in blocks) != keys.size:
        raise RuntimeError(f"internal error: partition {index}'s pieces of level {level} do not hold its "
                           f"{keys.size} states")
    return blocks, keys


def _frontier(workdir, level, index, part, width):
    """``part`` with its arrays, in key order (``_frontier_blocks`` put together)."""
    blocks, keys = _frontier_blocks(workdir, level, index, part)
    if blocks[0][2] is None:
        return _Part(blocks[0][0], blocks[0][1], keys, part.level_start)
    rows, fps = np.empty((keys.size, width), dtype=np.int8), np.empty(keys.size, dtype=np.uint64)
    for r, f, places in blocks:
        rows[places] = r
        fps[places] = f
    return _Part(rows, fps, keys, part.level_start)


def _successor_path(workdir, level, owner, index):
    """The file of the successors that map task ``index`` routes to partition ``owner`` for level ``level``."""
    return _frontier_path(workdir, level, owner, f"successors-from-{index:05d}")


class _SuccessorFiles:
    """A map task's successors for each owner, appended batch by batch to one file per owner (a few .npy arrays
    per batch: fingerprints, tags and, for chained levels, rows), renamed into place at the end (atomic). A
    retried or speculative task may write fewer of the already-visited successors (what the other partitions'
    visited tables hold depends on timing), never other new ones: the reduce drops visited successors anyway, so
    its answer is the same."""

    def __init__(self, workdir, level, index):
        self.workdir, self.level, self.index, self.open = workdir, level, index, {}

    def add(self, owner, *arrays):
        """Append one batch for ``owner``; its bytes."""
        fh = self.open.get(owner)
        if fh is None:                          # a spare file is written from its start, and cut where it ends
            tmp = _temporary(self.workdir, _successor_path(self.workdir, self.level, owner, self.index))
            fh = self.open[owner] = open(tmp, "r+b" if _spare(self.workdir, self.index, "successors", tmp) else "wb")
        for a in arrays:
            np.save(fh, a)
        return _nbytes(*arrays)

    def close(self):
        """{owner: path} of the files written."""
        done = {}
        for owner, fh in sorted(self.open.items()):
            fh.truncate()
            fh.close()
            done[owner] = _successor_path(self.workdir, self.level, owner, self.index)
            os.replace(fh.name, done[owner])
        return done


def _read_successors(path, arrays):
    """The batches of a successor file, ``arrays`` arrays each."""
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        while fh.tell() < size:
            yield tuple(np.load(fh) for _ in range(arrays))


def _read_records(files):
    """The (fingerprint, tag) records of successor files ``[(path, source partition)]`` (batches of two uint64
    arrays of equal length: ``_SuccessorFiles``), read straight into one array of each, and each record's source:
    (fps, tags, sources). A first pass reads the arrays' headers only, for their lengths; nothing is copied after
    the read."""
    sizes = []
    for path, _ in files:
        n = 0
        with open(path, "rb") as fh:
            end = os.fstat(fh.fileno()).st_size
            while fh.tell() < end:
                k = _record_array(fh)
                fh.seek(8 * k, os.SEEK_CUR)
                n += k
        sizes.append(n // 2)
    fps, tags = np.empty(sum(sizes), dtype=np.uint64), np.empty(sum(sizes), dtype=np.uint64)
    sources = np.repeat(np.array([q for _, q in files], dtype=np.int32), sizes)
    at = 0
    for (path, _), size in zip(files, sizes):
        with open(path, "rb") as fh:
            end = at + size
            while at < end:
                k = _record_array(fh)
                _read_into(fh, fps[at:at + k])
                if _record_array(fh) != k:
                    raise RuntimeError(f"internal error: {path}: a batch's tags are not as many as its fingerprints")
                _read_into(fh, tags[at:at + k])
                at += k
    return fps, tags, sources


def _record_array(fh):
    """The length of the .npy array (uint64, one dimension) whose header ``fh`` is at, read up to its data."""
    from numpy.lib import format as npy
    version = npy.read_magic(fh)
    shape, _, dtype = (npy.read_array_header_1_0 if version == (1, 0) else npy.read_array_header_2_0)(fh)
    if dtype != np.uint64 or len(shape) != 1:
        raise RuntimeError(f"internal error: {fh.name} is not a file of (fingerprint, tag) records")
    return shape[0]


def _read_into(fh, into):
    """Fill ``into`` (contiguous) from ``fh``."""
    if fh.readinto(memoryview(into).cast("B")) != into.nbytes:
        raise RuntimeError(f"internal error: {fh.name} ends inside an array")


def _drop_frontiers(workdir, partitions, below):
    """Remove the frontier and successor files of levels before ``below`` (no recomputation can read them: they
    are older than the newest reliable checkpoint of the level RDD); their pieces of rows and successor files
    become their writers' spares (``_spare``), the ``partitions`` largest of each kind and writer kept."""
    pools = set()
    for index in range(partitions):
        d = os.path.dirname(_frontier_path(workdir, 0, index, "rows"))
        for name in os.listdir(d) if os.path.isdir(d) else ():
            m = re.fullmatch(r"level-(\d+)-(?:(rows|successors)-from-(\d+)|[\w-]+)\.npy", name)
            if not m or int(m.group(1)) >= below:
                continue
            try:
                if m.group(2) is None:
                    os.remove(os.path.join(d, name))
                    continue
                pool = _spares_dir(workdir, int(m.group(3)), m.group(2))
                spark_visited.make_dirs(workdir, pool)
                os.replace(os.path.join(d, name), os.path.join(pool, f"{uuid.uuid4().hex}.npy"))
                pools.add(pool)
            except FileNotFoundError:
                pass
    for pool in pools:
        for path, _ in sorted(_spares(pool), key=lambda p: -p[1])[partitions:]:
            try:
                os.remove(path)
            except FileNotFoundError:
                pass


def _spares_dir(workdir, writer, kind):
    return os.path.join(workdir, "frontier-files", "spares", f"part-{writer:05d}", kind)


def _spares(pool):
    """[(path, size)] of the files in ``pool``."""
    found = []
    for name in os.listdir(pool) if os.path.isdir(pool) else ():
        try:
            found.append((os.path.join(pool, name), os.stat(os.path.join(pool, name)).st_size))
        except FileNotFoundError:
            pass
    return found


def _spare(workdir, writer, kind, path, nbytes=None):
    """Move one of partition ``writer``'s spare files of ``kind`` (``rows``, ``successors``) to ``path``: the
    smallest that holds ``nbytes``, else the largest; False when there is none (a task running beside its
    speculative twin may find one taken: the next is tried).

    A spare is a file of an earlier level, its pages likely still in the page cache: written again in place, it
    costs a copy into pages that are there, where a new file's pages are each found, cleared and given blocks
    first, and a removed file's are each freed."""
    spares = sorted(_spares(_spares_dir(workdir, writer, kind)), key=lambda p: p[1])
    for spare, _ in [p for p in spares if nbytes is not None and p[1] >= nbytes] or spares[::-1]:
        try:
            os.replace(spare, path)
            return True
        except FileNotFoundError:
            continue
    return False


def _parquet_keys(path):
    """The keys (parent << 16 | action) of one partition's Parquet file of a level, in key order."""
    import pyarrow.parquet as pq
    t = pq.ParquetFile(path).read(columns=["parent", "action"], use_threads=False)
    parent = t.column("parent").to_numpy().astype(np.uint64)
    return (parent << np.uint64(ACTION_BITS)) | t.column("action").to_numpy().astype(np.uint64)


def _read_level_keys(workdir, level, merged=True):
    """Every key of a level from its Parquet files: one sorted array, or one per partition file."""
    if level == 1:
        keys = [np.zeros(1, dtype=np.uint64)]                # the initial state: number 0, key 0
    else:
        d = _level_path(workdir, level)
        keys = [_parquet_keys(os.path.join(d, name)) for name in sorted(os.listdir(d)) if name.endswith(".parquet")]
    if not merged:
        return keys
    return np.sort(np.concatenate(keys)) if keys else np.zeros(0, dtype=np.uint64)


def _level_ranks(job, index, keys):
    """Ranks of partition ``index``'s keys of level ``job.level`` (sorted) among the whole level's, and the level's
    size, once every partition's share of it is written: the others' keys from their frontier files (mapped), or
    from their Parquet files (the reliable copy) when a file is not there."""
    if job.level == 1:
        level_keys = _read_level_keys(job.workdir, 1, merged=False)
        return _ranks(level_keys, keys), sum(k.size for k in level_keys)
    ranks, n_level = np.arange(keys.size, dtype=np.int64), keys.size
    for q in range(job.partitions):
        if q == index:
            continue
        try:
            other = np.load(_frontier_path(job.workdir, job.level, q, "keys"), mmap_mode="r")
        except (FileNotFoundError, ValueError):          # not there (or empty: cannot be mapped)
            other = _parquet_keys(_level_path(job.workdir, job.level, q))
        if other.size:
            ranks += np.searchsorted(other, keys)
        n_level += other.size
    return ranks, n_level


def _maybe_fail(job, stage, index):
    """Test hook: fail the first attempt of the tasks named in ``_fault``: (stage, level, partition) triples."""
    if job.fault is not None and (stage, job.level, index) in job.fault:
        from pyspark import TaskContext
        ctx = TaskContext.get()
        if ctx is not None and ctx.attemptNumber() == 0:
            raise RuntimeError(f"injected failure: {stage} task {index} of level {job.level}, attempt 0")


# ---------------------------------------------------------------------------------------------
# the two halves of a level
# ---------------------------------------------------------------------------------------------
def _transpose(rows):
    """A state-per-row batch (n x width) as the numpy backend's column-major batch (width x n), or back,
    blockwise along the states (blocks of 256: a third faster than 4096 on int8 rows of 66 cells)."""
    out = np.empty(rows.shape[::-1], dtype=rows.dtype)
    if rows.shape[0] >= rows.shape[1]:
        for s in range(0, rows.shape[0], 256):
            out[:, s:s + 256] = rows[s:s + 256].T
    else:
        for s in range(0, rows.shape[1], 256):
            out[s:s + 256] = rows[:, s:s + 256].T
    return out


def _columns(rows):
    """A state-per-row array (n x width) as a batch of columns (width x n, a state's cells a column's length apart,
    states side by side): its transpose, a view when it is stored column-major (a piece: ``_materialize_task``)."""
    return rows.T if rows.strides[0] == rows.itemsize else _transpose(rows)


def _successor_rows(rows, parts, part_start, picks, parent):
    """Successor states as rows (k x width) from their parents' rows; ``picks`` ascend (into the parts, whose
    parent rows, concatenated, are ``parent``).

    Gathering whole parent rows and patching the written cells is several times
    faster than gathering columns of the column-major batch.
    """
    out = np.take(rows, parent[picks], axis=0)
    bounds = np.searchsorted(picks, np.append(part_start, parent.size))
    for i, (_, _, cols, _) in enumerate(parts):
        lo, hi = bounds[i], bounds[i + 1]
        if lo < hi:
            src = picks[lo:hi] - part_start[i]
            for c, v in cols.items():
                out[lo:hi, c] = v[src] if isinstance(v, np.ndarray) else v
    return out


def _kernels_name(search):
    """The kernels a worker's Search expands with now: "native" or "numpy"."""
    return "numpy" if search.native is None else "native"


class _Stages:
    """CPU seconds of a task's sections, lap by lap (``time.process_time``: a Python worker runs one task at a
    time, its kernels on its own thread): ``lap(name)`` charges the time since the previous lap to ``name``.
    Reported per level (``stage_cpu_seconds``) so that the workers' per-state work can be set beside the local
    engine's."""

    def __init__(self, seconds=None):
        self.seconds = dict(seconds or {})
        self.t = time.process_time()

    def lap(self, name):
        now = time.process_time()
        self.seconds[name] = self.seconds.get(name, 0.0) + now - self.t
        self.t = now


def _nbytes(*arrays):
    """The payload bytes of a record's arrays (what crosses between the JVM and a Python worker, less pickling)."""
    return sum(a.nbytes for a in arrays if a is not None)


def _map_task(job, index, records, carry=False, from_jvm=True):
    """Expand this partition's share of level ``job.level``; route its successors to their owners.

    Per chunk the successors are written to their owners' successor files (a chained level's: the smallest
    (parent, action) per fingerprint only), tagged ``parent number << 16 | action`` (the successor's key if it
    wins) in a job's first level (``job.numbered``: the level's Parquet files are complete), else
    ``K(parent) << 16 | action``: a chained level knows its states' keys, not their numbers, in the same order.
    A level that is a job of its own (``job.records_only``) routes (fingerprint, tag) records only: the owner
    decides the winners and this partition materializes them (``_decide_task``, ``_materialize_task``). Chained
    levels drop the successors their owners have visited (any owner: the tables are beside the tasks) and route
    the rest with their rows.
    With ``carry`` the partition's keys go through the shuffle to its own next task too.
    The payload bytes that cross the JVM boundary (the input record ``from_jvm``, every record out) go to the
    reduce task with the statistics.
    """
    stages = _Stages()
    spec, search, sym = _worker_search(job)
    stages.lap("worker setup")
    P, chunk, n_actions = job.partitions, job.chunk, len(spec.actions)
    for _, part in records:
        if from_jvm:
            stages.lap("map: read record")
        else:                                   # the reduce task that made it ran here: its time is its own
            stages.t = time.process_time()
        moved = _nbytes(part.rows, part.fps, part.keys) if from_jvm else 0
        files, filed = _SuccessorFiles(job.workdir, job.level + 1, index), 0
        # a level decided on records is expanded by the compiled kernels where the worker has them: every successor
        # in (parent, action) order, as flat arrays (the local engine's fast path), its files read in place
        compiled = search.compiled if job.records_only else None
        blocks, keys = _frontier_blocks(job.workdir, job.level, index, part, mapped=compiled is not None)
        stages.lap("map: frontier files")
        n = keys.size
        counts = np.zeros(n, dtype=np.int64)            # transitions per state, in key order
        fired = np.zeros(n_actions, dtype=bool)
        if n and not job.numbered and keys[-1] >= MAX_KEY:       # the driver chains no such level
            raise OverflowError("a chained level's keys overflow its tags: more than 2**32 states")
        prefix, own = keys, None
        if job.numbered:
            own, n_level = _level_ranks(job, index, keys)   # the frontier's numbers, less the level's start
            if part.level_start + n_level >= int(MAX_KEY):
                raise OverflowError("more than 2**48 states: parent numbers overflow the tags")
            step = chunk_step(n_level, chunk)                     # the local engine's chunks of this level
            n_chunks = -(-n_level // step)
            prefix = (own + part.level_start).astype(np.uint64)
            if job.records_only:                    # where _materialize_task finds a parent
                _save_array(job.workdir, job.level, index, "ranks", own)
            stages.lap("map: numbering")
        # a chained level's successors that their owners' visited tables (checker.spark.spark_visited) hold, as far as
        # they are written, are dropped here rather than routed with their rows
        tables = [] if job.records_only else [(q, spark_visited.open_table(job.workdir, q)) for q in range(P)]
        tables = [(q, t) for q, t in tables if t is not None]
        stages.lap("map: visited tables")
        if job.records_only:
            from isrcheck.checker.spark.spark_kernels import RecentSuccessors, route
            recent = RecentSuccessors()
        if compiled is not None:
            from isrcheck.model.c_kernels import Scratch
            scratch, enabled, moved_by = Scratch(), np.zeros(n_actions, np.int64), np.zeros(n_actions, np.int64)
        # block by block (a level in pieces is expanded as it is, not put in key order first)
        for block_rows, block_fps, places in blocks:
            block_prefix = prefix if places is None else prefix[places]
            for cs in range(0, block_rows.shape[0], chunk):
                rows = block_rows[cs:cs + chunk]
                batch = _columns(rows) if compiled is not None else np.ascontiguousarray(_columns(rows))
                stages.lap("map: transpose")
                if compiled is not None:
                    fp, _, parent, action = compiled.expand(batch, block_fps[cs:cs + chunk], None,
                                                            search.fingerprint.multipliers, None, enabled, moved_by,
                                                            scratch)
                    parts = None
                else:
                    parts = search.expand(batch, block_fps[cs:cs + chunk])
                stages.lap("map: expand")
                if parts is not None:
                    if not parts:
                        continue
                    sizes = np.array([p[1].size for p in parts])
                    part_start = np.cumsum(sizes) - sizes
                    fired[[p[0] for p in parts]] = True
                    parent = np.concatenate([p[1] for p in parts])
                    action = np.repeat(np.array([p[0] for p in parts], dtype=np.int64), sizes)
                    fp = np.concatenate([p[3] for p in parts])
                    if sym is not None:
                        fp = search._canonical(batch, parts, sizes, fp)
                elif not parent.size:
                    continue
                moves = np.bincount(parent, minlength=rows.shape[0])
                if places is None:
                    counts[cs:cs + rows.shape[0]] += moves
                else:
                    counts[places[cs:cs + rows.shape[0]]] += moves
                m = parent.size
                stages.lap("map: expand bookkeeping")
                if job.records_only:
                    # the successors' records to their owners, which keep the least tag of each fingerprint; a
                    # fingerprint reached again while its record is still held back here (RecentSuccessors: a
                    # table in the core's cache) only lowers that record's tag: about a quarter fewer records
                    routed = route(fp, parent, action, block_prefix[cs:cs + rows.shape[0]], P, recent)
                    stages.lap("map: group")
                    filed += _file_records(files, *routed)
                    stages.lap("map: successor files")
                    continue
                # one sort, then the smallest tag of each fingerprint (a block of pieces is not in key order)
                tags = (block_prefix[cs + parent] << np.uint64(ACTION_BITS)) | action.astype(np.uint64)
                order, starts, unique = Search.group(fp)
                win = Search.least_per_group(order, starts, np.diff(np.append(starts, m)), lambda k: np.take(tags, k))
                stages.lap("map: group")
                if tables:                             # drop the successors their owners have visited
                    owner_of = unique % np.uint64(P)
                    keep = np.ones(win.size, dtype=bool)
                    for q, table in tables:
                        mine = np.flatnonzero(owner_of == np.uint64(q)) if P > 1 else np.arange(unique.size)
                        keep[mine[spark_visited.lookup(table, unique[mine], job.level)]] = False   # sorted: in order
                    win = win[keep]
                    stages.lap("map: visited filter")
                chosen = np.zeros(m, dtype=bool)
                chosen[win] = True
                picks = np.flatnonzero(chosen)          # ascending: parts stay contiguous
                owner = fp[picks] % np.uint64(P)
                for q in range(P):
                    sel = picks if P == 1 else picks[owner == np.uint64(q)]     # each owner's rows gathered once
                    if sel.size:
                        out = _successor_rows(rows, parts, part_start, sel, parent)
                        stages.lap("map: successor rows")
                        filed += files.add(q, fp[sel], tags[sel], out)
                        stages.lap("map: successor files")
        if compiled is not None:
            fired |= moved_by > 0
        if job.records_only:                    # the records still held back
            filed += _file_records(files, *recent.drain(P))
            stages.lap("map: successor files")
        for q, path in files.close().items():
            yield q, ("f", path, index)
        _maybe_fail(job, "map", index)
        # transitions by chunk of parent numbers (the local engine's max_states granularity), once they are known:
        # then the reduce task needs no per-state counts
        numbered = None if own is None else (n_level, np.bincount(
            own // step, weights=counts, minlength=n_chunks).astype(np.int64))
        if numbered is not None:
            counts = None
        moved += _nbytes(counts, fired) + (_nbytes(keys) if carry else 0)
        stages.lap("map: successor files")
        yield index, ("s", counts, fired, moved, _kernels_name(search), filed, stages.seconds, numbered)
        if carry:
            yield index, _Part(None, None, keys, part.level_start)     # the keys, for its reduce


def _file_records(files, fps, tags, ends):
    """Records by owner (``route``) added to their owners' successor files; returns the bytes written."""
    filed = 0
    for q, (lo, hi) in enumerate(zip(np.append(0, ends[:-1]), ends)):
        if lo < hi:
            filed += files.add(q, fps[lo:hi], tags[lo:hi])
    return filed


def _fused_task(jobs, index, records):
    """Reduce into level L and expand it in the same task (chained levels: one stage, one Python pass)."""
    reduce_job, map_job = jobs
    return _map_task(map_job, index, _reduce_task(reduce_job, index, records, to_jvm=False), carry=True,
                     from_jvm=False)


def _carry_map_task(job, index, records):
    return _map_task(job, index, records, carry=True)


def _gather_rows(batches, picks):
    """Rows ``picks`` (in any order) of the concatenation of ``batches`` (arrays of rows, or of values), gathered
    batch by batch: the batches are never concatenated."""
    ends = np.cumsum([b.shape[0] for b in batches])
    which = np.searchsorted(ends, picks, side="right")
    by = np.argsort(which.astype(np.int16 if len(batches) < 1 << 15 else np.int32), kind="stable")
    bounds = np.searchsorted(which[by], np.arange(len(batches) + 1))
    out = np.empty((picks.size,) + batches[0].shape[1:], dtype=batches[0].dtype)
    for b, rows in enumerate(batches):
        dest = by[bounds[b]:bounds[b + 1]]
        if dest.size:
            out[dest] = np.take(rows, picks[dest] - (ends[b] - rows.shape[0]), axis=0)
    return out


class _Inputs:
    """What a reduce-side task of level ``job.level + 1`` reads: the partition's previous record (chained
    levels), its map task's statistics, and every map task's successor batches for it, by array; or, ``joined``
    (a level decided on records), their (fingerprint, tag) records read straight into one array each, with each
    record's source partition (``records``: ``_read_records``)."""

    def __init__(self, records, arrays, stages, joined=False):
        self.prev, self.batches, self.records = None, [[] for _ in range(arrays)], None
        self.counts, self.fired, self.moved, self.kernels = None, None, 0, None
        self.filed, self.map_stages, self.numbered = 0, {}, None
        files = []
        for _, v in records:
            stages.lap("reduce: read records")
            if isinstance(v, _Part):
                self.prev = v
                self.moved += _nbytes(v.rows, v.fps, v.keys)
            elif v[0] == "f" and joined:
                files.append((v[1], v[2]))
            elif v[0] == "f":
                for batch in _read_successors(v[1], arrays):
                    for into, a in zip(self.batches, batch):
                        into.append(a)
                stages.lap("reduce: successor files")
            else:
                self.counts, self.fired, self.kernels, self.filed, self.map_stages, self.numbered = (
                    v[1], v[2], v[4], v[5], v[6], v[7])
                self.moved += v[3] + _nbytes(self.counts, self.fired)
        stages.lap("reduce: read records")
        if joined:                              # (fingerprint, tag) records: read into one array each
            self.records = _read_records(files)
            stages.lap("reduce: successor files")

    def joined(self, k):
        """The ``k``-th array of every batch, concatenated (fingerprints, tags)."""
        return np.concatenate(self.batches[k]) if self.batches[k] else np.zeros(0, dtype=np.uint64)


def _new_states(job, index, fp, tag, stages):
    """The smallest tag of each fingerprint, among those the partition's visited set (through level
    ``job.level``) lacks, added to it: (their indices into ``fp``, in tag order; the table's count)."""
    from isrcheck.checker.spark.spark_kernels import least_tag_per_fingerprint
    # one sort by fingerprint; the smallest tag of each is its candidate (tags are unique)
    win = least_tag_per_fingerprint(fp, tag)
    unique = fp[win]
    stages.lap("reduce: sort and dedup")
    # into the visited table, in fingerprint order (its slots in order): the ones it lacked are the new states
    new, n_visited = spark_visited.insert_level(job.workdir, index, job.level + 1, unique, _level_fps(job, index))
    win = win[new]
    stages.lap("reduce: visited table")
    win = win[_key_order(tag[win])]
    stages.lap("reduce: numbering")
    return win, n_visited


def _first_violations(job, spec, search, batch, keys):
    """{invariant still pending: the smallest key among ``keys`` of the column-major ``batch``'s states that
    break it}."""
    kernels = backends.batch(spec) if search.native is None else search.native
    found = {}
    for name in job.pending if keys.size else ():
        bad = np.flatnonzero(~kernels.holds(spec.invariants[name], batch))
        if bad.size:
            found[name] = int(keys[bad].min())
    return found


def _report(job, key, stages, inputs=None, **summary):
    """Send a task's summary to the driver, with its map task's statistics and CPU seconds by section."""
    if inputs is not None:
        for name, seconds in inputs.map_stages.items():
            stages.seconds[name] = stages.seconds.get(name, 0.0) + seconds
        summary.update(fired=inputs.fired, kernels=inputs.kernels, python_jvm_bytes=inputs.moved,
                       successor_file_bytes=inputs.filed + summary.pop("filed", 0))
    job.summaries.add({key: dict(summary, stage_cpu_seconds=stages.seconds)})


def _reduce_task(job, index, records, to_jvm=True):
    """Level ``job.level + 1`` of this partition, chained: anti-join, number, check, write; the new record.

    ``records``: the partition's previous record (cached, or carried through the
    shuffle), its map task's statistics, and every map task's successors for it, with their rows.
    Its summary counts the level's payload bytes between the JVM and Python: its
    map task's, the records read here, and the new record ``to_jvm``.
    """
    stages = _Stages()
    spec, search, sym = _worker_search(job)
    stages.lap("worker setup")
    inputs = _Inputs(records, 3, stages)
    prev, counts, numbered = inputs.prev, inputs.counts, inputs.numbered
    # tagged with parent keys (a chained level): their numbers come from the level's Parquet files, complete now
    level_keys, transitions = None, None
    if numbered is None:
        level_keys = _read_level_keys(job.workdir, job.level, merged=False)
        n_level = sum(k.size for k in level_keys)
    else:                                       # the map task had them: the level's size and its transitions
        n_level, transitions = numbered
    ls = prev.level_start
    stages.lap("reduce: level keys")
    fp, tag = inputs.joined(0), inputs.joined(1)
    stages.lap("reduce: concatenate")
    win, n_visited = _new_states(job, index, fp, tag, stages)
    tag = tag[win]
    if level_keys is None:                      # tagged with parent numbers: the tag is the key
        new_keys = tag
    else:
        parent = ls + _ranks(level_keys, tag >> np.uint64(ACTION_BITS))
        new_keys = (parent.astype(np.uint64) << np.uint64(ACTION_BITS)) | (tag & ACTION_MASK)
    stages.lap("reduce: numbering")
    new_rows = _gather_rows(inputs.batches[2], win) if win.size else np.zeros((0, spec.layout.width), np.int8)
    new_key_fps = fp[win]
    new_fps = new_key_fps if sym is None else search.fingerprint.full(_transpose(new_rows))
    stages.lap("reduce: row gather")
    violations = _first_violations(job, spec, search, _transpose(new_rows), new_keys)
    stages.lap("reduce: invariants")
    # transitions by chunk of parent numbers (the local engine's max_states granularity), unless the map task
    # counted them
    if transitions is None:
        step = chunk_step(n_level, job.chunk)                     # the local engine's chunks of this level
        n_chunks = -(-n_level // step)
        if counts is not None and counts.size:
            prev_keys = prev.keys if prev.keys is not None else np.load(
                _frontier_path(job.workdir, job.level, index, "keys"))          # not the level's rows
            own = _ranks(level_keys, prev_keys) // step              # the frontier's numbers, less ls
            transitions = np.bincount(own, weights=counts, minlength=n_chunks).astype(np.int64)
        else:
            transitions = np.zeros(n_chunks, dtype=np.int64)
    stages.lap("reduce: numbering")
    _write_level(job.workdir, job.level + 1, index, new_key_fps, new_keys)
    stages.lap("reduce: parquet write")
    _maybe_fail(job, "reduce", index)
    out = _Part(new_rows, new_fps, new_keys, ls + n_level)
    if to_jvm:                                  # the level is cached: its arrays go to files, not to the JVM
        out = _save_frontier(job.workdir, job.level + 1, index, out)
    stages.lap("reduce: frontier write")
    _report(job, (job.level, index), stages, inputs, count=int(new_keys.size), violations=violations,
            transitions=transitions, visited=n_visited)
    yield index, out


def _decide_task(job, index, records):
    """Level ``job.level + 1`` of this partition, a job of its own: decided on (fingerprint, tag) records.

    The smallest tag of each fingerprint the partition has not visited is a new state, and its tag is its key
    (``parent number << 16 | action``): the level's Parquet file, key file and fingerprint file (not under
    symmetry: its fingerprints are the canonical ones) are written here, and each partition that routed winners
    gets their keys back with their places among this partition's (``level-L-{winners,winner-places}-from-P.npy``
    in its directory, in key order) to materialize them; a record per such partition is the barrier before it
    does.
    """
    stages = _Stages()
    _worker_search(job)
    stages.lap("worker setup")
    inputs = _Inputs(records, 2, stages, joined=True)
    fp, tag, source = inputs.records
    inputs.records = None                       # held once, here
    win, n_visited = _new_states(job, index, fp, tag, stages)
    keys, source = tag[win], source[win]
    _write_level(job.workdir, job.level + 1, index, fp[win], keys)
    stages.lap("reduce: parquet write")
    filed = _save_array(job.workdir, job.level + 1, index, "keys", keys)
    if not job.symmetry:                        # the new states' own fingerprints, for the next level's map
        filed += _save_array(job.workdir, job.level + 1, index, "fps", fp[win])
    # by parent partition, each in key order (a stable radix sort of small integers)
    by = np.argsort(source.astype(np.int16) if job.partitions < 1 << 15 else source, kind="stable")
    sent = np.bincount(source, minlength=job.partitions)
    parents = np.flatnonzero(sent)
    for q, mine in zip(parents.tolist(), np.split(by, np.cumsum(sent[parents])[:-1])):   # mine: places in key order
        filed += _save_array(job.workdir, job.level + 1, q, f"winners-from-{index:05d}", keys[mine])
        filed += _save_array(job.workdir, job.level + 1, q, f"winner-places-from-{index:05d}", mine)
    stages.lap("reduce: winner files")
    _maybe_fail(job, "reduce", index)
    n_level, transitions = inputs.numbered
    _report(job, (job.level, index), stages, inputs, count=int(keys.size), violations={},
            transitions=transitions, visited=n_visited, filed=filed)
    for q in parents.tolist():
        yield q, index


def _materialize_task(job, index, records):
    """The rows of the winners this partition is the parent of, materialized from its rows of level
    ``job.level`` (the winning action on the parent), checked against the pending invariants and written to each
    owner as a piece of its level ``job.level + 1`` (``level-L-{rows,places}-from-Q.npy``, the places being
    the states' among the owner's, in key order; under symmetry their own fingerprints too, ``fps-from-Q``).

    A piece holds its states by block of their parents (this partition's share of level ``job.level``: its
    frontier file, or its pieces), in key order within a block, and its rows column-major (saved as the transpose
    of a state-per-row array, ``_PieceFile``): the compiled kernels (model/c_kernels.py ``build``) make a block's
    successors for an owner from its columns, their parents ascending, in the piece's pages, and the next level's
    map expands a piece without transposing it.
    Without the compiled kernels the winners are made by runs of equal actions (``Search.apply``) and put in the
    same order: the files are the same either way.
    Records: the partition's record of level ``job.level`` (cached) and the owners that sent winners; out: a
    record per piece."""
    part, owners = None, []
    for _, v in records:
        if isinstance(v, _Part):
            part = v
        else:
            owners.append(v)
    owners.sort()
    stages = _Stages()
    spec, search, _ = _worker_search(job)
    from isrcheck.checker.spark.spark_kernels import winners_by_block
    stages.lap("worker setup")
    violations, filed = {}, 0
    if owners:
        lists = [np.load(_frontier_path(job.workdir, job.level + 1, index, f"winners-from-{p:05d}"))
                 for p in owners]
        keys = np.concatenate(lists)
        places = np.concatenate([np.load(_frontier_path(job.workdir, job.level + 1, index,
                                                        f"winner-places-from-{p:05d}")) for p in owners])
        blocks, _ = _frontier_blocks(job.workdir, job.level, index, part, mapped=search.compiled is not None)
        ranks = np.load(_frontier_path(job.workdir, job.level, index, "ranks"))
        stages.lap("materialize: files")
        # the parents' indices into the blocks put end to end, by parent block, then owner, each run in key order
        block_end = np.cumsum([b[0].shape[0] for b in blocks])
        into = None
        if blocks[0][2] is not None:            # pieces: the parents' places in key order -> indices into them
            into = np.empty(ranks.size, dtype=np.int64)
            for (_, _, their), end in zip(blocks, block_end):
                into[their] = np.arange(end - their.size, end)
        found = winners_by_block(keys, np.array([w.size for w in lists], dtype=np.int64), part.level_start, ranks,
                                 into, block_end, ACTION_BITS)
        if found is None:
            raise RuntimeError(f"internal error: partition {index} is not the parent of its winners of level "
                               f"{job.level + 1}")
        at, order, bounds = found
        keys, places = keys[order], places[order]
        actions = (keys & ACTION_MASK).astype(np.uint16)
        stages.lap("materialize: parents")
        n_owners, runs = len(owners), np.diff(bounds).reshape(len(blocks), len(owners))
        start = np.cumsum(runs, axis=0) - runs          # where a block's run starts in its owner's piece
        pieces = [_PieceFile(job.workdir, job.level + 1, p, f"rows-from-{index:05d}", int(runs[:, o].sum()),
                             len(spec.layout.names), index) for o, p in enumerate(owners)]
        (_built if search.compiled is not None else _applied)(search, blocks, block_end, bounds, at, actions,
                                                              [piece.columns for piece in pieces], start)
        stages.lap("materialize: apply")
        for name in job.pending:
            found = [int(keys[bounds[b * n_owners + o] + c]) for b, o, c in (
                (b, o, _first_violation(search, spec, name, pieces[o].columns[:, start[b, o]:start[b, o] + k]))
                for (b, o), k in np.ndenumerate(runs) if k) if c >= 0]
            if found:
                violations[name] = min(found)
        stages.lap("materialize: invariants")
        for o, p in enumerate(owners):
            if job.symmetry:                    # their own fingerprints (the owner has the canonical ones)
                filed += _save_array(job.workdir, job.level + 1, p, f"fps-from-{index:05d}",
                                     search.fingerprint.full(pieces[o].columns))
            filed += pieces[o].close()
            filed += _save_array(job.workdir, job.level + 1, p, f"places-from-{index:05d}",
                                 np.concatenate([places[bounds[b * n_owners + o]:bounds[b * n_owners + o + 1]]
                                                 for b in range(len(blocks))]))
        stages.lap("materialize: piece files")
    _maybe_fail(job, "materialize", index)
    _report(job, (job.level, "materialize", index), stages, violations=violations, successor_file_bytes=filed)
    for p in owners:
        yield p, index


def _built(search, blocks, block_end, bounds, at, actions, pieces, start):
    """The successors of each run (``bounds``: by block, then owner) made by the compiled kernels from their
    parents' columns (``at``: the parents' indices into the blocks put end to end, ascending in a run), straight
    into their owner's piece (``pieces[owner]``, width x n, from its column ``start[block, owner]``)."""
    n_owners = len(pieces)
    for b, (rows, _, _) in enumerate(blocks):
        if bounds[b * n_owners] == bounds[(b + 1) * n_owners]:
            continue
        source, first = _columns(rows), block_end[b] - rows.shape[0]
        for o, piece in enumerate(pieces):
            lo, hi = bounds[b * n_owners + o], bounds[b * n_owners + o + 1]
            if lo < hi:
                search.compiled.build(source, np.ones(hi - lo, dtype=np.uint8), None, None,
                                      (at[lo:hi] - first).astype(np.uint32), actions[lo:hi], hi - lo,
                                      out=piece[:, start[b, o]:start[b, o] + hi - lo])


def _applied(search, blocks, block_end, bounds, at, actions, pieces, start):
    """``_built`` without the compiled kernels: the parents' rows gathered by runs of equal actions, one kernel call
    per run (``Search.apply``), then put in order into the pieces."""
    n_owners = len(pieces)
    by_action = np.argsort(actions, kind="stable")          # a radix sort of 16-bit values
    picks = at[by_action]
    batch = _transpose(_gather_rows([b[0] for b in blocks], picks))
    search.apply(batch, _gather_rows([b[1] for b in blocks], picks), actions[by_action])
    made = np.empty_like(batch)
    made[:, by_action] = batch
    for b in range(len(blocks)):
        for o, piece in enumerate(pieces):
            lo, hi = bounds[b * n_owners + o], bounds[b * n_owners + o + 1]
            piece[:, start[b, o]:start[b, o] + hi - lo] = made[:, lo:hi]


def _first_violation(search, spec, name, columns):
    """The first of ``columns`` (a batch, column-major) breaking invariant ``name``, or -1."""
    if columns is None or not columns.shape[1]:
        return -1
    if search.compiled is not None:
        return search.compiled.first_violation(name, columns)
    kernels = backends.batch(spec) if search.native is None else search.native
    bad = np.flatnonzero(~kernels.holds(spec.invariants[name], np.ascontiguousarray(columns)))
    return int(bad[0]) if bad.size else -1


def _collect_task(job, index, records):
    """Partition ``index``'s record of level ``job.level + 1``: the partitions that hold its pieces."""
    yield index, _Part(None, None, None, job.level_start + job.level_size, tuple(sorted(q for _, q in records)),
                       piece_fps=job.symmetry)


# ---------------------------------------------------------------------------------------------
# the Spark context
# ---------------------------------------------------------------------------------------------
_QUIET_LOG4J = """\
logger.repl.name = org.apache.spark.repl.Main
logger.repl.level = error
logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer
logger.gateway.level = error
# a task's error ("Exception in task", "Task N in stage S failed K times; aborting job"): the job's exception
# carries it, and the run says it (in one line when it is the user's to fix)
logger.tasks.name = org.apache.spark.scheduler.TaskSetManager
logger.tasks.level = off
logger.executor.name = org.apache.spark.executor.Executor
logger.executor.level = off
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""


#: what the JVM prints on stderr as it starts (Spark 4 resolves an incubator module): nothing for the user
_JVM_START_WARNING = b"WARNING: Using incubator modules: jdk.incubator.vector\n"
#: set once a search is over or its jobs are cancelled (a stop request, the time limit): what the JVM and its Python
#: workers print as their tasks are cancelled and the context stops (stack traces of dropped connections, a worker's
#: broken pipe) is not for the user, whose run ends with its report or one line
_JVM_DONE = threading.Event()


def _relay(stream):
    """Copy the JVM's stderr (its log, its Python workers' output in local mode) to ours, but for
    ``_JVM_START_WARNING`` and what comes once ``_JVM_DONE`` is set."""
    for line in iter(stream.readline, b""):
        if line != _JVM_START_WARNING and not _JVM_DONE.is_set():
            sys.stderr.write(line.decode(errors="replace"))      # stderr is line-buffered: written at once


class _Stopped(Exception):
    """A stop request came before the search began."""


class SparkSetupError(Exception):
    """The Spark engine cannot run as asked: a master URL Spark does not take, a SparkContext that did not start,
    or a workdir the executors do not share. One line, for the user (exit 2)."""


#: the master URLs Spark takes (``SparkSubmit`` refuses any other scheme, ``SparkContext`` other ``local`` forms)
MASTER = re.compile(r"local(\[(\*|[1-9]\d*)(,[1-9]\d*)?\])?|local-cluster\[[1-9]\d*,[1-9]\d*,[1-9]\d*\]|yarn"
                    r"|spark://[^\s/]+|k8s://\S+")


def check_master(master):
    """SparkSetupError unless ``master`` is a master URL Spark takes."""
    if not MASTER.fullmatch(master.replace(" ", "")):
        raise SparkSetupError(f"--master {master!r}: not a Spark master URL (local, local[N], local[*], "
                              f"local-cluster[N,CORES,MB], spark://HOST:PORT, yarn, k8s://URL)")


def check_options(master, workdir):
    """SparkSetupError for a master URL Spark does not take, or for a master whose executors may run on other
    machines without a ``workdir`` (the run's files are there: it must be storage they all share)."""
    check_master(master)
    if workdir is None and not on_one_machine(master):
        raise SparkSetupError(f"--master {master}: executors on other machines need --workdir DIR (or --checkpoint "
                              f"DIR) on storage that the driver and every executor share")


def on_one_machine(master):
    """Whether every executor of ``master`` runs on this machine (a ``local`` or ``local-cluster`` master)."""
    return master.replace(" ", "").startswith("local")


def _local_cores(master):
    m = re.fullmatch(r"local(?:\[(\*|\d+)(?:\s*,\s*\d+)?\])?", master.strip())
    if not m:
        return None
    if m.group(1) is None:
        return 1
    return (os.cpu_count() or 1) if m.group(1) == "*" else int(m.group(1))


def spark_context(master="local[*]", partitions=None, conf=None, log_dir=None):
    """The active SparkContext, or a new quiet one: (context, whether this call created it).

    A new context gets the UI and console progress off, error-level logging, the
    driver JVM on its C1 JIT only, uncompressed shuffle files on a ``local`` master,
    and ``spark.default.parallelism`` / ``spark.sql.shuffle.partitions`` set to the
    partition count (or the local core count); ``conf`` adds or overrides settings.
    The driver JVM's logging settings go to a private file in ``log_dir`` (default: the temporary directory),
    removed once the JVM has read it. SparkSetupError for a master Spark does not take or a context that does
    not start.
    """
    from pyspark import SparkConf, SparkContext
    sc = SparkContext._active_spark_context
    if sc is not None:
        return sc, False
    check_master(master)
    c = SparkConf().setMaster(master).setAppName("isrcheck")
    parallelism = partitions or _local_cores(master)
    settings = {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false"}
    if on_one_machine(master):
        settings["spark.shuffle.compress"] = "false"     # one machine: compressing shuffle files only costs CPU
    if parallelism:
        settings["spark.default.parallelism"] = str(parallelism)
        settings["spark.sql.shuffle.partitions"] = str(parallelism)
    for name, value in _WORKER_MALLOC.items():
        settings[f"spark.executorEnv.{name}"] = value
    settings.update(conf or {})
    log4j = None
    if "spark.driver.extraJavaOptions" not in settings:
        # quiet logging; the C1 JIT only: the driver JVM mostly moves bytes, and C2 compilation
        # cost about a third of its CPU time in a local run
        fd, log4j = tempfile.mkstemp(prefix=".isrcheck-log4j2-", suffix=".properties", dir=log_dir)
        with os.fdopen(fd, "w") as fh:
            fh.write(_QUIET_LOG4J)
        settings["spark.driver.extraJavaOptions"] = f"-XX:TieredStopAtLevel=1 -Dlog4j.configurationFile=file:{log4j}"
    for k, v in settings.items():
        c.set(k, str(v))
    try:
        # the JVM (and the Python workers it starts) in a session of its own: a signal to isrcheck's process group
        # (a terminal's Ctrl-C, a supervisor's SIGTERM) reaches isrcheck alone, which stops the search and the
        # context in order; the JVM still ends with isrcheck, when its stdin closes
        from pyspark.java_gateway import launch_gateway
        _JVM_DONE.clear()
        gateway = SparkContext._gateway
        if gateway is None:
            read, write = os.pipe()         # relayed from before the JVM starts: it never waits on a full pipe
            threading.Thread(target=_relay, args=(os.fdopen(read, "rb"),), daemon=True).start()
            try:
                gateway = launch_gateway(c, popen_kwargs={"start_new_session": True, "stderr": write})
            finally:
                os.close(write)
        sc = SparkContext(conf=c, gateway=gateway)
    except Exception as e:                              # noqa: BLE001 - whatever the JVM's start raised
        raise SparkSetupError(f"--master {master}: Spark did not start ({str(e).strip().splitlines()[0]})") from None
    finally:
        if log4j is not None:
            os.remove(log4j)
    sc.setLogLevel("ERROR")
    if "PYSPARK_PYTHON" not in os.environ:
        # the executors' Python workers run this interpreter (it has isrcheck), not whatever python3 is
        # on their PATH; spark.pyspark.python or PYSPARK_PYTHON name another one (a cluster's own path)
        sc.pythonExec = settings.get("spark.pyspark.python", sys.executable)
    return sc, True


# The Python workers' allocator (glibc's tunables): every array from the worker's heap, which is never trimmed, so
# that the memory a task frees serves the worker's next task. Otherwise a large array gets memory of its own from
# the system and gives it back when freed, and the next task's is faulted in and cleared again page by page (on a
# virtual machine that returns free memory to its host, at about a nanosecond a byte). A worker then holds what its
# largest task needed until it ends.
_WORKER_MALLOC = {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": str(1 << 62)}


# ---------------------------------------------------------------------------------------------
# the search
# ---------------------------------------------------------------------------------------------
def spark_search(spec, invariants, master="local[*]", partitions=None, symmetry=False, budget=UNLIMITED,
                 progress=None, workdir=None, on_violation=None, *, chunk=None,
                 checkpoint_every=CHECKPOINT_EVERY, batch_states=BATCH_STATES, conf=None, snapshot=None, resume=False,
                 snapshot_seconds=60.0, kernels="auto", decide_from=DECIDE_FROM, _fault=None):
    """Exhaustive search of the named invariants on Spark; the same Result as checker.exhaustive.bfs.search.

    ``budget``: its max_states, max_depth and seconds, as checker.exhaustive.bfs.search reads them.
    ``master`` (and ``conf``, extra Spark settings) are used only when no
    SparkContext is active: an active one is reused and left running, one
    created here is stopped at the end. ``partitions`` defaults to the context's
    default parallelism. ``workdir`` receives the per-level Parquet files and the
    checkpoints (a temporary directory, removed at the end, when not given).
    ``progress`` is called after each level with depth, frontier, distinct and
    seconds like the local engine's, plus level_seconds when it accepts it;
    ``on_violation(violation)`` as soon as the level holding a violation is done.
    A stop request (:mod:`checker.engine.stop`) cancels the running job and ends the
    search like the time limit.
    ``chunk`` is the local engine's chunk whose max_states cut is reproduced
    (its default when None) and the map tasks' expansion batch.
    ``batch_states``: levels are chained into one job while the predicted number
    of their states stays below it (0: one level per job). ``decide_from``: a job of one level whose level has
    this many states or more decides its new states on (fingerprint, tag) records and materializes only them,
    in three stages; a smaller one routes every successor with its row. ``checkpoint_every``:
    levels between reliable checkpoints of the level RDD (0: none). ``_fault``:
    test hook, ``(stage, level, partition)`` triples with stage "map", "reduce" (which decides a level decided
    on records) or "materialize": those tasks' first attempts fail (after writing their files).
    ``snapshot``: a directory that is the run's workdir, kept, where the driver's
    state is snapshotted after a job once ``snapshot_seconds`` have passed since
    the last (:mod:`checker.spark.spark_snapshot`); with ``resume`` the search goes on
    from the snapshot there (CheckpointError if none, or another search's).
    ``kernels``: the local engine's policy ("auto", "native", "numpy": :class:`checker.exhaustive.bfs.Search`), applied in
    the executors to each level's size.
    Every task checks that the workdir it sees is this run's (a file the driver writes there): a workdir the
    executors do not share ends the search with SparkSetupError.
    """
    from pyspark import StorageLevel
    from pyspark.core.rdd import RDD

    start = time.perf_counter()
    max_states, max_depth, time_limit = budget.max_states, budget.max_depth, budget.seconds
    chunk = chunk or local_chunk()
    search = Search(spec, invariants, chunk=chunk, kernels=kernels)     # checks the invariant names first
    saved = spark_snapshot.manifest(snapshot, spec, invariants, symmetry, chunk) if resume else None
    own_workdir = workdir is None and snapshot is None
    workdir = os.path.abspath(snapshot or workdir or tempfile.mkdtemp(prefix="isrcheck-spark-"))
    sym = Symmetry(spec.layout, search.fingerprint) if symmetry else None
    init = backends.scalar(spec).initial_row()[:, None]
    init_fp = search.fingerprint.full(init)
    init_key_fp = init_fp if sym is None else sym.canonical(init)
    violations, pending = {}, []
    for inv in search.invariants:
        if backends.batch(spec).holds(inv, init)[0]:
            pending.append(inv.name)
        else:
            violations[inv.name] = Violation(inv.name, 0, 1)
    level_start, level_sizes = [0], [1]
    fired = np.zeros(len(spec.actions), dtype=bool)
    transitions, depth, budget_hit, complete = 0, 1, None, False
    moved = []                  # per level expanded: new states, bytes through the shuffle and the JVM boundary
    visited_states = 1
    level_rdd, sc, created = None, None, False
    try:
        try:
            sc, created = spark_context(master, partitions, conf, log_dir=workdir)
        except SparkSetupError:
            if stopping.reason():                       # a signal to the process group ended the JVM's start
                raise _Stopped from None
            raise
        _JVM_DONE.clear()                               # a reused context: an earlier search's cancel set it
        if stopping.reason():                           # asked to stop while Spark was starting
            raise _Stopped
        if created:
            stopping.reinstall()          # SparkContext took SIGINT for itself
        P = int(partitions or sc.defaultParallelism)
        state, digests = (None, None) if saved is None else spark_snapshot.state(saved, workdir, P)
        # an earlier run's files would be read as this one's (a resumed run's own are its past, but for its
        # visited tables, a cache written in place: rebuilt from the Parquet files, they cannot be torn)
        for sub in ("checkpoints", "visited") if resume else ("levels", "visited", "checkpoints", "frontier",
                                                     "frontier-files"):
            shutil.rmtree(os.path.join(workdir, sub), ignore_errors=True)
        os.makedirs(os.path.join(workdir, "levels"), exist_ok=True)
        run = _claim(workdir)
        if checkpoint_every:
            sc.setCheckpointDir(os.path.join(workdir, "checkpoints"))
        report = _progress_reporter(progress)

        owner0 = int(init_key_fp[0] % np.uint64(P))
        empty_rows = np.zeros((0, spec.layout.width), dtype=np.int8)
        empty = np.zeros(0, dtype=np.uint64)
        records = [(p, _Part(init.T.copy(), init_fp.copy(), np.zeros(1, np.uint64), 0)
                    if p == owner0 else _Part(empty_rows, empty, empty, 0)) for p in range(P)]
        summaries = sc.accumulator({}, _Summaries())
        level_rdd = sc.parallelize(records, P).partitionBy(P, _ident)
        if state is not None:
            depth, level_start, level_sizes = state["depth"], state["level_start"], state["level_sizes"]
            transitions, visited_states, moved = state["transitions"], state["visited_states"], state["moved"]
            fired[:] = state["fired"]
            pending = state["pending"]
            violations = {n: Violation(n, sid, lv) for n, (sid, lv) in state["violations"].items()}
            checks = [(d, state["level_start"][-1], spec.layout.lo, spec.layout.hi) for d in digests]
            level_rdd = level_rdd.mapPartitionsWithIndex(_bind(_load_part, (workdir, depth, run, checks)),
                                                         preservesPartitioning=True)
        level_rdd.persist(StorageLevel.MEMORY_AND_DISK)
        last_snapshot = time.perf_counter()
        since_checkpoint = 0
        t_level = time.perf_counter()
        spec_class, bounds = type(spec), tuple(sorted(spec.bounds.items()))
        _ship_spec_class(spec_class)
        stop = False
        while not stop and level_sizes[-1] and pending:
            if max_depth is not None and depth >= max_depth:
                budget_hit = f"max depth {max_depth}"
                break
            n_levels = _batch_size(level_sizes, batch_states, None if max_depth is None else max_depth - depth)
            if level_start[-1] + level_sizes[-1] + batch_states >= CHAIN_BELOW:
                n_levels = 1                        # tags of parent numbers, not keys (which could overflow)
            # a large level is decided on (fingerprint, tag) records and its winners materialized where their
            # parents are (three stages); smaller ones route every successor with its row (one stage a level)
            decided = n_levels == 1 and level_sizes[-1] >= decide_from
            jobs = [_Job(spec_class=spec_class, bounds=bounds, symmetry=bool(symmetry), chunk=chunk,
                         kernels=kernels, level_size=level_sizes[-1],
                         partitions=P, level=level, pending=tuple(pending), workdir=workdir,
                         init_fp=int(init_key_fp[0]), owner0=owner0, summaries=summaries, fault=_fault,
                         level_start=level_start[-1], run=run, records_only=decided,
                         numbered=level == depth)         # the job's first level: its Parquet files are complete
                    for level in range(depth, depth + n_levels)]
            if decided:
                job = jobs[0]
                winners = level_rdd.mapPartitionsWithIndex(_bind(_map_task, job)).partitionBy(P, _ident) \
                    .mapPartitionsWithIndex(_bind(_decide_task, job)).partitionBy(P, _ident)
                # the level and the winners share the partitioner: their union is partition-aligned, and the
                # level's records stay in the cache
                both = RDD(level_rdd._jrdd.union(winners._jrdd), sc, winners._jrdd_deserializer)
                both.partitioner = winners.partitioner
                last = both.mapPartitionsWithIndex(_bind(_materialize_task, job)).partitionBy(P, _ident)
                # the job ends with the pieces' paths in the shuffle (its last stage counts them in the JVM): the
                # next level's records are made by the next job's first stage
                rdd = last.mapPartitionsWithIndex(_bind(_collect_task, job), preservesPartitioning=True)
            else:
                # chained small levels: each stage reduces and expands
                both = level_rdd.mapPartitionsWithIndex(_bind(_carry_map_task, jobs[0])).partitionBy(P, _ident)
                for prev_job, job in zip(jobs, jobs[1:]):
                    both = both.mapPartitionsWithIndex(_bind(_fused_task, (prev_job, job))).partitionBy(P, _ident)
                rdd = last = both.mapPartitionsWithIndex(_bind(_reduce_task, jobs[-1]), preservesPartitioning=True)
            rdd.persist(StorageLevel.MEMORY_AND_DISK)
            since_checkpoint += n_levels
            # a large level is checkpointed at once (its records are a few bytes): the frontier files of the levels
            # before it are then dropped; smaller ones keep those of up to ``checkpoint_every`` levels
            if checkpoint_every and (level_sizes[-1] >= CHECKPOINT_FROM or since_checkpoint >= checkpoint_every):
                rdd.checkpoint()
                since_checkpoint = 0
            first_stage = sc._jsc.sc().dagScheduler().nextStageId()
            finished = _run_job(sc, last, start, time_limit)
            # a recomputation starts at the newest level checkpointed: this job's, or the level it expanded (made by
            # this job's first stage)
            for done_rdd, done_level in ((rdd, jobs[-1].level + 1), (level_rdd, depth)):
                if finished and done_rdd.isCheckpointed():
                    _drop_frontiers(workdir, P, done_level)
                    break
            shuffled = _quietly(lambda: _shuffle_write_bytes(sc, first_stage, n_levels), [None] * n_levels)
            if not finished:
                budget_hit = stopping.reason() or f"time limit {time_limit:g}s"
                stop = True
            first = depth
            for level in range(first, first + n_levels):
                depth = level                              # the level being expanded, as in the local loop
                done = [summaries.value.pop((level, p), None) for p in range(P)]
                tasks = done + [summaries.value.pop((level, "materialize", p), None)
                                for p in range(P if decided else 0)]
                if any(s is None for s in tasks):          # cancelled before this level finished
                    stop = True
                    break
                ls, n_frontier = level_start[-1], level_sizes[-1]
                next_id = ls + n_frontier
                n_new = sum(s["count"] for s in done)
                level_transitions = sum(s["transitions"] for s in done)
                for s in done:
                    fired |= s["fired"]
                visited_states = sum(s["visited"] for s in done)
                used = {s["kernels"] for s in done}
                moved.append(dict(level=level, new_states=n_new, shuffle_write_bytes=shuffled[level - first],
                                  python_jvm_bytes=sum(s["python_jvm_bytes"] for s in done),
                                  successor_file_bytes=sum(s["successor_file_bytes"] for s in tasks),
                                  stage_cpu_seconds=_sum_stages(s["stage_cpu_seconds"] for s in tasks),
                                  kernels=used.pop() if len(used) == 1 else "mixed"))
                new_keys, cut, level_budget = None, n_new, None
                if n_new and max_states is not None and next_id + n_new >= max_states:
                    # the local engine stops after the first chunk of parents that reaches max_states
                    new_keys = _read_level_keys(workdir, level + 1, merged=False)
                    parents = (np.concatenate(new_keys) >> np.uint64(ACTION_BITS)).astype(np.int64)
                    cum = np.cumsum(np.bincount((parents - ls) // chunk_step(n_frontier, chunk),
                                                minlength=len(level_transitions)))
                    c = int(np.searchsorted(cum, max(max_states - next_id, 1)))
                    cut = int(cum[c])
                    level_transitions = level_transitions[:c + 1]
                    level_budget = f"max states {max_states}"
                transitions += int(np.sum(level_transitions))
                for name in list(pending):
                    found = [s["violations"][name] for s in tasks if name in s.get("violations", ())]
                    if found:
                        if new_keys is None:
                            new_keys = _read_level_keys(workdir, level + 1, merged=False)
                        rank = int(_ranks(new_keys, np.array([min(found)], dtype=np.uint64))[0])
                        if rank < cut:
                            violations[name] = Violation(name, next_id + rank, level + 1)
                            pending.remove(name)
                if not n_new:
                    complete = budget_hit is None
                    stop = True
                    break
                level_start.append(next_id)
                level_sizes.append(cut)
                for v in violations.values():
                    if v.level == level + 1:
                        v.steps = _trace(search, workdir, v, level_start)
                        if on_violation is not None:
                            on_violation(v)
                if report is not None:
                    now = time.perf_counter()
                    report(depth=level, frontier=n_frontier, distinct=next_id + cut, seconds=now - start,
                           level_seconds=(now - t_level) / n_levels)
                if level_budget:
                    budget_hit = level_budget
                    stop = True
                    break
                depth = level + 1
                if not pending:
                    stop = True
                    break
            else:
                old, level_rdd = level_rdd, rdd
                _quietly(lambda: old.unpersist(blocking=False))
                if stopping.reason() or (time_limit is not None and time.perf_counter() - start > time_limit):
                    # as the local engine: the level during which the time ran out is kept, not counted
                    budget_hit = stopping.reason() or f"time limit {time_limit:g}s"
                    depth -= 1
                    stop = True
                elif not finished:
                    depth -= 1
                elif snapshot is not None and time.perf_counter() - last_snapshot >= snapshot_seconds:
                    saving = level_rdd.mapPartitionsWithIndex(_bind(_save_part, (workdir, depth, run,
                                                                                 spec.layout.width)))
                    if _quietly(lambda: _count(saving) or True, False):     # not when stopped meanwhile
                        spark_snapshot.write(workdir, spec, invariants, symmetry, P, chunk, dict(
                            depth=depth, level_start=level_start, level_sizes=level_sizes, transitions=transitions,
                            visited_states=visited_states, moved=moved, fired=fired.tolist(), pending=pending,
                            violations={n: [v.state_id, v.level] for n, v in violations.items()}))
                    last_snapshot = time.perf_counter()
            if level_rdd is not rdd:
                _quietly(lambda: rdd.unpersist(blocking=False))
            t_level = time.perf_counter()
            if stop:
                break
        if budget_hit is None and not complete and stopping.reason():
            budget_hit = stopping.reason()                # a job that failed once the stop was requested
        _trace_all(search, workdir, violations, level_start)
    except _Stopped:
        budget_hit = stopping.reason()
        _trace_all(search, workdir, violations, level_start)          # the initial state's, if any
    finally:
        if level_rdd is not None:
            _quietly(lambda: level_rdd.unpersist(blocking=False))
        if created:
            _JVM_DONE.set()
            _quietly(sc.stop)
        if own_workdir:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            _release(workdir)

    distinct = sum(level_sizes)
    never = sorted({a.name for a in spec.actions} - {a.name for a in spec.actions if fired[a.id]})
    return Result(
        invariants=[i.name for i in search.invariants], violations=violations,
        distinct_states=distinct, transitions=transitions, depth=depth,
        seconds=time.perf_counter() - start,
        peak_memory_bytes=stopping.peak_bytes(),
        retained_bytes=8 * visited_states + 10 * distinct,
        complete=complete, budget_hit=budget_hit, never_fired=never if complete else [],
        fingerprint_bits=search.fingerprint.bits,
        renamings=sym.renamings if sym else 1, engine="spark", levels=moved)


def _sum_stages(dicts):
    """Stage CPU seconds of several tasks, added up by stage (rounded to the millisecond)."""
    total = {}
    for d in dicts:
        for name, seconds in d.items():
            total[name] = total.get(name, 0.0) + seconds
    return {name: round(seconds, 3) for name, seconds in sorted(total.items())}


def _batch_size(level_sizes, batch_states, depth_left):
    """How many levels the next job chains: several while the levels (predicted by the last growth) are small,
    else one."""
    n = level_sizes[-1]
    growth = max(n / level_sizes[-2], 1.0) if len(level_sizes) > 1 else 4.0
    count, total = 1, n * growth
    while count < MAX_BATCH and total + n * growth ** (count + 1) <= batch_states:
        count += 1
        total += n * growth ** count
    return count if depth_left is None else max(1, min(count, depth_left))


def _progress_reporter(progress):
    if progress is None:
        return None
    try:
        params = inspect.signature(progress).parameters.values()
        extra = any(p.kind == p.VAR_KEYWORD or p.name == "level_seconds" for p in params)
    except (TypeError, ValueError):
        extra = False
    if extra:
        return progress
    return lambda level_seconds, **kw: progress(**kw)


def _run_job(sc, rdd, start, time_limit):
    """Compute and cache the chained levels (a JVM-side count: no Python pass over the records).

    False if the job was cancelled: at the time limit, or by a stop request (checker.engine.stop), which
    cancels every job of the context (the process is stopping), or failed once a stop was requested (a signal
    to the whole process group also ends the JVM and the Python workers).
    """
    group = None if time_limit is None else f"isrcheck-{uuid.uuid4().hex}"
    cancelled = threading.Event()

    def cancel():
        # on a thread of its own: a stop request can come from a signal handler on the main thread, which is
        # inside this job's py4j call, and a py4j call made there would re-enter its connection
        cancelled.set()
        _JVM_DONE.set()
        threading.Thread(target=_quietly, args=(sc.cancelAllJobs if group is None else
                                                lambda: sc.cancelJobGroup(group),), daemon=True).start()

    if group is not None:
        timer = threading.Timer(max(time_limit - (time.perf_counter() - start), 0.0), cancel)
        saved = {k: sc.getLocalProperty(k) for k in ("spark.jobGroup.id", "spark.job.description",
                                                     "spark.job.interruptOnCancel")}
        sc.setJobGroup(group, "isrcheck levels", interruptOnCancel=False)
        timer.start()
    try:
        with stopping.on_stop(cancel):
            _count(rdd)
        return True
    except SparkSetupError:
        raise
    except Exception:
        if cancelled.is_set() or stopping.reason():
            return False
        raise
    finally:
        if group is not None:
            timer.cancel()
            _quietly(lambda: [sc.setLocalProperty(k, v) for k, v in saved.items()])


def _quietly(call, default=None):
    """``call()``, or ``default`` when it fails once a stop was requested (the JVM may be gone: a signal to the
    process group ends it too). Without a stop request a failure is raised."""
    try:
        return call()
    except Exception:                                 # noqa: BLE001 - py4j's errors, whatever the JVM's state
        if stopping.reason():
            return default
        raise


def _count(rdd):
    """Run a job: a JVM-side count of ``rdd`` (no Python pass over its records). SparkSetupError when its tasks
    found that the executors do not share the workdir, CheckpointError when one refused a snapshot's file."""
    try:
        rdd._jrdd.count()
    except Exception as e:
        damaged = re.search(re.escape(spark_snapshot.DAMAGED) + r": ([^\n]*)", str(e))
        if damaged:
            raise CheckpointError(damaged.group(1)) from None
        if NOT_SHARED in str(e):
            host = re.search(re.escape(NOT_SHARED) + r" \(host ([^)]*)\)", str(e))
            raise SparkSetupError(
                f"--workdir: the executors do not share it with the driver (an executor on host "
                f"{host.group(1) if host else '?'} does not see this run's files there): give a directory on "
                f"storage that the driver and every executor mount at the same path") from None
        raise


def _save_part(where, index, records):
    """Snapshot task: write this partition's frontier (checker.spark.spark_snapshot). ``where``: (workdir, level, run,
    row width)."""
    workdir, level, run, width = where
    _check_workdir(workdir, run)
    for _, part in records:
        spark_snapshot.save_frontier(workdir, level, index, _frontier(workdir, level, index, part, width))
    return iter(())


def _load_part(where, index, records):
    """Resume task: this partition's frontier from its snapshot file, checked (``where``: workdir, level, run, and
    each partition's checks of its file: spark_snapshot.load_frontier), as its frontier files."""
    workdir, level, run, checks = where
    _check_workdir(workdir, run)
    for _ in records:
        pass
    part = _Part(*spark_snapshot.load_frontier(workdir, level, index, checks[index]))
    yield index, _save_frontier(workdir, level, index, part)


def _shuffle_write_bytes(sc, first_stage, n_levels):
    """Per level of the job just run, the bytes its stage wrote to the shuffle (Spark's shuffleWriteMetrics).

    The job's stages are the ids from ``first_stage`` on (this driver runs one job at
    a time). A job of one level: all its stages' (map, decide, materialize; the first job also shuffles the
    initial records). Chained levels: each level's map half is one stage writing a shuffle, in level order,
    then the last reduce, which writes none. None per level when that does not hold (a cancelled
    job).
    """
    jsc = sc._jsc.sc()
    try:
        jsc.listenerBus().waitUntilEmpty()            # the status store is fed asynchronously
    except Exception:                                 # noqa: BLE001 - an internal API: no figures rather than no run
        return [None] * n_levels
    store, written = jsc.statusStore(), []
    for sid in range(first_stage, jsc.dagScheduler().nextStageId()):
        try:
            stage = store.lastStageAttempt(sid)
        except Exception:                             # noqa: BLE001 - a stage without an attempt
            continue
        if stage.shuffleWriteBytes():
            written.append(int(stage.shuffleWriteBytes()))
    if n_levels == 1:
        return [sum(written)] if written else [None]
    return written[-n_levels:] if len(written) >= n_levels else [None] * n_levels


def _trace_all(search, workdir, violations, level_start):
    """Every violation's trace not yet made (``_trace``)."""
    for v in violations.values():
        if not v.steps:
            v.steps = _trace(search, workdir, v, level_start)


def _trace(search, workdir, violation, level_start):
    """Walk the Parquet files back from a violating state, then replay on the scalar backend."""
    parents, actions = {}, {}
    sid = violation.state_id
    level = violation.level            # 1-based; the files of level L hold its states' keys
    while level > 1:
        idx = level - 1
        k = sid - level_start[idx]
        key = int(_read_level_keys(workdir, level)[k])
        parent, action = key >> ACTION_BITS, key & int(ACTION_MASK)
        parents[idx] = {k: parent}
        actions[idx] = {k: action}
        sid = parent
        level -= 1
    return search.trace(violation.state_id, np.asarray(level_start), parents, actions)
