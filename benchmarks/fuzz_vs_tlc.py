"""The fuzzer beside TLC's random simulation on the TLA+ ports: CPU seconds to the first violation, side by side.

    TLA2TOOLS_JAR=../shared/tlc/tla2tools.jar KAFKA_SPEC_DIR=../shared/tlc/kafka-specification \\
        python benchmarks/fuzz_vs_tlc.py [--replicas 3 5] [--seeds 5] [--depth 100] [--budget 300]
                                         [--only SPEC[/INVARIANT] ...] [--json FILE]

For every ``tla-*`` spec (specs/tla), every invariant it expects violated, every
replica count and seeds 1..``--seeds``, it runs the two tools in turn (TLC, then
isrcheck, then the next seed: alternating, in this one invocation), each as a
user runs it, one worker each:

- TLC: ``java -XX:+UseParallelGC -cp $TLA2TOOLS_JAR tlc2.TLC -simulate -depth D
  -seed S -deadlock -workers 1 -config C ROOT.tla`` on the original modules of
  KAFKA_SPEC_DIR (hachikuji/kafka-specification) with a .cfg checking that
  invariant at the spec's default constants and ``Replicas = {r1, ..., rN}``
  (``benchmarks/tlc_compare.write_cfg``). Its output is read as it comes, and
  the JVM's CPU time (``/proc/PID/stat``: user and system, every thread) taken
  when it prints "Finished computing initial states" (its set-up: start-up,
  parsing, the initial state) and when it prints "Error: Invariant ... is
  violated" (the find; its trace is then read to count its states).
- isrcheck: ``isrcheck fuzz --spec S --invariant I --replicas N --seed S --workers 1
  --format json``; ``found.cpu_seconds_to_find`` is the fuzz's CPU time from its
  start to the find and ``found.setup_cpu_seconds`` the part before the first run
  (compiling the model, loading Hypothesis).

The figure compared is the *search* CPU: to the find, less the set-up (for an
invariant the initial state breaks, 0 for both). Each row gives the median and
worst seed of both tools, the ratio of the medians, the lengths of the traces
(TLC's as found; isrcheck's as found and minimized) and, for scale, each tool's
whole-process CPU; the summary gives the median of the rows' ratios over the rows
whose violation needs a search. A run that finds nothing within ``--budget`` CPU
seconds counts as the budget (a lower bound). Prints a markdown table and the
load average; ``--json`` also writes one object per run.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from tlc_compare import MODULES, ORIGINAL_FILES, write_cfg  # noqa: E402

TLA_NAMES = {"weak-isr": "WeakIsr", "strong-isr": "StrongIsr", "leader-in-isr": "LeaderInIsr"}
TICKS = os.sysconf("SC_CLK_TCK")


def _cpu(pid):
    """CPU seconds (user + system, every thread) of a running process."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def run_tlc(jar, spec_dir, name, invariant, bounds, seed, depth, budget):
    """One TLC simulation: {"setup", "find" (CPU seconds, None: not found), "length", "process"}."""
    work = tempfile.mkdtemp(prefix="isrcheck-tlcsim-")
    try:
        tla, cfg = write_cfg(work, name, bounds, spec_dir, TLA_NAMES[invariant])
        cmd = ["java", "-XX:+UseParallelGC", "-cp", jar, "tlc2.TLC", "-simulate", "-depth", str(depth),
               "-seed", str(seed), "-deadlock", "-workers", "1", "-metadir", os.path.join(work, "meta"),
               "-config", cfg, tla]
        proc = subprocess.Popen(cmd, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
        setup = find = None
        states = 0
        for line in proc.stdout:
            try:
                now = _cpu(proc.pid)
            except OSError:
                now = None
            if setup is None and line.startswith("Finished computing initial states"):
                setup = now
            elif find is None and re.match(r"Error: Invariant \w+ is violated", line):
                find = now
                setup = now if setup is None else setup          # by the initial state
            elif find is not None and re.match(r"State \d+:", line):
                states += 1
            if find is None and now is not None and now > budget + (setup or 0):
                proc.kill()
        proc.wait()
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return {"setup": setup, "find": None if find is None else max(find - setup, 0.0),
                "length": max(states - 1, 0) if find is not None else None, "exit": proc.returncode,
                "children_cpu": usage.ru_utime + usage.ru_stime}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run_isrcheck(name, invariant, replicas, seed, budget):
    """One ``isrcheck fuzz``: {"setup", "find" (search CPU seconds, None: not found), "length", "minimized"}."""
    out = tempfile.mkdtemp(prefix="isrcheck-fuzzsim-")
    try:
        cmd = [sys.executable, "-m", "isrcheck.checker.command_line.cli", "fuzz", "--spec", name, "--invariant", invariant,
               "--replicas", str(replicas), "--seed", str(seed), "--workers", "1", "--budget", f"{budget:g}s",
               "--format", "json", "--no-progress", "--out", out]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode not in (0, 1, 3):
            raise RuntimeError(f"isrcheck failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
        report = json.loads(proc.stdout)
        found = (report.get("found") or {}).get(invariant)
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        if not found:
            return {"setup": None, "find": None, "length": None, "minimized": None,
                    "children_cpu": usage.ru_utime + usage.ru_stime}
        return {"setup": found["setup_cpu_seconds"],
                "find": max(found["cpu_seconds_to_find"] - found["setup_cpu_seconds"], 0.0),
                "length": found["found_length"], "minimized": found["minimized_length"],
                "children_cpu": usage.ru_utime + usage.ru_stime}
    finally:
        shutil.rmtree(out, ignore_errors=True)


def _median(values, budget):
    return statistics.median(budget if v is None else v for v in values)


def _fmt(v, budget):
    return f"> {budget:g}" if v is None else f"{v:.3f}"


def main(argv=None):
    from isrcheck.specs.tla import TLA_SPECS
    p = argparse.ArgumentParser(prog="fuzz_vs_tlc.py", description=__doc__.split("\n")[0])
    p.add_argument("--replicas", type=int, nargs="+", default=[3, 5])
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--depth", type=int, default=100, help="TLC's -depth")
    p.add_argument("--budget", type=float, default=300.0, help="CPU seconds of search per run at most")
    p.add_argument("--only", action="append", default=[], help="SPEC or SPEC/INVARIANT")
    p.add_argument("--json", help="also write every run to this file (JSON lines)")
    args = p.parse_args(argv)
    jar, spec_dir = os.environ.get("TLA2TOOLS_JAR"), os.environ.get("KAFKA_SPEC_DIR")
    if not jar or not os.path.isfile(jar):
        p.error("set TLA2TOOLS_JAR to a tla2tools.jar")
    if not spec_dir or not all(os.path.isfile(os.path.join(spec_dir, f)) for f in ORIGINAL_FILES):
        p.error(f"set KAFKA_SPEC_DIR to a folder holding {', '.join(ORIGINAL_FILES)}")
    rows, runs = [], []
    start = time.monotonic()
    for name in MODULES:
        cls = TLA_SPECS[name]
        for invariant, verdict in cls.expected.items():
            if verdict != "violated" or (args.only and not any(o in (name, f"{name}/{invariant}")
                                                                for o in args.only)):
                continue
            for replicas in args.replicas:
                bounds = {**cls.defaults, "replicas": replicas}
                tlc, ours = [], []
                for seed in range(1, args.seeds + 1):
                    for tool in ("tlc", "isrcheck"):
                        before = resource.getrusage(resource.RUSAGE_CHILDREN)
                        run = (run_tlc(jar, spec_dir, name, invariant, bounds, seed, args.depth, args.budget)
                               if tool == "tlc" else run_isrcheck(name, invariant, replicas, seed, args.budget))
                        run["process_cpu"] = run.pop("children_cpu") - before.ru_utime - before.ru_stime
                        run.update(tool=tool, spec=name, invariant=invariant, replicas=replicas, seed=seed)
                        (tlc if tool == "tlc" else ours).append(run)
                        runs.append(run)
                        print(json.dumps(run), file=sys.stderr, flush=True)
                rows.append((name, invariant, replicas, tlc, ours))
    if args.json:
        Path(args.json).write_text("".join(json.dumps(r) + "\n" for r in runs))
    b = args.budget
    print(f"fuzz vs TLC -simulate: seeds 1..{args.seeds}, replicas {' '.join(map(str, args.replicas))}, "
          f"TLC -depth {args.depth}, one worker each, search CPU seconds to the first violation (budget {b:g}); "
          f"{time.monotonic() - start:.0f} s in all; load average at the end {os.getloadavg()[0]:.2f}")
    print()
    print("| spec | invariant | replicas | TLC median / worst | isrcheck median / worst | TLC ÷ isrcheck | "
          "TLC trace | isrcheck trace found → minimized | process CPU TLC / isrcheck (median) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    ratios = []
    for name, invariant, replicas, tlc, ours in rows:
        tm, om = _median([r["find"] for r in tlc], b), _median([r["find"] for r in ours], b)
        tw = None if any(r["find"] is None for r in tlc) else max(r["find"] for r in tlc)
        ow = None if any(r["find"] is None for r in ours) else max(r["find"] for r in ours)
        searched = any(r["length"] for r in tlc + ours if r["length"] is not None)
        ratio = tm / om if searched and om > 0 else None
        if ratio is not None:
            ratios.append(ratio)
        tl = statistics.median(r["length"] for r in tlc if r["length"] is not None) if any(
            r["length"] is not None for r in tlc) else "—"
        ol = [r for r in ours if r["length"] is not None]
        ours_len = (f"{statistics.median(r['length'] for r in ol):g} → {statistics.median(r['minimized'] for r in ol):g}"
                    if ol else "—")
        print(f"| {name} | {invariant} | {replicas} | {tm:.3f} / {_fmt(tw, b)} | {om:.3f} / {_fmt(ow, b)} | "
              f"{'initial state' if not searched else f'{ratio:.1f}x'} | {tl} | {ours_len} | "
              f"{statistics.median(r['process_cpu'] for r in tlc):.1f} / "
              f"{statistics.median(r['process_cpu'] for r in ours):.1f} |")
    if ratios:
        print(f"\nmedian of the rows' ratios (rows that need a search): {statistics.median(ratios):.1f}x "
              f"(lowest {min(ratios):.1f}x, {len(ratios)} rows)")


if __name__ == "__main__":
    main()
