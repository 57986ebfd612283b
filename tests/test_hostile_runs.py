"""Nothing makes isrcheck lie: user code that exits while it loads, damaged or forged snapshots, a full disk,
memory ceilings, signals while starting, hostile settings files, control characters in a spec file, options
that would do nothing.

Every case runs the installed ``isrcheck`` script in a subprocess and checks its exit code, that stderr is one
line where the run is refused or cut short, that no Python traceback shows, and which files are (and are not)
left. Independent runs of a test start together (:func:`run_all`): each spends most of a second loading numpy
and the specs, so a test costs about as long as its slowest run.
"""
from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
EXE = os.path.join(os.path.dirname(sys.executable), "isrcheck")
GOOD = REPO / "counterexamples" / "acks-1" / "no-committed-loss.itf.json"
ESC = "\x1b[31m"
RAW = ("\x1b", "\x07", "\r", "\x9b")            # control characters that must never reach a terminal raw
ENV = {k: v for k, v in os.environ.items() if k not in ("GITHUB_STEP_SUMMARY", "ISRCHECK_PROFILE")}


class Run:
    """One installed ``isrcheck`` process (started at once; :meth:`result` waits for it, killing it on a hang)."""

    def __init__(self, argv, cwd, env=None, limit_as=None, limit_fsize=None, prefix=()):
        def limits():
            for which, value in ((resource.RLIMIT_AS, limit_as), (resource.RLIMIT_FSIZE, limit_fsize)):
                if value is not None:
                    resource.setrlimit(which, (value, value))
        self.argv = [*prefix, EXE, *argv]
        self.p = subprocess.Popen(self.argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env={**ENV, **(env or {})},
                                  preexec_fn=limits if (limit_as, limit_fsize) != (None, None) else None)

    def result(self, timeout=120):
        try:
            out, err = self.p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.communicate()
            pytest.fail(f"still running after {timeout} s (a hang): {' '.join(self.argv)}")
        return self.p.returncode, out, err


def run_all(runs, timeout=120):
    """{name: (exit code, stdout, stderr)} of runs started together."""
    return {name: run.result(timeout) for name, run in runs.items()}


def no_traceback(name, code, out, err):
    assert "Traceback" not in out + err, (name, err[-3000:])
    assert not any(c in out + err for c in RAW), (name, out[-500:], err[-500:])


def one_line(name, result, code, *words):
    """Exit ``code``, no traceback, exactly one stderr line (``isrcheck: ...``) holding ``words``."""
    got, out, err = result
    no_traceback(name, got, out, err)
    lines = [line for line in err.splitlines() if line.strip()]
    assert got == code, (name, got, out[-1000:], err[-2000:])
    assert len(lines) == 1 and lines[0].startswith("isrcheck: "), (name, err)
    for w in words:
        assert w in lines[0], (name, w, lines[0])


# --- 1. a spec module or plugin that exits or raises while it is imported ------------------------------
EXITS = {"exits.py": "import sys\nsys.exit(0)\n", "bye.py": "raise SystemExit('bye')\n",
         "ctrl_c.py": "raise KeyboardInterrupt\n", "generator.py": "raise GeneratorExit('done')\n"}
PLUGIN_ENTRY_POINTS = "[isrcheck.specs]\nquits = quitting:Quits\n"


