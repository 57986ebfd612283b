"""How a protocol family's traces read: the presentation hook (Stateright's ``format_action``/``format_step``).

A spec names its family's presentation (``Spec.presentation_class``); ``isrcheck
show`` (text, Mermaid, dot) and the gate's Markdown summary ask it, and only it,
for everything protocol-specific::

    presentation = spec.presentation
    presentation.explain(trace, invariant=None) -> [Line]     # a sentence per step, then marks
    presentation.summary(trace, invariant=None) -> str        # one line: what broke
    presentation.consequence(invariant) -> str                # what a violation means
    presentation.epilogue() -> [(label, text)]                # closing notes of ``show``
    presentation.table_fields() -> (per-replica columns, partition-wide fields)
    presentation.log_text(state, r) -> str | None             # the replica's log column
    presentation.log_cells(state, r) -> [(offset, record, epoch)] | None   # the log, entry by entry
    presentation.markers(state, r) -> {"LEO": offset, "HW": offset}        # offsets drawn on the log
    presentation.believes_leads(state, r) -> bool             # the replica thinks it is the leader
    presentation.lost(trace, invariant=None) -> (record, offset) | None    # the committed record lost
    presentation.message(name, params, prev, cur) -> (from, to, text)   # a Mermaid message
    presentation.state_label(state) -> str                    # a dot node

This base class is the generic presentation: every field shown by its name, and
a step said as its action and the fields it changed. A family subclasses it
(``model/kafka_present.py``, ``specs/tla/present.py``) and lists the actions it
narrates in ``narrated``: when the family's base class declares an action
missing from it (renamed, or added without its narration), no spec of the
family loads.

``trace`` is a :class:`checker.traces.trace.Trace` (from any engine, or loaded from a
file) or engine steps ``[(ActionInstance or None, row)]`` (then pass
``invariant``). Step index 0 is the initial state; index i is the state after
the i-th action.
"""
from __future__ import annotations

from isrcheck.model.expr import DeclarationError
from isrcheck.model import backends


class Line(tuple):
    """``(step index, sentence)``, with ``kind``: ``"step"`` for the per-step sentence, else a mark
    (``"violated"``, and whatever marks a family adds, e.g. ``"acked"``, ``"lost"``)."""

    def __new__(cls, step, text, kind="step"):
        self = tuple.__new__(cls, (step, text))
        self.kind = kind
        return self

    @property
    def step(self):
        return self[0]

    @property
    def text(self):
        return self[1]


def step_label(name, params):
    """An action with its parameters, as written in traces: ``fetch(f=1, l=0)``."""
    return "initial state" if name is None else f"{name}({', '.join(f'{k}={v}' for k, v in params.items())})"


