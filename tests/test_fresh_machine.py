"""What a fresh machine and a team's CI meet: the README's test command without Chromium (the browser test is
skipped, saying how to install it; under CI=true it fails), and the GitHub Actions workflow template a team
copies (docs/templates/isrcheck-gate.yml), run step by step in a temporary git repository with isrcheck
installed from this checkout."""
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
import yaml

from isrcheck.specs.kip_101 import Kip101

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEMPLATE = os.path.join(REPO, "docs", "templates", "isrcheck-gate.yml")


def test_without_chromium_the_browser_test_is_skipped_saying_how_to_install_it(monkeypatch):
    import test_html
    monkeypatch.setattr(test_html, "chromium_binary", lambda: None)
    fixture = test_html.browser.__wrapped__              # the module's browser fixture, as pytest runs it
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception) as skipped:
        next(fixture())
    assert "apt-get install -y chromium" in str(skipped.value) and ".ci/run installs it" in str(skipped.value)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match=r"apt-get install -y chromium.*\(CI=true: not skipped\)"):
        next(fixture())
    assert 'export CI="${CI:-true}"' in open(os.path.join(REPO, ".ci", "run")).read()   # CI's run never skips it


TEAM = '''\
"""Our protocol versions."""
from isrcheck.specs.kip_101 import Kip101


class OurKip101(Kip101):
    """KIP-101 as our fork runs it."""
    name = "our-kip-101"
'''


def _git(cwd, *args):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True,
                   capture_output=True)


def _venv(path):
    """A virtual environment without isrcheck that sees this one's packages (so installing isrcheck from the
    checkout builds only isrcheck)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    site = subprocess.run([str(path / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    ours = [p for p in sys.path if p.endswith(("site-packages", "dist-packages")) and os.path.isdir(p)]
    with open(os.path.join(site, "isrcheck-test-deps.pth"), "w") as fh:
        fh.write("\n".join(ours) + "\n")
    return path / "bin"


def _expand(value, contexts):
    """A workflow value with its ``${{ ... }}`` expressions replaced (only those the test knows)."""
    while "${{" in value:
        start = value.index("${{")
        end = value.index("}}", start)
        expression = value[start + 3:end].strip()
        assert expression in contexts, f"the template uses ${{{{ {expression} }}}}: teach the test its value"
        value = value[:start] + contexts[expression] + value[end + 2:]
    return value


def test_the_workflow_template_runs_in_a_teams_repository(tmp_path):
    workflow = yaml.safe_load(open(TEMPLATE))
    steps = workflow["jobs"]["gate"]["steps"]
    assert [s["uses"].split("@")[0] for s in steps if "uses" in s] == [
        "actions/checkout", "actions/setup-python", "actions/upload-artifact"]
    assert workflow[True]["pull_request"] is None and workflow["permissions"] == {"contents": "read"}   # on:

    repo = tmp_path / "team-repo"                # the team's repository: its specs and their saved traces
    (repo / "team").mkdir(parents=True)
    (repo / "team" / "versions.py").write_text(TEAM)
    (repo / ".gitignore").write_text("gate-counterexamples/\ngate.xml\n")
    made = subprocess.run(["isrcheck", "gate", "team/versions.py", "--counterexamples", "team/counterexamples",
                           "--update-traces", "--no-progress"], capture_output=True, text=True, cwd=repo, timeout=300)
    assert made.returncode == 0, made.stdout + made.stderr
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "our versions")
    _git(repo, "update-ref", "refs/remotes/origin/main", "HEAD")           # the pull request's base
    (repo / "team" / "versions.py").write_text(TEAM + "\n# the change under review\n")

    checkout = tmp_path / "isrcheck"             # this checkout's files (installing it builds in a copy)
    for name in subprocess.run(["git", "ls-files"], capture_output=True, text=True, cwd=REPO).stdout.splitlines():
        if os.path.isfile(os.path.join(REPO, name)):
            os.makedirs(checkout / os.path.dirname(name), exist_ok=True)
            shutil.copy2(os.path.join(REPO, name), checkout / name)
    bin_dir = _venv(tmp_path / "venv")
    summary = tmp_path / "summary.md"
    env = {**os.environ, **workflow["env"], "ISRCHECK": str(checkout), "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
           "GITHUB_STEP_SUMMARY": str(summary), "PIP_NO_DEPS": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    contexts = {"github.base_ref": "main"}
    for step in (s for s in steps if "run" in s):
        step_env = {k: _expand(str(v), contexts) for k, v in step.get("env", {}).items()}
        run = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
                             capture_output=True, text=True, cwd=repo, env={**env, **step_env}, timeout=600)
        assert run.returncode == 0, f"{step['name']}:\n{run.stdout}{run.stderr}"
    assert (bin_dir / "isrcheck").exists()        # installed by the template's install step, and used by the gate
    suites = ET.parse(repo / "gate.xml").getroot()
    # our-kip-101's invariants and liveness properties, each a test case
    assert int(suites.get("tests")) == len(Kip101.expected) + len(Kip101.liveness_expected()[0])
    assert suites.get("failures") == "0"
    assert "isrcheck gate: all" in summary.read_text()
