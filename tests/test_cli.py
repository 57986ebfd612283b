"""The isrcheck command line: verdicts, exit codes, JSON report, traces, and user mistakes."""
import json
import subprocess
import sys

import pytest

CLI = [sys.executable, "-m", "isrcheck.checker.command_line.cli"]


def run(*args, cwd=None):
    return subprocess.run(CLI + list(args), capture_output=True, text=True, cwd=cwd)


def test_violation_exits_1_writes_a_trace_that_replays_and_shows(tmp_path):
    out = tmp_path / "cx"
    r = run("check", "--spec", "hw-truncation", "--invariant", "no-committed-loss", "--out", str(out),
            "--format", "json", "--no-progress")
    assert r.returncode == 1, r.stderr
    report = json.loads(r.stdout)
    assert report["verdicts"] == {"no-committed-loss": "violated"}
    for key in ("distinct_states", "depth", "transitions", "seconds", "trace_file"):
        assert key in report
    path = report["trace_file"]
    assert path == str(out / "hw-truncation" / "no-committed-loss.itf.json")
    trace = json.load(open(path))
    assert trace["#meta"]["spec"] == "hw-truncation" and trace["#meta"]["engine"] == "local"
    assert len(trace["states"]) == report["trace_lengths"]["no-committed-loss"]
    assert run("replay", path).returncode == 0
    shown = run("show", path)
    assert shown.returncode == 0
    assert "step 1" in shown.stdout and "no-committed-loss violated" in shown.stdout
    assert "0:1@1" in shown.stdout          # a log rendered as offset:record@epoch


def test_holds_exits_0_with_null_trace(tmp_path):
    r = run("check", "--spec", "kip-320", "--invariant", "no-committed-loss", "--invariant", "log-matching",
            "--format", "json", "--out", str(tmp_path), "--no-progress", "--max-epochs", "2")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["verdicts"] == {"no-committed-loss": "holds", "log-matching": "holds"}
    assert report["trace_file"] is None and report["complete"]


def test_benign_invariant_named_explicitly_fails_like_any_other(tmp_path):
    r = run("check", "--spec", "kip-320", "--invariant", "single-acting-leader", "--out", str(tmp_path),
            "--no-progress")
    assert r.returncode == 1
    assert (tmp_path / "kip-320" / "single-acting-leader.itf.json").exists()


def test_all_still_fails_on_a_real_violation(tmp_path):
    r = run("check", "--spec", "hw-truncation", "--all", "--out", str(tmp_path), "--no-progress")
    assert r.returncode == 1
    assert "observed" in r.stdout and "violated" in r.stdout


def test_budget_exits_3(tmp_path):
    r = run("check", "--spec", "kip-320", "--invariant", "no-committed-loss", "--max-states", "2000", "--out",
            str(tmp_path), "--no-progress")
    assert r.returncode == 3
    assert "max states 2000" in r.stdout


def test_text_report_names_verdicts_and_figures(tmp_path):
    r = run("check", "--spec", "kip-101", "--invariant", "log-matching", "--max-epochs", "2", "--out",
            str(tmp_path), "--no-progress")
    assert r.returncode == 0
    assert "log-matching" in r.stdout and "holds" in r.stdout and "states/s" in r.stdout


@pytest.mark.parametrize("args, words", [
    (["check", "--spec", "no-such-spec", "--all"], "unknown spec"),
    (["check", "--spec", "kip-320", "--invariant", "no-such"], "no invariant"),
    (["check", "--spec", "kip-320"], "--invariant"),
    (["check", "--spec", "kip-320", "--all", "--replicas", "9"], "outside"),
    (["check", "--spec", "kip-320", "--all", "--replicas", "x"], "not a valid integer"),
    (["check", "--spec", "kip-320", "--all", "--set", "bogus=1"], "unknown bound"),
    (["check", "--spec", "kip-320", "--all", "--set", "unclean"], "KEY=VALUE"),
    (["replay", "/no/such/trace.json"], "cannot read"),
])
def test_user_mistakes_exit_2_with_one_line(args, words):
    r = run(*args)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and words in lines[0]