def test_user_code_that_exits_while_loading_is_one_line_and_exit_2(tmp_path):
    for name, text in EXITS.items():
        (tmp_path / name).write_text(text)
    site = tmp_path / "site"
    (site / "quitting").mkdir(parents=True)
    (site / "quitting" / "__init__.py").write_text("import sys\nsys.exit(0)\n")
    (site / "quitting-1.0.dist-info").mkdir()
    (site / "quitting-1.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: quitting\nVersion: 1.0\n")
    (site / "quitting-1.0.dist-info" / "entry_points.txt").write_text(PLUGIN_ENTRY_POINTS)
    plugin = {"PYTHONPATH": str(site)}
    check = ["--invariant", "no-committed-loss", "--no-progress", "--out", "out"]
    results = run_all({
        "check-exit0": Run(["check", "--spec", "exits.py:X", *check], tmp_path),
        "gate-exit0": Run(["gate", "exits.py", "--no-progress", "--out", "gate-out"], tmp_path),
        "show-exit0": Run(["show", str(GOOD), "--spec", "exits.py:X"], tmp_path),
        "module-exit0": Run(["check", "--spec", "exits:X", *check], tmp_path, env={"PYTHONPATH": str(tmp_path)}),
        "check-bye": Run(["check", "--spec", "bye.py:X", *check], tmp_path),
        "gate-ctrl-c": Run(["gate", "ctrl_c.py", "--no-progress", "--out", "gate-out"], tmp_path),
        "show-generator": Run(["show", str(GOOD), "--spec", "generator.py:X"], tmp_path),
        "plain-gate-plugin": Run(["gate", "--no-progress", "--out", "gate-out"], tmp_path, env=plugin),
        "named-gate-plugin": Run(["gate", "acks-1", "--no-progress", "--out", "gate-out"], tmp_path, env=plugin),
        "check-plugin": Run(["check", "--spec", "acks-1", *check], tmp_path, env=plugin),
    })
    exits = "SystemExit(0): the module exits while it is imported"
    for name in ("check-exit0", "gate-exit0", "show-exit0"):
        one_line(name, results[name], 2, "exits.py: cannot import: " + exits)
    one_line("module-exit0", results["module-exit0"], 2, "module exits: cannot import: " + exits)
    one_line("check-bye", results["check-bye"], 2, "bye.py: cannot import: SystemExit('bye')")
    one_line("gate-ctrl-c", results["gate-ctrl-c"], 2, "ctrl_c.py: cannot import: KeyboardInterrupt")
    one_line("show-generator", results["show-generator"], 2, "generator.py: cannot import: GeneratorExit: done")
    for name in ("plain-gate-plugin", "named-gate-plugin"):       # the gate never passes over a plugin
        one_line(name, results[name], 2, "plugin quits (quitting:Quits): cannot load: " + exits,
                 "the gate does not run with an installed plugin it cannot load")
    code, out, err = results["check-plugin"]                   # a violation is still exit 1
    assert code == 1 and "no-committed-loss  violated" in out and "Traceback" not in err, (code, err)
    assert not (tmp_path / "gate-out").exists()


# --- 2. snapshots: damaged, forged, or not files at all -----------------------------------------------
SEARCH = ["check", "--spec", "acks-1", "--invariant", "no-committed-loss", "--invariant", "log-matching",
          "--no-progress", "--format", "json"]
ALL_STATES = 39_236                 # acks-1 at its defaults: log-matching holds, so the search sees every state


def _manifest_digest(manifest):
    from isrcheck.checker.exhaustive.checkpoint import manifest_digest as digest
    return digest(manifest)


def _array_digest(a):
    from isrcheck.checker.exhaustive.checkpoint import _digest
    return _digest(a)


class Forger:
    """Edits a copy of a snapshot as someone who knows the format would: arrays and manifest re-hashed."""

    def __init__(self, folder):
        self.folder = folder
        self.manifest = json.loads((folder / "snapshot.json").read_text())
        self.arrays = folder / self.manifest["snapshot"]

    def load(self, key):
        return np.load(self.arrays / f"{key}.npy")

    def put(self, key, a):
        np.save(self.arrays / f"{key}.npy", a)
        self.manifest["sha256"][key] = _array_digest(a)

    def save(self, digest=True):
        if digest:
            self.manifest["digest"] = _manifest_digest(self.manifest)
        (self.folder / "snapshot.json").write_text(json.dumps(self.manifest))


def _counters(f, **changes):
    f.manifest["counters"].update(changes)
    f.save()


def _set(key, fn):
    def change(f):
        f.put(key, fn(f.load(key)))
        f.save()
    return change


def _cell(a, index, value):
    a = a.copy()
    a[index] = value
    return a


def _fifo(name):
    def change(f):
        path = f.folder / name if name == "snapshot.json" else f.arrays / name
        path.unlink()
        os.mkfifo(path)
    return change


