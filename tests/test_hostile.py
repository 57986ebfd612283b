"""Hostile input through every command and trace reader: exit 2, one stderr line naming the problem, no
traceback, no hang; and nothing a file says reaches the terminal unescaped.

Over a hundred cases run ``isrcheck.checker.command_line.cli.main`` in a forked child (the same entry point as the
console script, with its own stdout/stderr and a deadline); one case per reader and per command also runs
the installed ``isrcheck`` script in a subprocess. The crafted files live in one shared directory.
"""
import copy
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from isrcheck.checker.traces.trace import MAX_TRACE_BYTES

REPO = os.path.join(os.path.dirname(__file__), "..")
GOOD = os.path.join(REPO, "counterexamples", "kip-101", "no-committed-loss.itf.json")
DEADLINE = 10                  # seconds: a hang is a failure
ESC = "\x1b[31m"


def forked(argv, cwd):
    """Run ``main(argv)`` in a forked child: (exit code, stdout, stderr); a child still running at DEADLINE is killed."""
    from isrcheck.checker.command_line import cli
    out_path, err_path = os.path.join(cwd, ".stdout"), os.path.join(cwd, ".stderr")
    pid = os.fork()
    if pid == 0:                                     # the child: never returns into pytest
        code = 99
        try:
            os.chdir(cwd)
            for fd, path in ((1, out_path), (2, err_path)):
                os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), fd)
            sys.stdin = open(os.devnull)
            sys.stdout, sys.stderr = open(1, "w", closefd=False), open(2, "w", closefd=False)
            os.environ.pop("GITHUB_STEP_SUMMARY", None)
            try:
                cli.main(argv)
                code = 0
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else 1
            except BaseException:                    # what the console script would print as a traceback
                import traceback
                traceback.print_exc()
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)
    deadline = time.monotonic() + DEADLINE
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail(f"isrcheck {' '.join(argv)} still running after {DEADLINE} s")
        time.sleep(0.01)
    return os.waitstatus_to_exitcode(status), open(out_path).read(), open(err_path).read()


