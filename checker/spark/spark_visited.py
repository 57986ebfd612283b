"""A Spark partition's visited fingerprints: a level-stamped open-addressing table in a file beside its tasks.

``visited/part-PPPPP.table`` is one 4 KB header page (uint64 words: a magic
number, the capacity, the count, ``complete``, ``top`` and the stamp of
fingerprint 0), then ``capacity`` uint64 slots probed linearly from a slot taken
from a fingerprint's high 32 bits (0 marks an empty slot; the partition is a
fingerprint modulo the partition count, so its low bits are not uniform), then
``capacity`` uint16 stamps: the level at which each fingerprint was first
reached (levels count from 1, the initial state's).

The file is changed in place, by memory map: a level writes the slots of its
new fingerprints, where a sorted array was copied whole into a new file every
level (the system still writes back each page a level touches: at a large
level, most of the table's, but not from the task's CPU time). The stamps make
that safe for a task that runs again (retried, speculative, recomputed after a
lost executor, resumed): the visited set *through level L* is the fingerprints
stamped 1..L, and a stamp, once written, never changes in that file.

- ``complete`` is the last level all of whose new fingerprints are in the table;
  ``top`` the highest stamp that may be in it. The reduce of level L+1
  (:func:`insert_level`) holds the partition's lock and first makes the table
  exactly the set through level L: levels after ``complete`` are added from the
  levels' Parquet files (the reliable copy: a table that is missing, from
  another machine, or dropped on resume is rebuilt from them), and a table with
  stamps above L (an attempt that died mid-insert, a recomputed older level) is
  copied without them into a new file. Then ``top`` becomes L+1, the level's
  fingerprints go in, and ``complete`` becomes L+1.
- A reader (a map task's filter, :func:`lookup`) takes no lock: it maps the
  table as it is and asks for stamps 1..L, so what a concurrent insert has half
  written (a slot without its stamp yet is stamp 0) or a later level reads as
  not visited: a filter may keep a successor it could drop, never the reverse.
- A table grows by a new file, a power of two times as large, renamed into
  place, before a batch that could take it past 3/4 full: readers keep the old
  one, a subset. A batch's candidates are mostly new (the map tasks drop what
  the owners have seen), so a table is about 3/8 to 3/4 full, 10 bytes a slot:
  13 to 27 bytes of page cache per fingerprint.
"""
from __future__ import annotations

import fcntl
import os
import uuid

import numpy as np

MAGIC = 0x6973726376697331          # "isrcvis1"
HEADER = 4096                       # bytes: the slots start on a page
CAPACITY, COUNT, COMPLETE, TOP, ZERO = 1, 2, 3, 4, 5        # header words
FIRST_CAPACITY = 1 << 10
MAX_LOAD = 0.75
ZEROS = 1 << 20                     # bytes of zeros written at a time (``fill_to``)


def make_dirs(workdir, directory):
    """Make ``directory`` and those between it and ``workdir``, never ``workdir`` itself: a task still running
    after the driver removed its workdir (a stopped or cancelled search) fails here instead of leaving files."""
    missing = []
    while os.path.normpath(directory) != os.path.normpath(workdir) and not os.path.isdir(directory):
        missing.append(directory)
        directory = os.path.dirname(directory)
    for d in reversed(missing):
        try:
            os.mkdir(d)             # FileNotFoundError when the workdir is gone
        except FileExistsError:
            pass


def fill_to(fd, size):
    """Make the file open as ``fd`` (nothing of it buffered) ``size`` bytes long, the bytes past its end written as
    zeros rather than left a hole: a hole's pages, mapped in memory and written, are each read in as zeros,
    cleared and given blocks one by one, at several times the CPU time of writing the zeros once."""
    end = os.fstat(fd).st_size
    if end >= size:
        os.ftruncate(fd, size)
        return
    zeros = memoryview(bytes(min(ZEROS, size - end)))
    while end < size:
        end += os.pwrite(fd, zeros[:size - end], end)


def table_path(workdir, index):
    return os.path.join(workdir, "visited", f"part-{index:05d}.table")


