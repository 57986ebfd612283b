"""BFS levels on disk: parent numbers and actions per level in files, frontier rows spilled near the memory limit.

A finished level's parent numbers (uint32) and action instances (uint16) are
written to an unnamed temporary file (in TMPDIR, unlinked at once, so nothing
is left behind even by kill -9) and read back as a read-only memory map: a
trace reads a handful of entries, so they cost disk, not RAM (a level under
``KEPT_FROM`` states keeps them in memory). The rows and
fingerprints of the level being built stay in memory unless a memory limit is
set (``--max-memory``) and the process has reached ``SPILL_AT`` of it: from then
on that level's rows go to such a file too, one state after another (``width``
bytes each), with its fingerprints, and are read back a chunk at a time. The
memory its rows took goes back to the system at once (``malloc_trim``): on the
3-epoch production run a 6.6 GB level built in memory, then dropped, stayed
resident as free arena memory (4 to 5 GB) through the next levels.
"""
from __future__ import annotations

import os
import tempfile

import numpy as np

from isrcheck.checker.engine import stop

SPILL_AT = 0.6          # of the memory limit: past it, the level being built goes to disk
KEPT_FROM = 1 << 16     # parent numbers or actions of a level: from this many, in a file


def kept(parts):
    """An array (or the concatenation of a list of them, written part by part: never two copies of a level's
    parent numbers in memory at once) written to an unnamed file and mapped back read-only (memory maps of it
    stay valid); one under ``KEPT_FROM`` entries stays in memory (a few hundred KB at most, where a file costs a
    small level more time than its search)."""
    parts = [parts] if isinstance(parts, np.ndarray) else parts
    size = sum(p.size for p in parts)
    if size < KEPT_FROM:
        return parts[0] if len(parts) == 1 else np.concatenate(parts)
    with tempfile.TemporaryFile(prefix="isrcheck-level-") as fh:
        for p in parts:
            p.tofile(fh)
        fh.flush()
        return np.memmap(fh, dtype=parts[0].dtype, mode="r", shape=(size,))


def _pread(fh, size, offset):
    """``size`` bytes of a file at ``offset``, without moving its offset (safe from several threads)."""
    data = bytearray()
    while len(data) < size:
        piece = os.pread(fh.fileno(), size - len(data), offset + len(data))
        if not piece:
            raise OSError(f"level file ends {size - len(data)} bytes early")
        data += piece
    return bytes(data)


class Frontier:
    """The states of one level: in memory (parts of ``rows`` width x n with their ``fps``, kept as the chunks
    that found them: a block is copied out of them by the worker that reads it, never the whole level at once),
    or in unnamed files. Fingerprints are one lane (n) or two (2 x n: wide fingerprints, checker/exhaustive/fingerprint.py);
    a level's parts all have the same ``lanes``."""

    def __init__(self, rows=None, fps=None, files=None, width=0, size=0, parts=None, lanes=1):
        self.parts = [(rows, fps)] if rows is not None else parts
        self.files, self.width = files, width
        self.lanes = self.parts[0][1].ndim if self.parts else lanes
        if self.parts is not None:
            self.ends = np.cumsum([p[0].shape[1] for p in self.parts])
            size = int(self.ends[-1])
        self.size = size

    def block(self, start, count, contiguous=True):
        """Rows (width x k, contiguous, or where a block lies in one part only possibly a view of it whose rows
        are contiguous) and fingerprints of states start..start+count."""
        if self.files is None:
            stop = min(start + count, self.size)
            first = int(np.searchsorted(self.ends, start, side="right"))
            last = int(np.searchsorted(self.ends, stop, side="left"))
            rows, fps = [], []
            for p in range(first, last + 1):
                lo = int(self.ends[p - 1]) if p else 0
                part_rows, part_fps = self.parts[p]
                rows.append(part_rows[:, max(start - lo, 0):stop - lo])
                fps.append(part_fps[..., max(start - lo, 0):stop - lo])
            if len(rows) == 1:
                return np.ascontiguousarray(rows[0]) if contiguous else rows[0], fps[0]
            return np.concatenate(rows, axis=1), np.concatenate(fps, axis=-1)
        rows_file, fps_file = self.files
        count = min(count, self.size - start)
        # positional reads (no shared file offset): the search's workers read blocks of a level at once
        rows = np.frombuffer(_pread(rows_file, count * self.width, start * self.width), dtype=np.int8)
        size = 8 * self.lanes
        fps = np.frombuffer(_pread(fps_file, count * size, start * size), dtype=np.uint64)
        fps = fps.copy() if self.lanes == 1 else np.ascontiguousarray(fps.reshape(count, self.lanes).T)
        return np.ascontiguousarray(rows.reshape(count, self.width).T), fps

    def in_memory(self):
        """(rows, fingerprints) as arrays (reads a spilled level back: for checkpoints)."""
        return self.block(0, self.size)

    def discard(self):
        """Close a spilled level's files (the search has moved past it), which frees their space."""
        for fh in self.files or ():
            fh.close()


class LevelWriter:
    """The level being built, chunk by chunk, in memory until the memory limit comes near."""

    def __init__(self, width):
        self.width = width
        self.lanes = 1
        self.parts = []                 # (rows, fps) while in memory
        self.parents, self.actions = [], []
        self.files = None
        self.size = 0

    def append(self, rows, fps, parents, actions):
        self.lanes = fps.ndim
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
        self.files = tuple(tempfile.TemporaryFile(prefix="isrcheck-level-") for _ in range(2))
        parts, self.parts = self.parts, []
        for rows, fps in parts:
            self._write(rows, fps)
        del parts
        stop.release_free_memory()      # the rows just written stay resident in malloc's arenas otherwise

    def _write(self, rows, fps):
        rows_file, fps_file = self.files
        rows_file.seek(0, os.SEEK_END)
        np.ascontiguousarray(rows.T).tofile(rows_file)
        fps_file.seek(0, os.SEEK_END)
        np.ascontiguousarray(fps.T).tofile(fps_file)          # a state's lanes side by side

    def finish(self):
        """(the level as a Frontier, its parent numbers, its action instances), the last two on disk."""
        parents, actions = kept(self.parents), kept(self.actions)
        if self.files is not None:
            for fh in self.files:
                fh.flush()
            frontier = Frontier(files=self.files, width=self.width, size=self.size, lanes=self.lanes)
        else:
            frontier = Frontier(parts=self.parts)
        return frontier, parents, actions
