"""The expression language shared by every backend.

Guards, updates and invariants are ordinary Python over *state values*. What a
state value is depends on the backend running the spec:

- scalar: numpy scalars (``np.int64`` / ``np.bool_``), one state at a time;
- numpy:  1-D arrays, one entry per state of a batch;
- z3:     :class:`Sym`, a thin wrapper over a z3 term.

Operators (``+ - * < <= > >= == != & | ~``) work on all three. Python ``if``,
``and``, ``or``, ``not`` on a state value are forbidden: on a z3 value they raise
:class:`DeclarationError` (spec loading runs every action on z3 first, so such a
spec fails at load time). The helpers below are the only other vocabulary:
``where`` (conditional), ``any_of``/``all_of``/``count_of``/``min_of``/``max_of``
over constant-length sequences.
"""
from __future__ import annotations

from contextlib import contextmanager
from functools import reduce

import numpy as np


class DeclarationError(Exception):
    """A spec breaks the expression discipline or a field's bounds."""


class Traced:
    """Values that build an expression graph instead of computing (see model/compile.py).

    Subclasses provide ``where``, ``minimum`` and ``maximum`` as classmethods.
    """


_arithmetic = []          # stack of lists collecting integer results while a spec loads


@contextmanager
def track_arithmetic():
    """Collect the z3 term of every integer sum, difference and product built inside the block."""
    _arithmetic.append([])
    try:
        yield _arithmetic[-1]
    finally:
        _arithmetic.pop()


def _noted(term_):
    if _arithmetic:
        _arithmetic[-1].append(term_)
    return Sym(term_)


class Sym:
    """A z3 term with Python operators that keep Bool and Int apart."""

    __slots__ = ("t",)

    def __init__(self, term):
        self.t = term

    def __bool__(self):
        raise DeclarationError(
            "Python `if`/`and`/`or`/`not` used on a state value; use where(), &, |, ~ instead")

    def __index__(self):
        raise DeclarationError("a state value used as a Python index; index the field itself")

    __hash__ = None

    @property
    def is_bool(self):
        import z3           # z3 loads only where specs are traced symbolically (loading checks, BMC, proofs)
        return z3.is_bool(self.t)

    # arithmetic
    def __add__(self, o): return _noted(self.t + term(o))
    def __radd__(self, o): return _noted(term(o) + self.t)
    def __sub__(self, o): return _noted(self.t - term(o))
    def __rsub__(self, o): return _noted(term(o) - self.t)
    def __mul__(self, o): return _noted(self.t * term(o))
    def __rmul__(self, o): return _noted(term(o) * self.t)
    def __neg__(self): return _noted(-self.t)

    # comparisons
    def __lt__(self, o): return Sym(self.t < term(o))
    def __le__(self, o): return Sym(self.t <= term(o))
    def __gt__(self, o): return Sym(self.t > term(o))
    def __ge__(self, o): return Sym(self.t >= term(o))
    def __eq__(self, o): return Sym(self.t == term(o))
    def __ne__(self, o): return Sym(self.t != term(o))

    # boolean connectives
    def __and__(self, o):
        import z3
        return Sym(z3.And(self.t, term(o)))
    __rand__ = __and__

    def __or__(self, o):
        import z3
        return Sym(z3.Or(self.t, term(o)))
    __ror__ = __or__

    def __invert__(self):
        import z3
        return Sym(z3.Not(self.t))

    def __repr__(self):
        return f"Sym({self.t})"


def term(v):
    """The z3 term for a Sym or a Python/numpy constant."""
    if isinstance(v, Sym):
        return v.t
    import z3
    if isinstance(v, z3.ExprRef):
        return v
    if isinstance(v, (bool, np.bool_)):
        return z3.BoolVal(bool(v))
    return z3.IntVal(int(v))


def _is_sym(*vs):
    return any(isinstance(v, Sym) for v in vs)


def where(cond, then, otherwise):
    """``then`` where ``cond`` holds, else ``otherwise`` (TLA+'s IF-THEN-ELSE)."""
    for v in (cond, then, otherwise):
        if isinstance(v, Traced):
            return type(v).where(cond, then, otherwise)
    if _is_sym(cond, then, otherwise):
        import z3
        return Sym(z3.If(term(cond), term(then), term(otherwise)))
    if isinstance(cond, np.ndarray) or isinstance(then, np.ndarray) or isinstance(otherwise, np.ndarray):
        return np.where(cond, then, otherwise)
    return then if cond else otherwise


def any_of(values):
    """True where at least one value holds (an unrolled OR over a constant range)."""
    values = list(values)
    return reduce(lambda a, b: a | b, values) if values else False


def all_of(values):
    """True where every value holds (an unrolled AND over a constant range)."""
    values = list(values)
    return reduce(lambda a, b: a & b, values) if values else True


def count_of(values):
    """How many of the boolean values hold."""
    return reduce(lambda a, b: a + b, (where(v, 1, 0) for v in values), 0)


def _pairwise(values, pick_left):
    values = list(values)
    if not values:
        raise DeclarationError("min_of/max_of of an empty range")

    def step(a, b):
        traced = a if isinstance(a, Traced) else b if isinstance(b, Traced) else None
        if traced is not None:
            return type(traced).minimum(a, b) if pick_left == "min" else type(traced).maximum(a, b)
        if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
            return np.minimum(a, b) if pick_left == "min" else np.maximum(a, b)
        return where(a <= b, a, b) if pick_left == "min" else where(a >= b, a, b)
    return reduce(step, values)


def min_of(values):
    """The smallest of a constant-length sequence of values."""
    return _pairwise(values, "min")


def max_of(values):
    """The largest of a constant-length sequence of values."""
    return _pairwise(values, "max")