def _other_state(f):
    """The violation moved to another state of its level: in range, but the path there violates nothing."""
    state, level = f.manifest["counters"]["violations"]["no-committed-loss"]
    f.manifest["counters"]["violations"]["no-committed-loss"] = [state + 1, level]
    f.save()


def _truncate(f):
    path = f.arrays / "parents.npy"
    path.write_bytes(path.read_bytes()[:-8])


#: how a snapshot is damaged -> the words of the refusal
DAMAGE = {
    "edited-manifest": (lambda f: (f.manifest["counters"].update(depth=3), f.save(digest=False)),
                        "snapshot.json does not match its digest"),
    "depth-text": (lambda f: _counters(f, depth="10"), "'depth' is not a positive integer"),
    "level-start-absurd": (lambda f: (f.manifest["counters"]["level_start"].__setitem__(-1, 10 ** 12), f.save()),
                           "the snapshot is not one search"),
    "unknown-violation": (lambda f: (f.manifest["counters"]["violations"].update({"zz": [0, 1]}), f.save()),
                          "a violation of 'zz', which this search does not check"),
    "visited-as-uint32": (_set("visited", lambda a: a.view(np.uint32)), "visited.npy holds <u4"),
    "visited-swapped": (lambda f: (f.put("visited", f.load("frontier_fps")), f.save()), "fingerprints"),
    "wide-keys-short": (lambda f: (f.put("visited_high", np.zeros(3, dtype="<u4")), f.save()),
                        "the visited keys are not sorted and distinct"),
    "parent-elsewhere": (_set("parents", lambda a: _cell(a, -1, 0)), "has a parent outside level"),
    "frontier-cell": (_set("frontier", lambda a: _cell(a, (0, 0), 100)), "a frontier cell outside"),
    "violation-elsewhere": (_other_state, "does not replay to one"),
    "folder-outside": (lambda f: (f.manifest.update(snapshot="../elsewhere"), f.save()), "names no snapshot folder"),
    "array-fifo": (_fifo("visited.npy"), "visited.npy: not a regular file (it is a FIFO)"),
    "manifest-fifo": (_fifo("snapshot.json"), "snapshot.json: not a regular file (it is a FIFO)"),
    "array-truncated": (_truncate, "parents.npy is not as long as its header says"),
}


def test_a_damaged_or_forged_snapshot_is_refused_before_any_trace_is_written(tmp_path):
    first = Run([*SEARCH, "--checkpoint", "ck", "--checkpoint-every", "0", "--max-depth", "10", "--out", "ref"],
                tmp_path).result()
    assert first[0] == 1 and json.loads(first[1])["budget_hit"] == "max depth 10", first[2]
    trace = tmp_path / "ref" / "acks-1" / "no-committed-loss.itf.json"
    runs = {}
    for name, (damage, _) in DAMAGE.items():
        folder = tmp_path / name
        shutil.copytree(tmp_path / "ck", folder)
        damage(Forger(folder))
        (folder.parent / f"{name}-out" / "acks-1").mkdir(parents=True)
        shutil.copy(trace, folder.parent / f"{name}-out" / "acks-1")      # a good trace a resume must not touch
        runs[name] = Run([*SEARCH, "--resume", str(folder), "--out", f"{name}-out"], tmp_path)
    runs["good"] = Run([*SEARCH, "--resume", "ck", "--out", "resumed"], tmp_path)
    results = run_all(runs, timeout=60)
    for name, (_, words) in DAMAGE.items():
        one_line(name, results[name], 2, f"--resume {tmp_path / name}: ", words)
        assert (tmp_path / f"{name}-out" / "acks-1" / "no-committed-loss.itf.json").read_bytes() == trace.read_bytes()
    code, out, err = results["good"]                   # the snapshot as written resumes to the whole search
    report = json.loads(out)
    assert code == 1 and report["distinct_states"] == ALL_STATES and report["complete"], err
    assert (tmp_path / "resumed" / "acks-1" / "no-committed-loss.itf.json").read_bytes() == trace.read_bytes()


