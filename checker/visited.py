"""The visited set: 64-bit fingerprints in one sorted array (no Python object per state).

Membership of a chunk's sorted fingerprints is one vectorized binary search, whose
positions then merge the new fingerprints in with one linear pass per chunk (which
costs less than searching several runs). The set holds 8 bytes per state.
"""
from __future__ import annotations

import numpy as np


class VisitedSet:
    def __init__(self):
        self.fps = np.empty(0, dtype=np.uint64)

    def __len__(self):
        return self.fps.size

    @property
    def nbytes(self):
        return self.fps.nbytes

    def lookup(self, fps):
        """Membership of sorted fingerprints, and the position where each would be inserted."""
        pos = np.searchsorted(self.fps, fps)
        if self.fps.size == 0:
            return np.zeros(fps.size, dtype=bool), pos
        return np.take(self.fps, pos, mode="clip") == fps, pos

    def add(self, fps, pos):
        """Merge in sorted fingerprints not in the set yet, at their ``lookup`` positions."""
        if fps.size:
            merged = np.empty(self.fps.size + fps.size, dtype=np.uint64)
            dest = pos + np.arange(fps.size)
            keep = np.ones(merged.size, dtype=bool)
            keep[dest] = False
            merged[dest] = fps
            merged[keep] = self.fps
            self.fps = merged
