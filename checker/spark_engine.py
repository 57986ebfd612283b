"""Exhaustive breadth-first search on Spark: the local engine's search, partitioned by fingerprint.

``spark_search`` gives exactly the answers of :func:`checker.bfs.search`
(distinct states, transitions, depth, verdicts, the violating state's number and
the same shortest trace, ties broken the same way) for any number of partitions.

Data flow (RDD API, numpy batches as records, never one record per state)
-------------------------------------------------------------------------
Partition ``p`` owns the states whose (canonical) fingerprint is ``p`` modulo
the partition count. Between levels the search is one persisted RDD with one
record per partition, a :class:`_Part`: its visited set (a
:class:`checker.visited.VisitedSet`, sorted uint64 runs), and its share of the
newest level (rows, fingerprints, sort keys). Each BFS level is one Spark job
with one shuffle:

- map (one task per partition): expand the frontier batch chunk by chunk with
  the numpy backend (``Search.expand``), de-duplicate successors locally
  (keeping the smallest (parent id, action)), materialize their rows, and route
  them by fingerprint to the owning partition;
- reduce: the owning partition's previous record (read from the cache: the
  level RDD and the shuffled successors share one partitioner, so their union
  is partition-aligned and no visited set moves through the shuffle) plus every
  map task's successors: keep the smallest (parent id, action) per fingerprint,
  anti-join the visited set, merge the new fingerprints into it, check the
  pending invariants on the new rows, and write the level's
  (fingerprint, parent, action) to ``levels/level-NNNNN/part-PPPPP.parquet``,
  written to a temporary name and renamed into place, so a retried or
  speculative task rewrites the same file.

Nothing lives in executor-side globals except the spec (re-instantiated from
its class and bounds once per Python worker): a retried task reads its inputs
from the cache or the shuffle again and produces the same record. Levels are
persisted (memory and disk) and checkpointed every few levels (reliable
checkpoint under ``workdir/checkpoints``) so that lineage, task size and
recomputation after a lost executor stay bounded.

State numbering (what makes the answers identical)
--------------------------------------------------
The local engine numbers the states of a level in the order of their canonical
discovery ``(parent number, action instance)``, the smallest such pair among all
discoveries of the state in that level. Each state here carries that pair
packed into one uint64 sort key, ``parent << 16 | action``; keys are unique
within a level (a (parent, action) pair has one successor). A state's number is
then ``level start + its key's rank among all keys of its level``.
Partition ``p`` holds an arbitrary subset of the level (it is chosen by
fingerprint), so the rank is global: after each level's job the driver
collects each partition's sorted key array (8 bytes per state of that level,
transiently) and broadcasts the list to the next job; a map task numbers its
frontier as ``level start + sum over partitions of searchsorted(keys_q, key)``.
The driver also uses the keys to number the first violating state of each
invariant (each partition reports the smallest key violating it) and, for
``max_states``, to cut the level exactly where the local engine's chunked loop
stops. The alternative, range-partitioning each level by key for a second
shuffle, moves every row twice per level and adds a stage; the driver's share
here is one sorted uint64 array of the newest level, never the visited set.

Traces: the driver takes the violating state's (parent, action) from its key,
then for each earlier level reads that level's Parquet files, sorts their keys
and indexes them by rank, back to the initial state, and replays the path on
the scalar backend (``Search.trace``).

Budgets: ``max_depth`` and ``max_states`` stop where the local engine stops
(the level is cut at the same 32768-parent chunk boundary as its loop);
``time_limit`` is checked after each level, and a level still running at the
deadline is cancelled and left out.

Fault tolerance in local mode needs a master with retries, e.g. ``local[2,4]``
(``local[N]`` fails the job on the first task failure). On a cluster,
``workdir`` must be a path every executor and the driver can read and write.
"""
from __future__ import annotations

import inspect
import os
import re
import resource
import shutil
import tempfile
import threading
import time
import uuid

import numpy as np

from checker.bfs import Search, SearchResult, Violation
from checker.fingerprint import Symmetry

try:
    from pyspark.accumulators import AccumulatorParam
