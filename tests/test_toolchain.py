"""Issue 20's small things, as a user meets them: the installed ``isrcheck`` script in a subprocess.

Expectations said in the output, `list` naming only real flags, `show --compact`, one record notation,
the fuzzer's seed, ``--format json`` for prove/replay/minimize, prove's own exit code for "not inductive",
untracked files in ``gate --changed-since``, and SARIF without a made-up address.
"""
import json
import os
import pty
import re
import subprocess
import sys

import pytest

REPO = os.path.join(os.path.dirname(__file__), "..")
SCRIPT = os.path.join(os.path.dirname(sys.executable), "isrcheck")
KIP101_LOSS = os.path.join(REPO, "counterexamples", "kip-101", "no-committed-loss.itf.json")

VERSIONS = '''
from isrcheck.specs.kip_320 import Kip320


class SmallKip320(Kip320):
    """KIP-320 at bounds that search in about a second."""
    name = "small-kip-320"
    defaults = {**Kip320.defaults, "max_epochs": 2, "max_crashes": 0}
    expected_liveness = {"hw-advances": "holds", "isr-regrows": "holds"}   # kip-320's loop needs more epochs


class WrongKip320(SmallKip320):
    """Declares a loss that the protocol does not have."""
    name = "wrong-kip-320"
    expected = {**SmallKip320.expected, "no-committed-loss": "violated"}
    expected_why = {**SmallKip320.expected_why, "no-committed-loss": "KAFKA-0: a mistake"}
'''


def isrcheck(*args, cwd=None, timeout=300):
    return subprocess.run([SCRIPT, *args], capture_output=True, text=True, cwd=cwd, timeout=timeout)


def on_a_terminal(*args, columns=80):
    """What the command prints on a terminal of ``columns`` columns (a pseudo-terminal), styles removed."""
    main, sub = pty.openpty()
    proc = subprocess.Popen([SCRIPT, *args], stdout=sub, stderr=sub, env={**os.environ, "COLUMNS": str(columns)})
    os.close(sub)
    out = b""
    while True:
        try:
            data = os.read(main, 1 << 16)
        except OSError:                                 # the other end closed
            break
        if not data:
            break
        out += data
    os.close(main)
    assert proc.wait(timeout=60) == 0
    return re.sub(r"\x1b\[[0-9;]*m", "", out.decode()).splitlines()


@pytest.fixture
def versions(tmp_path):
    path = tmp_path / "versions.py"
    path.write_text(VERSIONS)
    return path


# --- the verdicts compared with the spec's expectations ----------------------------------------------
def test_a_known_bug_exits_1_and_says_it_is_the_expected_verdict(tmp_path):
    r = isrcheck("check", "--spec", "kip-101", "--invariant", "no-committed-loss", "--out", str(tmp_path),
                 "--no-progress")
    assert r.returncode == 1, r.stderr
    line = next(x for x in r.stdout.splitlines() if x.startswith("as expected:"))
    assert "kip-101 declares at its defaults" in line and "exits 1 for the known bug" in line
    assert "no-committed-loss (" in line and "KAFKA-7415" in line
    r = isrcheck("check", "--spec", "kip-101", "--invariant", "no-committed-loss", "--out", str(tmp_path),
                 "--no-progress", "--format", "json")
    report = json.loads(r.stdout)
    assert report["configuration"] == "defaults" and report["as_expected"] is True
    assert report["expected"] == {"no-committed-loss": "violated"}


def test_a_verdict_against_the_declaration_is_called_out(versions, tmp_path):
    spec = f"{versions}:WrongKip320"
    r = isrcheck("check", "--spec", spec, "--invariant", "no-committed-loss", "--out", str(tmp_path), "--no-progress")
    assert r.returncode == 0, r.stderr                      # it holds: the exit code is the verdict's
    assert "not as expected: no-committed-loss" in r.stdout and "\nas expected:" not in r.stdout
    r = isrcheck("check", "--spec", spec, "--invariant", "no-committed-loss", "--out", str(tmp_path), "--no-progress",
                 "--format", "json")
    assert json.loads(r.stdout)["as_expected"] is False


def test_bounds_of_no_configuration_have_no_expectations(tmp_path):
    r = isrcheck("check", "--spec", "kip-101", "--invariant", "no-committed-loss", "--max-epochs", "3",
                 "--out", str(tmp_path), "--no-progress", "--format", "json")
    report = json.loads(r.stdout)
    assert report["configuration"] is None and report["expected"] == {} and report["as_expected"] is None
    r = isrcheck("check", "--spec", "kip-101", "--invariant", "no-committed-loss", "--max-epochs", "3",
                 "--out", str(tmp_path), "--no-progress")
    assert "no expected verdicts: these bounds are none of kip-101's configurations" in r.stdout
    row = next(line for line in r.stdout.splitlines() if line.startswith("no-committed-loss "))
    assert row.split() == ["no-committed-loss", report["verdicts"]["no-committed-loss"]]     # no expected column