@pytest.mark.parametrize("content, words", [
    ("{", "not valid JSON"),
    ('{"states": []}', "trace has no states"),          # an ITF trace without #meta: another tool's
    ('{"#meta": {"spec": "kip-320"}, "states": [{}]}', "'invariant'"),
    ('{"#meta": {"spec": "nope", "invariant": "x"}, "states": [{}]}', "unknown spec"),
    ('{"#meta": {"spec": "kip-320", "invariant": "x"}, "states": [{}]}', "no invariant"),
    ('{"#meta": {"spec": "kip-320", "invariant": "no-committed-loss", "bounds": {"replicas": 99}}, '
     '"states": [{}]}', "outside"),
])
def test_malformed_trace_files_exit_2(tmp_path, content, words):
    path = tmp_path / "bad.itf.json"
    path.write_text(content)
    for command in ("replay", "show"):
        r = run(command, str(path))
        assert r.returncode == 2 and words in r.stderr and "Traceback" not in r.stderr


def test_truncated_trace_file_exits_2(tmp_path):
    r = run("check", "--spec", "hw-truncation", "--invariant", "no-committed-loss", "--out", str(tmp_path),
            "--no-progress")
    assert r.returncode == 1
    path = tmp_path / "hw-truncation" / "no-committed-loss.itf.json"
    text = path.read_text()
    path.write_text(text[: len(text) // 2])
    r = run("replay", str(path))
    assert r.returncode == 2 and "not valid JSON" in r.stderr


def test_replay_names_the_step_that_no_longer_applies(tmp_path):
    r = run("check", "--spec", "no-isr-fencing", "--invariant", "no-committed-loss", "--out", str(tmp_path),
            "--no-progress")
    path = tmp_path / "no-isr-fencing" / "no-committed-loss.itf.json"
    trace = json.loads(path.read_text())
    trace["#meta"]["spec"] = "kip-320"          # the same events (and state fields) on the fixed protocol
    path.write_text(json.dumps(trace))
    r = run("replay", str(path))
    assert r.returncode == 1
    assert "step" in r.stdout and "does not reproduce" in r.stdout


def test_list_shows_every_spec_with_expectations():
    r = run("list", "--format", "json")
    assert r.returncode == 0
    entries = {e["spec"]: e for e in json.loads(r.stdout)}
    from isrcheck.specs import SPECS
    assert set(entries) == set(SPECS)
    assert entries["hw-truncation"]["expected"]["no-committed-loss"] == "violated"
    assert entries["kip-320"]["default_bounds"]["replicas"] >= 2
    text = run("list").stdout
    assert "KIP-101" in text and "no-committed-loss" in text


def test_version():
    r = run("--version")
    assert r.returncode == 0 and "isrcheck" in r.stdout


def test_bmc_reports_what_it_does_not_count_as_null(tmp_path):
    """One result type: BMC enumerates no states, so its counts are null in the report, not 0."""
    r = run("check", "--spec", "acks-1", "--invariant", "log-matching", "--engine", "bmc", "--depth", "4",
            "--format", "json", "--out", str(tmp_path), "--no-progress")
    assert r.returncode == 3, r.stderr                       # a bounded check stops at its depth: unknown
    report = json.loads(r.stdout)
    assert report["verdicts"] == {"log-matching": "unknown"} and report["depth"] == 4
    assert report["budget_hit"] == "bmc depth 4"
    for key in ("distinct_states", "transitions", "states_per_second", "bytes_per_state", "collision_probability",
                "fingerprints", "never_fired"):
        assert key in report and report[key] is None, key


def test_fingerprint_width_is_reported_and_96_bits_refused_where_it_cannot_run(tmp_path):
    """--fingerprint 96 tells states apart by 96-bit keys (the report says so, and its collision bound is that
    of 94 effective bits); with --symmetry, the numpy kernels or another engine it is one line and exit 2."""
    args = ("check", "--spec", "kip-101", "--invariant", "log-matching", "--format", "json", "--out", str(tmp_path),
            "--no-progress")
    wide, narrow = (json.loads(run(*args, "--fingerprint", bits).stdout) for bits in ("96", "64"))
    assert (wide["fingerprints"], narrow["fingerprints"]) == ("96-bit", "64-bit")
    assert wide["distinct_states"] == narrow["distinct_states"] == 899_108
    assert wide["collision_probability"] == pytest.approx(narrow["collision_probability"] / 2 ** 31)
    for extra in (["--symmetry"], ["--kernels", "numpy"], ["--engine", "bmc"]):
        r = run(*args, "--fingerprint", "96", *extra)
        assert r.returncode == 2 and "--fingerprint 96" in r.stderr and "Traceback" not in r.stderr
