"""Protocol versions outside the isrcheck tree: ``--spec FILE.py:CLASS``, ``--spec MODULE:CLASS``, plugins in
the ``isrcheck.specs`` entry point group, and the gate over a team's own versions and saved traces; all
through the installed console script."""
import json
import os
import subprocess
import textwrap

import pytest

VERSIONS = '''
"""A team's protocol variants."""
from isrcheck.specs.kip_101 import Kip101


class OurKip101(Kip101):
    """KIP-101 as our fork runs it."""
    name = "our-kip-101"


class NotASpec:
    pass
'''


def isrcheck(*args, cwd, env=None):
    return subprocess.run(["isrcheck", *args], capture_output=True, text=True, cwd=cwd, timeout=300,
                          env={**os.environ, **(env or {})})


def one_line_error(run, text):
    assert run.returncode == 2, run.stderr
    assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr, run.stderr
    assert text in run.stderr, run.stderr


@pytest.fixture
def team(tmp_path):
    (tmp_path / "versions.py").write_text(VERSIONS)
    return tmp_path


def test_file_spec_checks_saves_and_shows_with_its_class(team):
    run = isrcheck("check", "--spec", "versions.py:OurKip101", "--invariant", "no-committed-loss", "--out", "out",
                   cwd=team)
    assert run.returncode == 1, run.stderr
    assert "read a counterexample: isrcheck show out/our-kip-101/no-committed-loss.itf.json --spec " \
           "versions.py:OurKip101" in run.stdout
    trace = team / "out" / "our-kip-101" / "no-committed-loss.itf.json"
    assert json.loads(trace.read_text().split("\n")[0][len('{"#meta": '):-1])["spec"] == "our-kip-101"
    # the trace names a spec isrcheck does not know: show says how to name its class, and then shows it
    one_line_error(isrcheck("show", str(trace), cwd=team), "name its class with --spec FILE.py:CLASS")
    run = isrcheck("replay", str(trace), "--spec", "versions.py:OurKip101", cwd=team)
    assert run.returncode == 0 and "reproduces" in run.stdout
    one_line_error(isrcheck("replay", str(trace), "--spec", "isrcheck.specs.kip_320:Kip320", cwd=team),
                   "a trace of spec 'our-kip-101', not of 'kip-320'")


def test_module_spec_and_fuzz(team):
    env = {"PYTHONPATH": str(team)}
    run = isrcheck("check", "--spec", "versions:OurKip101", "--invariant", "single-leader-per-epoch",
                   "--out", "out", cwd=team, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "holds" in run.stdout
    run = isrcheck("fuzz", "--spec", "versions.py:OurKip101", "--invariant", "single-acting-leader",
                   "--budget", "20s", "--seed", "1", "--no-progress", "--out", "out", cwd=team)
    assert run.returncode == 1, run.stdout + run.stderr           # a deposed leader still believes it leads
    assert (team / "out" / "our-kip-101" / "single-acting-leader.itf.json").exists()


@pytest.mark.parametrize("command", [["check", "--invariant", "x"], ["prove", "--invariant", "x"],
                                     ["fuzz", "--invariant", "x"], ["gate", "--no-progress"]])
def test_bad_references_are_one_line_errors(team, command):
    (team / "broken.py").write_text("x = (\n")
    (team / "raises.py").write_text("raise RuntimeError('no broker configured')\n")
    (team / "empty.py").write_text("X = 1\n")
    flag = [] if command[0] == "gate" else ["--spec"]
    cases = {"nosuch.py:X": "nosuch.py: no such file",
             "versions.py:Missing": "versions.py defines no 'Missing'",
             "versions.py:NotASpec": "NotASpec is not a Spec subclass",
             "broken.py:X": "cannot import: SyntaxError",
             "raises.py:X": "cannot import: RuntimeError: no broker configured",
             "no_such_module:X": "no module 'no_such_module'",
             "no-such-spec": "unknown spec 'no-such-spec'"}
    if command[0] == "gate":
        cases["empty.py"] = "empty.py: defines no Spec subclass with a name"
    for ref, text in cases.items():
        one_line_error(isrcheck(*command[:1], *flag, ref, *command[1:], cwd=team), text)


def test_gate_over_a_teams_versions_with_its_own_saved_traces(team):
    (team / "counterexamples").mkdir()
    sentinel = team / "counterexamples" / "keep.txt"
    sentinel.write_text("untouched")
    args = ["gate", "versions.py", "--counterexamples", "team-traces", "--out", "gate-out", "--no-progress"]
    run = isrcheck(*args, cwd=team)
    assert run.returncode == 1
    assert "run: isrcheck gate --update-traces versions.py:OurKip101" in run.stdout
    assert "--spec versions.py:OurKip101" in run.stdout               # how to show the fresh counterexample
    run = isrcheck(*args, "--update-traces", cwd=team)
    assert run.returncode == 0, run.stdout
    saved = sorted(p.name for p in (team / "team-traces" / "our-kip-101").iterdir())
    assert "no-committed-loss.itf.json" in saved
    run = isrcheck(*args, "--format", "json", cwd=team)
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads(run.stdout)
    assert report["ok"] and list(report["specs"]) == ["our-kip-101"]
    assert {r["saved_trace"]["path"] for r in report["results"] if r["expected"] == "violated"} >= {
        "team-traces/our-kip-101/no-committed-loss.itf.json"}
    assert sentinel.read_text() == "untouched" and sorted(os.listdir(team / "counterexamples")) == ["keep.txt"]


def test_installed_plugin_is_listed_checked_and_shown(tmp_path):
    site = tmp_path / "site"
    (site / "teamplugin").mkdir(parents=True)
    (site / "teamplugin" / "__init__.py").write_text(textwrap.dedent('''
        from isrcheck.specs.kip_101 import Kip101

        class TeamKip101(Kip101):
            """KIP-101, the team's plugin."""
            name = "team-kip-101"

        class Clash(Kip101):
            name = "kip-320"
    '''))
    info = site / "teamplugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: teamplugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[isrcheck.specs]\nteam-kip-101 = teamplugin:TeamKip101\n"
                                           "clash = teamplugin:Clash\nbroken = teamplugin:Nothing\n")
    env = {"PYTHONPATH": str(site)}
    run = isrcheck("list", "--format", "json", cwd=tmp_path, env=env)
    assert run.returncode == 0, run.stderr
    listed = {e["spec"]: e for e in json.loads(run.stdout)}
    assert listed["team-kip-101"]["summary"] and "kip-101" in listed and "clash" not in listed
    assert "the name 'kip-320' is a built-in spec's" in run.stderr
    assert "plugin broken (teamplugin:Nothing): cannot load" in run.stderr
    run = isrcheck("check", "--spec", "team-kip-101", "--invariant", "no-committed-loss", "--out", "out",
                   cwd=tmp_path, env=env)
    assert run.returncode == 1, run.stderr
    run = isrcheck("show", "out/team-kip-101/no-committed-loss.itf.json", cwd=tmp_path, env=env)
    assert run.returncode == 0 and "no-committed-loss violated after" in run.stdout