except ImportError:                      # pyspark missing: spark_search reports it when called
    AccumulatorParam = object

ACTION_BITS = 16
ACTION_MASK = np.uint64((1 << ACTION_BITS) - 1)
CHECKPOINT_EVERY = 8


def local_chunk():
    """The local engine's default chunk: its max_states granularity, which spark_search reproduces."""
    return inspect.signature(Search.__init__).parameters["chunk"].default


# ---------------------------------------------------------------------------------------------
# records and per-worker caches
# ---------------------------------------------------------------------------------------------
class _Part:
    """One partition's share of the search after a level: the single record of its RDD partition."""

    def __init__(self, visited, rows, fps, keys):
        self.visited = visited       # uint64, sorted: every owned (canonical) fingerprint seen so far
        self.rows = rows             # int8, width x n: owned states of the newest level, in key order
        self.fps = fps               # uint64 (n,): their full Zobrist fingerprints (delta base for expand)
        self.keys = keys             # uint64 (n,): sorted (parent id << 16 | action) of their discovery


class _Job:
    """What the tasks of one level need (pickled into the closure; the spec travels as class + bounds)."""

    def __init__(self, **kw):
        self.__dict__.update(kw)


_WORKER_CACHE = {}


def _worker_search(job):
    """The spec and a Search over it, built once per Python worker process."""
    key = (job.spec_class, job.bounds, job.symmetry, job.chunk)
    found = _WORKER_CACHE.get(key)
    if found is None:
        spec = job.spec_class(**dict(job.bounds))
        search = Search(spec, [], symmetry=False, chunk=job.chunk)
        sym = Symmetry(spec.layout, search.zobrist, spec.R) if job.symmetry else None
        found = _WORKER_CACHE[key] = (spec, search, sym)
    return found


def _ident(k):
    return k


def _first_per_fingerprint(fp):
    """Index of the first occurrence of each distinct fingerprint (in fingerprint order)."""
    if fp.size == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.argsort(fp)
    s = fp[order]
    starts = np.ones(s.size, dtype=bool)
    np.not_equal(s[1:], s[:-1], out=starts[1:])
    return np.minimum.reduceat(order, np.flatnonzero(starts))


def _ranks(key_lists, keys):
    """Rank of each key among the union of the sorted key arrays (keys are distinct across arrays)."""
    r = np.zeros(keys.size, dtype=np.int64)
    for k in key_lists:
        if k.size:
            r += np.searchsorted(k, keys)
    return r


def _maybe_fail(job, stage, index):
    """Test hook: fail the first attempt of one task (``_fault=(stage, level, partition)``)."""
    if job.fault is not None and job.fault == (stage, job.level, index):
        from pyspark import TaskContext
        ctx = TaskContext.get()
        if ctx is not None and ctx.attemptNumber() == 0:
            raise RuntimeError(f"injected failure: {stage} task {index} of level {job.level}, attempt 0")


