"""A state as the spec code sees it: ``s.hw[r]`` reads, ``s.hw[r] = v`` writes.

One View class serves every backend; only the column reader differs (see
``scalar_reader``, ``z3_reader``, and ``Graph.reader`` in model/compile.py, whose
traced graphs become the numpy batch kernels). Reads see earlier writes
of the same action (sequential semantics). Indexing a field by a state value
(``s.leo[s.leader[f]]``) selects among the cells with ``where``; an index out of
range reads cell 0 on every backend, and writing through one is rejected when
the spec loads.
"""
from __future__ import annotations

import itertools

import numpy as np

from isrcheck.model.expr import DeclarationError, Sym, all_of, where


class GuardDone(Exception):
    """Raised at an action's first write when only its guard is wanted."""


class View:
    def __init__(self, layout, read, guard_only=False):
        object.__setattr__(self, "_layout", layout)
        object.__setattr__(self, "_read", read)
        object.__setattr__(self, "_guard_only", guard_only)
        object.__setattr__(self, "_cur", {})
        object.__setattr__(self, "_written", {})
        object.__setattr__(self, "_requires", [])
        object.__setattr__(self, "_index_obligations", [])

    def require(self, cond):
        """The action is enabled only where ``cond`` holds (all requires come before the first write). A view
        that wants only the guard stops at a require that is plainly false (a constant, or one state's value):
        the guard is false whatever follows."""
        if self._written:
            raise DeclarationError("require() after a write: guards must come before updates")
        self._requires.append(cond)
        if self._guard_only and isinstance(cond, (bool, np.bool_)) and not cond:
            raise GuardDone

    @property
    def guard(self):
        return all_of(self._requires)

    def __getattr__(self, name):
        f = self._layout.fields.get(name)
        if f is None:
            raise AttributeError(f"no state field {name!r}")
        if f.shape:
            return Cells(self, f, ())
        return self._get(self._layout.base[name])

    def __setattr__(self, name, value):
        f = self._layout.fields.get(name)
        if f is None:
            raise AttributeError(f"no state field {name!r}")
        if f.shape:
            raise DeclarationError(f"assign the cells of {name}, not the whole array")
        self._set(self._layout.base[name], value)

    def _get(self, c):
        v = self._cur.get(c)
        if v is None:
            v = self._read(c)
            self._cur[c] = v
        return v

    def _set(self, c, value):
        if self._guard_only:
            raise GuardDone
        self._cur[c] = value
        self._written[c] = value

    def _candidates(self, f, idx):
        """(column, condition) for every cell a possibly state-valued index can name."""
        for i, n in zip(idx, f.shape):
            if _is_const(i) and not 0 <= i < n:
                raise DeclarationError(f"index {i} out of range for {f.name} (size {n})")
        choices = [[i] if _is_const(i) else list(range(n)) for i, n in zip(idx, f.shape)]
        for combo in itertools.product(*choices):
            cond = all_of(i == k for i, k in zip(idx, combo) if not _is_const(i))
            yield self._layout.column(f.name, combo), cond

    def read_cell(self, f, idx):
        c = self._layout.cell_column.get((f.name, idx)) if all(_is_const(i) for i in idx) else None
        if c is not None:
            return self._get(c)
        cands = list(self._candidates(f, idx))
        value = self._get(cands[0][0])
        for c, cond in cands[1:]:
            value = where(cond, self._get(c), value)
        return value

    def write_cell(self, f, idx, value):
        c = self._layout.cell_column.get((f.name, idx)) if all(_is_const(i) for i in idx) else None
        if c is not None:
            self._set(c, value)
            return
        cands = list(self._candidates(f, idx))
        if len(cands) == 1:
            self._set(cands[0][0], value)
            return
        self._index_obligations.append((f.name, [cond for _, cond in cands]))
        for c, cond in cands:
            self._set(c, where(cond, value, self._get(c)))


class Cells:
    """A (partially indexed) array field."""

    __slots__ = ("view", "field", "prefix")

    def __init__(self, view, field, prefix):
        self.view, self.field, self.prefix = view, field, prefix

    def __len__(self):
        return self.field.shape[len(self.prefix)]

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __getitem__(self, i):
        idx = self.prefix + (i,)
        if len(idx) < len(self.field.shape):
            return Cells(self.view, self.field, idx)
        return self.view.read_cell(self.field, idx)

    def __setitem__(self, i, value):
        idx = self.prefix + (i,)
        if len(idx) < len(self.field.shape):
            raise DeclarationError(f"assign the cells of {self.field.name}, not a whole row")
        self.view.write_cell(self.field, idx, value)


def _is_const(i):
    return type(i) is int


def scalar_reader(layout, row):
    """Backend: one state, numpy scalar values."""
    def read(c):
        v = row[c]
        return np.bool_(v) if layout.boolean[c] else np.int64(v)
    return read


def z3_variables(layout, prefix="s"):
    """One z3 constant per column: Bool for boolean cells, Int otherwise."""
    import z3           # z3 loads only where specs are traced symbolically (loading checks, BMC, proofs)
    return [z3.Bool(f"{prefix}.{n}") if b else z3.Int(f"{prefix}.{n}")
            for n, b in zip(layout.names, layout.boolean)]


def z3_type_ok(layout, variables):
    """Every integer cell of a symbolic state within its declared bounds."""
    import z3
    return z3.And([z3.And(v >= int(layout.lo[c]), v <= int(layout.hi[c]))
                   for c, v in enumerate(variables) if not layout.boolean[c]])


def z3_reader(variables):
    """Backend: symbolic state, values are Sym terms."""
    def read(c):
        return Sym(variables[c])
    return read
