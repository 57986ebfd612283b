"""Render a trace step by step, in the terms of its spec's protocol family.

Each step shows the action with its parameters, then one row per replica (its
log, when the family draws one, then the per-replica fields, those the
family's presentation orders first leading), then the partition-wide fields.
Cells that changed in the step are highlighted. What the columns are and how
values read comes from the spec's presentation (``model/present.py``).

What a trace is said to show is what ``replay`` finds (:func:`narration`): a trace cut short before its
violation, or one that no longer replays, is never called violated. A liveness lasso is narrated like an
invariant's trace, with the step where the property's trigger holds and its loop marked.
"""
from __future__ import annotations

import io
import textwrap
import unicodedata

from isrcheck.checker.traces.trace import is_lasso, replay, replay_lasso
from isrcheck.model.present import Line, step_label

CHANGED = "bold yellow"


def printable(text, newlines=False):
    """Text from a file made safe for a terminal: control characters (ESC, CR, ...) shown as ``\\x1b``.

    With ``newlines``, line breaks are kept (a multi-line document); otherwise they are escaped too.
    """
    keep = "\n" if newlines else ""
    return "".join(c if c in keep or unicodedata.category(c) not in ("Cc", "Cf", "Zl", "Zp")
                   else (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}") for c in str(text))


def markup_safe(text):
    """Text from a file for a rich markup string: printable, and its brackets taken literally."""
    from rich.markup import escape          # rich loads only where something is printed with it
    return escape(printable(text))


def _cell(text, changed):
    text = markup_safe(text)
    return f"[{CHANGED}]{text}[/]" if changed else text


def _note(line):
    """A narration line under a step: ``↻`` for a lasso's loop, ``▶`` for the rest."""
    return f"  [bold magenta]{'↻' if line.kind == 'loop' else '▶'} {markup_safe(line.text)}[/]"


def render(console, spec, trace, explanations=None):
    """Print every step of a trace; ``explanations`` maps step index -> the Lines to print under it."""
    from rich.table import Table
    present = spec.presentation
    shown, others = present.table_fields()
    prev = None
    for i, (name, params, state) in enumerate(trace.steps):
        label = markup_safe(step_label(name, params))
        console.rule(f"[bold]step {i}[/]  {label}", align="left")
        table = Table(box=None, header_style="bold", pad_edge=False)
        table.add_column("replica")
        has_log = present.log_text(state, 0) is not None
        if has_log:
            table.add_column(present.log_header)
        for f in shown:
            table.add_column(present.header(f))
        for r in range(present.R):
            row = [f"r{r}"]
            if has_log:
                changed = prev is not None and present.log_text(prev, r) != present.log_text(state, r)
                row.append(_cell(present.log_text(state, r), changed))
            for f in shown:
                v = state[f.name][r]
                changed = prev is not None and prev[f.name][r] != v
                row.append(_cell(present.fmt_value(f, v, 1), changed))
            table.add_row(*row)
        console.print(table)
        parts = []
        for f in others:
            v = state[f.name]
            changed = prev is not None and prev[f.name] != v
            parts.append(_cell(f"{f.name}={present.fmt_value(f, v, 0)}", changed))
        console.print("  " + "  ".join(parts))
        for line in (explanations or {}).get(i, []):
            console.print(_note(line))
        prev = state


#: ``show --compact`` fits this many columns, whatever the terminal
COMPACT_WIDTH = 80


def print_wrapped(console, text, first="", rest="", style=None, width=COMPACT_WIDTH):
    """Plain ``text`` (from a file: made printable) in lines of at most ``width`` columns, indented."""
    lines = textwrap.wrap(printable(text), width=width, initial_indent=first, subsequent_indent=rest,
                          break_on_hyphens=False) or [first.rstrip()]
    for line in lines:
        console.print(line, style=style, markup=False, highlight=False, soft_wrap=True)


def _print_cells(console, head, cells, width=COMPACT_WIDTH):
    """``head`` and then the cells (rich markup), two spaces apart, in lines of at most ``width`` columns; a line
    that continues another is indented under the first cell."""
    from rich.text import Text
    indent = " " * (len(head) + 2)
    line, used = f"  {head}", 2 + len(head)
    for cell in cells:
        size = len(Text.from_markup(cell).plain)
        if used > len(indent) and used + 2 + size > width:
            console.print(line, soft_wrap=True)
            line, used = indent + cell, len(indent) + size
        else:
            sep = "  " if used > 2 else ""
            line, used = line + sep + cell, used + len(sep) + size
    console.print(line, soft_wrap=True)


def render_compact(console, spec, trace, explanations=None):
    """Every step as its action and only the cells it changed (``old → new``, an array element by element), one
    replica a line, in at most 80 columns (longer lines continue under their first cell); the initial state in full
    first."""
    present = spec.presentation
    shown, others = present.table_fields()
    prev = None
    for i, (name, params, state) in enumerate(trace.steps):
        print_wrapped(console, f"step {i}  {step_label(name, params)}", rest="    ", style="bold")
        printed = False
        for r in range(present.R):
            cells = []
            log = present.log_text(state, r)
            if log is not None and (prev is None or present.log_text(prev, r) != log):
                cells.append(_change("log", None if prev is None else present.log_text(prev, r), log))
            for f in shown:
                cells += _changes(present, f, present.header(f), None if prev is None else prev[f.name][r],
                                  state[f.name][r], 1)
            if cells:
                _print_cells(console, f"r{r}", cells)
                printed = True
        cells = [c for f in others for c in _changes(present, f, f.name, None if prev is None else prev[f.name],
                                                     state[f.name], 0)]
        if cells:
            _print_cells(console, "", cells)
        elif not printed:
            console.print("  (nothing changed)")
        for line in (explanations or {}).get(i, []):
            print_wrapped(console, line.text, first=f"  {'↻' if line.kind == 'loop' else '▶'} ", rest="    ",
                          style="bold magenta")
        prev = state


def _changes(present, field, label, old, new, depth):
    """The changed cells of one value (all of it when ``old`` is None): an array that is not a replica set
    element by element (``name[2] 0 → 1``), anything else whole."""
    if old is not None and old == new:
        return []
    rank = len(field.shape) - depth
    if old is not None and rank >= 1 and not (rank == 1 and field.boolean and field.axes[-1:] == ("replica",)):
        return [c for k, (o, n) in enumerate(zip(old, new)) for c in _changes(present, field, f"{label}[{k}]", o, n,
                                                                                depth + 1)]
    return [_change(label, None if old is None else present.fmt_value(field, old, depth),
                    present.fmt_value(field, new, depth))]


def _change(name, old, new):
    """``name old → new`` (the new value highlighted), or ``name=value`` for the initial state."""
    if old is None:
        return f"{markup_safe(name)}={markup_safe(new)}"
    return f"{markup_safe(name)} {markup_safe(old)} → [{CHANGED}]{markup_safe(new)}[/]"


def lasso_words(spec, trace):
    """(headline, [sentences]) of what a liveness lasso shows: the property, where its trigger held, which steps
    repeat forever, and under which fairness."""
    prop = spec.properties[trace.invariant]
    loop, trigger = trace.extra["loop"], trace.extra["trigger"]
    cycle = [step_label(name, params) for name, params, _ in trace.steps[loop + 1:]]
    if cycle:
        repeat = (f"from step {loop} on, {'this step repeats' if len(cycle) == 1 else f'these {len(cycle)} steps repeat'}"
                  f" forever: {', '.join(cycle)}")
    else:
        repeat = f"from step {loop} on, nothing happens any more: the state stutters forever"
    fairness = ", ".join(f"{f.kind}({f.action})" for f in prop.fairness) or "no fairness"
    return (f"{prop.name} violated: {prop.meaning}",
            [f"the trigger holds at step {trigger}; {repeat}",
             f"the goal never holds from step {trigger} on, and the loop is fair ({fairness}, each per action "
             f"instance)"] + ([prop.detail] if prop.detail else []))


def lasso_marks(spec, trace):
    """The marks a lasso's steps get: where the property's trigger holds, where the loop starts, where it closes."""
    name = spec.properties[trace.invariant].name
    loop, trigger, last = trace.extra["loop"], trace.extra["trigger"], len(trace.steps) - 1
    marks = [Line(trigger, f"{name}'s trigger holds here: its goal must hold here or later, and from here on it "
                           f"never does", "trigger")]
    if loop == last:
        marks.append(Line(loop, "the loop: from here on nothing happens any more, the state stutters forever",
                          "loop"))
    else:
        steps = f"step {last} repeats" if loop + 1 == last else f"steps {loop + 1} to {last} repeat"
        marks += [Line(loop, f"the loop starts here: {steps} forever", "loop"),
                  Line(last, f"back to the state of step {loop}: the loop repeats forever", "loop")]
    return marks


def narration(spec, trace):
    """(what ``replay`` finds, {step: [Line]}): the sentences and marks of each step. When the trace does not
    reproduce, its violation marks are left out and the step where replay stops says why."""
    lasso = is_lasso(trace)
    replayed = (replay_lasso if lasso else replay)(spec, trace)
    lines = spec.presentation.explain(trace, trace.invariant) + (lasso_marks(spec, trace) if lasso else [])
    if not replayed.ok:
        lines = [line for line in lines if line.kind not in ("violated", "trigger", "loop")]
        lines.append(Line(replayed.failed_step or 0, f"does not reproduce here: {replayed.message}", "replay"))
    notes = {}
    for line in lines:
        notes.setdefault(line.step, []).append(line)
    return replayed, notes


def print_trace(console, spec, trace, compact=False):
    """``isrcheck show``: a header line, every step with its narration, then what broke and what it means.

    ``compact``: each step as the cells it changed (:func:`render_compact`) instead of the full table."""
    from rich.markup import escape
    present = spec.presentation
    meta = " ".join(f"{k}={v}" for k, v in trace.bounds.items())
    lasso = is_lasso(trace)
    header = (f"{trace.spec} · {meta} · {'property' if lasso else 'invariant'} {trace.invariant or '(none broken)'}"
              f" · engine {trace.engine} · {len(trace.steps)} states" + (" (a lasso)" if lasso else ""))
    if compact:
        print_wrapped(console, header, rest="  ", style="bold")
    else:
        console.print(printable(header), style="bold", markup=False)
    replayed, notes = narration(spec, trace)
    (render_compact if compact else render)(console, spec, trace, notes)
    if compact:
        print_compact_verdict(console, spec, trace, replayed)
        return
    if not replayed.ok:
        what = f"of {markup_safe(trace.invariant)} " if trace.invariant else ""
        console.print(f"[bold yellow]does not reproduce:[/] {markup_safe(replayed.message)} (as `isrcheck replay` "
                      f"says): this trace shows no violation {what}on the current model", soft_wrap=True)
        return
    if lasso:
        headline, sentences = lasso_words(spec, trace)
        console.print(f"[bold red]{markup_safe(headline)}[/]", soft_wrap=True)
        for i, sentence in enumerate(sentences):
            console.print(f"[dim]{markup_safe(sentence)}[/]" if i == 2 else markup_safe(sentence), soft_wrap=True)
        return
    console.print(f"[bold red]{markup_safe(present.summary(trace))}[/]")
    console.print(f"{trace.invariant}: {present.meaning(trace.invariant)}", markup=False)
    loss = present.consequence(trace.invariant)
    if loss:
        console.print(f"[dim]{escape(loss)}[/]")
    for label, text in present.epilogue():
        console.print(f"[bold]{escape(label)}:[/] {escape(text)}")


def print_compact_verdict(console, spec, trace, replayed):
    """``show --compact``'s closing lines (print_trace's), wrapped to 80 columns."""
    present = spec.presentation
    if not replayed.ok:
        what = f"of {trace.invariant} " if trace.invariant else ""
        print_wrapped(console, f"does not reproduce: {replayed.message} (as `isrcheck replay` says): this trace "
                               f"shows no violation {what}on the current model", style="bold yellow")
        return
    if is_lasso(trace):
        headline, sentences = lasso_words(spec, trace)
        print_wrapped(console, headline, style="bold red")
        for i, sentence in enumerate(sentences):
            print_wrapped(console, sentence, style="dim" if i == 2 else None)
        return
    print_wrapped(console, present.summary(trace), style="bold red")
    print_wrapped(console, f"{trace.invariant}: {present.meaning(trace.invariant)}")
    loss = present.consequence(trace.invariant)
    if loss:
        print_wrapped(console, loss, style="dim")
    for label, text in present.epilogue():
        print_wrapped(console, f"{label}: {text}")


def trace_text(spec, trace, width=200, compact=False):
    """What ``isrcheck show`` prints for a trace, as plain text."""
    from rich.console import Console
    console = Console(file=io.StringIO(), width=width, no_color=True, highlight=False, record=True)
    print_trace(console, spec, trace, compact)
    return console.export_text()
