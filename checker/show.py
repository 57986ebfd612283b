"""Render a trace step by step in Kafka terms.

Each step shows the action with its parameters, then one row per replica (its
log as offset:record@epoch, LEO, HW, believed leader and epoch, ISR, up/down,
and any other per-replica field), then the partition-wide fields (controller,
requests, ghosts). Cells that changed in the step are highlighted.
"""
from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

CHANGED = "bold yellow"
KAFKA_COLUMNS = {"leo": "LEO", "hw": "HW", "leader": "leader", "leader_epoch": "epoch", "isr": "ISR",
                 "up": "up"}


def replica_fields(spec):
    """Fields whose first axis is the replica (quorum fields, named q_*, are partition-wide)."""
    return [f for f in spec.layout.fields.values()
            if f.axes and f.axes[0] == "replica" and not f.name.startswith("q_")]


def fmt_value(field, value, spec, depth=0):
    """A field value as text: replica ids as r0.., replica sets as {r0,r1}, flags as ●/○; arrays element-wise."""
    rank = len(field.shape) - depth
    if rank > 1 or (rank == 1 and not (field.boolean and field.axes[-1:] == ("replica",))):
        return "[" + " ".join(fmt_value(field, v, spec, depth + 1) for v in value) + "]"
    if rank == 1:
        return "{" + ",".join(f"r{i}" for i, b in enumerate(value) if b) + "}"
    if field.values == "replica":
        return "-" if value == spec.R else f"r{value}"
    if isinstance(value, bool):
        return "●" if value else "○"
    return str(value)


def step_label(name, params):
    """An action with its parameters, as written in traces: ``fetch(f=1, l=0)``."""
    return "initial state" if name is None else f"{name}({', '.join(f'{k}={v}' for k, v in params.items())})"


def log_text(state, r):
    if not {"log_record", "log_epoch", "leo"} <= state.keys():
        return None
    leo = state["leo"][r]
    return " ".join(f"{o}:{state['log_record'][r][o]}@{state['log_epoch'][r][o]}" for o in range(leo)) or "∅"


def _cell(text, changed):
    text = escape(text)
    return f"[{CHANGED}]{text}[/]" if changed else text


def render(console: Console, spec, trace, explanations=None):
    """Print every step of a trace; ``explanations`` maps step index -> sentences to print under it."""
    fields = replica_fields(spec)
    shown = [f for f in fields if f.name not in ("log_record", "log_epoch")]
    shown.sort(key=lambda f: list(KAFKA_COLUMNS).index(f.name) if f.name in KAFKA_COLUMNS else len(KAFKA_COLUMNS))
    others = [f for f in spec.layout.fields.values() if f not in fields]
    prev = None
    for i, (name, params, state) in enumerate(trace.steps):
        label = step_label(name, params)
        console.rule(f"[bold]step {i}[/]  {label}", align="left")
        table = Table(box=None, header_style="bold", pad_edge=False)
        table.add_column("replica")
        has_log = log_text(state, 0) is not None
        if has_log:
            table.add_column("log (offset:record@epoch)")
        for f in shown:
            table.add_column(KAFKA_COLUMNS.get(f.name, f.name))
        for r in range(spec.R):
            row = [f"r{r}"]
            if has_log:
                changed = prev is not None and log_text(prev, r) != log_text(state, r)
                row.append(_cell(log_text(state, r), changed))
            for f in shown:
                v = state[f.name][r]
                changed = prev is not None and prev[f.name][r] != v
                row.append(_cell(fmt_value(f, v, spec, 1 if f in fields else 0), changed))
            table.add_row(*row)
        console.print(table)
        parts = []
        for f in others:
            v = state[f.name]
            changed = prev is not None and prev[f.name] != v
            parts.append(_cell(f"{f.name}={fmt_value(f, v, spec, 1 if f in fields else 0)}", changed))
        console.print("  " + "  ".join(parts))
        for sentence in (explanations or {}).get(i, []):
            console.print(f"  [bold magenta]▶ {sentence}[/]")
        prev = state


def lasso_summary(spec, trace):
    """What a liveness lasso says, in words: where P held, which steps repeat forever, and under which fairness."""
    prop = spec.properties[trace.invariant]
    loop, trigger = trace.extra["loop"], trace.extra["trigger"]
    cycle = [step_label(name, params) for name, params, _ in trace.steps[loop + 1:]]
    if cycle:
        repeat = (f"from step {loop} on, {'this step repeats' if len(cycle) == 1 else f'these {len(cycle)} steps repeat'}"
                  f" forever: {', '.join(cycle)}")
    else:
        repeat = f"from step {loop} on, nothing happens any more: the state stutters forever"
    fairness = ", ".join(f"{f.kind}({f.action})" for f in prop.fairness) or "no fairness"
    return (f"[bold red]{prop.name} violated:[/] {escape(prop.meaning)}\nthe trigger holds at step {trigger}; "
            f"{escape(repeat)}\nthe goal never holds from step {trigger} on, and the loop is fair "
            f"({escape(fairness)}, each per action instance)"
            + (f"\n[dim]{escape(prop.detail)}[/]" if prop.detail else ""))