# --- 3. a full disk ------------------------------------------------------------------------------------
def _can_mount():
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"],
                           capture_output=True)
    return probe.returncode == 0


MOUNT = _can_mount()
FILL = ('mount -t tmpfs -o size=64k tmpfs full && head -c 65536 /dev/zero > full/.filler 2>/dev/null; '
        '"$@"; code=$?; find full -mindepth 1 ! -name .filler > "$LISTING"; exit $code')


class FullDisk(Run):
    """``isrcheck`` with ``full/`` (under ``cwd``) a file system with no room left: a 64 KB tmpfs filled up, in a
    mount namespace of its own (as root); else, as any user, a file-size limit of 0 (``ulimit -f 0``: every
    write to a file fails, EFBIG). :attr:`left` lists what the run left under ``full/``."""

    def __init__(self, argv, cwd):
        (cwd / "full").mkdir(exist_ok=True)
        self.cwd, self.listing = cwd, cwd / f".left-{os.urandom(4).hex()}"
        if MOUNT:
            super().__init__(argv, cwd, env={"LISTING": str(self.listing)},
                             prefix=("unshare", "-m", "sh", "-c", FILL, "sh"))
        else:
            super().__init__(argv, cwd, limit_fsize=0)

    @property
    def left(self):
        if MOUNT:
            return sorted(self.listing.read_text().split())
        return sorted(str(p.relative_to(self.cwd)) for p in (self.cwd / "full").rglob("*"))


def the_error(name, result, code, *words, others=()):
    """Exit ``code``, no traceback, exactly one ``isrcheck:`` line on stderr (holding ``words``); any other
    stderr line starts with one of ``others``."""
    got, out, err = result
    no_traceback(name, got, out, err)
    assert got == code, (name, got, out[-1500:], err[-1500:])
    lines = [line for line in err.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("isrcheck: ")]
    assert len(errors) == 1 and all(line in errors or line.startswith(others) for line in lines), (name, err)
    for w in words:
        assert w in errors[0], (name, w, errors[0])
    return out


def test_a_full_disk_keeps_the_verdicts_names_the_file_and_exits_3(tmp_path):
    shutil.copy(GOOD, tmp_path / "good.itf.json")
    check = ["--spec", "acks-1", "--invariant", "no-committed-loss", "--no-progress"]
    argv = {
        "check": ["check", *check, "--out", "full/out"],
        "check-json": ["check", *check, "--invariant", "no-committed-loss-anywhere", "--format", "json",
                       "--out", "full/out"],
        "fuzz": ["fuzz", "--spec", "acks-1", "--invariant", "single-acting-leader", "--budget", "60", "--seed", "1",
                 "--no-progress", "--out", "full/out"],
        "bmc": ["check", "--engine", "bmc", *check, "--depth", "6", "--out", "full/out"],
        "lasso": ["check", "--spec", "no-isr-fencing", "--property", "hw-advances", "--no-progress",
                  "--out", "full/out"],
        "checkpoint": ["check", *check, "--out", "out", "--checkpoint", "full/ck", "--checkpoint-every", "0"],
        "minimize": ["minimize", str(tmp_path / "good.itf.json"), "--output", "full/good.min.itf.json"],
        "html": ["show", str(GOOD), "--format", "html", "--output", "full/page.html"],
        "gate-update": ["gate", "acks-1", "--no-progress", "--update-traces", "--counterexamples", "full/cx",
                        "--out", "gate-out"],
        "gate-report": ["gate", "acks-1", "--no-progress", "--counterexamples", str(REPO / "counterexamples"),
                        "--format", "json", "--output", "full/report.json", "--out", "gate-out"],
    }
    runs = {}
    for name, args in argv.items():         # each in a folder of its own
        (tmp_path / name).mkdir()
        runs[name] = FullDisk(args, tmp_path / name)
    results = run_all(runs)
    trace = "cannot write full/out/acks-1/no-committed-loss.itf.json ("
    out = the_error("check", results["check"], 3, trace, "the verdicts stand, the trace is not kept")
    assert "no-committed-loss  violated" in out and "read a counterexample" not in out
    report = json.loads(the_error("check-json", results["check-json"], 3, "2 traces are not kept"))
    assert set(report["verdicts"].values()) == {"violated"} and report["trace_files"] == {}
    out = the_error("fuzz", results["fuzz"], 3, "cannot write full/out/acks-1/single-acting-leader.itf.json (",
                    others=("fuzz: seed 1",))
    assert "single-acting-leader  violated" in out
    assert "no-committed-loss  violated" in the_error("bmc", results["bmc"], 3, trace)
    assert "hw-advances  violated" in the_error("lasso", results["lasso"], 3,
                                                "cannot write full/out/no-isr-fencing/hw-advances.itf.json (")
    code, out, err = results["checkpoint"]             # the first snapshot fails: the search stops there, exit 3
    no_traceback("checkpoint", code, out, err)
    assert code == 3 and "stopped by checkpoint write failed" in out and not err, (code, out[-800:], err)
    the_error("minimize", results["minimize"], 3, "cannot write full/good.min.itf.json (", "not kept",
              others=("minimize: ",))
    the_error("html", results["html"], 3, "cannot write full/page.html (")
    out = results["gate-update"][1]
    assert results["gate-update"][0] == 3 and "gate stopped: stopped by a write that failed (cannot write full/cx/" \
        in out.replace("\n", " "), out[-1500:]
    no_traceback("gate-update", *results["gate-update"])
    out = the_error("gate-report", results["gate-report"], 3, "cannot write full/report.json (",
                    "the verdicts above stand, the report is not kept")
    assert "gate passed" in out
    for name, run in runs.items():             # no temporary file, no empty page, no folder made for nothing
        assert run.left == (["full/ck"] if name == "checkpoint" else []), (name, run.left)


