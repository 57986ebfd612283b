"""Typed ITF: a trace's values written as the ITF types their field declarations give them.

The compact form (the default) writes every cell as the layout holds it: integers, booleans and
lists of them. The typed form reads the spec's ``Field`` declarations, and nothing else, so an ITF
viewer shows what a value means:

- a boolean array whose last axis is ``"replica"`` (a set of replicas, e.g. an ISR) is a ``#set`` of
  replica names; an array of them a list of sets;
- a field declared ``values="replica"`` holds a replica name, ``"r0"`` .. ``"r{R-1}"`` (as Apalache writes
  the values of an uninterpreted type, as strings), and its one value that names no replica (e.g. "no
  leader") is the explicit ``"none"``;
- every other array is a list, every other cell an integer or a boolean.

Reading (``checker.traces.trace``) accepts both forms, and ITF's ``#bigint``, ``#tup`` and ``#map`` too.
"""
from __future__ import annotations

NO_REPLICA = "none"


def replica_count(layout):
    """The length of the layout's ``"replica"`` axes (all have the same), or None when it has none."""
    for f in layout.fields.values():
        if "replica" in f.axes:
            return f.shape[f.axes.index("replica")]
    return None


def no_replica_value(field, replicas):
    """The one value of a ``values="replica"`` field's range that names no replica, or None if there is not
    exactly one (then such values are written as integers)."""
    others = [v for v in range(field.lo, field.hi + 1) if not 0 <= v < replicas]
    return others[0] if len(others) == 1 else None


def is_replica_set(field, rank, replicas):
    """Whether the field's innermost ``rank``-1 level is a set of replicas (a flag per replica)."""
    return replicas is not None and rank == 1 and field.boolean and field.axes[-1:] == ("replica",)


def typed_state(layout, state):
    """A decoded state (field name -> nested lists of ints or bools) in the typed form."""
    replicas = replica_count(layout)
    return {name: _typed(layout.fields[name], value, replicas, 0) for name, value in state.items()}


def _typed(field, value, replicas, depth):
    rank = len(field.shape) - depth
    if is_replica_set(field, rank, replicas):
        return {"#set": [f"r{i}" for i, member in enumerate(value) if member]}
    if rank:
        return [_typed(field, v, replicas, depth + 1) for v in value]
    if field.values == "replica" and replicas is not None:
        if 0 <= value < replicas:
            return f"r{value}"
        if value == no_replica_value(field, replicas):
            return NO_REPLICA
    return value


def replica_id(field, text, replicas, where):
    """The cell value a replica name stands for (``"r1"`` -> 1, ``"none"`` -> the field's no-replica value);
    ValueError naming ``where`` otherwise."""
    if replicas is not None and text == NO_REPLICA and field.values == "replica":
        value = no_replica_value(field, replicas)
        if value is not None:
            return value
    if replicas is not None and text[:1] == "r" and text[1:].isdigit() and text[1:].isascii() \
            and int(text[1:]) < replicas and len(text) <= 4:
        return int(text[1:])
    raise ValueError(f"{where}: {text!r} is not a replica name (r0..r{(replicas or 1) - 1}"
                     + (f" or {NO_REPLICA!r})" if field.values == "replica" else ")"))
