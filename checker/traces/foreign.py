"""ITF traces from other tools: read with ``--spec S`` and the bound flags.

An ITF trace written by another tool (a converter, a team's own generator, Apalache or Quint on a spec with
the same variables) has no isrcheck ``#meta``: no spec, bounds or invariant, and its states need not name
the action that led to them. ``show``, ``replay`` and ``minimize`` read one when the command line names its
spec (``--spec``) and, unless they are the spec's defaults, its bounds (``--max-epochs 2``, ``--set k=v``):

- every state must give every variable of the spec, with values in range (ITF's ``#bigint``, ``#set``,
  ``#tup``, ``#map`` are read);
- a step that names no action gets the first action instance of the spec that leads from the state before
  it to it (none: the trace is not a run of the spec, exit 2);
- the invariant it shows is the first one (real ones before benign observations) that fails at its last
  state and at no state before; failing at the last state only after failing earlier, the first such; none
  failing there, the trace shows no violation and ``replay`` says so.

A trace with isrcheck's ``#meta`` records its bounds: a bound flag that differs from them is a mistake.
"""
from __future__ import annotations

from isrcheck.checker.traces.trace import TraceError, conform, spec_for as recorded
from isrcheck.model import backends
from isrcheck.model.expr import DeclarationError
from isrcheck.model.spec import BoundsError


def spec_for(trace, path, cls, bounds, from_settings=()):
    """The spec of ``trace`` (``cls``, when the command line names one) and the trace checked against it: an
    isrcheck trace at its recorded bounds (``bounds`` given on the command line must agree; those a settings
    file gave, ``from_settings``, are not for it), another tool's at ``bounds``, adopted as one of the spec's
    runs."""
    if trace.spec is not None:
        differ = [k for k, v in bounds.items() if trace.bounds.get(k) != v and k not in from_settings]
        if differ:
            raise TraceError(f"{path}: the trace records its bounds ("
                             + ", ".join(f"{k}={trace.bounds.get(k, 'unset')}" for k in differ)
                             + f"): leave out {', '.join('--' + k.replace('_', '-') for k in differ)}")
        return recorded(trace, path, cls)
    if cls is None:
        raise TraceError(f"{path}: no isrcheck '#meta' (a trace from another tool): name its spec with --spec S, "
                         f"and its bounds with the bound flags unless they are the spec's defaults")
    try:
        spec = cls(**bounds)
    except (BoundsError, DeclarationError) as e:
        raise TraceError(f"{path}: {e}") from None
    trace.spec, trace.bounds = spec.name, dict(spec.bounds)
    if trace.engine == "?":
        trace.engine = "ITF"
    conform(spec, trace, path, actions_named=False)
    _name_actions(spec, trace, path)
    trace.invariant = _violated(spec, trace)
    return spec


def _name_actions(spec, trace, path):
    """Give each step that names no action the first action instance leading to it (TraceError if none does)."""
    run = backends.scalar(spec)
    rows = [spec.layout.encode(state) for _, _, state in trace.steps]
    for i in range(1, len(rows)):
        name, params, state = trace.steps[i]
        if name is not None:
            continue
        inst = next((a for a in spec.actions if _equal(run.step(rows[i - 1], a), rows[i])), None)
        if inst is None:
            raise TraceError(f"{path}: state {i}: no action of {spec.name} leads to it from state {i - 1}")
        trace.steps[i] = (inst.name, dict(inst.params), state)


def _equal(row, other):
    return row is not None and (row == other).all()


def _violated(spec, trace):
    """The invariant the trace shows violated (see the module doc), or None."""
    run = backends.scalar(spec)
    rows = [spec.layout.encode(state) for _, _, state in trace.steps]
    ordered = sorted(spec.invariants.values(), key=lambda inv: inv.benign)
    failing = [inv for inv in ordered if not run.holds(rows[-1], inv)]
    first = next((inv for inv in failing if all(run.holds(row, inv) for row in rows[:-1])), None)
    found = first or (failing[0] if failing else None)
    return found.name if found else None