# --- 4. memory ceilings ---------------------------------------------------------------------------------
MB = 1 << 20
#: (command, address-space limits in MB): below what numpy needs, between it and z3 (show, list), at scipy's
#: OpenBLAS (liveness: it spun for ever at 200-250 MB), at numba's LLVM (--symmetry), in CaDiCaL (BMC: it aborted)
CEILINGS = [(["show", str(GOOD)], (60, 150, 400)),
            (["list", "acks-1"], (100,)),
            (["check", "--spec", "acks-1", "--property", "hw-advances", "--no-progress", "--out", "out"], (250, 300)),
            (["check", "--spec", "acks-1", "--invariant", "log-matching", "--symmetry", "--no-progress", "--out",
              "out"], (300,)),
            (["check", "--engine", "bmc", "--spec", "acks-1", "--invariant", "log-matching", "--depth", "8",
              "--no-progress", "--out", "out"], (200,))]


def test_memory_ceilings_are_exit_3_with_one_line_never_a_hang(tmp_path):
    runs = {(tuple(argv), mb): Run(argv, tmp_path, limit_as=mb * MB) for argv, limits in CEILINGS for mb in limits}
    for (argv, mb), result in run_all(runs, timeout=90).items():
        code, out, err = result
        name = f"{' '.join(argv[:3])} at {mb} MB"
        no_traceback(name, code, out, err)
        assert "OpenBLAS" not in err and code in (0, 3), (name, code, err)        # these commands violate nothing
        if code == 3 and "bmc" not in argv:               # (BMC's depth reached is exit 3 too, with its report)
            one_line(name, result, 3, "out of memory")
    assert runs[(tuple(CEILINGS[0][0]), 60)].result()[0] == 3           # numpy cannot load: said, not crashed
    assert runs[(tuple(CEILINGS[0][0]), 400)].result()[0] == 0          # room enough: shown


