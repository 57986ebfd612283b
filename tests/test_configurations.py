"""Named configurations: expectations at bounds other than a spec's defaults, declared, listed and gated.

The gate runs go through the installed command line in a subprocess, on the real kip-101 (its defaults and
its kafka-6361 configuration) with a copy of its saved traces, so the repository's own files are never written.
"""
import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from isrcheck.model import Configuration, DeclarationError
from isrcheck.model.configuration import cited, configurations, unaccounted
from isrcheck.specs import SPECS
from isrcheck.specs.kip_101 import Kip101
from isrcheck.specs.kip_320 import Kip320
from isrcheck.specs.kip_320_lemmas import LEMMAS

REPO = os.path.join(os.path.dirname(__file__), "..")
CLI = [sys.executable, "-m", "isrcheck.checker.command_line.cli"]
WHY = {"log-matching": "KAFKA-6361: the follower keeps records the new leader replaced"}


def run(*args, cwd=None):
    return subprocess.run(CLI + list(args), capture_output=True, text=True, cwd=cwd, timeout=300)


def declare(base=Kip101, **attrs):
    return type("Declared", (base,), {"name": "declared", **attrs})


# --- declarations ------------------------------------------------------------------------------
def test_a_well_formed_configuration_loads():
    cls = declare(configurations={"kafka-6361": Configuration({"max_records": 3}, {"log-matching": "violated"}, WHY)})
    assert list(configurations(cls)) == ["defaults", "kafka-6361"]
    assert configurations(cls)["defaults"].expected == Kip101.expected


@pytest.mark.parametrize("name, conf, message", [
    ("big", Configuration({"max_record": 3}, {"log-matching": "violated"}, WHY), "unknown bound 'max_record'"),
    ("big", Configuration({"max_records": 99}, {"log-matching": "violated"}, WHY), "max_records=99"),
    ("big", Configuration({"max_records": "3"}, {"log-matching": "violated"}, WHY), "must be an integer"),
    ("big", Configuration({"max_records": 3}, {"log-matchin": "violated"}, {}), "no invariant 'log-matchin'"),
    ("big", Configuration({"max_records": 3}, {"log-matching": "broken"}, WHY), "'broken'"),
    ("big", Configuration({"max_records": 3}, {"log-matching": "violated"}, {}), "without a reason"),
    ("big", Configuration({"max_records": 3}, {"log-matching": "holds"}, {"strong-isr": "x"}), "'strong-isr'"),
    ("big", Configuration({"max_records": 3}, {}, {}), "expects nothing"),
    ("defaults", Configuration({"max_records": 3}, {"log-matching": "violated"}, WHY), "kebab-case"),
    ("Big One", Configuration({"max_records": 3}, {"log-matching": "violated"}, WHY), "kebab-case"),
    ("big", {"max_records": 3}, "must be a Configuration"),
    ("big", Configuration({"max_records": 3}, {"log-matching": "violated"}, ["KAFKA-6361"]), "why must be a dict"),
])
def test_a_mistake_fails_at_class_creation_naming_spec_and_configuration(name, conf, message):
    with pytest.raises(DeclarationError) as info:
        declare(configurations={name: conf})
    assert "spec declared" in str(info.value) and repr(name) in str(info.value) and message in str(info.value)


def test_not_modelled_needs_a_sentence():
    with pytest.raises(DeclarationError, match="not_modelled"):
        declare(not_modelled={"KAFKA-1234": " "})


def test_configurations_and_not_modelled_are_not_inherited():
    assert "kafka-6361" in Kip101.configurations
    assert declare().configurations == {} and declare().not_modelled == {}
    own = SPECS["kip-279"].configurations["kafka-6361"]
    assert own is not Kip101.configurations["kafka-6361"] and "2.0.0" in own.why["log-matching"]   # its own


