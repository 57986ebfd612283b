"""``isrcheck gate``: the CI gate on protocol changes.

Specs run at small bounds (subclasses with smaller ``defaults``) except the broken
KIP-320, which runs at kip-320's default bounds, where removing the epoch fence
from fetches loses an acknowledged record. The registry and the directories are
passed in (``obj={"specs": ...}`` for the click command), never the real ones.
"""
import json
import os
import shutil
import subprocess
import xml.etree.ElementTree as ET

import pytest
from click.testing import CliRunner

from isrcheck.checker.exhaustive.bfs import search
from isrcheck.checker.gating.gate import gate
from isrcheck.checker.gating.gate_changes import affected_specs
from isrcheck.checker.traces.trace import default_path, from_steps, load, replay, save
from isrcheck.specs import SPECS
from isrcheck.model.expr import all_of
from isrcheck.model.spec import invariant
from isrcheck.specs.kip_320 import Kip320
from isrcheck.specs.kip_320_lemmas import LEMMAS

REPO = os.path.join(os.path.dirname(__file__), "..")


class Kip320Broken(Kip320):
    """KIP-320 with the leader-epoch check removed from fetches; kip-320's expected verdicts."""
    name = "kip-320-broken"
    dropped_invariants = LEMMAS      # kip-320's proof lemmas: not what this test is about
    expected_liveness = dict.fromkeys(Kip320.expected_liveness)     # nor its liveness (withdrawn)

    def fetch_accepted(self, s, f, l):
        return True


class SmallKip320(Kip320):
    """KIP-320 at bounds that search in about a second: only the benign split brain is violated."""
    name = "small-kip-320"
    dropped_invariants = LEMMAS      # kip-320's proof lemmas: not what this test is about
    defaults = {**Kip320.defaults, "max_epochs": 2, "max_crashes": 0}
    expected_liveness = dict.fromkeys(Kip320.expected_liveness)     # the gate's invariant rows are the subject


class Toothless(SmallKip320):
    """Must lose a committed record, but holds: the model lost its bite."""
    name = "toothless"
    expected = {**SmallKip320.expected, "no-committed-loss": "violated"}


class Tampered(SmallKip320):
    """Its saved counterexample has been cut short, so it no longer replays."""
    name = "tampered"


class Undeclared(SmallKip320):
    """Adds an invariant without an expected verdict (the inherited ones keep theirs)."""
    name = "undeclared"

    @invariant("hw-within-log")
    def hw_within_log(self, s):
        """No replica's HW is past the end of its log."""
        return all_of(s.hw[r] <= s.leo[r] for r in self.REPLICAS)


def write_trace(cls, invariant, cx_dir, name=None, drop_last=False):
    """Search cls at its defaults and save the counterexample of ``invariant`` as spec ``name``'s."""
    spec = cls()
    steps = search(spec, [invariant]).violations[invariant].steps
    trace = from_steps(spec, invariant, "local", steps[:-1] if drop_last else steps)
    trace.spec = name or cls.name
    return save(trace, default_path(str(cx_dir), trace.spec, invariant))


def copy_trace(src_spec, dst_spec, invariant, cx_dir):
    data = json.load(open(default_path(os.path.join(REPO, "counterexamples"), src_spec, invariant)))
    data["#meta"]["spec"] = dst_spec
    path = default_path(str(cx_dir), dst_spec, invariant)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    json.dump(data, open(path, "w"))


