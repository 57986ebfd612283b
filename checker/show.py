"""Render a trace step by step in Kafka terms.

Each step shows the action with its parameters, then one row per replica (its
log as offset:record@epoch, LEO, HW, believed leader and epoch, ISR, up/down,
and any other per-replica field), then the partition-wide fields (controller,
requests, ghosts). Cells that changed in the step are highlighted.
"""
from __future__ import annotations

from rich.console import Console
from rich.table import Table

CHANGED = "bold yellow"
KAFKA_COLUMNS = {"up": "up", "leader": "leader", "leader_epoch": "epoch", "leo": "LEO", "hw": "HW",
                 "isr": "ISR"}


def _replica_fields(spec):
    """Fields whose first axis is the replica (quorum fields, named q_*, are partition-wide)."""
    return [f for f in spec.layout.fields.values()
            if f.axes and f.axes[0] == "replica" and not f.name.startswith("q_")]


def _fmt(field, value, spec):
    """One field value as text: replica ids as r0.., replica bitsets as {r0,r1}, flags as ●/○."""
    if field.values == "replica":
        return "-" if value == spec.R else f"r{value}"
    if isinstance(value, list) and field.boolean and field.axes[-1:] == ("replica",):
        return "{" + ",".join(f"r{i}" for i, b in enumerate(value) if b) + "}"
    if isinstance(value, bool):
        return "●" if value else "○"
    return str(value)


def _log(state, r):
    if not {"log_record", "log_epoch", "leo"} <= state.keys():
        return None
    leo = state["leo"][r]
    return " ".join(f"{o}:{state['log_record'][r][o]}@{state['log_epoch'][r][o]}" for o in range(leo)) or "∅"


def _cell(text, changed):
    return f"[{CHANGED}]{text}[/]" if changed else text


def render(console: Console, spec, trace, explanations=None):
    """Print every step of a trace; ``explanations`` maps step index -> sentences to print under it."""
    fields = _replica_fields(spec)
    shown = [f for f in fields if f.name not in ("log_record", "log_epoch")]
    others = [f for f in spec.layout.fields.values() if f not in fields]
    prev = None
    for i, (name, params, state) in enumerate(trace.steps):
        label = "initial state" if name is None else f"{name}({', '.join(f'{k}={v}' for k, v in params.items())})"
        console.rule(f"[bold]step {i}[/]  {label}", align="left")
        table = Table(box=None, header_style="bold", pad_edge=False)
        table.add_column("replica")
        has_log = _log(state, 0) is not None
        if has_log:
            table.add_column("log (offset:record@epoch)")
        for f in shown:
            table.add_column(KAFKA_COLUMNS.get(f.name, f.name))
        for r in range(spec.R):
            row = [f"r{r}"]
            if has_log:
                changed = prev is not None and _log(prev, r) != _log(state, r)
                row.append(_cell(_log(state, r), changed))
            for f in shown:
                v = state[f.name][r]
                changed = prev is not None and prev[f.name][r] != v
                row.append(_cell(_fmt(f, v, spec), changed))
            table.add_row(*row)
        console.print(table)
        parts = []
        for f in others:
            v = state[f.name]
            changed = prev is not None and prev[f.name] != v
            parts.append(_cell(f"{f.name}={_fmt(f, v, spec)}", changed))
        console.print("  " + "  ".join(parts))
        for sentence in (explanations or {}).get(i, []):
            console.print(f"  [bold magenta]▶ {sentence}[/]")
        prev = state
