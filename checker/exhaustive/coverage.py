"""Action coverage of an exhaustive search, as TLC's ``-coverage`` reports it.

Per action instance (an action with its parameters bound, e.g. ``fetch(f=1, l=0)``) the search counts,
with numpy on whole batches (never per state in Python):

- ``enabled``: states explored in which its guard held;
- ``fired``: transitions it took to a different state (the enabled ones minus self-loops; with
  ``--symmetry`` self-loops are not told apart, so ``fired`` equals ``enabled``);
- ``new_states``: states it reached first (the canonical discovery: BFS order, smallest parent,
  then smallest action instance), so the ``new_states`` of all instances add up to the distinct
  states less the initial one, and ``fired`` to the transitions.

An action (all its instances) that never fires at the given bounds is often a modelling bug: a guard
too strong, or bounds too small to reach it.
"""
from __future__ import annotations

import numpy as np

ENABLED, FIRED, NEW = 0, 1, 2


class Coverage:
    """Counts per action instance, indexed by the instance's id (``spec.actions[i].id == i``)."""

    def __init__(self, actions):
        self.actions = list(actions)
        self.counts = np.zeros((3, len(self.actions)), dtype=np.int64)

    def add_new(self, action_ids):
        """States first reached in a chunk, by the id of the action instance that reached each."""
        self.counts[NEW] += np.bincount(action_ids, minlength=len(self.actions))

    def never_fired(self):
        """Names of the actions none of whose instances fired."""
        fired = {a.name for a in self.actions if self.counts[FIRED, a.id]}
        return sorted({a.name for a in self.actions} - fired)

    def by_action(self):
        """{action name: {"instances", "instances_fired", "enabled", "fired", "new_states"}}, in declaration order."""
        out = {}
        for a in self.actions:
            row = out.setdefault(a.name, {"instances": 0, "instances_fired": 0, "enabled": 0, "fired": 0,
                                          "new_states": 0})
            enabled, fired, new = (int(x) for x in self.counts[:, a.id])
            row["instances"] += 1
            row["instances_fired"] += fired > 0
            row["enabled"] += enabled
            row["fired"] += fired
            row["new_states"] += new
        return out

    def as_json(self):
        """The ``coverage`` object of ``--format json``: per action, and per action instance."""
        return {"actions": self.by_action(),
                "instances": {a.label: {"enabled": int(self.counts[ENABLED, a.id]),
                                        "fired": int(self.counts[FIRED, a.id]),
                                        "new_states": int(self.counts[NEW, a.id])} for a in self.actions}}
