"""Counterexamples in words and diagrams: explain, summary, Mermaid and DOT export."""
from __future__ import annotations

import glob
import os
import re

import networkx as nx
import pytest

from isrcheck.checker.exhaustive.bfs import search
from isrcheck.checker.traces.export import to_dot, to_graph, to_mermaid
from isrcheck.checker.traces.trace import from_steps, is_lasso, load, save, spec_for
from isrcheck.model.present import Line
from isrcheck.specs import SPECS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _bfs_trace(name, invariant, **bounds):
    spec = SPECS[name](**bounds)
    steps = search(spec, [invariant]).violations[invariant].steps
    return spec, steps, from_steps(spec, invariant, "bfs", steps)


@pytest.fixture(scope="module")
def hw_truncation():
    return _bfs_trace("hw-truncation", "no-committed-loss")


@pytest.fixture(scope="module")
def kip_101():
    return _bfs_trace("kip-101", "no-committed-loss")


def _marks(lines, kind):
    return [line for line in lines if line.kind == kind]


def _first_change(steps, pred):
    for i in range(1, len(steps)):
        if pred(steps[i - 1][2], steps[i][2]):
            return i
    return None


def test_explain_names_the_acknowledging_and_the_disappearing_step(hw_truncation):
    spec, _, trace = hw_truncation
    lines = spec.presentation.explain(trace)
    assert all(isinstance(line, Line) and len(line) == 2 for line in lines)
    # one sentence per step, in order
    per_step = _marks(lines, "step")
    assert [line.step for line in per_step] == list(range(len(trace.steps)))
    # the acknowledgement: the step where acked_at of record 1 is set
    acked_at = _first_change(trace.steps, lambda a, b: a["acked_at"][0] < 0 <= b["acked_at"][0])
    (ack,) = _marks(lines, "acked")
    assert ack.step == acked_at and "Record 1 at offset 0 is acknowledged" in ack.text
    # the disappearance: the step where the future leader's log loses it, with the rule that allowed it
    leader = trace.steps[-1][2]["q_leader"]
    gone = _first_change(trace.steps, lambda a, b: a["leo"][leader] > 0 and b["leo"][leader] == 0)
    (lost,) = _marks(lines, "lost")
    assert lost.step == gone > ack.step
    assert f"disappears from r{leader}" in lost.text
    assert f"r{leader} truncated to its local HW 0 on becoming follower" in lost.text
    assert "pre-0.11 behaviour" in lost.text
    # the new leader without the record, and the violation at the last step
    (lead,) = _marks(lines, "leader")
    assert lead.step == len(trace.steps) - 1 and f"r{leader} becomes the acting leader" in lead.text
    (violated,) = _marks(lines, "violated")
    assert violated.step == len(trace.steps) - 1 and violated.text.startswith("no-committed-loss breaks")
    line = spec.presentation.summary(trace)
    assert "\n" not in line
    assert line.startswith(f"no-committed-loss violated after {len(trace.steps) - 1} steps")
    assert f"record 1, acknowledged at step {ack.step} at offset 0" in line
    assert f"r{leader} truncated it at step {lost.step}" in line


def test_explain_names_the_unfenced_offsets_for_leader_epoch_answer(kip_101):
    spec, _, trace = kip_101
    lines = spec.presentation.explain(trace)
    (lost,) = _marks(lines, "lost")
    assert trace.steps[lost.step][0] == "truncate_by_epoch"
    assert "truncated to its HW 0 after an UNDEFINED OffsetsForLeaderEpoch answer" in lost.text
    assert "a leader on an older epoch" in lost.text and "fenced since KIP-320" in lost.text
    assert _marks(lines, "acked")[0].step < lost.step


def test_explain_works_on_engine_steps_and_loaded_files(hw_truncation, tmp_path):
    spec, steps, trace = hw_truncation
    from_trace = spec.presentation.explain(trace)
    from_steps_ = spec.presentation.explain(steps, "no-committed-loss")
    loaded = load(save(trace, str(tmp_path / "t.itf.json")))
    from_file = spec.presentation.explain(loaded)
    assert [tuple(x) for x in from_trace] == [tuple(x) for x in from_steps_] == [tuple(x) for x in from_file]
    assert spec.presentation.summary(steps, "no-committed-loss") == spec.presentation.summary(trace)


