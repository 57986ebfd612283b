"""The fuzzer's state abstraction: which cell of a coarse, replica-symmetric picture of the state a state falls in.

The fuzzer (checker/fuzzing/fuzz.py) keeps one state per cell it has reached, with the path
to it, and starts later runs from the cells reached least (Go-Explore): a run that
reaches a new cell has done something no run did before, and the next runs build on
it. What a cell keeps and drops comes from the layout's declarations alone, never
from field names:

- per replica (its cells of every field whose only axis is the replica axis):
  a boolean as it is; a replica id (``values="replica"``) as "itself", "none" or
  "another"; an integer by its order (<, =, >) against every other integer field
  of the same range at the same replica and against every scalar field of that
  range (an offset against another offset, an epoch against the epoch of record),
  not by its value; and whether each scalar replica-id field names it;
- globally: every other scalar field's value (ghosts included), for every ghost
  array (the history the invariants read: what was acknowledged, exposed) the number
  of its cells off their lower bound, and the passive replicas' counts (below).

Arrays with other axes (logs, requests) are left out: the orders above already
say where replicas' offsets and epochs stand.

A cell lists the replicas' pictures sorted, so replicas that swap roles share
a cell, and only the replicas a run lets act (``active``): the others are
background, and leaving them out keeps the number of cells at five replicas
close to what it is at two or three. Of the passive replicas the global part
counts, per boolean field, how many have it set (how many are still in the ISR,
say). The global part is also the cell's *group* (checker/fuzzing/fuzz.py).
"""
from __future__ import annotations


class Cells:
    """``cell(active)``: the function mapping a state (a tuple of ints) to its cell for a set of active replicas."""

    def __init__(self, layout):
        self.layout = layout
        self._made = {}

    def cell(self, active):
        """The cell function when the replicas flagged in ``active`` (a tuple of bools) are the ones acting."""
        fn = self._made.get(active)
        if fn is None:
            fn = self._made[active] = _compile(self.source(active))
        return fn

    def source(self, active):
        """Python source of ``cell(r)`` for ``active``."""
        lay = self.layout
        n = lay.replicas
        col = lay.cell_column
        fields = list(lay.fields.values())
        per_replica = [f for f in fields if not f.ghost and f.shape == (n,) and f.axes == ("replica",)]
        integers = [f for f in per_replica if not f.boolean and f.values != "replica"]
        scalars = [f for f in fields if not f.ghost and f.shape == () and f.values != "replica"]
        pointers = [f for f in fields if not f.ghost and f.shape == () and f.values == "replica"]

        def picture(r):
            parts = []
            for f in per_replica:
                c = col[f.name, (r,)]
                if f.boolean:
                    parts.append(f"r[{c}]")
                elif f.values == "replica":
                    parts.append(f"(0 if r[{c}] == {r} else 1 if not 0 <= r[{c}] < {n} else 2)")
            for k, f in enumerate(integers):
                a = f"r[{col[f.name, (r,)]}]"
                others = [f"r[{col[g.name, (r,)]}]" for g in integers[k + 1:] if (g.lo, g.hi) == (f.lo, f.hi)]
                others += [f"r[{col[g.name, ()]}]" for g in scalars if not g.boolean and (g.lo, g.hi) == (f.lo, f.hi)]
                parts += [f"(({a} > {b}) - ({a} < {b}))" for b in others]
            parts += [f"(r[{col[g.name, ()]}] == {r})" for g in pointers]
            return "(" + ", ".join(parts) + ",)"

        overall = [f"r[{col[f.name, ()]}]" for f in scalars]
        for f in fields:
            if f.ghost and f.shape == ():
                overall.append(f"r[{col[f.name, ()]}]")
            elif f.ghost:
                off = " + ".join(f"(r[{col[f.name, idx]}] != {f.lo})" for idx in f.cells())
                overall.append(f"({off})")
        acting = [r for r in range(n) if active[r]]
        passive = [r for r in range(n) if not active[r]]
        if passive:
            overall += ["(" + " + ".join(f"r[{col[f.name, (r,)]}]" for r in passive) + ")"
                        for f in per_replica if f.boolean]
        lines = ["def cell(r):"]
        lines += [f"    p{r} = {picture(r)}" for r in acting]
        replicas = ", ".join(f"p{r}" for r in acting)
        lines.append(f"    return (({', '.join(overall)},), tuple(sorted(({replicas},))))")
        return "\n".join(lines) + "\n"


def _compile(source):
    scope = {}
    exec(compile(source, "<isrcheck fuzz cells>", "exec"), scope)
    return scope["cell"]
