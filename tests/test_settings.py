"""Settings in a file (checker/command_line/settings.py): isrcheck.toml or pyproject.toml's [tool.isrcheck], named profiles,
precedence flags > profile > file > defaults, and a bad file as one line and exit 2. The installed ``isrcheck``
script in a subprocess, run in a temporary directory."""
import json
import os
import subprocess
import sys

import pytest

REPO = os.path.join(os.path.dirname(__file__), "..")
SCRIPT = os.path.join(os.path.dirname(sys.executable), "isrcheck")

SETTINGS = '''
max-epochs = 2                  # every command with --max-epochs
[check]
max-crashes = 0
format = "json"
no-progress = true
invariant = "no-committed-loss"
[profiles.ci]
max-epochs = 3
[profiles.ci.check]
max-crashes = 1
'''


def isrcheck(cwd, *args, env=None):
    return subprocess.run([SCRIPT, *args], capture_output=True, text=True, cwd=cwd, timeout=300,
                          env={**os.environ, **(env or {})})


def bounds(r):
    assert r.returncode == 0, r.stderr
    b = json.loads(r.stdout)["bounds"]
    return b["max_epochs"], b["max_crashes"]


def test_flags_over_profile_over_file_over_defaults(tmp_path):
    (tmp_path / "isrcheck.toml").write_text(SETTINGS)
    check = ["check", "--spec", "kip-320"]
    assert bounds(isrcheck(tmp_path, *check)) == (2, 0)                                  # the file
    assert bounds(isrcheck(tmp_path, "--profile", "ci", *check)) == (3, 1)               # the profile over it
    assert bounds(isrcheck(tmp_path, *check, env={"ISRCHECK_PROFILE": "ci"})) == (3, 1)
    assert bounds(isrcheck(tmp_path, "--profile", "ci", *check, "--max-crashes", "0")) == (3, 0)   # a flag over all
    r = isrcheck(tmp_path, *check)
    assert list(json.loads(r.stdout)["verdicts"]) == ["no-committed-loss"]                # a repeatable option
    os.remove(tmp_path / "isrcheck.toml")
    r = isrcheck(tmp_path, *check, "--invariant", "no-committed-loss", "--format", "json", "--no-progress")
    assert bounds(r) == (4, 1)                                                           # no file: the spec's


def test_a_shared_key_applies_where_the_option_takes_the_value(tmp_path):
    (tmp_path / "isrcheck.toml").write_text('format = "json"\n')     # show has --format too, without json
    assert json.loads(isrcheck(tmp_path, "list", "acks-1").stdout)[0]["spec"] == "acks-1"
    trace = os.path.join(REPO, "counterexamples", "acks-1", "no-committed-loss.itf.json")
    assert isrcheck(tmp_path, "show", trace).stdout.startswith("acks-1 · ")
    assert json.loads(isrcheck(tmp_path, "replay", trace).stdout)["reproduces"] is True


def test_pyproject_tool_table_and_a_named_file(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "team"\n')             # no [tool.isrcheck]: ignored
    assert isrcheck(tmp_path, "list", "acks-1").stdout.startswith("acks-1 ─")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "team"\n[tool.isrcheck.list]\nformat = "json"\n')
    assert json.loads(isrcheck(tmp_path, "list", "acks-1").stdout)[0]["spec"] == "acks-1"
    (tmp_path / "other.toml").write_text('[list]\nformat = "text"\n')
    assert isrcheck(tmp_path, "--config", "other.toml", "list", "acks-1").stdout.startswith("acks-1 ─")


def test_the_gate_reads_its_specs_and_options_from_the_file(tmp_path):
    cx = os.path.abspath(os.path.join(REPO, "counterexamples"))
    (tmp_path / "isrcheck.toml").write_text(f'[gate]\nspecs = ["acks-1"]\ncounterexamples = "{cx}"\n'
                                            f'no-progress = true\n[profiles.ci.gate]\nformat = "junit"\n'
                                            f'output = "gate.xml"\n')
    r = isrcheck(tmp_path, "--profile", "ci", "gate")
    assert r.returncode == 0, r.stdout + r.stderr
    assert 'classname="acks-1"' in (tmp_path / "gate.xml").read_text()
    assert "gate: junit report written to gate.xml" in r.stderr and "searching" not in r.stderr    # no-progress
    r = isrcheck(tmp_path, "gate", "--format", "json")
    assert {row["spec"] for row in json.loads(r.stdout)["results"]} == {"acks-1"}


@pytest.mark.parametrize("text, args, words", [
    ("[check\n", [], "isrcheck.toml: not valid TOML"),
    ("[check]\nreplica = 3\n", [], "[check]: 'replica' is no option of isrcheck check (it has: all,"),
    ("[check]\nreplicas = \"three\"\n", [], "[check]: replicas: 'three' is not a valid integer"),
    ("replicas = [3]\n", [], "top level: replicas: [3] is not a value of --replicas"),
    ("frobnicate = 1\n", [], "top level: 'frobnicate' is no option of any command"),
    ("[check]\nsymmetry = 1\n", [], "[check]: symmetry is a flag: true or false"),
    ("check = 3\n", [], "top level: check must be a table of check's options ([check])"),
    ("[profiles.ci.check]\nmax-depth = 0\n", [], "[profiles.ci.check]: max-depth: 0 is not in the range"),
    ("[profiles.ci]\n", ["--profile", "cd"], "no profile 'cd' (it has: ci)"),
    (None, ["--profile", "ci"], "--profile ci: there is no settings file"),
    (None, ["--config", "missing.toml"], "missing.toml: cannot read settings file"),
])
def test_a_bad_settings_file_is_one_line_and_exit_2(tmp_path, text, args, words):
    if text is not None:
        (tmp_path / "isrcheck.toml").write_text(text)
    r = isrcheck(tmp_path, *args, "list", "acks-1")
    assert r.returncode == 2 and r.stdout == "", r.stdout
    assert len(r.stderr.splitlines()) == 1 and words in r.stderr, r.stderr
