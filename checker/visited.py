"""The visited set: 64-bit fingerprints in a few sorted runs (no Python object per state).

New fingerprints arrive sorted, a level chunk at a time, as a new run; runs of
similar size are merged, so membership costs a binary search per run and the
set holds 8 bytes per state.
"""
from __future__ import annotations

import numpy as np


class VisitedSet:
    def __init__(self):
        self.runs = []

    def __len__(self):
        return sum(r.size for r in self.runs)

    @property
    def nbytes(self):
        return sum(r.nbytes for r in self.runs)

    def contains(self, fps):
        """Membership of sorted fingerprints, as a bool vector."""
        found = np.zeros(fps.size, dtype=bool)
        for run in self.runs:
            pos = np.searchsorted(run, fps)
            pos[pos == run.size] = 0
            found |= run[pos] == fps
        return found

    def add(self, fps):
        """Add sorted fingerprints that are not in the set yet."""
        if fps.size == 0:
            return
        self.runs.append(fps)
        while len(self.runs) > 1 and self.runs[-2].size <= 2 * self.runs[-1].size:
            b = self.runs.pop()
            a = self.runs.pop()
            self.runs.append(np.insert(a, np.searchsorted(a, b), b))
