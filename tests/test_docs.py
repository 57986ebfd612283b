"""The documents as a user reads them: every `isrcheck` command the README and the pages show runs, through
the installed script, with the exit code the page states; the site builds strictly.

The conventions (docs/internals/documents.md): in a fenced block, a line starting with the prompt `$ ` is a
command to run; its exit code is 0 unless the line ends with a comment `# exit N`. A page's commands run in
order in a fresh temporary directory holding a copy of `counterexamples/`, after every fenced block whose
first line is `# PATH` has been written to PATH. In a block without prompts, an `isrcheck` line is shown
but not run; its options must exist (it is parsed with `--help` appended).
"""
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from isrcheck.checker.command_line.cli import cli

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md"] + sorted(p for p in DOCS.rglob("*.md") if "hooks" not in p.parts)
FENCE = re.compile(r"^(`{3,})([^\n`]*)\n(.*?)^\1[ \t]*$", re.M | re.S)
FILE_LINE = re.compile(r"# ([\w][\w./-]*\.(?:py|toml|ya?ml|json|cfg|txt))[ \t]*$")
COMMENT = re.compile(r"\s+#(.*)$")
EXIT = re.compile(r"\bexits? (\d)\b")
NOT_SHELL = {"python", "toml", "yaml", "yml", "json", "mermaid", "dot"}
# The README's set-up commands, byte for byte; CI (.ci/run) runs the second.
INSTALL = "pip install -e . && isrcheck check --spec kip-101 --invariant no-committed-loss"
TESTS = "pip install -e '.[test]' && python -m pytest -q -n auto"


def blocks(page):
    """(language, body, line number of the body's first line) of each fenced block."""
    text = page.read_text()
    for match in FENCE.finditer(text):
        yield match.group(2).strip(), match.group(3), text.count("\n", 0, match.start(3)) + 1


def split(line):
    """A shown command line as (argv, expected exit code): the comment, if any, states the code."""
    comment = COMMENT.search(line)
    code = 0
    if comment:
        stated = EXIT.search(comment.group(1))
        code = int(stated.group(1)) if stated else 0
        line = line[:comment.start()]
    return shlex.split(line), code


def shown(page):
    """The page's files, commands to run and commands only shown, in page order."""
    files, run, parsed = [], [], []
    for lang, body, first in blocks(page):
        lines = body.splitlines()
        path = FILE_LINE.fullmatch(lines[0]) if lines else None
        if path:
            files.append((path.group(1), body))
        if lang in NOT_SHELL:
            continue
        prompted = any(line.startswith("$ ") for line in lines)      # then the other lines are output
        for offset, line in enumerate(lines):
            where = f"{page.relative_to(ROOT)}:{first + offset}"
            if line.startswith("$ isrcheck "):
                run.append((where, *split(line[2:])))
            elif line.startswith("isrcheck ") and not prompted:
                parsed.append((where, split(line)[0]))
    return files, run, parsed


def pages_with(kind):
    return [pytest.param(p, id=str(p.relative_to(ROOT))) for p in PAGES if shown(p)[kind]]


def workdir(tmp_path, files):
    shutil.copytree(ROOT / "counterexamples", tmp_path / "counterexamples")
    for path, body in files:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(body)


def environment():
    env = {k: v for k, v in os.environ.items() if not k.startswith("ISRCHECK_PROFILE")}
    env.pop("GITHUB_STEP_SUMMARY", None)
    return env


@pytest.mark.parametrize("page", pages_with(1))
def test_commands_run_with_the_stated_exit_code(page, tmp_path):
    files, commands, _ = shown(page)
    workdir(tmp_path, files)
    for where, argv, code in commands:
        assert argv[0] == "isrcheck" and code in (0, 1, 2, 3, 4), f"{where}: {argv} states exit {code}"
        run = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=300, env=environment())
        assert run.returncode == code, (f"{where}: {shlex.join(argv)} exited {run.returncode}, the page says {code}\n"
                                        f"{run.stdout[-3000:]}{run.stderr[-2000:]}")
        assert "Traceback" not in run.stderr, f"{where}: {shlex.join(argv)}\n{run.stderr}"


@pytest.mark.parametrize("page", pages_with(2))
def test_shown_commands_have_their_options(page, tmp_path, monkeypatch):
    files, _, commands = shown(page)
    workdir(tmp_path, files)
    monkeypatch.chdir(tmp_path)
    for var in ("ISRCHECK_PROFILE", "GITHUB_STEP_SUMMARY"):
        monkeypatch.delenv(var, raising=False)
    for where, argv in commands:
        result = CliRunner().invoke(cli, argv[1:] + ["--help"], prog_name="isrcheck")
        assert result.exit_code == 0, f"{where}: {shlex.join(argv)}: {result.output}"
        assert "Usage: isrcheck" in result.output, f"{where}: {shlex.join(argv)}: {result.output}"


def test_readme_set_up_commands(tmp_path):
    """The two set-up commands, byte for byte; CI runs the second; the first exits 1, as the README says."""
    readme = (ROOT / "README.md").read_text()
    shown_lines = [line for lang, body, _ in blocks(ROOT / "README.md") for line in body.splitlines()]
    assert INSTALL in shown_lines and TESTS in shown_lines
    assert TESTS in (ROOT / ".ci" / "run").read_text().splitlines()
    assert re.search(r"exits 1", readme[:readme.index(INSTALL)]), "the README no longer says the check exits 1"
    argv = shlex.split(INSTALL.split("&&")[1])
    run = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=300, env=environment())
    assert run.returncode == 1, run.stdout + run.stderr
    assert "no-committed-loss  violated  violated" in run.stdout
    assert (tmp_path / "isrcheck-out" / "kip-101" / "no-committed-loss.itf.json").is_file()


def test_readme_is_a_front_page():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 250
    assert not re.search(r"\b(stop \d+|issue \d+|load (average )?of \d)", readme, re.I)
    for link in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", readme):           # its links into the docs exist
        assert (ROOT / link).exists(), f"README.md links to {link}, which does not exist"


def test_conventions_are_the_documented_ones():
    """The parser reads the examples of docs/internals/documents.md as that page says they are meant."""
    assert split("isrcheck check --spec kip-101 --invariant no-committed-loss   # exit 1") == (
        ["isrcheck", "check", "--spec", "kip-101", "--invariant", "no-committed-loss"], 1)
    assert split("isrcheck show t.itf.json --format html --output kip-101.html#14") == (
        ["isrcheck", "show", "t.itf.json", "--format", "html", "--output", "kip-101.html#14"], 0)
    assert split("isrcheck gate   # every spec") == (["isrcheck", "gate"], 0)
    files, run, _ = shown(DOCS / "how-to" / "own-versions.md")
    assert [path for path, _ in files] == ["team/versions.py"]
    assert any(code == 1 for _, _, code in run) and any(code == 0 for _, _, code in run)


def test_site_builds_strictly(tmp_path):
    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                         cwd=ROOT, capture_output=True, text=True, timeout=600,
                         env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert run.returncode == 0, run.stderr[-5000:]
    known_bugs = (tmp_path / "site" / "kafka-model" / "known-bugs" / "index.html").read_text()
    assert "KAFKA-10432" in known_bugs and "<!-- isrcheck:" not in known_bugs     # generated, not left as a marker
    cli_page = (tmp_path / "site" / "reference" / "cli" / "index.html").read_text()
    assert "--update-traces" in cli_page and "--max-memory" in cli_page
    api_page = (tmp_path / "site" / "reference" / "api" / "index.html").read_text()
    assert "assert_violated" in api_page and "DeclarationError" in api_page
