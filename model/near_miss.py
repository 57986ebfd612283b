"""Names a spec class defines that override nothing but are a letter or two from a name it inherits.

A protocol version changes behaviour by redefining what its family declares: a hook
(``fetch_accepted``), an action or invariant, a switch (``restart_noticed = True``), a declaration
(``expected``, ``summary``). A name that misses by a typo (``fetch_acepted``, ``expectd``) redefines
nothing: the parent's version silently stays in force. :func:`check` refuses such a name when the class is
created (as Hypothesis rejects a misused strategy at definition), naming the file and line, the inherited
name it is close to, and what to do. A helper of the version's own keeps its name when it starts with
``_`` or is not that close to an inherited one.
"""
from __future__ import annotations

from isrcheck.model.expr import DeclarationError
from isrcheck.model.sources import of_attribute


def distance(a, b, most):
    """The edit distance of two names (insertions, deletions, substitutions, swaps of neighbours), or ``most + 1``
    once it is known to exceed ``most``."""
    if abs(len(a) - len(b)) > most:
        return most + 1
    before, row = None, list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        current = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            current[j] = min(row[j] + 1, current[j - 1] + 1, row[j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                current[j] = min(current[j], before[j - 2] + 1)
        if min(current) > most:
            return most + 1
        before, row = row, current
    return row[-1]


def allowed(name):
    """How many edits away from an inherited name a new one counts as a typo of it: none for short names."""
    return 0 if len(name) < 5 else 1 if len(name) < 9 else 2


def _kind(value):
    """What an inherited name is, in the words of the advice."""
    fn = getattr(value, "__func__", value)
    if hasattr(fn, "__isrcheck_action__"):
        return "an action"
    if hasattr(fn, "__isrcheck_invariant__"):
        return "an invariant"
    if hasattr(fn, "__isrcheck_leads_to__"):
        return "a liveness property"
    return "a hook" if callable(fn) else "a setting"


def inherited(cls):
    """name -> (class that defines it, value) of every public name the bases of ``cls`` define (nearest first)."""
    out = {}
    for base in cls.__mro__[1:]:
        if base is object:
            continue
        for attr, value in vars(base).items():
            if not attr.startswith("_"):
                out.setdefault(attr, (base, value))
    return out


def check(cls):
    """Refuse (DeclarationError) a public name ``cls`` defines that no base defines, within :func:`allowed` edits of
    one a base does (a new action, invariant or property is not refused: it declares something of its own)."""
    known = inherited(cls)
    letters = None
    for attr, value in vars(cls).items():
        if attr.startswith("_") or attr in known or not allowed(attr) or _kind(value) not in ("a hook", "a setting"):
            continue                    # a new action, invariant or property is a declaration of its own
        most = allowed(attr)
        if letters is None:
            letters = {name: frozenset(name) for name in known}
        mine = frozenset(attr)
        # an edit changes at most two letters of the set of letters a name uses: a cheap test before the distance
        near = sorted((distance(attr, k, most), k) for k in known
                      if abs(len(k) - len(attr)) <= most and len(letters[k] ^ mine) <= 2 * most)
        if not near or near[0][0] > most:
            continue
        best = near[0][1]
        base, value = known[best]
        raise DeclarationError(
            f"{of_attribute(cls, attr)}: {cls.__name__}.{attr} overrides nothing, and {base.__name__} has "
            f"{best} ({_kind(value)}), which stays as {base.__name__} defines it: rename {attr} to {best} to "
            f"change it; a name of this class's own must not be that close to an inherited one (start a helper's "
            f"name with _)")