def installed(argv, cwd):
    """Run the installed console script: (exit code, stdout, stderr)."""
    exe = os.path.join(os.path.dirname(sys.executable), "isrcheck")
    r = subprocess.run([exe, *argv], capture_output=True, text=True, cwd=cwd, timeout=DEADLINE,
                       stdin=subprocess.DEVNULL, env={k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"})
    return r.returncode, r.stdout, r.stderr


def assert_rejected(result, *words):
    code, out, err = result
    assert "Traceback" not in err + out, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, (code, err)
    assert len(lines) == 1, err
    assert lines[0].startswith("isrcheck: error: ")
    for w in words:
        assert w in lines[0], (w, lines[0])
    assert "\x1b" not in err and "\x1b" not in out


# --- crafted trace files ------------------------------------------------------------------------------
def good():
    return json.load(open(GOOD))


def edit(fn):
    """A copy of the good trace changed by fn(data)."""
    data = good()
    fn(data)
    return json.dumps(data)


def setitem(path, value):
    def fn(data):
        target = data
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return fn


def delitem(path):
    def fn(data):
        target = data
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]
    return fn


S = "states"
# name -> (file content: str, bytes, or a callable(path) that makes it; words the error line must contain)
TRACES = {
    "not-utf8": (b'{"#meta": {"spec": "kip-101\xff\xfe"}}', "not UTF-8"),
    "latin1-bom": (b"\xef\xbb\xbf\xff" + b"{}", "not UTF-8"),
    "deep-array": ("[" * 200_000 + "]" * 200_000, "nested too deeply"),
    "deep-object": ('{"a":' * 100_000 + "1" + "}" * 100_000, "nested too deeply"),
    "fifo": (lambda p: os.mkfifo(p), "a FIFO"),
    "symlink-to-fifo": (lambda p: (os.mkfifo(p + ".fifo"), os.symlink(p + ".fifo", p)), "a FIFO"),
    "symlink-to-zero": (lambda p: os.symlink("/dev/zero", p), "a device"),
    "symlink-to-urandom": (lambda p: os.symlink("/dev/urandom", p), "a device"),
    "symlink-to-null": (lambda p: os.symlink("/dev/null", p), "a device"),
    "dangling-symlink": (lambda p: os.symlink(p + ".nowhere", p), "cannot read"),
    "symlink-loop": (lambda p: os.symlink(p, p), "cannot read"),
    "directory": (lambda p: os.mkdir(p), "a directory"),
    "huge-sparse": (lambda p: os.truncate(open(p, "w").name, 1 << 34), "larger than"),
    "huge-real": (" " * (MAX_TRACE_BYTES + 1), "larger than"),
    "empty": ("", "not valid JSON"),
    "truncated": (lambda p: open(p, "w").write(open(GOOD).read()[:900]), "not valid JSON"),
    "nan": ('{"#meta": {"spec": "kip-101", "invariant": "no-committed-loss"}, "states": [NaN]}', "NaN"),
    "infinity": ('{"#meta": {"spec": "kip-101", "invariant": "x", "seed": Infinity}, "states": [1]}', "Infinity"),
    "bigint-digits": ('{"#meta": {"seed": ' + "9" * 5000 + '}}', "not valid JSON"),
    "top-list": ("[1, 2]", "not an ITF trace"),
    "top-string": ('"trace"', "not an ITF trace"),
    "no-meta": (edit(delitem(["#meta"])), "no isrcheck '#meta' (a trace from another tool)"),
    "states-object": (edit(setitem([S], {"0": {}})), "not an ITF trace"),
    "no-states": (edit(setitem([S], [])), "no states"),
    "spec-int": (edit(setitem(["#meta", "spec"], 101)), "'spec'"),
    "spec-unknown": (edit(setitem(["#meta", "spec"], "kip-999")), "unknown spec 'kip-999'"),
    "spec-escape": (edit(setitem(["#meta", "spec"], ESC + "evil")), "unknown spec", "\\x1b[31mevil"),
    "spec-markup": (edit(setitem(["#meta", "spec"], "[/][bold]x")), "unknown spec '[/][bold]x'"),
    "invariant-list": (edit(setitem(["#meta", "invariant"], ["a"])), "'invariant'"),
    "invariant-unknown": (edit(setitem(["#meta", "invariant"], "no-loss" + ESC)), "has no invariant",
                          "\\x1b"),
    "engine-int": (edit(setitem(["#meta", "engine"], 7)), "engine"),
    "seed-string": (edit(setitem(["#meta", "seed"], "42")), "seed"),
    "seed-float": (edit(setitem(["#meta", "seed"], 4.2)), "seed"),
    "bounds-list": (edit(setitem(["#meta", "bounds"], [2, 2])), "bounds"),
    "bound-string": (edit(setitem(["#meta", "bounds", "replicas"], "2")), "'replicas' is not an integer"),
    "bound-float": (edit(setitem(["#meta", "bounds", "replicas"], 2.0)), "'replicas' is not an integer"),
    "bound-bool": (edit(setitem(["#meta", "bounds", "unclean"], True)), "'unclean' is not an integer"),
    "bound-null": (edit(setitem(["#meta", "bounds", "replicas"], None)), "'replicas' is not an integer"),
    "bound-range": (edit(setitem(["#meta", "bounds", "replicas"], 99)), "outside"),
    "bound-huge": (edit(setitem(["#meta", "bounds", "max_epochs"], 10 ** 30)), "outside"),
    "bound-negative": (edit(setitem(["#meta", "bounds", "log_size"], -1)), "outside"),
    "bound-unknown": (edit(setitem(["#meta", "bounds", "zz" + ESC], 1)), "unknown bound", "\\x1b"),
    "bounds-other": (edit(setitem(["#meta", "bounds", "replicas"], 3)), "state 0", "expected a list of 3"),
    "vars-string": (edit(setitem(["vars"], "leo")), "'vars'"),
    "vars-ints": (edit(setitem(["vars"], [1, 2])), "'vars'"),
    "state-int": (edit(setitem([S, 3], 7)), "state 3 is not an object"),
    "state-list": (edit(setitem([S, 2], [])), "state 2 is not an object"),
    "state-meta-list": (edit(setitem([S, 1, "#meta"], [])), "state 1 is not an object"),
    "params-list": (edit(setitem([S, 1, "#meta", "params"], [0])), "state 1 has malformed action parameters"),
    "param-string": (edit(setitem([S, 1, "#meta", "params", "l"], "0")), "state 1", "not an integer"),
    "param-bool": (edit(setitem([S, 1, "#meta", "params", "l"], False)), "state 1", "a boolean"),
    "param-float": (edit(setitem([S, 1, "#meta", "params", "l"], 0.5)), "state 1", "fraction"),
    "param-range": (edit(setitem([S, 1, "#meta", "params", "l"], 7)), "state 1", "no instance"),
    "param-unknown": (edit(setitem([S, 1, "#meta", "params", "zz"], 0)), "state 1", "no instance"),
    "param-missing": (edit(setitem([S, 1, "#meta", "params"], {})), "state 1", "no instance"),
    "action-int": (edit(setitem([S, 1, "#meta", "action"], 3)), "state 1", "not a name"),
    "action-object": (edit(setitem([S, 1, "#meta", "action"], {"name": "x"})), "state 1", "not a name"),
    "action-unknown": (edit(setitem([S, 4, "#meta", "action"], "rm_rf")), "state 4", "no action 'rm_rf'"),
    "action-escape": (edit(setitem([S, 4, "#meta", "action"], ESC + "fetch\x07")), "state 4",
                      "\\x1b[31mfetch\\x07"),
    "action-newline": (edit(setitem([S, 4, "#meta", "action"], "fetch\nisrcheck: ok")), "state 4", "no action 'fetch\\nisrcheck: ok'"),
    "action-missing": (edit(delitem([S, 5, "#meta"])), "state 5", "no action named"),
    "initial-action": (edit(setitem([S, 0, "#meta", "action"], "elect_leader")), "state 0", "initial state"),
    "var-missing": (edit(delitem([S, 6, "hw"])), "state 6", "'hw' is missing"),
    "var-missing-first": (edit(delitem([S, 0, "leo"])), "state 0", "'leo' is missing"),
    "var-extra": (edit(setitem([S, 2, "zz"], 1)), "state 2", "'zz' is not a variable"),
    "var-extra-escape": (edit(setitem([S, 2, ESC], 1)), "state 2", "\\x1b[31m"),
    "array-short": (edit(setitem([S, 3, "leo"], [0])), "state 3: leo", "list of 2, got a list of 1"),
    "array-long": (edit(setitem([S, 3, "leo"], [0, 0, 0])), "state 3: leo", "got a list of 3"),
    "array-scalar": (edit(setitem([S, 3, "leo"], 0)), "state 3: leo", "got an integer"),
    "array-string": (edit(setitem([S, 3, "leo"], "00")), "state 3: leo", "a string"),
    "array-object": (edit(setitem([S, 3, "leo"], {"0": 0, "1": 0})), "state 3: leo", "an object"),
    "nested-short": (edit(setitem([S, 3, "log_record", 1], [0])), "state 3: log_record[1]", "list of 2"),
    "nested-flat": (edit(setitem([S, 3, "log_record"], [0, 0])), "state 3: log_record[0]", "expected a list"),
    "scalar-list": (edit(setitem([S, 3, "q_leader"], [0])), "state 3: q_leader", "a list"),
    "cell-high": (edit(setitem([S, 7, "hw", 0], 99)), "state 7: hw[0]", "99 is outside 0..2"),
    "cell-negative": (edit(setitem([S, 7, "hw", 1], -3)), "state 7: hw[1]", "outside"),
    "cell-huge": (edit(setitem([S, 7, "hw", 1], 10 ** 40)), "state 7: hw[1]", "outside"),
    "cell-float": (edit(setitem([S, 7, "hw", 1], 1.5)), "state 7: hw[1]", "fraction"),
    "cell-float-integral": (edit(setitem([S, 7, "leo", 1], 1.0)), "state 7: leo[1]", "fraction"),
    "cell-string": (edit(setitem([S, 7, "hw", 1], "1")), "state 7: hw[1]", "a string"),
    "cell-null": (edit(setitem([S, 7, "q_epoch"], None)), "state 7: q_epoch", "null"),
    "cell-bool-in-int": (edit(setitem([S, 7, "q_epoch"], True)), "state 7: q_epoch", "a boolean"),
    "flag-two": (edit(setitem([S, 7, "up", 0], 2)), "state 7: up[0]", "outside 0..1"),
    "flag-string": (edit(setitem([S, 7, "up", 0], "true")), "state 7: up[0]", "a string"),
    "bigint-bad": (edit(setitem([S, 7, "hw", 0], {"#bigint": "1e3"})), "state 7: hw[0]", "malformed #bigint"),
    "bigint-long": (edit(setitem([S, 7, "hw", 0], {"#bigint": "1" * 5000})), "state 7: hw[0]",
                    "malformed #bigint"),
    "bigint-int": (edit(setitem([S, 7, "hw", 0], {"#bigint": 1})), "state 7: hw[0]", "malformed #bigint"),
    "bigint-range": (edit(setitem([S, 7, "hw", 0], {"#bigint": "300"})), "state 7: hw[0]", "outside"),
    "set-range": (edit(setitem([S, 7, "up"], {"#set": [0, 5]})), "state 7: up", "outside 0..1"),
    "set-on-ints": (edit(setitem([S, 7, "leo"], {"#set": [0]})), "state 7: leo", "an object"),
    "set-not-list": (edit(setitem([S, 7, "up"], {"#set": 1})), "state 7: up", "an object"),
    "map-missing-key": (edit(setitem([S, 7, "leo"], {"#map": [[0, 1]]})), "state 7: leo", "keys 0..1"),
    "map-duplicate": (edit(setitem([S, 7, "leo"], {"#map": [[0, 1], [0, 1], [1, 0]]})), "state 7: leo",
                      "keys 0..1"),
    "map-bad-pair": (edit(setitem([S, 7, "leo"], {"#map": [[0], [1]]})), "state 7: leo", "an object"),
    "tup-short": (edit(setitem([S, 7, "leo"], {"#tup": [1]})), "state 7: leo", "list of 1"),
    "unknown-tag": (edit(setitem([S, 7, "q_epoch"], {"#unserializable": "x"})), "state 7: q_epoch",
                    "an object"),
}


@pytest.fixture(scope="module")
def crafted(tmp_path_factory):
    """The shared directory of crafted trace files: name -> path."""
    d = tmp_path_factory.mktemp("hostile")
    paths = {}
    for name, (content, *_) in TRACES.items():
        path = str(d / f"{name}.itf.json")
        if callable(content):
            content(path)
        else:
            with open(path, "wb") as fh:
                fh.write(content if isinstance(content, bytes) else content.encode())
        paths[name] = path
    return d, paths


READERS = [["show"], ["show", "--format", "mermaid"], ["show", "--format", "dot"], ["replay"], ["minimize"]]


@pytest.mark.parametrize("name", list(TRACES))
def test_every_reader_rejects_a_hostile_trace_with_one_line(crafted, name):
    d, paths = crafted
    words = TRACES[name][1:]
    for reader in READERS if name in ("action-escape", "spec-markup", "var-missing") else READERS[::3]:
        assert_rejected(forked(reader + [paths[name]], str(d)), paths[name], *words)
    assert not any(p.endswith(".min.itf.json") for p in os.listdir(d))      # minimize wrote nothing


@pytest.mark.parametrize("reader", READERS + [["gate"]])
def test_installed_script_rejects_a_fifo_trace_without_hanging(crafted, reader):
    d, paths = crafted
    if reader == ["gate"]:
        cx = d / "gate-cx"
        os.makedirs(cx / "kip-320", exist_ok=True)
        fifo = cx / "kip-320" / "single-acting-leader.itf.json"
        if not fifo.exists():
            os.mkfifo(fifo)
        argv = ["gate", "kip-320", "--no-progress", "--counterexamples", str(cx), "--out", str(d / "gate-out")]
        assert_rejected(installed(argv, str(d)), str(fifo), "a FIFO")
        assert not (d / "gate-out" / "kip-320").exists()              # refused before any search
        return
    assert_rejected(installed(reader + [paths["fifo"]], str(d)), paths["fifo"], "a FIFO")


KIP320_SAVED = os.path.join(REPO, "counterexamples", "kip-320", "single-acting-leader.itf.json")
SAVED_DEFECTS = {                      # a defect in kip-320's saved trace: how to make it, what the line says
    "missing-var": (delitem([S, 2, "hw"]), "'hw' is missing"),
    "cell-out-of-range": (setitem([S, 3, "leo", 0], 99), "outside"),
    "unknown-action": (setitem([S, 4, "#meta", "action"], "drop_table"), "no action 'drop_table'"),
    "escape-action": (setitem([S, 4, "#meta", "action"], ESC + "x"), "\\x1b[31mx"),
}


@pytest.mark.parametrize("name", ["not-utf8", "deep-array", "symlink-to-zero", "huge-sparse"] + list(SAVED_DEFECTS))
def test_gate_rejects_a_hostile_saved_trace_before_searching(crafted, name):
    d, paths = crafted
    cx = d / f"gate-{name}"
    (cx / "kip-320").mkdir(parents=True, exist_ok=True)
    saved = cx / "kip-320" / "single-acting-leader.itf.json"
    words = ()
    if name in SAVED_DEFECTS:
        fn, *words = SAVED_DEFECTS[name]
        data = json.load(open(KIP320_SAVED))
        fn(data)
        saved.write_text(json.dumps(data))
    elif not os.path.lexists(saved):
        os.symlink(paths[name], saved)
    result = forked(["gate", "kip-320", "--no-progress", "--counterexamples", str(cx), "--out", str(d / "g")], str(d))
    assert_rejected(result, str(saved), *words)
    assert not (d / "g" / "kip-320").exists()


# --- options -----------------------------------------------------------------------------------------
CHECK = ["check", "--spec", "kip-320", "--invariant", "no-committed-loss", "--no-progress"]
FUZZ = ["fuzz", "--spec", "kip-320", "--invariant", "no-committed-loss", "--no-progress"]
PROVE = ["prove", "--spec", "kip-320", "--invariant", "no-committed-loss"]
OPTIONS = {
    "time-limit-nan": (CHECK + ["--time-limit", "nan"], "--time-limit"),
    "time-limit-inf": (CHECK + ["--time-limit", "inf"], "--time-limit"),
    "time-limit-negative": (CHECK + ["--time-limit=-5"], "--time-limit"),
    "time-limit-zero": (CHECK + ["--time-limit", "0"], "--time-limit"),
    "time-limit-1e400": (CHECK + ["--time-limit", "1e400"], "--time-limit"),
    "time-limit-word": (CHECK + ["--time-limit", "soon"], "--time-limit"),
    "z3-timeout-nan": (CHECK + ["--engine", "bmc", "--z3-timeout", "nan"], "--z3-timeout"),
    "prove-z3-timeout-inf": (PROVE + ["--z3-timeout", "inf"], "--z3-timeout"),
    "budget-nan": (FUZZ + ["--budget", "nan"], "--budget 'nan'"),
    "budget-inf": (FUZZ + ["--budget", "infs"], "--budget 'infs'"),
    "budget-1e400": (FUZZ + ["--budget", "1e400"], "--budget '1e400'"),
    "budget-years": (FUZZ + ["--budget", "1e9h"], "--budget '1e9h'"),
    "budget-negative": (FUZZ + ["--budget=-1m"], "--budget '-1m'"),
    "budget-empty": (FUZZ + ["--budget", ""], "--budget ''"),
    "budget-escape": (FUZZ + ["--budget", ESC + "60s"], "--budget", "\\x1b[31m60s"),
    "max-states-absurd": (CHECK + ["--max-states", str(10 ** 30)], "--max-states"),
    "max-depth-absurd": (CHECK + ["--max-depth", str(10 ** 12)], "--max-depth"),
    "bmc-depth-absurd": (CHECK + ["--engine", "bmc", "--depth", "100000000"], "--depth"),
    "max-steps-absurd": (FUZZ + ["--max-steps", str(10 ** 9)], "--max-steps"),
    "k-absurd": (PROVE + ["--k", str(10 ** 6)], "--k"),
    "partitions-absurd": (CHECK + ["--engine", "spark", "--partitions", str(10 ** 9)], "--partitions"),
    "replicas-twice": (CHECK + ["--replicas", "3", "--set", "replicas=2"], "--replicas 3", "replicas=2"),
    "epochs-twice": (FUZZ + ["--max-epochs", "3", "--set", "max-epochs=4"], "--max-epochs 3"),
    "prove-twice": (PROVE + ["--log-size", "2", "--set", "log_size=2"], "--log-size 2"),
    "set-twice": (CHECK + ["--set", "unclean=1", "--set", "unclean=0"], "given twice"),
    "set-huge": (CHECK + ["--set", "unclean=" + "9" * 5000], "not an integer"),
    "set-escape": (CHECK + ["--set", ESC + "=1"], "\\x1b[31m"),
    "spec-escape": (["check", "--spec", ESC + "kip", "--all"], "unknown spec", "\\x1b[31mkip"),
    "invariant-markup": (CHECK + ["--invariant", "[/]x"], "no invariant '[/]x'"),
    "list-format": (["list", "--format", "xml"], "--format"),
    "gate-format": (["gate", "--format", "pdf"], "--format"),
    "unknown-command": (["frobnicate"], "frobnicate"),
    "gate-counterexamples-device": (["gate", "kip-320", "--no-progress", "--counterexamples", "/dev/null"],
                                    "--counterexamples /dev/null: not a directory"),
}
OUTPUTS = {
    "file": lambda d: str(d / "plain-file"),
    "under-file": lambda d: str(d / "plain-file" / "sub"),
    "dev-null": lambda d: "/dev/null",
    "dev": lambda d: "/dev/isrcheck-out",
    "proc": lambda d: "/proc/self/isrcheck",
    "sys": lambda d: "/sys/isrcheck",
    "symlink-to-proc": lambda d: str(d / "to-proc"),
    "long-name": lambda d: str(d / ("n" * 300)),
    "long-path": lambda d: str(d / "/".join(["p" * 200] * 25)),
    "empty": lambda d: "",
    "escape": lambda d: str(d / "plain-file" / (ESC + "x")),
}


@pytest.fixture(scope="module")
def outdir(crafted):
    d, _ = crafted
    (d / "plain-file").write_text("not a directory\n")
    (d / "good.itf.json").write_text(open(GOOD).read())      # minimized copies land next to this, never in the repo
    if not os.path.lexists(d / "to-proc"):
        os.symlink("/proc/self", d / "to-proc")
    return d


@pytest.mark.parametrize("name", list(OPTIONS))
def test_bad_options_exit_2_with_one_line(crafted, name):
    d, _ = crafted
    argv, *words = OPTIONS[name]
    assert_rejected(forked(argv, str(d)), *words)


#: each would spend well over REFUSED_CPU seconds of work if it started (a search and the liveness checks, a 30 s fuzz,
#: a proof, a gate of 6 searches), so a refusal within it was made before any search
DIR_OPTIONS = [CHECK + ["--all"], FUZZ + ["--budget", "30"], PROVE, ["gate", "kip-320", "--no-progress"]]
#: CPU seconds of a refusal: the forked child's arguments and path checks, plus the garbage collection of a
#: pytest worker's heap that the fork copies (measured 0.8-0.9 s late in a loaded suite)
REFUSED_CPU = 3.0
FILE_OPTIONS = [["gate-output"], ["minimize"]]          # --output FILE: an existing regular file is fine there


@pytest.mark.parametrize("command, where", [(c, w) for c in DIR_OPTIONS for w in OUTPUTS]
                         + [(c, w) for c in FILE_OPTIONS for w in OUTPUTS if w != "file"])
def test_unusable_output_paths_exit_2_before_any_work(outdir, command, where):
    import resource
    d = outdir
    path = OUTPUTS[where](d)
    if command == ["gate-output"]:
        argv = ["gate", "kip-320", "--no-progress", "--out", str(d / "gate-out"), "--output", path]
    elif command == ["minimize"]:
        argv = ["minimize", str(d / "good.itf.json"), "--output", path]
    else:
        argv = command + ["--out", path]
    start = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
    result = forked(argv, str(d))
    assert_rejected(result, "--out")
    assert resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime - start < REFUSED_CPU     # refused before any work
    assert (d / "plain-file").read_text() == "not a directory\n"


def test_installed_script_rejects_bad_options_and_paths(outdir):
    d = outdir
    assert_rejected(installed(CHECK + ["--time-limit", "nan"], str(d)), "--time-limit")
    assert_rejected(installed(FUZZ + ["--budget", "1e400"], str(d)), "--budget")
    assert_rejected(installed(CHECK + ["--replicas", "3", "--set", "replicas=2"], str(d)), "give the bound once")
    assert_rejected(installed(CHECK + ["--out", "/dev/null"], str(d)), "--out /dev/null")
    assert_rejected(installed(PROVE + ["--out", str(d / "plain-file")], str(d)), "not a directory")
    assert_rejected(installed(["list", "--format", "xml"], str(d)), "--format")
    assert_rejected(installed(["minimize", str(d / "good.itf.json"), "--output", "/proc/self/x"], str(d)), "/proc")
    assert_rejected(installed(["gate", "--output", "/dev/null"], str(d)), "not a regular file")


# --- what a valid trace says is printed escaped -------------------------------------------------------
def test_strings_from_a_trace_reach_the_terminal_escaped(tmp_path):
    data = good()
    data["#meta"]["engine"] = ESC + "local\r\x9b2J[bold]"
    path = tmp_path / f"esc{ESC}.itf.json"
    path.write_text(json.dumps(data))
    for reader in (["show"], ["show", "--format", "mermaid"], ["show", "--format", "dot"], ["replay"]):
        code, out, err = forked(reader + [str(path)], str(tmp_path))
        assert code == 0, err
        assert not any(c in out + err for c in "\x1b\x9b\r"), (reader, out[:300])
    code, out, _ = installed(["show", str(path)], str(tmp_path))
    assert code == 0 and "engine \\x1b[31mlocal\\x0d\\x9b2J[bold]" in out and "\x1b" not in out


# --- ITF encodings are input, and a trace missing a variable does not "reproduce" ------------------------
def itf_encoded(data):
    """The good trace with ITF's own encodings: #bigint scalars, #set flags, #tup and #map arrays."""
    data = copy.deepcopy(data)
    for st in data["states"]:
        st["q_epoch"] = {"#bigint": str(st["q_epoch"])}
        st["up"] = {"#set": [i for i, b in enumerate(st["up"]) if b]}
        st["isr"] = {"#tup": [{"#set": [i for i, b in enumerate(row) if b]} for row in st["isr"]]}
        st["leo"] = {"#map": [[i, v] for i, v in reversed(list(enumerate(st["leo"])))]}
        st["hw"] = {"#tup": [{"#bigint": str(v)} for v in st["hw"]]}
    return data


def test_itf_encodings_are_read_as_the_layout_values(tmp_path):
    plain, encoded = tmp_path / "plain.itf.json", tmp_path / "encoded.itf.json"
    plain.write_text(json.dumps(good()))
    encoded.write_text(json.dumps(itf_encoded(good())))
    code, out, err = installed(["replay", str(encoded)], str(tmp_path))
    assert code == 0 and "reproduces" in out, err
    assert forked(["show", str(encoded)], str(tmp_path))[1] == forked(["show", str(plain)], str(tmp_path))[1]


def test_replay_refuses_a_trace_missing_a_variable(tmp_path):
    data = good()
    for st in data["states"]:
        del st["acked_at"]                    # the ghost the invariant reads
    path = tmp_path / "no-ghost.itf.json"
    path.write_text(json.dumps(data))
    code, out, err = installed(["replay", str(path)], str(tmp_path))
    assert_rejected((code, out, err), "'acked_at' is missing")
    assert "reproduces" not in out


def test_markup_and_escapes_in_an_output_path_neither_crash_nor_reach_the_terminal(tmp_path):
    out = tmp_path / f"cx[/]{ESC}"
    code, stdout, err = installed(["check", "--spec", "hw-truncation", "--invariant", "no-committed-loss",
                                   "--no-progress", "--out", str(out)], str(tmp_path))
    assert code == 1 and "Traceback" not in err, err                     # the violation, reported in full
    assert (out / "hw-truncation" / "no-committed-loss.itf.json").is_file()
    assert "\x1b" not in stdout and "cx[/]\\x1b[31m/hw-truncation/no-committed-loss.itf.json" in stdout
