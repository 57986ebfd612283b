"""A team's own protocol versions, end to end through the installed console script: mistakes a team makes
are one line naming its file and line (exit 2), variants are listed as themselves, settings that change a
run are named on its header line."""
import json
import os
import re
import subprocess
import textwrap

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KIP101_LOSS = os.path.join(REPO, "counterexamples", "kip-101", "no-committed-loss.itf.json")

VERSIONS = '''\
"""Our protocol variants."""
from isrcheck.specs.kip_320 import Kip320


class OurKip320(Kip320):
    """KIP-320 as our fork runs it.

    More words that are not the summary."""
    name = "our-kip-320"


class Described(OurKip320):
    name = "described"
    summary = "our own words"
    references = ("OUR-1: the ticket",)
    defaults = {**OurKip320.defaults, "max_epochs": 2, "max_records": 1}
'''

MISTAKES = {
    "unnamed.py": '''\
from isrcheck.specs.kip_320 import Kip320


class Unnamed(Kip320):
    """Forgot its name."""
''',
    "typo.py": '''\
from isrcheck.specs.kip_320 import Kip320


class Typo(Kip320):
    name = "typo"

    def fetch_acepted(self, s, f, l):
        return s.leader_epoch[f] == s.leader_epoch[l]
''',
    "expect.py": '''\
from isrcheck.specs.kip_320 import Kip320


class BadExpect(Kip320):
    name = "bad-expect"
    expected = {**Kip320.expected, "strong_isr": "holds"}
''',
    "control.py": '''\
from isrcheck.specs.kip_320 import Kip320


class Control(Kip320):
    name = "control"

    def fetch_accepted(self, s, f, l):
        if s.leader_epoch[f] == 1:
            return True
        return False
''',
    "helper.py": '''\
from isrcheck.specs.kip_320 import Kip320


class Helper(Kip320):
    name = "helper"

    def fetch_accepted(self, s, f, l):
        return undefined_helper(s, f)
''',
}


def isrcheck(*args, cwd, env=None):
    return subprocess.run(["isrcheck", *args], capture_output=True, text=True, cwd=cwd, timeout=300,
                          env={**os.environ, **(env or {})})


def one_line_error(run, *texts):
    assert run.returncode == 2, run.stdout + run.stderr
    assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr, run.stderr
    for text in texts:
        assert text in run.stderr, run.stderr


@pytest.fixture
def team(tmp_path):
    (tmp_path / "team").mkdir()
    (tmp_path / "team" / "versions.py").write_text(VERSIONS)
    for name, source in MISTAKES.items():
        (tmp_path / "team" / name).write_text(source)
    return tmp_path


def test_silent_mistakes_are_one_line_at_the_teams_file_and_line(team):
    check = ["check", "--invariant", "no-committed-loss", "--no-progress", "--spec"]
    one_line_error(isrcheck(*check, "team/unnamed.py:Unnamed", cwd=team),
                   "team/unnamed.py:4: Unnamed has no name of its own: it would be taken for Kip320", 'name = "..."')
    one_line_error(isrcheck("gate", "team/unnamed.py", "--no-progress", cwd=team),
                   "team/unnamed.py:4: Unnamed has no name of its own")
    one_line_error(isrcheck(*check, "team/typo.py:Typo", cwd=team),
                   "team/typo.py:7: Typo.fetch_acepted overrides nothing, and Kip320 has fetch_accepted (a hook)",
                   "rename fetch_acepted to fetch_accepted")
    one_line_error(isrcheck(*check, "team/expect.py:BadExpect", cwd=team),
                   "team/expect.py:6: BadExpect.expected names 'strong_isr', which is not one of its invariants "
                   "(did you mean 'strong-isr'?)")
    one_line_error(isrcheck(*check, "team/control.py:Control", cwd=team),
                   "team/control.py:8: action fetch(", "Python `if`")
    one_line_error(isrcheck(*check, "team/helper.py:Helper", cwd=team),
                   "team/helper.py:8: NameError: name 'undefined_helper' is not defined")
    one_line_error(isrcheck(*check, "team/versions.py", cwd=team),
                   "team/versions.py defines 2 specs: name one as FILE.py:CLASS: team/versions.py:OurKip320 "
                   "(our-kip-320), team/versions.py:Described (described)")


def test_module_class_references_work_from_the_working_directory(team):
    run = isrcheck("check", "--spec", "team.versions:OurKip320", "--invariant", "single-leader-per-epoch",
                   "--max-epochs", "2", "--max-records", "1", "--no-progress", "--out", "out", cwd=team)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "our-kip-320" in run.stdout and "holds" in run.stdout
    assert "`isrcheck list team.versions:OurKip320`" in run.stdout      # how to list it, as it was named


