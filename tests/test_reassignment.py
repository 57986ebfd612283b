"""Partition reassignment (model/reassignment.py): the replica set as state, and symmetry reduction kept sound."""
import numpy as np

from isrcheck.checker.exhaustive.bfs import search
from isrcheck.checker.engine.budget import Budget
from isrcheck.model import backends
from isrcheck.specs import SPECS

#: three brokers, replicas 0 and 1; one reassignment adds broker 2 and removes both, so two removed replicas leave the
#: ISR one after the other (enough leader epochs for an election, the start, and the completion's three)
TWO_REMOVED = dict(replicas=3, log_size=1, max_records=1, max_epochs=5, max_crashes=0, reassignments=1,
                   reassign_remove=2)


#: levels the symmetric and plain searches compare (a loss of an acknowledged record shows at 6 steps, an ISR member
#: lacking one at 9: a hard crash loses the leader's unflushed tail)
DEPTH = 9


def early_states(spec, depth):
    """Every state within ``depth`` steps of the initial one (column-major)."""
    found = []
    search(spec, [], budget=Budget(max_depth=depth), on_states=lambda rows: found.append(rows.copy()))
    return np.concatenate(found, axis=1)


def rename(spec, rows, perm):
    """The states with replica i renamed perm[i]: the cells of every replica axis moved, replica-valued cells
    mapped (none stays none)."""
    layout = spec.layout
    out = np.empty_like(rows)
    for f in layout.fields.values():
        axes = f.axes or (None,) * len(f.shape)
        for idx in f.cells():
            col = rows[layout.column(f.name, idx)]
            if f.values == "replica":
                named = (col >= 0) & (col < layout.replicas)
                col = np.where(named, np.array(perm, dtype=np.int8)[np.where(named, col, 0)], col)
            out[layout.column(f.name, tuple(perm[i] if ax == "replica" else i for i, ax in zip(idx, axes)))] = col
    return out


def renamed_instance(spec, inst, perm):
    """The action instance whose parameters are inst's renamed: replicas, leader choices (R: none), target sets."""
    R = spec.R

    def move(name, value):
        domain = type(spec).__dict__.get(inst.name) or getattr(type(spec), inst.name)
        kind = domain.__isrcheck_action__[name]
        if kind == "TARGETS":
            return sum(1 << perm[i] for i in range(R) if value >> i & 1)
        if kind in ("REPLICAS", "LEADER_CHOICES"):
            return perm[value] if value < R else value
        return value
    params = {k: move(k, v) for k, v in inst.params.items()}
    return next(a for a in spec.actions if a.name == inst.name and a.params == params)


def successors(spec, inst, rows):
    """(enabled mask, successor rows of the enabled states) of one action instance over a batch."""
    batch = backends.batch(spec)
    enabled = np.asarray(batch.guards(rows)[inst.id], dtype=bool)
    picked = np.flatnonzero(enabled)
    out = rows[:, picked].copy()
    for c, v in batch.update(inst, rows, picked)._written.items():
        out[c] = v
    return enabled, out


def commuting_actions(spec, rows, perm=(2, 0, 1)):
    """Assert that renaming the states by ``perm`` and stepping gives the renamed successors, for every action
    instance; return the names of the actions enabled somewhere."""
    moved = rename(spec, rows, perm)
    fired = set()
    for inst in spec.actions:
        enabled, after = successors(spec, inst, rows)
        enabled_moved, after_moved = successors(spec, renamed_instance(spec, inst, perm), moved)
        assert np.array_equal(enabled, enabled_moved), inst.label
        assert np.array_equal(rename(spec, after, perm), after_moved), inst.label
        if enabled.any():
            fired.add(inst.name)
    return fired


def test_every_action_commutes_with_renaming_while_replica_sets_change():
    """Symmetry reduction is sound when renaming replicas commutes with every step: a renamed state has the renamed
    successors. The replica set, the adding and removing replicas and each request's recipients are state the
    renaming carries; no action names a replica by its id (the removed replicas leave the ISR in any order)."""
    spec = SPECS["kafka-2.6.1"](**TWO_REMOVED)
    fired = commuting_actions(spec, early_states(spec, 11))
    assert {"start_reassignment", "complete_reassignment", "apply_stop_replica"} <= fired


def test_symmetric_and_plain_searches_agree_with_reassignments():
    """Three brokers, replicas 0 and 1 (renaming them keeps the assignment): every invariant broken within the first
    levels is broken at the same depth by the symmetric search, which visits fewer states."""
    spec = SPECS["kafka-2.6.1"](**{**TWO_REMOVED, "reassign_remove": 1, "unflushed_loss": 1, "max_crashes": 1})
    names = list(spec.invariants)
    plain = search(spec, names, budget=Budget(max_depth=DEPTH))
    reduced = search(spec, names, symmetry=True, budget=Budget(max_depth=DEPTH))
    assert plain.depth == reduced.depth == DEPTH
    assert {n: len(v.steps) for n, v in reduced.violations.items()} == \
        {n: len(v.steps) for n, v in plain.violations.items()}
    assert plain.violations and reduced.distinct_states < plain.distinct_states


#: KRaft: three brokers, replicas 0 and 1; one reassignment adds broker 2 and removes one (any leader epochs it takes)
KRAFT_MOVE = dict(replicas=3, log_size=1, max_records=1, max_epochs=3, max_crashes=1, reassignments=1)


def test_kraft_actions_commute_with_renaming_while_replica_sets_change():
    """The KRaft family's replica set lives in the registration, in every record of the metadata window and in each
    broker's image and assignment, all carried by a renaming: renaming commutes with every step, the reassignment's
    first record, its completion (by AlterPartition, electing another leader or not) and the deletion included."""
    spec = SPECS["kafka-3.9"](**KRAFT_MOVE)
    fired = commuting_actions(spec, early_states(spec, 8))
    assert {"alter_partition_reassignments", "alter_partition", "alter_partition_elects", "apply_metadata"} <= fired


def test_kraft_removed_replica_deletes_its_log_after_the_completion():
    """Within a few steps a reassignment moves the partition from r0 to r1: the AlterPartition adding r1 completes it
    (r1 leads in a new leader epoch, the replica set is {r1}), and r0, once its image has the record, holds no log."""
    spec = SPECS["kafka-3.9"](replicas=2, log_size=1, max_records=1, max_epochs=3, max_crashes=0, reassignments=1)
    rows = early_states(spec, 9)
    col = {name: (lambda *idx, n=name: rows[spec.layout.column(n, idx)]) for name in
           ("reassigns", "q_adding", "q_removing", "q_replicas", "q_leader", "img_lag", "img_replica", "leo",
            "acked_at")}
    done = (col["reassigns"]() == 1) & (col["q_removing"](0) == 0) & (col["q_adding"](1) == 0)
    applied = done & (col["img_lag"](0) == 0) & (col["acked_at"](0) >= 0)
    assert applied.any()
    assert set(col["q_replicas"](0)[done]) == {0} and set(col["q_replicas"](1)[done]) == {1}
    assert set(col["q_leader"]()[applied]) == {1} and set(col["img_replica"](0)[applied]) == {0}
    assert set(col["leo"](0)[applied]) == {0}