class _Table:
    """An open table: its header, slots and stamps as arrays over one shared memory map."""

    def __init__(self, path, writable):
        self.path = path
        mode = "r+" if writable else "r"
        head = np.memmap(path, dtype=np.uint64, mode=mode, shape=(HEADER // 8,))
        if int(head[0]) != MAGIC:
            raise ValueError(f"{path}: not a visited table")
        cap = int(head[CAPACITY])
        self.head = head.view(np.ndarray)               # plain arrays over the map, for the kernels
        self.slots = np.memmap(path, dtype=np.uint64, mode=mode, offset=HEADER, shape=(cap,)).view(np.ndarray)
        self.stamps = np.memmap(path, dtype=np.uint16, mode=mode, offset=HEADER + 8 * cap,
                                shape=(cap,)).view(np.ndarray)

    @property
    def capacity(self):
        return self.slots.size

    @property
    def count(self):
        return int(self.head[COUNT])


def _create(path, capacity, fill=None):
    """A new empty table of ``capacity`` slots at ``path`` (atomically), filled by ``fill(table)`` first."""
    tmp = f"{path}.tmp-{os.getpid()}-{uuid.uuid4().hex}"
    with open(tmp, "wb") as fh:
        fh.truncate(HEADER + 10 * capacity)      # sparse: writing its zeros first (fill_to) made inserts slower
    head = np.memmap(tmp, dtype=np.uint64, mode="r+", shape=(HEADER // 8,))
    head[0], head[CAPACITY] = MAGIC, capacity
    del head
    table = _Table(tmp, writable=True)
    if fill is not None:
        fill(table)
    del table
    os.replace(tmp, path)
    return _Table(path, writable=True)


def _copy_into(table, through, capacity):
    """``table``'s entries stamped 1..``through`` in a new table of ``capacity`` slots, replacing it."""
    from isrcheck.checker.exhaustive.kernels import stamped_copy

    def fill(new):
        new.head[COUNT] = stamped_copy(table.slots, table.stamps, through, new.slots, new.stamps)
        zero = int(table.head[ZERO])
        if 1 <= zero <= through:
            new.head[ZERO] = zero
            new.head[COUNT] += 1
        new.head[COMPLETE] = min(int(table.head[COMPLETE]), through)
        new.head[TOP] = through
    return _create(table.path, capacity, fill)


def open_table(workdir, index):
    """Partition ``index``'s table for reading, or None when it has none here."""
    try:
        return _Table(table_path(workdir, index), writable=False)
    except (FileNotFoundError, ValueError):          # not written yet (or cut short)
        return None


def lookup(table, fps, through):
    """Which ``fps`` ``table`` holds with a stamp from 1 to ``through`` (visited by the end of that level)."""
    from isrcheck.checker.exhaustive.kernels import stamped_lookup
    seen = np.zeros(fps.size, dtype=bool)
    if table is not None and fps.size:
        stamped_lookup(table.slots, table.stamps, table.head[ZERO:ZERO + 1], fps, through, seen)
    return seen


def insert_level(workdir, index, level, fps, level_fps):
    """Add level ``level``'s candidate fingerprints ``fps`` (in priority order, repeats allowed) to partition
    ``index``'s table; returns (which of them are new: the first of each fingerprint the set through level
    ``level - 1`` lacks, the table's count after).

    ``level_fps(lv)`` gives the partition's new fingerprints of an earlier level (from the levels' Parquet
    files) for the levels the table lacks.
    """
    from isrcheck.checker.exhaustive.kernels import stamped_insert
    path = table_path(workdir, index)
    make_dirs(workdir, os.path.dirname(path))
    through = level - 1
    with open(f"{path[:-len('.table')]}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)             # one writer per partition (a speculative twin waits)
        try:
            table = _Table(path, writable=True)
        except (FileNotFoundError, ValueError):
            table = _create(path, FIRST_CAPACITY)
        if int(table.head[TOP]) > through:            # stamps above the set through ``through``: drop them
            table = _copy_into(table, through, table.capacity)
        for lv in range(int(table.head[COMPLETE]) + 1, through + 1):    # levels it lacks
            table = _add(table, level_fps(lv), lv, stamped_insert)
            table.head[COMPLETE] = lv
        new = np.zeros(fps.size, dtype=bool)
        table = _add(table, fps, level, stamped_insert, new)
        table.head[COMPLETE] = level
        return new, table.count


def _add(table, fps, stamp, kernel, new=None):
    """Insert ``fps`` stamped ``stamp``. The table first doubles until they all fit under MAX_LOAD: sorted
    fingerprints poured into a table too small for them would pile up in its lowest slots, every probe walking
    the pile."""
    table.head[TOP] = max(int(table.head[TOP]), stamp)      # before any slot stamped ``stamp`` is written
    capacity = table.capacity
    while table.count + fps.size > MAX_LOAD * capacity:
        capacity *= 2
    if capacity > table.capacity:
        table = _copy_into(table, int(table.head[TOP]), capacity)
    if fps.size:
        table.head[COUNT] += kernel(table.slots, table.stamps, table.head[ZERO:ZERO + 1], fps, stamp,
                                    np.zeros(fps.size, dtype=bool) if new is None else new)
    return table