# --- list names only flags that exist ---------------------------------------------------------------
def test_list_suggests_only_flags_the_commands_have():
    listed = isrcheck("list").stdout + isrcheck("list", "--format", "json").stdout
    flags = set(re.findall(r"(?<![\w-])--[a-z][a-z-]+", listed))
    known = set()
    for command in ("check", "prove", "fuzz", "gate", "show", "replay", "minimize", "list"):
        known |= set(re.findall(r"--[a-z][a-z-]+", isrcheck(command, "--help").stdout))
    assert flags <= known, flags - known


# --- show --compact and the record notation --------------------------------------------------------
def test_show_compact_prints_only_the_cells_a_step_changed():
    full = isrcheck("show", KIP101_LOSS)
    r = isrcheck("show", KIP101_LOSS, "--compact")
    assert r.returncode == 0, r.stderr
    steps = re.split(r"^step (\d+)  ", r.stdout, flags=re.M)
    step = dict(zip(steps[1::2], steps[2::2]))
    assert len(step) == 16
    produce = step["7"]                                     # produce(l=0): r0's log and LEO, and the record counter
    assert produce.startswith("produce(l=0)")
    assert "r0  log ∅ → 0:1@1  LEO 0 → 1" in produce and "next_record 1 → 2" in produce
    assert "r1 " not in produce and "HW" not in produce
    assert "req_leader[0] - → r0" in step["1"] and "req_leader[1]" not in step["1"]     # arrays element-wise
    assert "log=∅" in step["0"] and "HW=0" in step["0"]     # the initial state in full
    assert "no-committed-loss violated" in r.stdout         # the narration and the verdict stay
    assert len(r.stdout) < len(full.stdout) / 2
    for layout in ([], ["--compact"]):                   # on an 80-column terminal the table truncates cells
        lines = on_a_terminal("show", KIP101_LOSS, *layout)
        assert max(len(line) for line in lines) <= 80
        assert any("…" in line for line in lines) == (not layout)
    bad = isrcheck("show", KIP101_LOSS, "--compact", "--format", "dot")
    assert bad.returncode == 2 and len(bad.stderr.splitlines()) == 1


def test_dot_writes_records_as_show_does():
    dot = isrcheck("show", KIP101_LOSS, "--format", "dot").stdout
    assert "[0:1@1 1:2@2]" in dot                           # offset:record@epoch, as in show's log column
    assert "acked (offset:record): 0:1" in dot and "1@0" not in dot


# --- the fuzzer's seed ----------------------------------------------------------------------------
def test_fuzz_prints_and_stores_its_seed(tmp_path):
    r = isrcheck("fuzz", "--spec", "acks-1", "--invariant", "no-committed-loss", "--budget", "30s", "--no-progress",
                 "--format", "json", "--out", str(tmp_path))
    assert r.returncode == 1, r.stderr
    report = json.loads(r.stdout)
    seed = report["seed"]
    assert isinstance(seed, int) and re.search(rf"fuzz: seed {seed}, (\d+) workers? \(`--seed {seed} --workers \1` "
                                               rf"repeats these runs\)", r.stderr), r.stderr
    assert json.load(open(report["trace_file"]))["#meta"]["seed"] == seed
    text = isrcheck("fuzz", "--spec", "acks-1", "--invariant", "no-committed-loss", "--budget", "30s",
                    "--no-progress", "--out", str(tmp_path), "--seed", "11")
    assert re.search(r"seed 11: `--seed 11 --workers \d+` repeats these runs", text.stdout)


def test_the_same_seed_and_workers_repeat_the_runs(tmp_path):
    found = []
    for run in ("a", "b"):
        r = isrcheck("fuzz", "--spec", "hw-truncation", "--invariant", "no-committed-loss", "--invariant",
                     "hw-log-matching", "--budget", "60s", "--seed", "5", "--workers", "2", "--no-progress",
                     "--format", "json", "--out", str(tmp_path / run))
        assert r.returncode == 1, r.stderr
        report = json.loads(r.stdout)
        assert report["seed"] == 5 and report["workers"] == 2
        assert set(report["found"]) == {"no-committed-loss", "hw-log-matching"}
        found.append({inv: ({k: v for k, v in info.items() if k.endswith("length") or k in ("runs_to_find", "worker")},
                            json.load(open(report["trace_files"][inv]))["states"])
                      for inv, info in report["found"].items()})
    assert found[0] == found[1]