def invoke(registry, *args, summary=None):
    env = {"GITHUB_STEP_SUMMARY": summary}           # None: unset, so a CI run's own summary is left alone
    result = CliRunner().invoke(gate, ["--no-progress", *args], obj={"specs": registry}, env=env)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception                       # a crash is not a verdict
    return result


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A counterexamples/ directory with good traces for small-kip-320, toothless, kip-320-broken; a cut one for tampered."""
    cx = tmp_path_factory.mktemp("cx")
    write_trace(SmallKip320, "single-acting-leader", cx)
    write_trace(SmallKip320, "single-acting-leader", cx, name="toothless")
    write_trace(SmallKip320, "single-acting-leader", cx, name="tampered", drop_last=True)
    copy_trace("kip-320", "kip-320-broken", "single-acting-leader", cx)
    return cx


@pytest.fixture(scope="module")
def mixed(saved, tmp_path_factory):
    """One gate run over a broken, a toothless and a tampered spec: JUnit to a file, a step summary."""
    d = tmp_path_factory.mktemp("mixed")
    registry = {c.name: c for c in (Kip320Broken, Toothless, Tampered)}
    result = invoke(registry, "--counterexamples", str(saved), "--out", str(d / "out"), "--format", "junit",
                    "--output", str(d / "gate.xml"), summary=str(d / "summary.md"))
    return result, d


UNMET = {("kip-320-broken", "no-committed-loss"), ("kip-320-broken", "no-committed-loss-anywhere"),
         ("kip-320-broken", "consistent-reads"), ("kip-320-broken", "hw-log-matching"),
         ("kip-320-broken", "hw-monotonic"), ("kip-320-broken", "strong-isr"), ("kip-320-broken", "strong-live-isr"),
         ("toothless", "no-committed-loss"), ("tampered", "single-acting-leader")}


def test_broken_kip_320_fails_the_gate_with_a_counterexample(mixed):
    result, d = mixed
    assert result.exit_code == 1, result.output
    path = d / "out" / "kip-320-broken" / "no-committed-loss.itf.json"
    assert path.exists()
    trace = load(str(path))
    assert replay(Kip320Broken(**trace.bounds), trace).ok       # the written counterexample is real
    assert "kip-320-broken" in result.stdout and "FAILED" in result.stdout
    assert f"isrcheck show {path}" in result.stdout.replace("\n", "")
    # the expected violation of kip-320-broken replays, and nothing is written for it
    assert not (d / "out" / "kip-320-broken" / "single-acting-leader.itf.json").exists()


def test_spec_that_must_break_but_holds_fails_the_gate(mixed):
    result, d = mixed
    case = _junit_cases(d / "gate.xml")[("toothless", "no-committed-loss")]
    failure = case.find("failure")
    assert failure is not None and failure.get("type") == "expected-violation-not-found"
    assert "lost its bite" in failure.get("message")
    assert "toothless no-committed-loss" in result.stdout


def test_trace_that_no_longer_replays_fails_the_gate(mixed):
    result, d = mixed
    failure = _junit_cases(d / "gate.xml")[("tampered", "single-acting-leader")].find("failure")
    assert failure.get("type") == "counterexample-does-not-replay"
    assert "now holds at the last step" in failure.get("message")
    fresh = d / "out" / "tampered" / "single-acting-leader.itf.json"     # a replacement, for CI to attach
    assert fresh.exists()
    trace = load(str(fresh))
    assert replay(Tampered(**trace.bounds), trace).ok


def _junit_cases(path):
    root = ET.parse(path).getroot()
    return {(c.get("classname"), c.get("name")): c for c in root.iter("testcase")}


def test_junit_has_a_testcase_per_expectation_and_a_failure_per_unmet_one(mixed):
    result, d = mixed
    root = ET.parse(d / "gate.xml").getroot()
    assert root.tag == "testsuites"
    cases = _junit_cases(d / "gate.xml")
    expected = {(c.name, inv) for c in (Kip320Broken, Toothless, Tampered) for inv in c.expected}
    assert set(cases) == expected and len(list(root.iter("testcase"))) == len(expected) == 33
    failed = {k for k, c in cases.items() if c.find("failure") is not None}
    assert failed == UNMET
    assert root.get("tests") == "33" and root.get("failures") == str(len(UNMET))
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    assert set(suites) == {"kip-320-broken", "toothless", "tampered"}
    assert suites["kip-320-broken"].get("failures") == "7"


def test_step_summary_gets_markdown_tables(mixed):
    result, d = mixed
    md = (d / "summary.md").read_text()
    assert md.startswith("## ❌ isrcheck gate: 9 of 33 expectations unmet")
    assert "| spec | invariant | expected | got |" in md
    # the unexpected counterexample as a table of steps, a row per replica, changed cells in bold
    assert "### ❌ `kip-320-broken`: `no-committed-loss` violated" in md
    assert "| step | action | replica | log (offset:record@epoch) |" in md
    for column in ("LEO", "HW", "leader", "epoch", "ISR"):
        assert f" {column} |" in md.split("| step | action |")[1].splitlines()[0]
    assert "| 0 | `initial state` | r0 |" in md and "q_leader=r0" in md     # the step's other changes
    assert "**0:1@1**" in md or "**r0**" in md
    # only violations of invariants that must hold are drawn: not the fresh trace of tampered
    assert "`tampered`: `single-acting-leader` violated" not in md


def test_all_met_exits_0_json_to_stdout_and_clears_stale_counterexamples(saved, tmp_path):
    stale = tmp_path / "out" / "small-kip-320" / "no-committed-loss.itf.json"
    stale.parent.mkdir(parents=True)
    stale.write_text("{}")
    result = invoke({"small-kip-320": SmallKip320}, "--counterexamples", str(saved), "--out",
                    str(tmp_path / "out"), "--format", "json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["ok"] is True and len(report["results"]) == 11
    row = next(r for r in report["results"] if r["invariant"] == "single-acting-leader")
    assert row["saved_trace"]["status"] == "replays" and row["got"] == "violated"
    for key in ("distinct_states", "depth", "seconds"):
        assert row[key] >= 0
    assert not stale.exists()


def test_missing_saved_trace_fails_and_a_fresh_one_is_written(tmp_path):
    result = invoke({"small-kip-320": SmallKip320}, "--counterexamples", str(tmp_path / "none"), "--out",
                    str(tmp_path / "out"), "--format", "json")
    assert result.exit_code == 1
    row = next(r for r in json.loads(result.stdout)["results"] if not r["ok"])
    assert (row["invariant"], row["saved_trace"]["status"]) == ("single-acting-leader", "missing")
    assert os.path.exists(row["counterexample"])


def test_sarif_is_structurally_valid(saved, tmp_path):
    out = tmp_path / "gate.sarif"
    registry = {"toothless": Toothless, "tampered": Tampered, "small-kip-320": SmallKip320}
    result = invoke(registry, "--counterexamples", str(saved), "--out", str(tmp_path / "out"),
                    "--format", "sarif", "--output", str(out))
    assert result.exit_code == 1
    assert "toothless" in result.stdout            # the table still goes to the log
    sarif = json.loads(out.read_text())
    assert sarif["version"] == "2.1.0" and "sarif-2.1.0" in sarif["$schema"]
    assert len(sarif["runs"]) == 1
    run = sarif["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "isrcheck"
    rule_ids = [r["id"] for r in driver["rules"]]
    assert len(rule_ids) == len(set(rule_ids))
    results = run["results"]
    assert {(r["properties"]["spec"], r["properties"]["invariant"]) for r in results} == \
        {("toothless", "no-committed-loss"), ("tampered", "single-acting-leader")}
    assert len(results) == 2
    for r in results:
        assert r["ruleId"] in rule_ids and rule_ids[r["ruleIndex"]] == r["ruleId"]
        assert r["level"] == "error" and r["message"]["text"]
        for loc in r["locations"]:
            assert loc["physicalLocation"]["artifactLocation"]["uri"]
    by_spec = {r["properties"]["spec"]: r for r in results}
    assert by_spec["toothless"]["ruleId"] == "expected-violation-not-found"
    assert by_spec["toothless"]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith(
        "test_gate.py")                             # the spec's class
    assert by_spec["tampered"]["ruleId"] == "counterexample-does-not-replay"


# --- bad input: exit 2, one line, through isrcheck's own entry point -------------------------
@pytest.fixture
def isrcheck(monkeypatch, capsys):
    from isrcheck.checker.command_line import cli
    import isrcheck.checker.gating.gate as gate_module
    if "gate" not in cli.cli.commands:
        cli.cli.add_command(gate)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)

    def run(*args, registry=None):
        if registry is not None:
            monkeypatch.setattr(gate_module, "SPECS", registry)
        with pytest.raises(SystemExit) as exc:
            cli.main(["gate", "--no-progress", *args])
        out = capsys.readouterr()
        return exc.value.code, out.out, [line for line in out.err.splitlines() if line.strip()]
    return run


def test_unknown_spec_exits_2_with_one_line(isrcheck):
    code, _, err = isrcheck("kip-320", "no-such-spec")
    assert code == 2 and len(err) == 1 and "unknown spec 'no-such-spec'" in err[0]


def test_spec_lacking_an_expected_verdict_exits_2_naming_it(isrcheck, tmp_path):
    code, _, err = isrcheck("--out", str(tmp_path), registry={"undeclared": Undeclared})
    assert code == 2 and len(err) == 1
    assert "undeclared" in err[0] and "'hw-within-log'" in err[0]


def test_bad_revision_exits_2_with_one_line(isrcheck, tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    code, _, err = isrcheck("--changed-since", "no-such-revision-xyz", "--out", str(tmp_path))
    assert code == 2 and len(err) == 1 and "no-such-revision-xyz" in err[0]
    monkeypatch.chdir(tmp_path)                     # not a repository at all
    code, _, err = isrcheck("--changed-since", "HEAD", "--out", str(tmp_path))
    assert code == 2 and len(err) == 1 and "git" in err[0]


# --- --changed-since -------------------------------------------------------------------------
KIP320_FAMILY = {"kip-320", "no-isr-fencing", "zombie-controller", "acks-1", "unclean-election", "kafka-7128",
                 "async-isr", "kip-497", "last-replica-standing", "kip-966", "kafka-1120", "kafka-2.6.1",
                 "no-reassignment-bump"}


@pytest.mark.parametrize("files, selected", [
    (["model/kafka.py"], set(SPECS)),
    (["checker/exhaustive/bfs.py", "README.md"], set(SPECS)),
    (["specs/kip_101.py"], {"kip-101", "kip-279", "kafka-2.0.1"} | KIP320_FAMILY),
    (["specs/kip_320.py"], KIP320_FAMILY),
    (["specs/async_isr.py"], {"async-isr", "kip-497"}),      # defines both; kip-497 also inherits from async-isr
    (["specs/last_replica_standing.py"], {"last-replica-standing", "kip-966"}),
    (["specs/hw_truncation.py"], {"hw-truncation", "kafka-0.8.2", "kafka-0.9", "kafka-0.10.2"}),
    (["specs/kafka_0_9.py"], {"kafka-0.9", "kafka-0.10.2"}),
    (["counterexamples/kip-101/no-committed-loss.itf.json"], {"kip-101"}),
    (["counterexamples/kip-101/x.itf.json", "specs/acks_1.py"], {"kip-101", "acks-1"}),
    (["README.md", "tests/test_bfs.py", "docs/gate.md", ".github/workflows/protocol-gate.yml"], set()),
    ([], set()),
])
def test_changed_files_select_the_specs_they_can_affect(files, selected):
    assert set(affected_specs(SPECS, files, REPO, os.path.join(REPO, "counterexamples"))) == selected


def test_selection_follows_the_mro_into_other_modules():
    registry = {**SPECS, "kip-320-broken": Kip320Broken}
    picked = affected_specs(registry, ["tests/test_gate.py"], REPO, os.path.join(REPO, "counterexamples"))
    assert picked == ["kip-320-broken"]
    picked = affected_specs(registry, ["specs/kip_279.py"], REPO, os.path.join(REPO, "counterexamples"))
    assert "kip-320-broken" in picked and "hw-truncation" not in picked


def _git(cwd, *args):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True,
                   capture_output=True)


def test_changed_since_in_a_git_repository(saved, tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    shutil.copytree(saved, repo / "counterexamples")
    (repo / "README.md").write_text("hello\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "base")
    monkeypatch.chdir(repo)
    registry = {"small-kip-320": SmallKip320, "toothless": Toothless}

    (repo / "README.md").write_text("changed\n")               # affects no spec: nothing to run, exit 0
    result = invoke(registry, "--changed-since", "HEAD", "--format", "junit", "--output", "gate.xml")
    assert result.exit_code == 0, result.output
    assert ET.parse(repo / "gate.xml").getroot().get("tests") == "0"
    assert "no spec is affected" in result.stdout

    # a change under counterexamples/small-kip-320/ selects that spec alone (toothless would fail)
    path = repo / "counterexamples" / "small-kip-320" / "single-acting-leader.itf.json"
    path.write_text(path.read_text() + "\n")
    result = invoke(registry, "--changed-since", "HEAD", "--format", "json", "--out", str(tmp_path / "out"))
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert {r["spec"] for r in report["results"]} == {"small-kip-320"}
    assert report["skipped"] == ["toothless"]
    assert sorted(report["changed_files"]) == [                 # gate.xml: untracked, written by the first run
        "README.md", "counterexamples/small-kip-320/single-acting-leader.itf.json", "gate.xml"]


# --- liveness expectations: checked at the defaults, their lassos saved and replayed --------------
LIVE_SPEC = "no-isr-fencing"    # a violated liveness property (hw-advances) in a small state space (125k states)


def _gate_json(*args):
    done = subprocess.run(["isrcheck", "gate", LIVE_SPEC, "--no-progress", "--format", "json", *args],
                          capture_output=True, text=True, timeout=300)
    return done.returncode, json.loads(done.stdout), done.stderr


def test_liveness_expectations_are_gated_with_their_lassos(tmp_path):
    cx, out = tmp_path / "cx", tmp_path / "out"
    code, report, err = _gate_json("--counterexamples", str(cx), "--out", str(out), "--update-traces")
    assert code == 0, err
    rows = {r["invariant"]: r for r in report["results"]}
    props = SPECS[LIVE_SPEC].liveness_expected()[0]
    assert props and all(rows[p]["got"] == v for p, v in props.items())
    for prop, verdict in props.items():
        if verdict == "violated":
            trace = load(str(cx / LIVE_SPEC / f"{prop}.itf.json"))
            assert trace.invariant == prop and "loop" in trace.extra and rows[prop]["saved_trace"]["status"] == "replays"
    prop = next(p for p, v in props.items() if v == "violated")
    path = cx / LIVE_SPEC / f"{prop}.itf.json"
    data = json.loads(path.read_text())
    data["states"] = data["states"][:-1]            # the cycle no longer closes on its start state
    data["#meta"]["loop"] = min(data["#meta"]["loop"], len(data["states"]) - 1)
    data["#meta"]["trigger"] = min(data["#meta"]["trigger"], data["#meta"]["loop"])
    path.write_text(json.dumps(data))
    code, report, err = _gate_json("--counterexamples", str(cx), "--out", str(out))
    assert code == 1, err
    (row,) = [r for r in report["results"] if r["invariant"] == prop]
    assert row["saved_trace"]["status"] == "no longer replays" and not report["ok"]
    data = json.loads((cx / LIVE_SPEC / "single-acting-leader.itf.json").read_text())
    data["#meta"]["invariant"] = prop                 # an invariant's trace filed as the property's: no lasso
    path.write_text(json.dumps(data))
    code, report, err = _gate_json("--counterexamples", str(cx), "--out", str(out))
    assert code == 1, err
    (row,) = [r for r in report["results"] if r["invariant"] == prop]
    assert row["saved_trace"]["message"].endswith("is not a liveness lasso")