# --- every citation reproduced or explained ----------------------------------------------------
def test_a_citation_without_a_configuration_or_a_reason_is_unaccounted():
    cited_only = declare(references=("KIP-101", "KAFKA-1234 (a bug)", "KIP-101 (scenarios 1 and 2)"))
    assert cited(cited_only) == ["KIP-101", "KAFKA-1234", "KIP-101 scenario 1", "KIP-101 scenario 2"]
    assert unaccounted(cited_only) == ["KIP-101", "KAFKA-1234", "KIP-101 scenario 1", "KIP-101 scenario 2"]
    explained = declare(base=cited_only, not_modelled={"KAFKA-1234": "needs two partitions"},
                        configurations={"kafka-6361": Configuration(
                            {"max_records": 3}, {"log-matching": "violated"},
                            {"log-matching": "KIP-101 scenario 2 and KIP-101 scenario 1"})})
    assert unaccounted(explained) == []
    named = declare(base=cited_only, not_modelled={"KIP-101 scenario 1": "x", "KIP-101 scenario 2": "y"},
                    configurations={"kafka-1234": Configuration({"max_records": 3}, {"log-matching": "holds"})})
    assert unaccounted(named) == []                    # a configuration named after the ticket reproduces it
    assert unaccounted(declare(base=Kip320, name="kip-320-x", references=("KAFKA-12341",))) == ["KAFKA-12341"]


@pytest.mark.parametrize("name", list(SPECS))
def test_every_ticket_and_kip_a_spec_cites_is_reproduced_or_explained(name):
    assert unaccounted(SPECS[name]) == [], (
        f"{name} cites {unaccounted(SPECS[name])} without a configuration reproducing it or a not_modelled reason")


# --- the command line --------------------------------------------------------------------------
def test_list_shows_configurations():
    r = run("list", "--format", "json")
    assert r.returncode == 0, r.stderr
    kip101 = next(e for e in json.loads(r.stdout) if e["spec"] == "kip-101")
    confs = {c["name"]: c for c in kip101["configurations"]}
    assert list(confs) == ["defaults", *Kip101.configurations] and "kafka-6361" in confs
    assert confs["defaults"]["expected"] == Kip101.expected and confs["defaults"]["bounds"] == {}
    assert confs["kafka-6361"] == {"name": "kafka-6361", "bounds": {"max_records": 3},
                                           "expected": {"log-matching": "violated"}, "liveness": {},
                                           "why": Kip101.configurations["kafka-6361"].why}
    assert confs["defaults"]["liveness"] == Kip101.liveness_expected()[0]
    zombie = next(e for e in json.loads(r.stdout) if e["spec"] == "zombie-controller")
    assert list(zombie["not_modelled"]) == ["KAFKA-6082"]
    text = run("list")
    assert text.returncode == 0 and "kafka-6361: max_records=3 → log-matching violated" in text.stdout
    assert "not modelled KAFKA-6082:" in text.stdout


@pytest.fixture
def cx(tmp_path):
    """A copy of kip-101's saved traces (defaults and kafka-6361)."""
    shutil.copytree(os.path.join(REPO, "counterexamples", "kip-101"), tmp_path / "cx" / "kip-101")
    return tmp_path / "cx"


