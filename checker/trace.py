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
from isrcheck.checker.registry import known as known_specs
from isrcheck.model.spec import BoundsError


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


def to_itf(trace):
    states = []
    for i, (name, params, state) in enumerate(trace.steps):
        states.append({"#meta": {"index": i, "action": name, "params": params}, **state})
    return {
        "#meta": {"format": "ITF", "tool": "isrcheck", "version": __version__, "spec": trace.spec,
                  "bounds": trace.bounds, "invariant": trace.invariant, "engine": trace.engine,
                  "seed": trace.seed, **trace.extra},
        "vars": list(trace.steps[0][2]) if trace.steps else [],
        "states": states,
    }


def save(trace, path):
    """Write atomically (a temp file renamed into place), so an interrupted run never leaves half a trace."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = f"{path}.tmp-{os.getpid()}"
    itf = to_itf(trace)
    with open(tmp, "w") as fh:        # one state per line: readable and diff-friendly
        fh.write('{"#meta": ' + json.dumps(itf["#meta"]) + ',\n "vars": ' + json.dumps(itf["vars"])
                 + ',\n "states": [\n  ' + ",\n  ".join(json.dumps(s) for s in itf["states"]) + "\n ]\n}\n")
    os.replace(tmp, path)
    return path


def load(path):
    """Read a trace file; any problem raises TraceError naming the file and what is wrong."""
    try:
        with open(path) as fh:
            text = fh.read()
    except OSError as e:
        raise TraceError(f"{path}: cannot read trace file ({e.strerror})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise TraceError(f"{path}: not valid JSON (line {e.lineno}, column {e.colno}: {e.msg})") from None
    if not isinstance(data, dict) or not isinstance(data.get("#meta"), dict) or not isinstance(data.get("states"), list):
        raise TraceError(f"{path}: not an ITF trace (needs '#meta' and 'states')")
    meta = data["#meta"]
    for key in ("spec", "invariant"):
        if not isinstance(meta.get(key), str):
            raise TraceError(f"{path}: '#meta' has no {key!r}")
    if not data["states"]:
        raise TraceError(f"{path}: trace has no states")
    steps = []
    for i, st in enumerate(data["states"]):
        if not isinstance(st, dict) or not isinstance(st.get("#meta", {}), dict):
            raise TraceError(f"{path}: state {i} is not an object")
        m = st.get("#meta", {})
        params = m.get("params") or {}
        if not isinstance(params, dict) or not all(isinstance(v, int) for v in params.values()):
            raise TraceError(f"{path}: state {i} has malformed action parameters")
        state = {k: v for k, v in st.items() if k != "#meta"}
        steps.append((m.get("action"), params, state))
    bounds = meta.get("bounds") or {}
    if not isinstance(bounds, dict):
        raise TraceError(f"{path}: '#meta.bounds' is not an object")
    return Trace(meta["spec"], bounds, meta["invariant"], meta.get("engine", "?"), steps, meta.get("seed"))


def spec_for(trace, path="trace", cls=None):
    """Instantiate the trace's spec (or ``cls``, a spec class the user named) at the trace's bounds (TraceError
    if unknown, another spec's or out of range)."""
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
    if trace.invariant not in spec.invariants:
        raise TraceError(f"{path}: spec {trace.spec} has no invariant {trace.invariant!r}")
    return spec


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
    inv = spec.invariants[trace.invariant]
    row = spec.initial_row()
    rows = [row]
    mismatch = _differences(spec, row, trace.steps[0][2])
    if mismatch:
        return ReplayResult(False, f"step 0: the initial state differs from the recorded one ({mismatch})", rows, 0)
    for i, (name, params, state) in enumerate(trace.steps[1:], start=1):
        inst = spec.action_named(name, params)
        label = f"{name}({', '.join(f'{k}={v}' for k, v in params.items())})"
        if inst is None:
            return ReplayResult(False, f"step {i}: no action {label} in spec {spec.name}", rows, i)
        if not spec.holds(row, inv):
            return ReplayResult(False, f"step {i}: {trace.invariant} already fails before {label}", rows, i)
        nxt = spec.step(row, inst)
        if nxt is None:
            return ReplayResult(False, f"step {i}: {label} is no longer enabled", rows, i)
        row = nxt
        rows.append(row)
        mismatch = _differences(spec, row, state)
        if mismatch:
            return ReplayResult(False, f"step {i}: {label} now reaches a different state ({mismatch})", rows, i)
    if spec.holds(row, inv):
        return ReplayResult(False, f"{trace.invariant} now holds at the last step", rows, len(rows) - 1)
    return ReplayResult(True, f"{trace.invariant} is violated at step {len(rows) - 1}, as recorded", rows)


def _differences(spec, row, recorded):
    """Fields (present in both) where a reached row differs from a recorded state."""
    decoded = spec.layout.decode(row)
    return ", ".join(k for k in decoded if k in recorded and recorded[k] != decoded[k])


def default_path(out_dir, spec_name, invariant):
    return os.path.join(out_dir, spec_name, f"{invariant}.itf.json")