def test_wording_follows_the_producer_acks_setting_of_the_spec(hw_truncation):
    _, _, acks_all = hw_truncation
    trace = load(os.path.join(ROOT, "counterexamples", "acks-1", "no-committed-loss.itf.json"))
    spec = spec_for(trace)
    assert spec.acks_all == 0
    lines = spec.presentation.explain(trace)
    assert not [line.text for line in lines if "acks=all" in line.text]
    assert "acks=1" in _marks(lines, "acked")[0].text and "acks=1" in _marks(lines, "violated")[0].text
    assert "acks=1" in spec.presentation.consequence("no-committed-loss")
    spec_all = SPECS["hw-truncation"]()
    violated = _marks(spec_all.presentation.explain(acks_all), "violated")[0].text
    assert "(acks=all)" in violated and "acks=1" not in violated


def test_explain_marks_diverging_logs():
    spec, _, trace = _bfs_trace("hw-truncation", "log-matching", unflushed_loss=1, max_crashes=2)
    lines = spec.presentation.explain(trace)
    (div,) = _marks(lines, "diverged")
    assert div.step == len(trace.steps) - 1 and "diverge at offset 0" in div.text
    assert "lost the unflushed tail of its log in a hard crash" in " ".join(line.text for line in lines)
    assert "differ at offset 0" in spec.presentation.summary(trace)


COUNTEREXAMPLES = sorted(glob.glob(os.path.join(ROOT, "counterexamples", "*", "*.itf.json")))


@pytest.mark.skipif(not COUNTEREXAMPLES, reason="no stored counterexamples")
def test_every_stored_counterexample_is_explained_and_exported():
    specs = {}
    for path in COUNTEREXAMPLES:
        trace = load(path)
        key = (trace.spec, tuple(sorted(trace.bounds.items())))
        spec = specs.get(key) or specs.setdefault(key, spec_for(trace, path))
        lines = spec.presentation.explain(trace)
        assert [line.step for line in _marks(lines, "step")] == list(range(len(trace.steps))), path
        assert _marks(lines, "violated") or is_lasso(trace), path      # a liveness lasso breaks no invariant
        assert trace.invariant in spec.presentation.summary(trace), path
        assert to_mermaid(spec, trace).count("->>") == len(trace.steps) - 1, path
        assert to_dot(spec, trace).startswith("digraph"), path


def test_mermaid_has_the_participants_and_one_message_per_step(hw_truncation):
    spec, _, trace = hw_truncation
    text = to_mermaid(spec, trace)
    lines = text.splitlines()
    assert lines[0] == "sequenceDiagram"
    participants = [line.split()[-1] for line in lines if line.strip().startswith("participant")]
    assert participants == ["Controller", "Producer"] + [f"r{r}" for r in range(spec.R)]
    messages = [line for line in lines if "->>" in line]
    assert len(messages) == len(trace.steps) - 1
    for i, message in enumerate(messages, start=1):
        assert re.match(rf"\s+(Controller|Producer|r\d)->>(Controller|Producer|r\d): {i}\. ", message), message
    assert messages[3].lstrip().startswith("Producer->>r0: 4. produce record 1")
    assert any("Note over" in line and "LOST" in line for line in lines)
    assert not any(";" in line or "#" in line for line in lines)


def test_dot_is_a_state_graph_built_with_networkx(hw_truncation):
    spec, _, trace = hw_truncation
    g = to_graph(spec, trace)
    assert isinstance(g, nx.MultiDiGraph)
    assert g.number_of_edges() == len(trace.steps) - 1
    assert g.number_of_nodes() <= len(trace.steps)
    text = to_dot(spec, trace)
    assert text.startswith("digraph") and text.rstrip().endswith("}")
    assert text.count("->") == len(trace.steps) - 1
    assert 'label="11: apply_leader_and_isr(r=1, e=2)"' in text
    assert text.count("[label=") >= g.number_of_nodes() + g.number_of_edges()