def test_gate_checks_every_configuration_and_names_it(cx, tmp_path):
    r = run("gate", "kip-101", "--no-progress", "--counterexamples", str(cx), "--out", str(tmp_path / "out"),
            "--format", "junit", "--output", str(tmp_path / "gate.xml"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "kip-101/kafka-6361" in r.stdout and f"{len(configurations(Kip101))} configurations" in r.stdout
    suites = {s.get("name"): s for s in ET.parse(tmp_path / "gate.xml").getroot().iter("testsuite")}
    assert set(suites) == {"kip-101"} | {f"kip-101/{name}" for name in Kip101.configurations}
    props = {p.get("name"): p.get("value") for p in suites["kip-101/kafka-6361"].iter("property")}
    assert props["configuration"] == "kafka-6361" and props["max_records"] == "3"
    assert [c.get("name") for c in suites["kip-101/kafka-6361"].iter("testcase")] == ["log-matching"]


def test_a_trace_found_at_other_bounds_fails_the_gate_until_updated_on_purpose(cx, tmp_path):
    # what a `check` at other bounds writing into the golden store does
    r = run("check", "--spec", "kip-101", "--invariant", "no-committed-loss", "--max-records", "3",
            "--no-progress", "--out", str(cx))
    assert r.returncode == 1, r.stderr
    gate = ["gate", "kip-101", "--no-progress", "--counterexamples", str(cx), "--out", str(tmp_path / "out")]
    r = run(*gate, "--format", "sarif", "--output", str(tmp_path / "gate.sarif"))
    assert "gate FAILED" in r.stdout and "max_records=3 (declared 2)" in r.stdout.replace("\n", "")
    assert r.returncode == 1, r.stdout + r.stderr
    sarif = json.loads((tmp_path / "gate.sarif").read_text())["runs"][0]
    assert sarif["invocations"][0]["exitCode"] == 1
    (result,) = sarif["results"]
    assert result["ruleId"] == "counterexample-at-other-bounds"
    assert (result["properties"]["configuration"], result["properties"]["invariant"]) == ("defaults",
                                                                                         "no-committed-loss")

    r = run(*gate, "--update-traces", "--format", "json")
    assert r.returncode == 0, r.stdout + r.stderr
    report = json.loads(r.stdout)
    assert report["ok"] and {(x["configuration"], x["saved_trace"]["status"]) for x in report["results"]
                             if x["expected"] == "violated"} == {("defaults", "replays"), ("kafka-6361", "replays")}
    rewritten = json.loads((cx / "kip-101" / "no-committed-loss.itf.json").read_text())
    committed = json.load(open(os.path.join(REPO, "counterexamples", "kip-101", "no-committed-loss.itf.json")))
    assert rewritten["#meta"]["bounds"] == Kip101().bounds and rewritten == committed
    written = sorted(os.path.relpath(os.path.join(d, f), cx) for d, _, fs in os.walk(cx) for f in fs)
    violated = {**Kip101.expected, **Kip101.liveness_expected()[0]}
    assert written == sorted([f"kip-101/{inv}.itf.json" for inv, v in violated.items() if v == "violated"]
                             + ["kip-101/kafka-6361/log-matching.itf.json"])     # nothing for invariants that hold


class SmallKip320(Kip320):
    """kip-320 at bounds that search in a moment; a configuration expecting a loss kip-320 does not have."""
    name = "small-kip-320"
    dropped_invariants = LEMMAS      # kip-320's proof lemmas: not what this test is about
    defaults = {**Kip320.defaults, "max_epochs": 2, "max_crashes": 0}
    expected_liveness = {"hw-advances": "holds", "isr-regrows": "holds"}   # kip-320's loop needs more epochs
    configurations = {"toothless": Configuration({"max_records": 1}, {"no-committed-loss": "violated",
                                                                      "single-acting-leader": "violated"},
                                                 {"no-committed-loss": "KAFKA-0: made up",
                                                  "single-acting-leader": "benign split brain"})}


def test_update_traces_writes_only_violations_the_search_found(tmp_path):
    from click.testing import CliRunner
    from isrcheck.checker.gating.gate import gate
    cx = tmp_path / "cx"
    result = CliRunner().invoke(gate, ["--no-progress", "--update-traces", "--counterexamples", str(cx), "--out",
                                       str(tmp_path / "out"), "--format", "json"],
                                obj={"specs": {"small-kip-320": SmallKip320}}, env={"GITHUB_STEP_SUMMARY": None})
    assert result.exit_code == 1, result.output
    unmet = [(r["configuration"], r["invariant"], r["kind"]) for r in json.loads(result.stdout)["results"]
             if not r["ok"]]
    assert unmet == [("toothless", "no-committed-loss", "expected-violation-not-found")]
    written = sorted(os.path.relpath(os.path.join(d, f), cx) for d, _, fs in os.walk(cx) for f in fs)
    assert written == ["small-kip-320/single-acting-leader.itf.json",
                       "small-kip-320/toothless/single-acting-leader.itf.json"]