def test_variants_are_listed_as_themselves(team, tmp_path):
    env = {"ISRCHECK_CACHE_DIR": str(tmp_path / "cache")}
    run = isrcheck("list", "team/versions.py:OurKip320", "team/versions.py:Described", "--format", "json",
                   cwd=team, env=env)
    assert run.returncode == 0, run.stderr
    ours, described = json.loads(run.stdout)
    assert (ours["spec"], ours["reference"]) == ("our-kip-320", "team/versions.py:OurKip320")
    assert (ours["summary"], ours["summary_from"]) == ("KIP-320 as our fork runs it.", None)    # its docstring
    assert ours["references_from"] == "kip-320" and ours["references"]                      # marked inherited
    assert (described["summary"], described["references"], described["references_from"]) == (
        "our own words", ["OUR-1: the ticket"], None)
    assert ours["default_states"] is None                      # not counted yet
    run = isrcheck("list", "team/versions.py:OurKip320", cwd=team, env=env)
    assert "named as: team/versions.py:OurKip320" in run.stdout
    assert "references: KIP-320" in run.stdout and "(inherited from kip-320)" in run.stdout
    # a complete check at the defaults counts the states; --brief then gives them, one line a spec
    run = isrcheck("check", "--spec", "team/versions.py:Described", "--invariant", "single-leader-per-epoch",
                   "--no-progress", "--out", "out", "--format", "json", cwd=team, env=env)
    counted = json.loads(run.stdout)
    assert counted["complete"], run.stderr
    run = isrcheck("list", "--brief", "team/versions.py", "kip-101", cwd=team, env=env)
    assert run.returncode == 0, run.stderr
    head, ours, described, kip101, *rest = run.stdout.splitlines()
    assert head.split() == ["spec", "states", "expected", "violations", "summary"]
    assert ours.split()[:3] == ["team/versions.py:OurKip320", "-", "single-acting-leader,"]     # not counted
    assert ours.endswith("KIP-320 as our fork runs it.")
    assert described.split()[:2] == ["team/versions.py:Described", f"{counted['distinct_states']:,}"]
    assert described.endswith("our own words")
    assert kip101.startswith("kip-101") and "no-committed-loss" in kip101
    assert rest and "'-' until then" in rest[-1]