# --- prove: --format json, and "not inductive" is exit 4 ------------------------------------------------
def test_prove_not_inductive_exits_4_with_the_counterexample_to_induction_in_json():
    r = isrcheck("prove", "--spec", "kip-320", "--invariant", "no-committed-loss", "--lemma", "log-matching",
                 "--format", "json")
    assert r.returncode == 4, r.stderr
    report = json.loads(r.stdout)
    assert report["verdict"] == "not-inductive" and report["failing"] == "no-committed-loss"
    assert report["lemmas"] == ["log-matching"] and report["k"] == 1
    cti = report["counterexample_to_induction"]
    assert len(cti) == 2 and cti[0]["action"] is None and cti[1]["action"]
    assert set(cti[0]["state"]) >= {"leo", "hw", "isr", "leader_epoch"}
    # the result vocabulary: k-induction's phases by name, no states enumerated (null, not 0)
    assert list(report["phase_seconds"]) == ["base", "step"] and report["distinct_states"] is None
    assert report["base_seconds"] == report["phase_seconds"]["base"] > 0
    text = isrcheck("prove", "--spec", "kip-320", "--invariant", "no-committed-loss", "--lemma", "log-matching")
    assert text.returncode == 4 and "not inductive (exit 4)" in text.stdout


def test_prove_json_refuted_and_proved(tmp_path):
    r = isrcheck("prove", "--spec", "acks-1", "--invariant", "no-committed-loss", "--auto-lemmas", "--format", "json",
                 "--out", str(tmp_path))
    assert r.returncode == 1, r.stderr
    report = json.loads(r.stdout)
    assert report["verdict"] == "refuted" and report["counterexample_to_induction"] is None
    assert report["trace_length"] == len(json.load(open(report["trace_file"]))["states"])
    assert list(report["phase_seconds"]) == ["search"] and report["step_seconds"] == 0   # no lemma was learned
    r = isrcheck("prove", "--spec", "acks-1", "--invariant", "log-matching", "--auto-lemmas", "--format", "json",
                 "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["verdict"] == "proved" and report["trace_file"] is None and report["lemmas"]
    assert list(report["phase_seconds"]) == ["search", "SAT"] and report["distinct_states"] > 0


# --- replay and minimize --format json ----------------------------------------------------------------
def test_replay_and_minimize_json(tmp_path):
    r = isrcheck("replay", KIP101_LOSS, "--format", "json")
    assert r.returncode == 0
    report = json.loads(r.stdout)
    assert report["reproduces"] is True and report["states"] == 16 and report["failed_step"] is None
    assert report["spec"] == "kip-101" and report["invariant"] == "no-committed-loss" and report["lasso"] is False
    cut = json.load(open(KIP101_LOSS))
    cut["states"] = cut["states"][:-1]                  # the last step (the loss) gone: no longer a violation
    short = tmp_path / "short.itf.json"
    short.write_text(json.dumps(cut))
    r = isrcheck("replay", str(short), "--format", "json")
    assert r.returncode == 1
    report = json.loads(r.stdout)
    assert report["reproduces"] is False and report["failed_step"] == 14

    src = tmp_path / "loss.itf.json"
    src.write_text(open(KIP101_LOSS).read())
    r = isrcheck("minimize", str(src), "--format", "json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["states"] == 16 and report["output"] == str(tmp_path / "loss.min.itf.json")
    assert report["minimized_states"] == len(json.load(open(report["output"]))["states"]) <= 16
    assert report["stopped_by"] is None


# --- gate: untracked files are changes; SARIF names no made-up address ---------------------------------------
def _git(cwd, *args):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True,
                   capture_output=True)


def test_changed_since_counts_an_untracked_spec_module(tmp_path):
    repo = tmp_path / "team"
    repo.mkdir()
    (repo / "README.md").write_text("team\n")
    (repo / ".gitignore").write_text("isrcheck-out/\ngate-counterexamples/\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "base")
    (repo / "versions.py").write_text(VERSIONS.split("class WrongKip320")[0])       # new, not yet added to git
    made = isrcheck("gate", "versions.py", "--counterexamples", "cx", "--update-traces", "--no-progress", cwd=repo)
    assert made.returncode == 0, made.stdout + made.stderr
    r = isrcheck("gate", "versions.py", "--counterexamples", "cx", "--changed-since", "HEAD", "--no-progress",
                 "--format", "json", cwd=repo)
    assert r.returncode == 0, r.stdout + r.stderr
    report = json.loads(r.stdout)
    assert {row["spec"] for row in report["results"]} == {"small-kip-320"}
    assert {"versions.py", "cx/small-kip-320/single-acting-leader.itf.json"} <= set(report["changed_files"])
    assert not any(f.startswith(("isrcheck-out/", "gate-counterexamples/")) for f in report["changed_files"])
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "versions")
    r = isrcheck("gate", "versions.py", "--counterexamples", "cx", "--changed-since", "HEAD", "--no-progress",
                 "--format", "sarif", cwd=repo)
    assert r.returncode == 0, r.stdout + r.stderr
    sarif = json.loads(r.stdout)
    driver = sarif["runs"][0]["tool"]["driver"]
    assert driver["name"] == "isrcheck" and "informationUri" not in driver
    assert "github.com/isrcheck" not in r.stdout