# --- 5. signals while starting, and SIGINT during BMC ---------------------------------------------------------
def _catches_sigterm(pid):
    """Whether the process has a handler for SIGTERM yet (isrcheck's first line installs it)."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            mask = next(line for line in fh if line.startswith("SigCgt:")).split()[1]
    except (OSError, StopIteration):
        return False
    return bool(int(mask, 16) >> (signal.SIGTERM - 1) & 1)


def test_a_signal_while_starting_is_exit_3_and_one_line(tmp_path):
    argv = ["check", "--spec", "kip-101", "--invariant", "log-matching", "--no-progress", "--out", "out"]  # seconds
    runs = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        for delay in (0.0, 0.15, 0.3):          # loading numpy, the specs, click: the first half second
            run = runs[sig.name, delay] = Run(argv, tmp_path)
            end = time.monotonic() + 30
            while not _catches_sigterm(run.p.pid) and run.p.poll() is None and time.monotonic() < end:
                time.sleep(0.002)
            time.sleep(delay)
            run.p.send_signal(sig)
    for (name, delay), result in run_all(runs, timeout=60).items():
        code, out, err = result
        no_traceback(name, code, out, err)
        assert code == 3, (name, delay, code, err)
        assert name in out + err or "interrupted" in err, (name, delay, out[-500:], err)
        assert len([line for line in err.splitlines() if line.strip()]) <= 1, (name, delay, err)


def test_sigint_during_bmc_is_a_stop_with_the_partial_report(tmp_path):
    trace = tmp_path / "out" / "kip-101" / "single-acting-leader.itf.json"
    run = Run(["check", "--engine", "bmc", "--spec", "kip-101", "--invariant", "single-acting-leader", "--invariant",
               "log-matching", "--depth", "40", "--no-progress", "--out", "out"], tmp_path)
    end = time.monotonic() + 90
    while not trace.is_file():                  # written at depth 5; log-matching keeps the solver busy after it
        assert run.p.poll() is None and time.monotonic() < end, run.p.communicate()
        time.sleep(0.05)
    time.sleep(0.5)
    run.p.send_signal(signal.SIGINT)
    code, out, err = run.result(timeout=60)
    no_traceback("bmc", code, out, err)
    assert code == 3 and "Caught keyboard interrupt" not in err, (code, err)
    assert "stopped by SIGINT: no violation of log-matching" in out and "single-acting-leader  violated" in out


# --- 6. settings files ------------------------------------------------------------------------------------
NESTED = "a = " + "[" * 100_000 + "]" * 100_000 + "\n"
#: name -> (files in the run's folder, arguments, exit code, words of the error line)
SETTINGS = {
    "pyproject-not-toml": ({"pyproject.toml": '[project]\nname = "x\n'}, ["list", "acks-1"], 0, ()),
    "pyproject-nested": ({"pyproject.toml": NESTED}, ["list", "acks-1"], 0, ()),
    "ours-not-toml": ({"pyproject.toml": '[tool.isrcheck]\nreplicas = "3\n'}, ["list", "acks-1"], 2,
                      ("pyproject.toml: not valid TOML",)),
    "ours-nested": ({"pyproject.toml": "[tool.isrcheck]\n" + NESTED}, ["list", "acks-1"], 2,
                    ("pyproject.toml: not valid TOML (nested too deeply)",)),
    "config-zero": ({}, ["--config", "/dev/zero", "list"], 2, ("/dev/zero: not a regular file (it is a device)",)),
    "config-urandom": ({}, ["--config", "/dev/urandom", "list"], 2, ("/dev/urandom: not a regular file",)),
    "config-fifo": ({"fifo.toml": os.mkfifo}, ["--config", "fifo.toml", "list"], 2,
                    ("fifo.toml: not a regular file (it is a FIFO)",)),
    "max-states-1e400": ({"isrcheck.toml": "max-states = 1e400\n"}, ["list"], 2, ("max-states: 'inf' is not a valid",)),
    "max-states-1.5": ({"isrcheck.toml": "[check]\nmax-states = 1.5\n"}, ["list"], 2,
                       ("[check]: max-states: '1.5' is not a valid",)),
    "replicas-2.9": ({"isrcheck.toml": "replicas = 2.9\n"}, ["list"], 2, ("replicas: '2.9' is not a valid integer",)),
    "checkpoint-every-nan": ({}, ["check", "--spec", "acks-1", "--all", "--checkpoint", "ck", "--checkpoint-every",
                                  "nan"], 2, ("--checkpoint-every", "'nan' is not a number of seconds")),
    "checkpoint-every-inf": ({"isrcheck.toml": "[check]\ncheckpoint-every = inf\n"}, ["list"], 2,
                             ("checkpoint-every: 'inf' is not a number of seconds",)),
}


def test_hostile_settings_files_are_ignored_or_one_line_at_once(tmp_path):
    runs = {}
    for name, (files, argv, _, _) in SETTINGS.items():
        folder = tmp_path / name
        folder.mkdir()
        for file, content in files.items():
            content(folder / file) if callable(content) else (folder / file).write_text(content)
        runs[name] = Run(argv, folder)
    for name, result in run_all(runs, timeout=30).items():     # a FIFO or a device read would never end
        _, _, code, words = SETTINGS[name]
        if code == 0:
            assert result[0] == 0 and "acks-1" in result[1] and not result[2], (name, result[2])
        else:
            one_line(name, result, code, *words)
    assert not (tmp_path / "checkpoint-every-nan" / "ck").exists()


# --- 8. control characters and markup from a spec file --------------------------------------------------
EVIL = f'''
"""A team's variant whose names and texts carry terminal escapes and rich markup."""
from isrcheck.model.spec import invariant
from isrcheck.specs.acks_1 import Acks1


