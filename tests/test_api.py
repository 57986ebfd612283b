"""The Python API (``isrcheck.check``, ``isrcheck.testing``), and its guide's example run as the page gives it
(docs/how-to/python-api.md; the pages' ``isrcheck`` commands are tests/test_docs.py's)."""
import json
import os
import re
import subprocess
import sys

import pytest

import isrcheck
from isrcheck.specs.kip_320 import Kip320
from isrcheck.testing import assert_holds, assert_violated

GUIDE = os.path.join(os.path.dirname(__file__), os.pardir, "docs", "how-to", "python-api.md")


def blocks(section, lang):
    return [body for tag, body in re.findall(r"^```(\w*)\n(.*?)^```", section, re.S | re.M) if tag == lang]


def test_guide_python_example_runs(tmp_path):
    code = blocks(open(GUIDE).read(), "python")[0]
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "{'no-committed-loss': 'violated', 'single-leader-per-epoch': 'holds'}" in run.stdout
    assert "as the spec expects: True" in run.stdout and "lost after " in run.stdout
    assert re.search(r"no-committed-loss violated after \d+ steps: record \d+, acknowledged", run.stdout)
    replay = subprocess.run(["isrcheck", "replay", "kip-101-loss.itf.json"], capture_output=True, text=True,
                            cwd=tmp_path)
    assert replay.returncode == 0 and "reproduces" in replay.stdout


def test_failure_message_is_the_compact_show_output_and_the_trace_is_saved(tmp_path):
    with pytest.raises(AssertionError) as failed:
        assert_holds("kip-101", "no-committed-loss", out=tmp_path / "held")
    message = str(failed.value)
    head, _, rendered = message.partition("\n\n")
    saved = tmp_path / "held" / "kip-101" / "no-committed-loss.itf.json"
    assert re.match(r"kip-101: no-committed-loss is violated \([\d,]+ states, depth \d+, at replicas=2 ", head)
    assert head.endswith(f"saved as {saved} (isrcheck show {saved}):")
    show = subprocess.run(["isrcheck", "show", str(saved), "--compact"], capture_output=True, text=True)
    assert show.returncode == 0
    assert " ".join(rendered.split()) == " ".join(show.stdout.split())      # the same words, in 80 columns
    assert max(map(len, rendered.splitlines())) <= 80
    trace = assert_violated("kip-101", "no-committed-loss", out=tmp_path)
    assert trace.invariant == "no-committed-loss" and trace.steps == isrcheck.check(
        "kip-101", "no-committed-loss").traces["no-committed-loss"].steps
    assert (tmp_path / "kip-101" / "no-committed-loss.itf.json").read_text() == saved.read_text()


def test_result_object(tmp_path):
    result = isrcheck.check(Kip320, None, max_crashes=1)
    assert result.spec == "kip-320" and result.configuration == "defaults" and result.complete
    every = [arg for inv in Kip320.expected for arg in ("--invariant", inv)]     # --all would add liveness checks
    cli = subprocess.run(["isrcheck", "check", "--spec", "kip-320", *every, "--max-crashes", "1", "--format", "json",
                          "--no-progress", "--out", str(tmp_path)], capture_output=True, text=True)
    report = json.loads(cli.stdout)
    assert (result.verdicts, result.distinct_states, result.depth, result.transitions) == (
        report["verdicts"], report["distinct_states"], report["depth"], report["transitions"])
    assert result.violated == [inv for inv, v in result.verdicts.items() if v == "violated"]
    assert result.as_expected and result.expected == Kip320.expected
    assert not result.holds and set(result.traces) == set(result.violated)
    html = result.render(result.violated[0], format="html")
    assert html.startswith("<!DOCTYPE html>") and "default-src 'none'" in html
    with pytest.raises(ValueError, match="no trace for 'no-committed-loss'"):
        result.render("no-committed-loss")
    other = isrcheck.check("kip-320", "no-committed-loss", max_epochs=3)     # bounds no configuration names
    assert other.configuration is None and other.expected == {} and other.as_expected


def test_budgets_and_mistakes(tmp_path):
    cut = isrcheck.check("kip-320", "no-committed-loss", max_states=1000)
    assert cut.verdicts == {"no-committed-loss": "unknown"} and not cut.complete and cut.budget_hit
    with pytest.raises(AssertionError, match="not verified: stopped by"):
        assert_holds("kip-320", "no-committed-loss", max_states=1000, out=tmp_path)
    with pytest.raises(AssertionError, match=r"no-committed-loss holds \([\d,]+ states.*expected a violation"):
        assert_violated("kip-320", "no-committed-loss", out=tmp_path)
    with pytest.raises(ValueError, match="has no invariant 'nope'"):
        isrcheck.check("kip-320", "nope")
    with pytest.raises(ValueError, match="unknown spec 'nope'"):
        isrcheck.check("nope")
    with pytest.raises(isrcheck.BoundsError):
        isrcheck.check("kip-320", replicas=99)


def test_the_api_covers_the_commands(tmp_path):
    small = {"max_epochs": 2, "max_records": 1}
    live = isrcheck.check("kafka-1120", [], properties=["eventually-leader"], **small)
    assert live.verdicts == {"eventually-leader": "violated"} and live.expected == {}   # not its defaults
    lasso = live.traces["eventually-leader"]
    assert "loop" in lasso.extra and "↻" in live.render("eventually-leader")
    both = isrcheck.check("kafka-1120", "single-leader-per-epoch", properties="eventually-leader", **small)
    assert both.verdicts == {"single-leader-per-epoch": "holds", "eventually-leader": "violated"}
    with pytest.raises(ValueError, match="has no liveness property 'nope'"):
        isrcheck.check("kafka-1120", properties=["nope"])

    fuzzed = isrcheck.fuzz("kip-101", "single-acting-leader", seconds=30, seed=1)
    assert isinstance(fuzzed, isrcheck.FuzzResult) and fuzzed.seed == 1 and fuzzed.runs
    assert fuzzed.violated == ["single-acting-leader"] and fuzzed.seconds < 30       # stops once it is found
    saved = tmp_path / "fuzzed.itf.json"
    from isrcheck.checker.traces.trace import save
    save(fuzzed.traces["single-acting-leader"], str(saved))
    assert subprocess.run(["isrcheck", "replay", str(saved)], capture_output=True).returncode == 0

    proof = isrcheck.prove("kip-101", "leader-in-isr", auto_lemmas=True, **small)
    assert isinstance(proof, isrcheck.ProofResult) and proof.proved and proof.lemmas and proof.trace is None
    refuted = isrcheck.prove("tla-kip320", "leader-in-isr")
    assert refuted.verdict == "refuted" and refuted.trace.invariant == "leader-in-isr"

    saved = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "counterexamples")
    result = isrcheck.gate(["tla-kip320"], counterexamples=saved, out=tmp_path / "gate")
    assert isinstance(result, isrcheck.GateResult) and result.ok and not result.unmet, result.summary
    assert {(r.invariant, r.expected, r.got, r.ok) for r in result.rows} >= {("leader-in-isr", "violated",
                                                                               "violated", True)}
    assert all(isinstance(r, isrcheck.GateRow) for r in result.rows)
    with pytest.raises(ValueError, match="unknown spec 'nope'"):
        isrcheck.gate(["nope"])