# ---------------------------------------------------------------------------------------------
# the two halves of a level
# ---------------------------------------------------------------------------------------------
def _map_task(job, index, records):
    """Expand this partition's frontier; route locally de-duplicated successors to their owners."""
    spec, search, sym = _worker_search(job)
    P, chunk = job.partitions, job.chunk
    for _, part in records:
        transitions = np.zeros(job.n_chunks, dtype=np.int64)
        fired = np.zeros(len(spec.actions), dtype=bool)
        out_fp, out_key, out_rows = [], [], []
        n = part.keys.size
        if n:
            gids = job.level_start + (_ranks(_read_level_keys(job.workdir, job.level, merged=False), part.keys)
                                      if job.level > 1 else np.zeros(n, dtype=np.int64))
            for cs in range(0, n, chunk):
                batch = np.ascontiguousarray(part.rows[:, cs:cs + chunk])
                parts = search.expand(batch, part.fps[cs:cs + chunk])
                if not parts:
                    continue
                sizes = np.array([p[1].size for p in parts])
                fired[[p[0] for p in parts]] = True
                part_of = np.repeat(np.arange(len(parts)), sizes)
                pos = np.concatenate([np.arange(s) for s in sizes])
                parent = np.concatenate([p[1] for p in parts])
                action = np.concatenate([np.full(p[1].size, p[0], dtype=np.uint64) for p in parts])
                g = gids[cs + parent]
                transitions += np.bincount((g - job.level_start) // chunk, minlength=job.n_chunks)
                key = (g.astype(np.uint64) << np.uint64(ACTION_BITS)) | action
                if sym is None:
                    fp = np.concatenate([p[3] for p in parts])
                    succ = None
                else:
                    succ = Search.materialize(batch, parts, (part_of, pos))
                    fp = sym.canonical(succ)
                order = np.argsort(key)
                win = order[_first_per_fingerprint(fp[order])]
                out_fp.append(fp[win])
                out_key.append(key[win])
                out_rows.append(Search.materialize(batch, parts, (part_of[win], pos[win]))
                                if succ is None else succ[:, win])
        if out_fp:
            fp = np.concatenate(out_fp)
            key = np.concatenate(out_key)
            rows = np.concatenate(out_rows, axis=1)
            # across chunks the earlier chunk holds the smaller parent: keep each fingerprint's first
            first = _first_per_fingerprint(fp)
            owner = (fp[first] % np.uint64(P)).astype(np.int64)
            order = first[np.argsort(owner, kind="stable")]
            owner = np.sort(owner)
            cuts = np.searchsorted(owner, np.arange(P + 1))
            for q in range(P):
                sel = order[cuts[q]:cuts[q + 1]]
                if sel.size:
                    yield q, ("d", fp[sel], key[sel], np.ascontiguousarray(rows[:, sel]))
        _maybe_fail(job, "map", index)
        yield index, ("s", transitions, fired)


def _reduce_task(job, index, records):
    """Anti-join this partition's successors with its visited set; the new record of the partition."""
    spec, search, sym = _worker_search(job)
    prev, fps, keys, rows = None, [], [], []
    transitions = np.zeros(job.n_chunks, dtype=np.int64)
    fired = np.zeros(len(spec.actions), dtype=bool)
    for _, v in records:
        if isinstance(v, _Part):
            prev = v
        elif v[0] == "d":
            fps.append(v[1])
            keys.append(v[2])
            rows.append(v[3])
        else:
            transitions += v[1]
            fired |= v[2]
    visited = prev.visited
    width = spec.layout.width
    if fps:
        fp = np.concatenate(fps)
        key = np.concatenate(keys)
        allrows = np.concatenate(rows, axis=1)
        order = np.argsort(key)
        win = order[_first_per_fingerprint(fp[order])]     # smallest key per fingerprint, by fingerprint
        unique = fp[win]
        if visited.size:
            at = np.searchsorted(visited, unique)
            at[at == visited.size] = 0
            fresh = visited[at] != unique
        else:
            fresh = np.ones(unique.size, dtype=bool)
        win, unique = win[fresh], unique[fresh]
        visited = np.insert(visited, np.searchsorted(visited, unique), unique)
        win = win[np.argsort(key[win])]
        new_rows = np.ascontiguousarray(allrows[:, win])
        new_keys = key[win]
        new_fps = fp[win] if sym is None else search.zobrist.full(new_rows)
        new_key_fps = fp[win]
    else:
        new_rows = np.zeros((width, 0), dtype=np.int8)
        new_keys = np.zeros(0, dtype=np.uint64)
        new_fps = new_key_fps = np.zeros(0, dtype=np.uint64)
    violations = {}
    if new_keys.size:
        for name in job.pending:
            bad = np.flatnonzero(~spec.holds_batch(spec.invariants[name], new_rows))
            if bad.size:
                violations[name] = int(new_keys[bad[0]])
    _write_level(job, index, new_key_fps, new_keys)
    _maybe_fail(job, "reduce", index)
    job.summaries.add({(job.level, index): dict(
        count=int(new_keys.size), violations=violations, transitions=transitions, fired=fired,
        visited_states=int(visited.size))})
    yield index, _Part(visited, new_rows, new_fps, new_keys)


class _Summaries(AccumulatorParam):
    """Per-(level, partition) task summaries; merging is idempotent, so a recomputed task changes nothing."""

    def zero(self, value):
        return {}

    def addInPlace(self, a, b):
        a.update(b)
        return a


def _level_path(workdir, level, index=None):
    d = os.path.join(workdir, "levels", f"level-{level:05d}")
    return d if index is None else os.path.join(d, f"part-{index:05d}.parquet")


def _write_level(job, index, fps, keys):
    """The level's (fingerprint, parent, action) of this partition, in key order; atomic, deterministic."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    path = _level_path(job.workdir, job.level + 1, index)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    table = pa.table({"fingerprint": pa.array(fps, type=pa.uint64()),
                      "parent": pa.array(keys >> np.uint64(ACTION_BITS), type=pa.uint64()),
                      "action": pa.array((keys & ACTION_MASK).astype(np.uint16), type=pa.uint16())})
    tmp = f"{path}.tmp-{os.getpid()}-{uuid.uuid4().hex}"
    pq.write_table(table, tmp)
    os.replace(tmp, path)


def _read_level_keys(workdir, level, merged=True):
    """Every key of a level from its Parquet files: one sorted array, or one per partition file."""
    import pyarrow.parquet as pq
    d = _level_path(workdir, level)
    keys = []
    for name in sorted(os.listdir(d)):
        if name.endswith(".parquet"):
            t = pq.read_table(os.path.join(d, name), columns=["parent", "action"])
            parent = t.column("parent").to_numpy().astype(np.uint64)
            action = t.column("action").to_numpy().astype(np.uint64)
            keys.append((parent << np.uint64(ACTION_BITS)) | action)
    if not merged:
        return keys
    return np.sort(np.concatenate(keys)) if keys else np.zeros(0, dtype=np.uint64)


# ---------------------------------------------------------------------------------------------
# the Spark context
# ---------------------------------------------------------------------------------------------
_QUIET_LOG4J = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""


def _local_cores(master):
    m = re.fullmatch(r"local(?:\[(\*|\d+)(?:\s*,\s*\d+)?\])?", master.strip())
    if not m:
        return None
    if m.group(1) in (None, ""):
        return 1
    return (os.cpu_count() or 1) if m.group(1) == "*" else int(m.group(1))


def spark_context(master="local[*]", partitions=None, conf=None):
    """The active SparkContext, or a new quiet one: (context, whether this call created it)."""
    from pyspark import SparkConf, SparkContext
    sc = SparkContext._active_spark_context
    if sc is not None:
        return sc, False
    c = SparkConf().setMaster(master).setAppName("isrcheck")
    parallelism = partitions or _local_cores(master)
    settings = {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false"}
    if parallelism:
        settings["spark.default.parallelism"] = str(parallelism)
        settings["spark.sql.shuffle.partitions"] = str(parallelism)
    settings.update(conf or {})
    if "spark.driver.extraJavaOptions" not in settings:
        log4j = os.path.join(tempfile.gettempdir(), "isrcheck-spark-log4j2.properties")
        with open(log4j, "w") as fh:
            fh.write(_QUIET_LOG4J)
        settings["spark.driver.extraJavaOptions"] = f"-Dlog4j.configurationFile=file:{log4j}"
    for k, v in settings.items():
        c.set(k, str(v))
    sc = SparkContext(conf=c)
    sc.setLogLevel("ERROR")
    return sc, True


# ---------------------------------------------------------------------------------------------
# the search
# ---------------------------------------------------------------------------------------------
def spark_search(spec, invariants, master="local[*]", partitions=None, symmetry=False, max_states=None,
                 max_depth=None, time_limit=None, progress=None, workdir=None, *, chunk=None,
                 checkpoint_every=CHECKPOINT_EVERY, conf=None, _fault=None):
    """Exhaustive search of the named invariants on Spark; the same SearchResult as checker.bfs.search.

    ``master`` is used only when no SparkContext is active (an active one is reused
    and left running; one created here is stopped at the end). ``partitions``
    defaults to the context's default parallelism. ``workdir`` receives the
    per-level Parquet files and checkpoints (a temporary directory, removed at the
    end, when not given). ``progress`` is called after each level with depth,
    frontier, distinct, seconds (and level_seconds when it accepts it).
    """
    from pyspark import StorageLevel
    from pyspark.core.rdd import RDD

    start = time.perf_counter()
    chunk = chunk or local_chunk()
    search = Search(spec, invariants, symmetry=symmetry, chunk=chunk)     # checks the invariant names first
    sc, created = spark_context(master, partitions, conf)
    P = int(partitions or sc.defaultParallelism)
    own_workdir = workdir is None
    workdir = os.path.abspath(workdir or tempfile.mkdtemp(prefix="isrcheck-spark-"))
    for sub in ("levels", "checkpoints"):            # files of an earlier run would be read as this one's
        shutil.rmtree(os.path.join(workdir, sub), ignore_errors=True)
    os.makedirs(os.path.join(workdir, "levels"), exist_ok=True)
    if checkpoint_every:
        sc.setCheckpointDir(os.path.join(workdir, "checkpoints"))
    report = _progress_reporter(progress)

    sym = Symmetry(spec.layout, search.zobrist, spec.R) if symmetry else None
    init = spec.initial_row()[:, None]
    init_fp = search.zobrist.full(init)
    init_key_fp = init_fp if sym is None else sym.canonical(init)
    owner0 = int(init_key_fp[0] % np.uint64(P))

    violations = {}
    pending = []
    for inv in search.invariants:
        if spec.holds_batch(inv, init)[0]:
            pending.append(inv.name)
        else:
            violations[inv.name] = Violation(inv.name, 0, 1)

    width = spec.layout.width
    records = []
    for p in range(P):
        if p == owner0:
            records.append((p, _Part(init_key_fp.copy(), init.copy(), init_fp.copy(), np.zeros(1, np.uint64))))
        else:
            records.append((p, _Part(np.zeros(0, np.uint64), np.zeros((width, 0), np.int8), np.zeros(0, np.uint64),
                                     np.zeros(0, np.uint64))))
    summaries = sc.accumulator({}, _Summaries())
    level_rdd = sc.parallelize(records, P).partitionBy(P, _ident).persist(StorageLevel.MEMORY_AND_DISK)
    rdds = [level_rdd]
    level_start, level_sizes = [0], [1]
    fired = np.zeros(len(spec.actions), dtype=bool)
    transitions, depth, budget_hit, complete = 0, 1, None, False
    visited_states = 1
    spec_class, bounds = type(spec), tuple(sorted(spec.bounds.items()))
    try:
        while level_sizes[-1] and pending:
            if max_depth is not None and depth >= max_depth:
                budget_hit = f"max depth {max_depth}"
                break
            t_level = time.perf_counter()
            ls, n_frontier = level_start[-1], level_sizes[-1]
            next_id = ls + n_frontier
            job = _Job(spec_class=spec_class, bounds=bounds, symmetry=bool(symmetry), chunk=chunk,
                       partitions=P, level=depth, level_start=ls, n_chunks=-(-n_frontier // chunk),
                       pending=tuple(pending), workdir=workdir, summaries=summaries, fault=_fault)
            disc = level_rdd.mapPartitionsWithIndex(_bind(_map_task, job)).partitionBy(P, _ident)
            # the level and its successors share the partitioner: their union is partition-aligned
            both = RDD(level_rdd._jrdd.union(disc._jrdd), sc, disc._jrdd_deserializer)
            both.partitioner = disc.partitioner
            nxt = both.mapPartitionsWithIndex(_bind(_reduce_task, job), preservesPartitioning=True)
            nxt.persist(StorageLevel.MEMORY_AND_DISK)
            checkpoint = bool(checkpoint_every) and depth % checkpoint_every == 0
            if checkpoint:
                nxt.checkpoint()
            if not _run_level(sc, nxt, start, time_limit):
                nxt.unpersist(blocking=False)        # cancelled at the time limit: the level is left out
                budget_hit = f"time limit {time_limit:g}s"
                break
            done = [summaries.value.pop((depth, p)) for p in range(P)]
            n_new = sum(s["count"] for s in done)
            level_transitions = sum(s["transitions"] for s in done)
            for s in done:
                fired |= s["fired"]
            visited_states = sum(s["visited_states"] for s in done)
            new_keys = None
            cut = n_new
            if n_new and max_states is not None and next_id + n_new >= max_states:
                # the local engine stops after the first chunk of parents that reaches max_states
                new_keys = _read_level_keys(workdir, depth + 1, merged=False)
                parents = (np.concatenate(new_keys) >> np.uint64(ACTION_BITS)).astype(np.int64)
                cum = np.cumsum(np.bincount((parents - ls) // chunk, minlength=len(level_transitions)))
                c = int(np.searchsorted(cum, max(max_states - next_id, 1)))
                cut = int(cum[c])
                level_transitions = level_transitions[:c + 1]
                budget_hit = f"max states {max_states}"
            transitions += int(np.sum(level_transitions))
            for name in list(pending):
                found = [s["violations"][name] for s in done if name in s["violations"]]
                if found:
                    if new_keys is None:
                        new_keys = _read_level_keys(workdir, depth + 1, merged=False)
                    rank = int(_ranks(new_keys, np.array([min(found)], dtype=np.uint64))[0])
                    if rank < cut:
                        violations[name] = Violation(name, next_id + rank, depth + 1)
                        pending.remove(name)
            if not n_new:
                complete = budget_hit is None
                break
            level_start.append(next_id)
            level_sizes.append(cut)
            for old in rdds[:-1]:
                old.unpersist(blocking=False)
            rdds = rdds[-1:] + [nxt]
            level_rdd = nxt
            if report is not None:
                now = time.perf_counter()
                report(depth=depth, frontier=n_frontier, distinct=next_id + cut, seconds=now - start,
                       level_seconds=now - t_level)
            if budget_hit:
                break
            if time_limit is not None and time.perf_counter() - start > time_limit:
                budget_hit = f"time limit {time_limit:g}s"
                break
            depth += 1

        for v in violations.values():
            v.steps = _trace(search, workdir, v, level_start)
    finally:
        for r in rdds:
            r.unpersist(blocking=False)
        if created:
            sc.stop()
        if own_workdir:
            shutil.rmtree(workdir, ignore_errors=True)

    distinct = sum(level_sizes)
    never = sorted({a.name for a in spec.actions} - {a.name for a in spec.actions if fired[a.id]})
    return SearchResult(
        invariants=[i.name for i in search.invariants], violations=violations,
        distinct_states=distinct, transitions=transitions, depth=depth,
        seconds=time.perf_counter() - start,
        peak_memory_bytes=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        retained_bytes=8 * visited_states + 10 * distinct,
        complete=complete, budget_hit=budget_hit, never_fired=never if complete else [])


def _bind(fn, job):
    def task(index, records):
        return fn(job, index, records)
    return task


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


def _run_level(sc, rdd, start, time_limit):
    """Compute and cache the level (a JVM-side count: no extra Python pass); False if cancelled at the time limit."""
    if time_limit is None:
        rdd._jrdd.count()
        return True
    group = f"isrcheck-{uuid.uuid4().hex}"
    cancelled = threading.Event()

    def cancel():
        cancelled.set()
        sc.cancelJobGroup(group)

    timer = threading.Timer(max(time_limit - (time.perf_counter() - start), 0.0), cancel)
    sc.setJobGroup(group, "isrcheck level", interruptOnCancel=False)
    timer.start()
    try:
        rdd._jrdd.count()
        return True
    except Exception:
        if cancelled.is_set():
            return False
        raise
    finally:
        timer.cancel()


def _trace(search, workdir, violation, level_start):
    """Walk the Parquet files back from a violating state, then replay on the scalar backend."""
    parents, actions = {}, {}
    sid = violation.state_id
    level = violation.level            # 1-based; files of level L hold the keys of its states
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
