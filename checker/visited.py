"""The visited set: 64-bit fingerprints in one sorted array (no Python object per state).

Membership of a chunk's sorted fingerprints is one vectorized binary search; new
fingerprints are merged in with one linear insert per chunk, which costs less
than searching several runs. The set holds 8 bytes per state.
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

    def contains(self, fps):
        """Membership of sorted fingerprints, as a bool vector."""
        if self.fps.size == 0:
            return np.zeros(fps.size, dtype=bool)
        pos = np.searchsorted(self.fps, fps)
        pos[pos == self.fps.size] = 0
        return self.fps[pos] == fps

    def add(self, fps):
        """Add sorted fingerprints that are not in the set yet."""
        if fps.size:
            self.fps = np.insert(self.fps, np.searchsorted(self.fps, fps), fps)