class Presentation:
    """The generic presentation; a protocol family subclasses it (see the module doc)."""

    #: the action names this presentation narrates (None: every action, generically)
    narrated = None
    #: per-replica fields shown as table columns first, in this order: field name -> header
    columns = {}
    #: per-replica fields not shown as columns (drawn in the log column instead)
    hidden = ()
    #: name prefixes of fields indexed by replica that are partition-wide (not a replica's own)
    partition_prefixes = ()
    #: the header of the log column (shown when ``log_text`` gives text)
    log_header = "log"
    #: (record field, epoch field, end-offset field) of the per-replica log, or None when there is none
    log_fields = None
    #: the per-replica high watermark field (drawn on the log), if any
    hw_field = "hw"
    #: the per-replica field holding the leader a replica believes in, if any
    leader_field = "leader"
    #: Mermaid participants before the replicas
    participants = ()
    #: action parameters naming a replica (where a Mermaid note goes)
    replica_params = ()

    def __init__(self, spec):
        self.spec = spec
        self.R = spec.layout.replicas

    @classmethod
    def check(cls, spec):
        """Every action the family's base class declares (the class that names this presentation) is
        narrated: renaming one there without its narration does not silently degrade ``show``. An action
        a version adds is said generically unless narrated (tests/test_structure.py checks that the
        narration names no action that no spec declares)."""
        if cls.narrated is None:
            return
        family = next(k for k in type(spec).__mro__ if vars(k).get("presentation_class") is cls)
        missing = [name for name, fn in vars(family).items()
                   if hasattr(fn, "__isrcheck_action__") and name not in cls.narrated]
        if missing:
            raise DeclarationError(f"action {missing[0]}: {cls.__name__} does not narrate it (renamed? add it "
                                   f"to {cls.__name__}.narrated with its phrase)")

    # --- steps ---------------------------------------------------------------------------------
    def steps(self, trace, invariant=None):
        """(invariant name or None, [(action name or None, params, decoded state)])."""
        if hasattr(trace, "steps"):                 # a checker.traces.trace.Trace
            return invariant or trace.invariant, list(trace.steps)
        out = []
        for inst, row in trace:
            state = row if isinstance(row, dict) else self.spec.layout.decode(row)
            out.append((inst.name if inst is not None else None, dict(inst.params) if inst is not None else {},
                        state))
        return invariant, out

    # --- tables (show, the gate's Markdown) ------------------------------------------------------
    def replica_fields(self):
        """Fields whose first axis is the replica, other than the partition-wide ones."""
        return [f for f in self.spec.layout.fields.values()
                if f.axes and f.axes[0] == "replica" and not f.name.startswith(tuple(self.partition_prefixes))]

    def table_fields(self):
        """(the per-replica columns in order, the partition-wide fields)."""
        per_replica = self.replica_fields()
        order = list(self.columns)
        shown = [f for f in per_replica if f.name not in self.hidden]
        shown.sort(key=lambda f: order.index(f.name) if f.name in order else len(order))
        return shown, [f for f in self.spec.layout.fields.values() if f not in per_replica]

    def header(self, field):
        return self.columns.get(field.name, field.name)

    def log_cells(self, state, r):
        """Replica r's log as [(offset, record, epoch)] up to its end offset, or None when the family draws no
        log (``log_fields`` unset, or the spec lacks those fields)."""
        if self.log_fields is None or not set(self.log_fields) <= state.keys():
            return None
        record, epoch, end = self.log_fields
        return [(o, state[record][r][o], state[epoch][r][o]) for o in range(state[end][r])]

    def log_text(self, state, r):
        """Replica r's log as text (``offset:record@epoch``), or None when the family draws no log column."""
        cells = self.log_cells(state, r)
        if cells is None:
            return None
        return " ".join(f"{o}:{m}@{e}" for o, m, e in cells) or "∅"

    def markers(self, state, r):
        """Offsets drawn on replica r's log: its log end offset and high watermark (those the spec has)."""
        out = {}
        if self.log_fields is not None and self.log_fields[2] in state:
            out["LEO"] = state[self.log_fields[2]][r]
        if self.hw_field in state:
            out["HW"] = state[self.hw_field][r]
        return out

    def believes_leads(self, state, r):
        """Whether replica r believes it leads: its leader field names itself (and it is up, if modelled)."""
        if self.leader_field not in state:
            return False
        up = state.get("up")
        return state[self.leader_field][r] == r and (up is None or bool(up[r]))

    def lost(self, trace, invariant=None):
        """(record, offset) of the committed record a trace loses, when the family can tell; else None."""
        return None

    def fmt_value(self, field, value, depth=0):
        """A field value as text: replica ids as r0.., replica sets as {r0,r1}, flags as ●/○; arrays
        element-wise."""
        rank = len(field.shape) - depth
        if rank > 1 or (rank == 1 and not (field.boolean and field.axes[-1:] == ("replica",))):
            return "[" + " ".join(self.fmt_value(field, v, depth + 1) for v in value) + "]"
        if rank == 1:
            return "{" + ",".join(f"r{i}" for i, b in enumerate(value) if b) + "}"
        if field.values == "replica":
            return "-" if value == self.R else f"r{value}"
        if isinstance(value, bool):
            return "●" if value else "○"
        return str(value)

    # --- words ------------------------------------------------------------------------------------
    def phrase(self, prev, cur, name, params):
        """One sentence for a step (``prev`` is None for the initial state); states are decoded dicts."""
        if prev is None:
            return "Initial state."
        changed = [k for k in cur if prev.get(k) != cur.get(k)]
        return f"{step_label(name, params)}: changes {', '.join(changed) or 'nothing'}."

    def detail(self, invariant, states):
        """What exactly is wrong in the last state, or None (then the invariant's meaning is said)."""
        return None

    def explain(self, trace, invariant=None):
        """A sentence per step, and a ``"violated"`` mark at the last step when the invariant fails there."""
        invariant, steps = self.steps(trace, invariant)
        lines = [Line(i, self.phrase(steps[i - 1][2] if i else None, st, name, params))
                 for i, (name, params, st) in enumerate(steps)]
        return lines + self.violation(steps, invariant)

    def violation(self, steps, invariant):
        """The ``"violated"`` mark at the last step, when the invariant fails there (else nothing)."""
        if not steps or invariant is None or invariant not in self.spec.invariants:
            return []
        try:
            row = self.spec.layout.encode(steps[-1][2])
        except (ValueError, KeyError):
            row = None
        if row is not None and backends.scalar(self.spec).holds(row, self.spec.invariants[invariant]):
            return []
        detail = self.detail(invariant, [st for _, _, st in steps])
        text = f"{invariant} breaks here: {detail or self.meaning(invariant)}"
        loss = self.consequence(invariant)
        return [Line(len(steps) - 1, f"{text} {loss}" if loss else text, "violated")]

    def summary(self, trace, invariant=None):
        """One line: which invariant broke after how many steps, and what is wrong."""
        invariant, steps = self.steps(trace, invariant)
        if not steps:
            return "empty trace"
        n = len(steps) - 1
        if invariant is None:
            return f"trace of {n} steps (no invariant named)"
        head = f"{invariant} violated after {n} step{'s' if n != 1 else ''}"
        detail = self.detail(invariant, [st for _, _, st in steps])
        if detail:
            return f"{head}: {detail}"
        inv = self.spec.invariants.get(invariant)
        return f"{head}: {self.meaning(invariant) if inv else ''}".rstrip(": ")

    def meaning(self, invariant):
        """What ``invariant`` says, in the family's terms."""
        return self.spec.invariants[invariant].meaning

    def consequence(self, invariant):
        """What a violation of ``invariant`` means for users."""
        return self.spec.invariants[invariant].loss

    def epilogue(self):
        """(label, text) notes ``show`` prints last."""
        return []

    # --- diagrams ----------------------------------------------------------------------------------
    def message(self, name, params, prev, cur):
        """(from, to, text) of one step in a Mermaid sequence diagram: by default from the first replica
        parameter (or the first participant) to itself."""
        first = self.participants[0] if self.participants else "r0"
        who = next((f"r{v}" for v in params.values() if isinstance(v, int) and 0 <= v < self.R), first)
        return who, who, step_label(name, params)

    def note_over(self, params):
        """Where a Mermaid note about a step goes: its replicas (at most two), else across all replicas."""
        reps = [f"r{v}" for k, v in params.items() if isinstance(v, int) and 0 <= v < self.R
                and k in self.replica_params]
        if not reps:
            return f"r0,r{self.R - 1}" if self.R > 1 else "r0"
        return ",".join(dict.fromkeys(reps[:2]))

    def state_label(self, state):
        """A state as the text of a dot node: one line per field."""
        lines = []
        for name, value in state.items():
            f = self.spec.layout.fields[name]
            lines.append(f"{name}={self.fmt_value(f, value)}")
        return "\n".join(lines)