def test_settings_that_change_a_run_are_named_on_its_header_line(tmp_path):
    (tmp_path / "isrcheck.toml").write_text(textwrap.dedent('''\
        max-records = 1
        [check]
        set = ["unflushed_loss=1"]
        time-limit = 600
        [profiles.ci]
        max-epochs = 2
        [profiles.ci.gate]
        counterexamples = "nowhere"
        '''))
    check = ["check", "--spec", "kip-101", "--invariant", "single-leader-per-epoch", "--no-progress", "--out", "o"]
    run = isrcheck("--profile", "ci", *check, cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    header = run.stdout.splitlines()[0]
    assert header.startswith("isrcheck ") and "max_records=1 max_epochs=2" in header
    assert "bounds from isrcheck.toml [profile ci]: max_epochs=2" in header
    assert "bounds from isrcheck.toml: unflushed_loss=1 max_records=1" in header
    assert "options from isrcheck.toml: time-limit=600" in header
    # the command line wins, and what it gives is not the file's: no profile, and --max-records given
    run = isrcheck(*check, "--max-records", "2", "--format", "json", cwd=tmp_path)
    assert json.loads(run.stdout)["settings"] == [
        {"kind": "bounds", "from": "isrcheck.toml", "values": {"unflushed_loss": "1"}},
        {"kind": "options", "from": "isrcheck.toml", "values": {"time-limit": 600}}]
    run = isrcheck("--profile", "ci", "gate", "tla-kip320", "--changed-since", "HEAD", "--no-progress", cwd=tmp_path)
    assert run.returncode == 2 and "not inside a git repository" in run.stderr      # said before it stops
    assert "gate: options from isrcheck.toml [profile ci]: counterexamples=nowhere" in run.stderr
    # the file's bounds are for runs; a saved trace keeps its own (only a trace from another tool takes them)
    run = isrcheck("--profile", "ci", "replay", KIP101_LOSS, cwd=tmp_path)
    assert run.returncode == 0 and "reproduces" in run.stdout, run.stderr


def test_liveness_reads_like_safety(tmp_path):
    small = ["--max-epochs", "2", "--max-records", "1"]
    run = isrcheck("check", "--spec", "kafka-1120", "--property", "eventually-leader", *small, "--no-progress",
                   "--out", "out", cwd=tmp_path)
    assert run.returncode == 1, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith("isrcheck ") and "kafka-1120 · " in lines[0] and "max_epochs=2" in lines[0]
    row = next(line for line in lines if line.startswith("eventually-leader"))
    assert row.split()[1:3] == ["violated", "weak(elect_leader),"]     # expected at the defaults only: blank here
    assert "no expected liveness verdicts: kafka-1120 states them at its defaults only" in run.stdout
    lasso = "out/kafka-1120/eventually-leader.itf.json"
    assert f"read a lasso: isrcheck show {lasso}" in run.stdout
    meta = json.loads(open(tmp_path / lasso).readline()[len('{"#meta": '):-2])
    loop, trigger = meta["loop"], meta["trigger"]

    run = isrcheck("show", lasso, "--compact", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    head, *steps = re.split(r"\n(?=step \d+ )", run.stdout)
    assert "property eventually-leader" in head and len(steps) == len(json.load(open(tmp_path / lasso))["states"])
    assert all("  ▶ " in step for step in steps)                     # every step narrated, as an invariant's
    assert "▶ eventually-leader's trigger holds here" in steps[trigger]
    assert re.search(r"↻ the loop( starts here|: from here on nothing happens)", steps[loop])
    assert "eventually-leader violated: " in run.stdout and "the loop is fair" in run.stdout

    run = isrcheck("show", lasso, "--format", "html", "--output", "page.html", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    page = (tmp_path / "page.html").read_text()
    data = json.loads(page.split('id="trace-data">')[1].split("</script>")[0])
    assert data["loop"] == {"start": loop, "trigger": trigger} and data["kind"] == "property"
    assert data["meaning"] and data["summary"].startswith("eventually-leader violated: ")
    assert "the loop is fair" in data["consequence"]
    assert any(n["kind"] == "loop" for n in data["steps"][loop]["notes"])

    # a lasso cut short is no violation: show says what replay says, and marks no loop
    cut = json.loads(open(tmp_path / lasso).read())
    cut["states"] = cut["states"][:-1]
    cut["#meta"]["loop"] = min(loop, len(cut["states"]) - 1)
    (tmp_path / "cut.itf.json").write_text(json.dumps(cut))
    replayed = isrcheck("replay", "cut.itf.json", cwd=tmp_path)
    shown = isrcheck("show", "cut.itf.json", "--compact", cwd=tmp_path)
    assert replayed.returncode == 1 and shown.returncode == 0, shown.stderr
    message = replayed.stdout.split("does not reproduce: ")[1].strip()
    assert f"does not reproduce: {message} (as `isrcheck replay` says)" in " ".join(shown.stdout.split())
    assert "violated" not in shown.stdout and "↻" not in shown.stdout


def test_itf_from_other_tools_and_traces_cut_short(tmp_path):
    saved = json.load(open(KIP101_LOSS))
    other = {"#meta": {"format": "ITF", "description": "written by another tool"}, "vars": saved["vars"],
             "states": [{"#meta": {"index": i}, **{k: v for k, v in st.items() if k != "#meta"}}
                        for i, st in enumerate(saved["states"])]}
    (tmp_path / "other.itf.json").write_text(json.dumps(other))
    one_line_error(isrcheck("show", "other.itf.json", cwd=tmp_path),
                   "other.itf.json: no isrcheck '#meta' (a trace from another tool): name its spec with --spec S")
    run = isrcheck("show", "other.itf.json", "--spec", "kip-101", "--compact", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "invariant no-committed-loss · engine ITF · 16 states" in " ".join(run.stdout.split())
    for i, st in enumerate(saved["states"][1:], start=1):        # each step's action found from its states
        action = f"step {i}  {st['#meta']['action']}("
        assert action in run.stdout
    assert "no-committed-loss violated after 15 steps" in run.stdout
    run = isrcheck("replay", "other.itf.json", "--spec", "kip-101", "--format", "json", cwd=tmp_path)
    assert run.returncode == 0 and json.loads(run.stdout)["reproduces"], run.stdout + run.stderr
    one_line_error(isrcheck("replay", "other.itf.json", "--spec", "kip-101", "--max-epochs", "3", cwd=tmp_path),
                   "state 0: epoch_cache[0]: expected a list of 3, got a list of 4")
    one_line_error(isrcheck("replay", KIP101_LOSS, "--max-epochs", "3", cwd=tmp_path),
                   "the trace records its bounds (max_epochs=4): leave out --max-epochs")
    # another tool's trace whose last state breaks nothing, and an isrcheck trace cut short: no violation shown
    other["states"] = other["states"][:8]
    saved["states"] = saved["states"][:-1]
    (tmp_path / "walk.itf.json").write_text(json.dumps(other))
    (tmp_path / "cut.itf.json").write_text(json.dumps(saved))
    messages = []
    for name, spec in (("walk", ["--spec", "kip-101"]), ("cut", [])):
        replayed = isrcheck("replay", f"{name}.itf.json", *spec, cwd=tmp_path)
        shown = isrcheck("show", f"{name}.itf.json", *spec, cwd=tmp_path)
        assert replayed.returncode == 1 and shown.returncode == 0, shown.stderr
        messages.append(replayed.stdout.split("does not reproduce: ")[1].strip())
        assert f"does not reproduce: {messages[-1]} (as `isrcheck replay` says)" in " ".join(shown.stdout.split())
        assert "violated" not in shown.stdout and "breaks here" not in shown.stdout
    assert messages == ["no invariant of kip-101 fails at its last step",
                        "no-committed-loss now holds at the last step"]


TEAM_REPO = {
    "base.py": '''\
from isrcheck.specs.kip_320 import Kip320


class Small(Kip320):
    """Our versions' shared parent: small bounds."""
    defaults = {**Kip320.defaults, "max_epochs": 2, "max_records": 1}
''',
    "versions.py": '''\
from base import Small
from rules import same_epoch


class Ruled(Small):
    name = "ruled"

    def fetch_accepted(self, s, f, l):
        return same_epoch(s, f, l)
''',
    "probed.py": '''\
import probe
from base import Small


class Probed(Small):
    name = "probed"

    def fetch_accepted(self, s, f, l):
        return probe.accepted(s, f, l)
''',
    "plain.py": "from base import Small\n\n\nclass Plain(Small):\n    name = \"plain\"\n",
    "rules.py": "from constants import LAG\n\n\ndef same_epoch(s, f, l):\n    return s.leader_epoch[f] + LAG == "
                "s.leader_epoch[l]\n",
    "constants.py": "LAG = 0\n",
    "probe.py": "import json\n\nLIMITS = json.load(open(__file__.replace('.py', '.json')))\n\n\n"
                "def accepted(s, f, l):\n    return s.leader_epoch[f] == s.leader_epoch[l]\n",
    "probe.json": "{}\n",
    "requirements.txt": "isrcheck==0.1.0\nnumpy\n",
    "isrcheck.toml": "[gate]\ncounterexamples = \"cx\"\n",
    "README.md": "our versions\n",
    ".gitignore": "gate-counterexamples/\n",
}


def _git(cwd, *args):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True,
                   capture_output=True)


def test_changed_since_follows_imports_settings_and_isrcheck_pins(tmp_path):
    for name, text in TEAM_REPO.items():
        (tmp_path / name).write_text(text)
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-q", "-m", "base")

    def gate(*specs):
        run = isrcheck("gate", *specs, "--changed-since", "HEAD", "--no-progress", "--format", "json", cwd=tmp_path)
        assert run.returncode in (0, 1), run.stderr
        report = json.loads(run.stdout)
        return {r["spec"] for r in report["results"]}, report["skipped"], report["changed_why"]

    (tmp_path / "constants.py").write_text("LAG = 1\n")        # imported by value, two imports away from Ruled
    checked, skipped, why = gate("versions.py", "probed.py", "plain.py")
    assert checked == {"ruled", "probed"} and skipped == ["plain"]
    assert why == ["probed on any change: probe.py:3 uses open: what it depends on cannot be followed"]
    _git(tmp_path, "checkout", "-q", ".")

    (tmp_path / "README.md").write_text("changed\n")
    assert gate("plain.py")[:2] == (set(), ["plain"])
    (tmp_path / "isrcheck.toml").write_text("[gate]\ncounterexamples = \"other\"\n")
    assert gate("plain.py") == ({"plain"}, [], ["every spec: the settings file isrcheck.toml changed"])
    _git(tmp_path, "checkout", "-q", ".")
    (tmp_path / "requirements.txt").write_text("isrcheck==0.2.0\nnumpy\n")
    assert gate("plain.py") == (
        {"plain"}, [], ["every spec: requirements.txt changed a line naming isrcheck (its version may differ)"])
    (tmp_path / "requirements.txt").write_text("isrcheck==0.1.0\nnumpy>=2\n")    # a pin of something else
    assert gate("plain.py")[:2] == (set(), ["plain"])