class Evil(Acks1):
    """Evil{ESC!r}[/]."""
    name = "evil{ESC!r}[/]\\x07"
    summary = "sum\\x1b[2Jmary"
    expected = {{**Acks1.expected, "up\\x1b[5m[/]": "holds"}}
    expected_why = {{**Acks1.expected_why, "no-committed-loss": "lost\\r\\x9b[/] here"}}

    @invariant("up\\x1b[5m[/]")
    def always(self, s):
        """Always\\x1b[31m true\\r[/]."""
        return s.up[0] | ~s.up[0]
'''.replace(repr(ESC), ESC.encode("unicode_escape").decode())


def test_names_and_texts_from_a_spec_file_reach_the_terminal_escaped(tmp_path):
    (tmp_path / "evil.py").write_text(EVIL)
    spec = "evil.py:Evil"
    results = run_all({
        "check": Run(["check", "--spec", spec, "--invariant", "no-committed-loss", "--invariant", "up\x1b[5m[/]",
                      "--out", "out"], tmp_path),
        "fuzz": Run(["fuzz", "--spec", spec, "--invariant", "single-acting-leader", "--budget", "30", "--seed", "1",
                     "--out", "fout"], tmp_path),
        "gate": Run(["gate", "evil.py", "--out", "gate-out", "--counterexamples", "cx"], tmp_path),
        "prove": Run(["prove", "--spec", spec, "--invariant", "up\x1b[5m[/]"], tmp_path),
    })
    for name, (code, out, err) in results.items():
        no_traceback(name, code, out, err)             # nothing raw; "[/]" printed, not a markup error
        assert "\\x1b[" in out + err and "[/]" in out + err, (name, out[-800:], err[-800:])
    assert results["check"][0] == 1 and results["fuzz"][0] == 1 and results["prove"][0] == 0
    assert results["gate"][0] == 1                    # its saved traces are missing: unmet, and said so
    assert "evil\\x1b[31m[/]\\x07" in results["check"][1] and "lost\\x0d\\x9b[/] here" in results["check"][1]
    trace = next((tmp_path / "out").glob("*/no-committed-loss.itf.json"))
    code, out, err = Run(["show", str(trace), "--spec", spec], tmp_path).result()
    no_traceback("show", code, out, err)
    assert code == 0 and "no-committed-loss violated after" in out


# --- 9. options that would do nothing, names that would make folders, traces on the disk ------------------
SLASHED = '''
from isrcheck.specs.acks_1 import Acks1


class Slashed(Acks1):
    name = "../team/acks"
