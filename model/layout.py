"""State layout: named bounded-integer fields, flattened into a fixed-width row.

A state is a row of small integers (int8), one column per cell. A field is a
scalar or a fixed-shape array of cells (per replica, per offset, per epoch); its
cells are laid out row-major. ``decode`` turns a row into a readable dict,
``encode`` does the reverse.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from isrcheck.model.expr import DeclarationError


@dataclass(frozen=True)
class Field:
    """A bounded integer (or boolean) state field, possibly an array of cells.

    ``axes`` names each array axis; an axis named ``"replica"`` is permuted by
    replica-symmetry reduction. ``values="replica"`` marks a field whose value
    is a replica id (``lo..R-1``, any other value meaning none) so symmetry
    renames it too. ``ghost`` fields record history for invariants only.
    ``unbounded=True`` marks a value that only counts up (an epoch, an id): its
    upper bound is a bound of the search, not a fact of the protocol, so the
    induction step of a proof leaves it out (``checker.symbolic.induction.prove``).
    """

    name: str
    lo: int
    hi: int
    shape: tuple = ()
    boolean: bool = False
    axes: tuple = ()
    values: str | None = None
    ghost: bool = False
    unbounded: bool = False
    doc: str = ""

    def __post_init__(self):
        if not isinstance(self.shape, tuple) or not all(isinstance(n, int) and n >= 0 for n in self.shape):
            raise DeclarationError(f"field {self.name}: shape {self.shape!r} is not a tuple of lengths, e.g. (R,)")
        if self.boolean:
            object.__setattr__(self, "lo", 0)
            object.__setattr__(self, "hi", 1)
        if not -128 <= self.lo <= self.hi <= 127:
            raise DeclarationError(f"field {self.name}: bounds {self.lo}..{self.hi} do not fit a state cell")
        if self.axes and len(self.axes) != len(self.shape):
            raise DeclarationError(f"field {self.name}: axes {self.axes} do not match shape {self.shape}")

    @property
    def size(self):
        return int(np.prod(self.shape)) if self.shape else 1

    def cells(self):
        """Every index tuple of the field, row-major."""
        return list(itertools.product(*(range(n) for n in self.shape)))


class Layout:
    """Column assignment for a list of fields."""

    def __init__(self, fields):
        self.fields = {}
        self.base = {}
        column = 0
        for f in fields:
            if f.name in self.fields:
                raise DeclarationError(f"field {f.name} declared twice")
            self.fields[f.name] = f
            self.base[f.name] = column
            column += f.size
        self.width = column
        self.replicas = self._replica_count()
        self.lo = np.zeros(column, dtype=np.int64)
        self.hi = np.zeros(column, dtype=np.int64)
        self.boolean = np.zeros(column, dtype=bool)
        self.names = []
        self.field_of = []
        self.cell_column = {}            # (field name, index tuple) -> column
        for f in self.fields.values():
            for idx in f.cells():
                c = self.column(f.name, idx)
                self.cell_column[f.name, idx] = c
                self.lo[c], self.hi[c], self.boolean[c] = f.lo, f.hi, f.boolean
                self.names.append(f.name + "".join(f"[{i}]" for i in idx))
                self.field_of.append(f)

    def _replica_count(self):
        """The length of every ``"replica"`` axis (they must agree); 0 when no field has one."""
        lengths = {n: f.name for f in self.fields.values() for n, ax in zip(f.shape, f.axes) if ax == "replica"}
        if len(lengths) > 1:
            raise DeclarationError("replica axes of different lengths: "
                                   + ", ".join(f"{name} has {n}" for n, name in sorted(lengths.items())))
        return next(iter(lengths), 0)

    def column(self, name, idx=()):
        f = self.fields[name]
        c = 0
        for i, n in zip(idx, f.shape):
            c = c * n + i
        return self.base[name] + c

    def decode(self, row):
        """A readable state: field name -> int, bool, or nested lists of them."""
        out = {}
        for name, f in self.fields.items():
            cells = [row[self.base[name] + k] for k in range(f.size)]
            cells = [bool(v) if f.boolean else int(v) for v in cells]
            out[name] = _nest(cells, f.shape)
        return out

    def encode(self, state):
        """A row from a readable state (the inverse of decode)."""
        row = np.zeros(self.width, dtype=np.int8)
        for name, f in self.fields.items():
            if name not in state:
                raise ValueError(f"state has no field {name!r}")
            flat = _flatten(state[name], f.shape, name)
            for k, v in enumerate(flat):
                v = int(v)
                if not f.lo <= v <= f.hi:
                    raise ValueError(f"{name}: value {v} outside {f.lo}..{f.hi}")
                row[self.base[name] + k] = v
        return row


def _nest(cells, shape):
    if not shape:
        return cells[0]
    step = len(cells) // shape[0]
    return [_nest(cells[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])]


def _flatten(value, shape, name):
    if not shape:
        if isinstance(value, list):
            raise ValueError(f"{name}: expected a single value, got a list")
        return [value]
    if not isinstance(value, list) or len(value) != shape[0]:
        raise ValueError(f"{name}: expected a list of {shape[0]}")
    return [x for v in value for x in _flatten(v, shape[1:], name)]
