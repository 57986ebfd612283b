"""Counterexample traces as data: ITF JSON (the TLA+ ecosystem's trace format).

A trace file holds ``#meta`` (spec, bounds, invariant, engine, seed, tool
version), ``vars`` (the state fields) and ``states``; every state also names, in
its own ``#meta``, the action and parameters that produced it. Reading a trace
never executes anything from it: actions are looked up by name in the spec.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

from isrcheck.checker import __version__
from isrcheck.checker.guards import atomic, userfile
from isrcheck.checker.traces.itf_types import is_replica_set, replica_count, replica_id, typed_state
from isrcheck.checker.command_line.registry import known as known_specs
from isrcheck.model.spec import BoundsError
from isrcheck.model import backends


class TraceError(ValueError):
    """A trace file that cannot be read or does not fit the current model (one line, for exit code 2)."""


@dataclass
class Trace:
    spec: str
    bounds: dict
    invariant: str
    engine: str
    steps: list                      # [(action name or None, params dict, decoded state dict)]
    seed: int | None = None
    extra: dict = field(default_factory=dict)

    def __len__(self):
        return len(self.steps)


def from_steps(spec, invariant, engine, steps, seed=None, **extra):
    """A Trace from engine steps [(ActionInstance or None, row)]."""
    decoded = [(a.name if a else None, dict(a.params) if a else {}, spec.layout.decode(row)) for a, row in steps]
    return Trace(spec.name, dict(spec.bounds), invariant, engine, decoded, seed, extra)


def to_itf(trace, typed_for=None):
    """The ITF object of a trace: compact (cells as the layout holds them), or typed by the field declarations of
    ``typed_for``, a spec of the trace (:mod:`checker.traces.itf_types`)."""
    states = []
    for i, (name, params, state) in enumerate(trace.steps):
        if typed_for is not None:
            state = typed_state(typed_for.layout, state)
        states.append({"#meta": {"index": i, "action": name, "params": params}, **state})
    return {
        "#meta": {"format": "ITF", "tool": "isrcheck", "version": __version__, "spec": trace.spec,
                  "bounds": trace.bounds, "invariant": trace.invariant, "engine": trace.engine,
                  "seed": trace.seed, **trace.extra},
        "vars": list(trace.steps[0][2]) if trace.steps else [],
        "states": states,
    }


def save(trace, path, typed_for=None):
    """Write atomically and durably (:mod:`checker.guards.atomic`), so an interrupted run never leaves half a trace;
    ``atomic.WriteFailed`` (nothing left behind) when the disk refuses it.

    ``typed_for`` (the trace's spec): the typed form (:func:`to_itf`)."""
    return atomic.write_text(path, itf_text(trace, typed_for))


def itf_text(trace, typed_for=None):
    """The trace file's text: the ITF object of :func:`to_itf`, one state per line (readable and diff-friendly)."""
    itf = to_itf(trace, typed_for)
    return ('{"#meta": ' + json.dumps(itf["#meta"]) + ',\n "vars": ' + json.dumps(itf["vars"])
            + ',\n "states": [\n  ' + ",\n  ".join(json.dumps(s) for s in itf["states"]) + "\n ]\n}\n")


MAX_TRACE_BYTES = 4 << 20       # 300 times the longest saved trace (14 KB); `show` prints 4 MB in about half a minute


def read_text(path):
    """A regular file's text, at most MAX_TRACE_BYTES of UTF-8 (TraceError otherwise; :mod:`checker.guards.userfile`:
    a FIFO, a device or a symlink to one is refused rather than waited on or read without end)."""
    try:
        return userfile.read_text(path, "trace file", MAX_TRACE_BYTES)
    except userfile.UserFileError as e:
        raise TraceError(str(e)) from None


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def load(path):
    """Read a trace file; any problem raises TraceError naming the file and what is wrong.

    This checks the file's shape; :func:`conform` checks its states and actions against a spec.
    """
    text = read_text(path)
    try:
        data = json.loads(text, parse_constant=userfile.no_json_constant)
    except json.JSONDecodeError as e:
        raise TraceError(f"{path}: not valid JSON (line {e.lineno}, column {e.colno}: {e.msg})") from None
    except RecursionError:
        raise TraceError(f"{path}: JSON nested too deeply") from None
    except ValueError as e:         # NaN/Infinity, or an integer of thousands of digits
        raise TraceError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(data, dict) or not isinstance(data.get("#meta", {}), dict) \
            or not isinstance(data.get("states"), list):
        raise TraceError(f"{path}: not an ITF trace (needs 'states', and '#meta' an object)")
    meta = data.get("#meta", {})
    if "spec" in meta or "invariant" in meta:   # isrcheck's; without, a trace from another tool (checker/traces/foreign.py)
        for key in ("spec", "invariant"):
            if not isinstance(meta.get(key), str):
                raise TraceError(f"{path}: '#meta' has no {key!r}")
    if not isinstance(meta.get("engine", "?"), str):
        raise TraceError(f"{path}: '#meta.engine' is not a string")
    if meta.get("seed") is not None and not _is_int(meta["seed"]):
        raise TraceError(f"{path}: '#meta.seed' is not an integer")
    if "vars" in data and not (isinstance(data["vars"], list) and all(isinstance(v, str) for v in data["vars"])):
        raise TraceError(f"{path}: 'vars' is not a list of names")
    if not data["states"]:
        raise TraceError(f"{path}: trace has no states")
    steps = []
    for i, st in enumerate(data["states"]):
        if not isinstance(st, dict) or not isinstance(st.get("#meta", {}), dict):
            raise TraceError(f"{path}: state {i} is not an object")
        m = st.get("#meta", {})
        params = m.get("params") or {}
        if not isinstance(params, dict):
            raise TraceError(f"{path}: state {i} has malformed action parameters")
        params = {k: _scalar(v, f"{path}: state {i}: parameter {k!r}") for k, v in params.items()}
        if m.get("action") is not None and not isinstance(m["action"], str):
            raise TraceError(f"{path}: state {i}: the action is not a name")
        state = {k: v for k, v in st.items() if k != "#meta"}
        steps.append((m.get("action"), params, state))
    bounds = meta.get("bounds") or {}
    if not isinstance(bounds, dict):
        raise TraceError(f"{path}: '#meta.bounds' is not an object")
    for k, v in bounds.items():
        if not _is_int(v):
            raise TraceError(f"{path}: '#meta.bounds' {k!r} is not an integer")
    extra = {}
    if "loop" in meta:          # a lasso (checker/exhaustive/liveness.py): states[loop:] repeat forever
        for key in ("loop", "trigger"):
            if not isinstance(meta.get(key), int) or isinstance(meta[key], bool) or not 0 <= meta[key] < len(steps):
                raise TraceError(f"{path}: '#meta.{key}' must be a state index (0..{len(steps) - 1})")
        if meta["trigger"] > meta["loop"]:
            raise TraceError(f"{path}: '#meta.trigger' comes after the loop's start")
        extra = {"loop": meta["loop"], "trigger": meta["trigger"]}
    return Trace(meta.get("spec"), bounds, meta.get("invariant"), meta.get("engine", "?"), steps, meta.get("seed"),
                 extra)


def _scalar(value, where):
    """An integer cell: a JSON integer or ITF's ``{"#bigint": "-12"}``."""
    if isinstance(value, dict) and list(value) == ["#bigint"]:
        text = value["#bigint"]
        if not (isinstance(text, str) and 0 < len(text) <= 40 and text.lstrip("-").isdigit() and text.isascii()):
            raise TraceError(f"{where}: malformed #bigint")
        return int(text)
    if not _is_int(value):
        raise TraceError(f"{where}: {_kind(value)}, not an integer")
    return value


def _kind(value):
    return {bool: "a boolean", int: "an integer", str: "a string", float: "a number with a fraction", list: "a list", dict: "an object",
            type(None): "null"}.get(type(value), type(value).__name__)


def _cells(field, value, shape, where, replicas=None):
    """A state variable's value as the layout holds it (nested lists of ints or bools), or TraceError.

    ITF's encodings are read: ``#bigint`` for an integer, ``#tup`` for a list, ``#map``
    (``[[index, value], ...]`` over every index) for a list, and ``#set`` (of indices) for
    a list of flags, e.g. an ISR as a set of replica ids; and the typed form's replica names
    (``"r1"``, ``"none"``: :mod:`checker.traces.itf_types`) where the field declares replicas.
    """
    if shape:
        if isinstance(value, dict) and len(value) == 1:
            (tag, inner), = value.items()
            if tag == "#tup" and isinstance(inner, list):
                value = inner
            elif tag == "#set" and isinstance(inner, list) and len(shape) == 1 and field.boolean:
                named = is_replica_set(field, 1, replicas)
                members = {_replica(field, m, replicas, f"{where} member") if named and isinstance(m, str)
                           else _scalar(m, f"{where} member") for m in inner}
                if not members <= set(range(shape[0])):
                    raise TraceError(f"{where}: set member {max(members - set(range(shape[0])))} is outside "
                                     f"0..{shape[0] - 1}")
                value = [i in members for i in range(shape[0])]
            elif tag == "#map" and isinstance(inner, list) \
                    and all(isinstance(p, list) and len(p) == 2 for p in inner):
                by_key = {_scalar(k, f"{where} key"): v for k, v in inner}
                if sorted(by_key) != list(range(shape[0])) or len(inner) != shape[0]:
                    raise TraceError(f"{where}: a map must have exactly the keys 0..{shape[0] - 1}")
                value = [by_key[i] for i in range(shape[0])]
        if not isinstance(value, list) or len(value) != shape[0]:
            raise TraceError(f"{where}: expected a list of {shape[0]}, got "
                             + (f"a list of {len(value)}" if isinstance(value, list) else _kind(value)))
        return [_cells(field, v, shape[1:], f"{where}[{i}]", replicas) for i, v in enumerate(value)]
    if field.boolean and isinstance(value, bool):
        return value
    v = _replica(field, value, replicas, where) if isinstance(value, str) and field.values == "replica" \
        else _scalar(value, where)
    if not field.lo <= v <= field.hi:
        raise TraceError(f"{where}: {v} is outside {field.lo}..{field.hi}")
    return bool(v) if field.boolean else v


def _replica(field, text, replicas, where):
    try:
        return replica_id(field, text, replicas, where)
    except ValueError as e:
        raise TraceError(str(e)) from None


def conform(spec, trace, path="trace", actions_named=True):
    """Check every state and action of ``trace`` against ``spec`` (TraceError naming the first misfit).

    Each state must give every variable of the spec's layout, and nothing else, with
    values of the declared shape and range; it is rewritten as the layout decodes it
    (ITF encodings read). Every step after the first must name an action of the spec
    with parameters it has; the first (the initial state) names none. ``actions_named=False``: a step may name no
    action (a trace from another tool: checker/traces/foreign.py finds them).
    """
    fields = spec.layout.fields
    replicas = replica_count(spec.layout)
    actions = {a.name for a in spec.actions}
    for i, (name, params, state) in enumerate(trace.steps):
        where = f"{path}: state {i}"
        if i == 0 and name is not None:
            raise TraceError(f"{where} is the initial state, but names an action")
        if i > 0 and (name is not None or actions_named):
            if name not in actions:
                raise TraceError(f"{where}: " + ("no action named" if name is None
                                                  else f"spec {spec.name} has no action {name!r}"))
            if backends.action_named(spec, name, params) is None:
                raise TraceError(f"{where}: action {name} has no instance with parameters {params}")
        unknown = [k for k in state if k not in fields]
        if unknown:
            raise TraceError(f"{where}: {unknown[0]!r} is not a variable of spec {spec.name}")
        missing = [k for k in fields if k not in state]
        if missing:
            raise TraceError(f"{where}: variable {missing[0]!r} is missing")
        trace.steps[i] = (name, params, {k: _cells(f, state[k], f.shape, f"{where}: {k}", replicas)
                                         for k, f in fields.items()})
    return trace


def spec_for(trace, path="trace", cls=None):
    """Instantiate the trace's spec (or ``cls``, a spec class the user named) at the trace's bounds (TraceError
    if unknown, another spec's or out of range), and check the trace fits it (a trace from another tool, without
    isrcheck's ``#meta``: checker/traces/foreign.py)."""
    if cls is not None and cls.name != trace.spec:
        raise TraceError(f"{path}: a trace of spec {trace.spec!r}, not of {cls.name!r}")
    cls = cls or known_specs().get(trace.spec)
    if cls is None:
        raise TraceError(f"{path}: unknown spec {trace.spec!r} (a spec outside isrcheck: name its class with "
                         f"--spec FILE.py:CLASS or MODULE:CLASS)")
    try:
        spec = cls(**trace.bounds)
    except (BoundsError, TypeError) as e:
        raise TraceError(f"{path}: {e}") from None
    if is_lasso(trace):
        if trace.invariant not in spec.properties:
            raise TraceError(f"{path}: spec {trace.spec} has no liveness property {trace.invariant!r}")
    elif trace.invariant not in spec.invariants:
        raise TraceError(f"{path}: spec {trace.spec} has no invariant {trace.invariant!r}")
    conform(spec, trace, path)
    return spec


def is_lasso(trace):
    """A liveness counterexample: a prefix, then states[loop:] repeating forever (the last state equals states[loop])."""
    return "loop" in getattr(trace, "extra", {})


def loop_words(trace):
    """How a lasso's loop repeats, in words."""
    loop, last = trace.extra["loop"], len(trace.steps) - 1
    if loop == last:
        return f"from step {loop} on, the state stutters forever"
    return f"from step {loop} on, steps {loop + 1} to {last} repeat forever"


@dataclass
class ReplayResult:
    ok: bool                 # reaches a violation of the trace's invariant at its last step
    message: str
    rows: list               # rows actually reached, step by step
    failed_step: int | None = None


def replay(spec, trace):
    """Re-run a trace's actions on the scalar backend from the initial state.

    The trace reproduces when every step is enabled, each reached state equals
    the recorded one, and the trace's invariant fails at the last state (and
    not before).
    """
    if trace.invariant is None:          # a trace from another tool whose last state breaks no invariant
        failed, rows, _ = _walk(spec, trace)
        return failed or ReplayResult(False, f"no invariant of {spec.name} fails at its last step", rows,
                                      len(rows) - 1)
    inv = spec.invariants[trace.invariant]
    failed, rows, _ = _walk(spec, trace, lambda row: not backends.scalar(spec).holds(row, inv) and f"{trace.invariant} already fails")
    if failed:
        return failed
    if backends.scalar(spec).holds(rows[-1], inv):
        return ReplayResult(False, f"{trace.invariant} now holds at the last step", rows, len(rows) - 1)
    return ReplayResult(True, f"{trace.invariant} is violated at step {len(rows) - 1}, as recorded", rows)


def _walk(spec, trace, fails_before=None):
    """Re-run a trace's steps on the scalar backend: (a failed ReplayResult or None, rows reached, actions taken).

    Every step must be enabled and reach the recorded state; ``fails_before(row)`` may name a reason
    (text) the walk must stop before the step taken from ``row``.
    """
    row = backends.scalar(spec).initial_row()
    rows, taken = [row], []
    mismatch = _differences(spec, row, trace.steps[0][2])
    if mismatch:
        return (ReplayResult(False, f"step 0: the initial state differs from the recorded one ({mismatch})", rows, 0),
                rows, taken)
    for i, (name, params, state) in enumerate(trace.steps[1:], start=1):
        inst = backends.action_named(spec, name, params)
        label = f"{name}({', '.join(f'{k}={v}' for k, v in params.items())})"
        if inst is None:
            return ReplayResult(False, f"step {i}: no action {label} in spec {spec.name}", rows, i), rows, taken
        reason = fails_before(row) if fails_before is not None else None
        if reason:
            return ReplayResult(False, f"step {i}: {reason} before {label}", rows, i), rows, taken
        row = backends.scalar(spec).step(row, inst)
        if row is None:
            return ReplayResult(False, f"step {i}: {label} is no longer enabled", rows, i), rows, taken
        rows.append(row)
        taken.append(inst)
        mismatch = _differences(spec, row, state)
        if mismatch:
            return (ReplayResult(False, f"step {i}: {label} now reaches a different state ({mismatch})", rows, i),
                    rows, taken)
    return None, rows, taken


def replay_lasso(spec, trace):
    """Re-run a lasso: every step as recorded, the cycle closing on its start state, the property's Q false from
    the trigger state (where P holds) on, through the loop, and every fairness condition met on the loop."""
    prop = spec.properties[trace.invariant]
    loop, trigger = trace.extra["loop"], trace.extra["trigger"]
    failed, rows, taken = _walk(spec, trace)
    if failed:
        return failed
    if not (rows[-1] == rows[loop]).all():
        return ReplayResult(False, f"the last state is not state {loop}: the cycle does not close", rows, len(rows) - 1)
    if not backends.scalar(spec).holds(rows[trigger], prop.trigger):
        return ReplayResult(False, f"step {trigger}: the trigger of {prop.name} does not hold", rows, trigger)
    for i in range(trigger, len(rows)):
        if backends.scalar(spec).holds(rows[i], prop.goal):
            return ReplayResult(False, f"step {i}: the goal of {prop.name} holds", rows, i)
    cycle, states = taken[loop:], rows[loop:-1] or rows[loop:]
    for f in prop.fairness:
        for inst in (a for a in spec.actions if a.name == f.action):
            on = [backends.scalar(spec).step(r, inst) is not None for r in states]
            if any(a is inst for a in cycle) or not (all(on) if f.kind == "weak" else any(on)):
                continue
            return ReplayResult(False, f"the loop is not fair: {inst.label} is enabled "
                                       f"{'throughout' if f.kind == 'weak' else 'on it'} and never taken "
                                       f"({f.kind} fairness)", rows, loop)
    return ReplayResult(True, f"{prop.name} is violated: from step {loop} on the loop repeats forever, fairly, "
                              f"and the goal never holds after step {trigger}", rows)


def _differences(spec, row, recorded):
    """Fields (present in both) where a reached row differs from a recorded state."""
    decoded = spec.layout.decode(row)
    return ", ".join(k for k in decoded if k in recorded and recorded[k] != decoded[k])


def file_name(name):
    """A spec's, configuration's or invariant's name as one file name: ``/`` (and ``%``, NUL) percent-encoded,
    so a name never makes folders or climbs out of ``--out``; ``.`` and ``..`` encoded too."""
    safe = name.replace("%", "%25").replace("/", "%2F").replace("\0", "%00")
    return safe.replace(".", "%2E") if safe in (".", "..") else safe


def default_path(out_dir, spec_name, invariant):
    return os.path.join(out_dir, file_name(spec_name), f"{file_name(invariant)}.itf.json")