'''


def test_options_that_would_do_nothing_are_refused_and_names_make_no_folders(tmp_path):
    (tmp_path / "slashed.py").write_text(SLASHED)
    check = ["check", "--spec", "acks-1", "--invariant", "no-committed-loss", "--no-progress", "--out", "out"]
    results = run_all({
        "symmetry-bmc": Run([*check, "--engine", "bmc", "--symmetry"], tmp_path),
        "depth-local": Run([*check, "--depth", "10"], tmp_path),
        "master-local": Run([*check, "--master", "local[2]"], tmp_path),
        "max-states-bmc": Run([*check, "--engine", "bmc", "--max-states", "100"], tmp_path),
        "every-without-checkpoint": Run([*check, "--checkpoint-every", "5"], tmp_path),
        "update-traces-proc": Run(["gate", "acks-1", "--update-traces", "--counterexamples", "/proc/x",
                                   "--no-progress", "--out", "gate-out"], tmp_path),
        "slashed": Run(["check", "--spec", "slashed.py:Slashed", "--invariant", "no-committed-loss",
                        "--no-progress", "--out", "sub/out"], tmp_path),
    })
    one_line("symmetry-bmc", results["symmetry-bmc"], 2, "--symmetry does nothing with --engine bmc")
    one_line("depth-local", results["depth-local"], 2, "--depth does nothing with --engine local")
    one_line("master-local", results["master-local"], 2, "--master does nothing with --engine local")
    one_line("max-states-bmc", results["max-states-bmc"], 2, "--max-states does nothing with --engine bmc")
    one_line("every-without-checkpoint", results["every-without-checkpoint"], 2,
             "--checkpoint-every does nothing without --checkpoint or --resume")
    one_line("update-traces-proc", results["update-traces-proc"], 2, "--counterexamples /proc/x: under /proc")
    assert not (tmp_path / "out").exists() and not (tmp_path / "gate-out").exists()    # refused before any work
    assert results["slashed"][0] == 1, results["slashed"][2]
    written = [str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*.itf.json")]
    assert written == ["sub/out/..%2Fteam%2Facks/no-committed-loss.itf.json"], written      # one folder, inside


def test_a_trace_is_on_the_disk_before_it_takes_its_name(tmp_path):
    """fsync of the temporary file, then the rename (strace: the system calls in their order)."""
    if shutil.which("strace") is None:
        pytest.skip("needs strace")
    code, out, err = Run(["check", "--spec", "acks-1", "--invariant", "no-committed-loss", "--no-progress", "--out",
                          "out"], tmp_path, prefix=("strace", "-f", "-qq", "-e", "trace=fsync,rename,openat",
                                                    "-o", str(tmp_path / "calls"))).result()
    assert code == 1, err
    calls = (tmp_path / "calls").read_text().splitlines()
    opened = next(i for i, c in enumerate(calls) if "no-committed-loss.itf.json.tmp-" in c and "openat" in c)
    fd = calls[opened].rsplit("=", 1)[1].strip()
    synced = next(i for i, c in enumerate(calls) if i > opened and f"fsync({fd})" in c)
    renamed = next(i for i, c in enumerate(calls) if "rename(" in c and "no-committed-loss.itf.json.tmp-" in c)
    assert opened < synced < renamed, calls[opened:renamed + 1]


def test_a_reader_that_closes_the_pipe_early_changes_no_exit_code(tmp_path):
    """`isrcheck ... | head -1`: the reader takes one line and goes; the command still exits with its own code (a
    BrokenPipeError escaping was exit 1, the code of a violation), with nothing on stderr."""
    runs = {"list": ["list"],
            "violated": ["check", "--spec", "kip-101", "--invariant", "no-committed-loss", "--no-progress"],
            "holds": ["check", "--spec", "kip-320", "--invariant", "no-committed-loss", "--max-epochs", "2",
                      "--no-progress"]}
    procs = {name: subprocess.Popen([EXE, *argv], cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, env=ENV) for name, argv in runs.items()}
    codes = {}
    for name, p in procs.items():
        assert p.stdout.readline()          # one line, as `head -1` takes
        p.stdout.close()
        codes[name] = p.wait(timeout=120)
        assert p.stderr.read() == b"", name
    assert codes == {"list": 0, "violated": 1, "holds": 0}
    assert (tmp_path / "isrcheck-out" / "kip-101" / "no-committed-loss.itf.json").is_file()
