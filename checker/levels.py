"""BFS levels on disk: parent numbers and actions per level in files, frontier rows spilled near the memory limit.

A finished level's parent numbers (uint32) and action instances (uint16) go to
``level-<n>.parents.npy`` / ``.actions.npy`` in the run's directory (a temporary
one, removed with the store) and are read back as read-only memory maps: a
trace reads a handful of entries, so they cost disk, not RAM. The rows and
fingerprints of the level being built stay in memory unless a memory limit is
set (``--max-memory``) and the process has reached ``SPILL_AT`` of it: from then
on that level's rows go to a file, one state after another (``width`` bytes
each), with its fingerprints, and are read back a chunk at a time.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import weakref

import numpy as np

from isrcheck.checker import stop

SPILL_AT = 0.6          # of the memory limit: past it, the level being built goes to disk


class Frontier:
    """The states of one level: in memory (``rows`` width x n, ``fps``), or in files."""

    def __init__(self, rows=None, fps=None, files=None, width=0, size=0):
        self.rows, self.fps, self.files, self.width = rows, fps, files, width
        self.size = rows.shape[1] if rows is not None else size

    def block(self, start, count):
        """Rows (width x k, contiguous) and fingerprints of states start..start+count."""
        if self.files is None:
            return np.ascontiguousarray(self.rows[:, start:start + count]), self.fps[start:start + count]
        rows_file, fps_file = self.files
        count = min(count, self.size - start)
        rows = np.fromfile(rows_file, dtype=np.int8, count=count * self.width, offset=start * self.width)
        fps = np.fromfile(fps_file, dtype=np.uint64, count=count, offset=start * 8)
        return np.ascontiguousarray(rows.reshape(count, self.width).T), fps

    def in_memory(self):
        """(rows, fingerprints) as arrays (reads a spilled level back: for checkpoints)."""
        if self.files is None:
            return self.rows, self.fps
        return self.block(0, self.size)

    def discard(self):
        """Remove a spilled level's files (the search has moved past it)."""
        for path in self.files or ():
            os.remove(path)


class LevelStore:
    """The run's directory of level files."""

    def __init__(self):
        self.directory = tempfile.mkdtemp(prefix="isrcheck-levels-")
        self._cleanup = weakref.finalize(self, shutil.rmtree, self.directory, True)

    def keep(self, depth, parents, actions):
        """Write a finished level's parents and actions; returns them as read-only memory maps."""
        out = []
        for kind, a in (("parents", parents), ("actions", actions)):
            path = os.path.join(self.directory, f"level-{depth}.{kind}.npy")
            np.save(path, a, allow_pickle=False)
            out.append(np.load(path, mmap_mode="r"))
        return out

    def level(self, depth, width):
        return LevelWriter(self, depth, width)


class LevelWriter:
    """The level being built, chunk by chunk, in memory until the memory limit comes near."""

    def __init__(self, store, depth, width):
        self.store, self.depth, self.width = store, depth, width
        self.parts = []                 # (rows, fps) while in memory
        self.parents, self.actions = [], []
        self.files = None
        self.size = 0

    def append(self, rows, fps, parents, actions):
        self.parents.append(parents)
        self.actions.append(actions)
        self.size += rows.shape[1]
        if self.files is None:
            self.parts.append((rows, fps))
            limit = stop.memory_limit()
            if limit is not None and stop.resident_bytes() >= SPILL_AT * limit:
                self._spill()
        else:
            self._write(rows, fps)

    def _spill(self):
        base = os.path.join(self.store.directory, f"level-{self.depth}")
        self.files = (base + ".rows", base + ".fps")
        for path in self.files:
            open(path, "wb").close()
        parts, self.parts = self.parts, []
        for rows, fps in parts:
            self._write(rows, fps)

    def _write(self, rows, fps):
        with open(self.files[0], "ab") as fh:
            np.ascontiguousarray(rows.T).tofile(fh)
        with open(self.files[1], "ab") as fh:
            fps.tofile(fh)

    def finish(self):
        """(the level as a Frontier, its parent numbers, its action instances) — both memory-mapped files."""
        parents, actions = self.store.keep(self.depth, np.concatenate(self.parents), np.concatenate(self.actions))
        if self.files is not None:
            frontier = Frontier(files=self.files, width=self.width, size=self.size)
        else:
            rows, fps = (np.concatenate(part, axis=-1) for part in zip(*self.parts))
            frontier = Frontier(rows, fps)
        return frontier, parents, actions
