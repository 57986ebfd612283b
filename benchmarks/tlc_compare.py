"""isrcheck against TLC on the TLA+ ports (specs/tla), side by side in one invocation: states, depth, seconds.

    TLA2TOOLS_JAR=../shared/tlc/tla2tools.jar KAFKA_SPEC_DIR=../shared/tlc/kafka-specification \
        python benchmarks/tlc_compare.py                              # tla-kip320 at 3/2/2/2, 5 pairs a mode
    ... python benchmarks/tlc_compare.py --max-epochs 3 --pairs 3     # 3/2/2/3 (9,985,570 states)
    ... python benchmarks/tlc_compare.py --markdown                   # also the table docs/benchmarks/tlc.md quotes

Both tools run as their users run them, whole processes, one after the other, alternating which goes
first: ``java -XX:+UseParallelGC -cp $TLA2TOOLS_JAR tlc2.TLC -deadlock -workers N`` (the garbage
collector TLC asks for) and ``isrcheck check --workers N``, after one untimed isrcheck run (which fills
its caches, compiles the spec's kernels and writes Python's bytecode, as installing it and a first search
do). Two modes: one worker each (``-workers
1`` against ``--workers 1``: the CPU ratio) and every core (``-workers C`` against isrcheck's default).
Each run's CPU seconds are the whole process's (user + system of the child, its JVM threads or isrcheck's
compiler included) with the load average (``os.getloadavg``) when it started; per mode the medians, and
the TLC/isrcheck ratio of CPU and of wall time pair by pair with their median. Both must report the same
distinct states and depth, or the run fails (exit 1).

TLC runs the original modules of KAFKA_SPEC_DIR (hachikuji/kafka-specification): tla-kip320 checking
StrongIsr (isrcheck: strong-isr), the other versions no invariant (isrcheck: type-ok, which holds by
construction), since their StrongIsr breaks and the original TypeOk cannot be evaluated. Without
KAFKA_SPEC_DIR it runs the rendering embedded below, written for isrcheck to the same definitions (same
variables, Init, actions and quantifiers), with TypeOk on both sides. Nothing is downloaded; without a
TLC jar the script says so and exits 2.
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

from isrcheck.model.spec import BoundsError
from isrcheck.specs.tla import TLA_SPECS

# spec name -> (root module of the original specs, root module of the embedded rendering)
MODULES = {
    "tla-truncate-to-hw": ("KafkaTruncateToHighWatermark", "IsrcheckTruncateToHighWatermark"),
    "tla-kip101": ("Kip101", "IsrcheckKip101"),
    "tla-kip279": ("Kip279", "IsrcheckKip279"),
    "tla-kip320-first-try": ("Kip320FirstTry", "IsrcheckKip320FirstTry"),
    "tla-kip320": ("Kip320", "IsrcheckKip320"),
}
ORIGINAL_FILES = ("KafkaReplication.tla", "FiniteReplicatedLog.tla", "IdSequence.tla", "Util.tla",
                  "KafkaTruncateToHighWatermark.tla", "Kip101.tla", "Kip279.tla", "Kip320FirstTry.tla",
                  "Kip320.tla")

# ------------------------------------------------------------------------------------------
# The embedded TLA+: isrcheck's rendering of the replication model and its five versions.
# ------------------------------------------------------------------------------------------
BASE = r"""
------------------------------ MODULE IsrcheckKafka ------------------------------
(* isrcheck's rendering of the Kafka replication model of hachikuji/kafka-specification  *)
(* (KafkaReplication with FiniteReplicatedLog and IdSequence), for tlc_compare.py.      *)
EXTENDS Integers

CONSTANTS Replicas, LogSize, MaxRecords, MaxLeaderEpoch

None == "NONE"
Nil == -1

VARIABLES replicaLog, replicaState, nextRecordId, nextLeaderEpoch, leaderAndIsrRequests, quorumState

vars == <<replicaLog, replicaState, nextLeaderEpoch, nextRecordId, leaderAndIsrRequests, quorumState>>

Offsets == 0 .. (LogSize - 1)
RecordIds == 0 .. (MaxRecords - 1)
Epochs == 0 .. MaxLeaderEpoch
LogRecords == [id : RecordIds, epoch : Epochs]
ReplicaOpt == Replicas \cup {None}
EpochOpt == Epochs \cup {Nil}
QuorumStates == [leaderEpoch : EpochOpt, leader : ReplicaOpt, isr : SUBSET Replicas]

SetMin(S) == CHOOSE x \in S : \A y \in S : x <= y
SetMax(S) == CHOOSE x \in S : \A y \in S : x >= y

EndOf(r) == replicaLog[r].endOffset
RecordAt(r, o) == replicaLog[r].records[o]
IsEmpty(r) == EndOf(r) = 0
HasOffset(r, o) == o < EndOf(r)
HasEntry(r, rec, o) == o < EndOf(r) /\ RecordAt(r, o) = rec

Leads(r) == replicaState[r].leader = r
Follows(f, l) == replicaState[f].leader = l
IsTrueLeader(l) ==
    /\ quorumState.leader = l
    /\ Leads(l)
    /\ replicaState[l].leaderEpoch = quorumState.leaderEpoch

TypeOk ==
    /\ nextRecordId \in 0 .. MaxRecords
    /\ nextLeaderEpoch \in 0 .. (MaxLeaderEpoch + 1)
    /\ \A r \in Replicas :
        /\ EndOf(r) \in 0 .. LogSize
        /\ \A o \in Offsets : IF o < EndOf(r) THEN RecordAt(r, o) \in LogRecords ELSE RecordAt(r, o) = Nil
    /\ replicaState \in [Replicas -> [hw : 0 .. LogSize, leaderEpoch : EpochOpt,
                                      leader : ReplicaOpt, isr : SUBSET Replicas]]
    /\ quorumState \in QuorumStates
    /\ leaderAndIsrRequests \subseteq QuorumStates

Init ==
    /\ nextLeaderEpoch = 0
    /\ nextRecordId = 0
    /\ replicaLog = [r \in Replicas |-> [endOffset |-> 0, records |-> [o \in Offsets |-> Nil]]]
    /\ replicaState = [r \in Replicas |-> [hw |-> 0, leaderEpoch |-> Nil, leader |-> None, isr |-> {}]]
    /\ quorumState = [leaderEpoch |-> Nil, leader |-> None, isr |-> Replicas]
    /\ leaderAndIsrRequests = {}

AppendAt(r, rec) ==
    /\ EndOf(r) < LogSize
    /\ replicaLog' = [replicaLog EXCEPT ![r].records[EndOf(r)] = rec, ![r].endOffset = @ + 1]

TruncateTo(r, n) ==
    /\ n <= EndOf(r)
    /\ replicaLog' = [replicaLog EXCEPT ![r] =
           [endOffset |-> n, records |-> [o \in Offsets |-> IF o < n THEN RecordAt(r, o) ELSE Nil]]]

ReplicateTo(src, dst) == \E rec \in LogRecords :
    /\ HasEntry(src, rec, EndOf(dst))
    /\ AppendAt(dst, rec)

ControllerUpdateIsr(newLeader, newIsr) ==
    /\ nextLeaderEpoch <= MaxLeaderEpoch
    /\ nextLeaderEpoch' = nextLeaderEpoch + 1
    /\ LET req == [leader |-> newLeader, leaderEpoch |-> nextLeaderEpoch, isr |-> newIsr]
       IN  /\ quorumState' = req
           /\ leaderAndIsrRequests' = leaderAndIsrRequests \cup {req}

ControllerShrinkIsr == \E r \in Replicas :
    /\ \/ /\ quorumState.leader = r
          /\ quorumState.isr = {r}
          /\ ControllerUpdateIsr(None, quorumState.isr)
       \/ /\ quorumState.leader = r
          /\ quorumState.isr # {r}
          /\ ControllerUpdateIsr(None, quorumState.isr \ {r})
       \/ /\ quorumState.leader # r
          /\ r \in quorumState.isr
          /\ ControllerUpdateIsr(quorumState.leader, quorumState.isr \ {r})
    /\ UNCHANGED <<nextRecordId, replicaLog, replicaState>>

ControllerElectLeader == \E l \in quorumState.isr :
    /\ quorumState.leader # l
    /\ ControllerUpdateIsr(l, quorumState.isr)
    /\ UNCHANGED <<nextRecordId, replicaLog, replicaState>>

BecomeLeader == \E req \in leaderAndIsrRequests :
    /\ req.leader # None
    /\ req.leaderEpoch > replicaState[req.leader].leaderEpoch
    /\ replicaState' = [replicaState EXCEPT ![req.leader] =
           [hw |-> @.hw, leaderEpoch |-> req.leaderEpoch, leader |-> req.leader, isr |-> req.isr]]
    /\ UNCHANGED <<nextRecordId, replicaLog, quorumState, nextLeaderEpoch, leaderAndIsrRequests>>

LeaderWrite == \E r \in Replicas :
    /\ Leads(r)
    /\ nextRecordId <= MaxRecords - 1
    /\ nextRecordId' = nextRecordId + 1
    /\ AppendAt(r, [id |-> nextRecordId, epoch |-> replicaState[r].leaderEpoch])
    /\ UNCHANGED <<replicaState, nextLeaderEpoch, quorumState, leaderAndIsrRequests>>

QuorumUpdateIsr(l, newIsr) ==
    /\ IsTrueLeader(l)
    /\ quorumState.leader = l
    /\ quorumState' = [quorumState EXCEPT !.isr = newIsr]
    /\ replicaState' = [replicaState EXCEPT ![l].isr = newIsr]

CaughtUp(l, f, end) ==
    /\ Follows(f, l)
    /\ \/ end = 0
       \/ /\ end > 0
          /\ \E rec \in LogRecords : HasEntry(l, rec, end - 1) /\ HasOffset(f, end - 1)

LeaderShrinkIsr == \E l \in Replicas : \E f \in replicaState[l].isr \ {l} :
    /\ ~ CaughtUp(l, f, EndOf(l))
    /\ QuorumUpdateIsr(l, replicaState[l].isr \ {f})
    /\ UNCHANGED <<nextRecordId, replicaLog, nextLeaderEpoch, leaderAndIsrRequests>>

LeaderExpandIsr == \E l \in Replicas : \E f \in Replicas \ replicaState[l].isr :
    /\ CaughtUp(l, f, replicaState[l].hw)
    /\ QuorumUpdateIsr(l, replicaState[l].isr \cup {f})
    /\ UNCHANGED <<nextRecordId, replicaLog, nextLeaderEpoch, leaderAndIsrRequests>>

LeaderIncHighWatermark == \E l \in Replicas :
    /\ Leads(l)
    /\ replicaState[l].hw \in Offsets
    /\ \A f \in replicaState[l].isr : Follows(f, l) /\ HasOffset(f, replicaState[l].hw)
    /\ replicaState' = [replicaState EXCEPT ![l].hw = @ + 1]
    /\ UNCHANGED <<nextRecordId, replicaLog, quorumState, nextLeaderEpoch, leaderAndIsrRequests>>

\* The leader is always a replica here (every caller quantifies it over Replicas).
BecomeFollowerAndTruncateTo(l, r, t) == \E req \in leaderAndIsrRequests :
    /\ l # r
    /\ req.leader = l
    /\ req.leaderEpoch > replicaState[r].leaderEpoch
    /\ TruncateTo(r, t)
    /\ replicaState' = [replicaState EXCEPT ![r] =
           [leaderEpoch |-> req.leaderEpoch, leader |-> l, isr |-> req.isr,
            hw |-> IF t < @.hw THEN t ELSE @.hw]]
    /\ UNCHANGED <<nextRecordId, quorumState, nextLeaderEpoch, leaderAndIsrRequests>>

FollowerHw(l, f) == IF replicaState[l].hw < EndOf(f) + 1 THEN replicaState[l].hw ELSE EndOf(f) + 1

FollowerReplicate == \E f, l \in Replicas :
    /\ Leads(l)
    /\ Follows(f, l)
    /\ ReplicateTo(l, f)
    /\ replicaState' = [replicaState EXCEPT ![f].hw = FollowerHw(l, f)]
    /\ UNCHANGED <<nextRecordId, quorumState, nextLeaderEpoch, leaderAndIsrRequests>>

MatchingOffsets(f, l) == {o \in 0 .. (EndOf(f) - 1) : HasEntry(l, RecordAt(f, o), o)}

FirstNonMatchingOffsetFromTail(l, f) ==
    IF IsEmpty(l) \/ MatchingOffsets(f, l) = {} THEN 0 ELSE SetMax(MatchingOffsets(f, l)) + 1

HwReachedCurrentEpoch(l) ==
    \/ replicaState[l].hw = EndOf(l)
    \/ /\ HasOffset(l, replicaState[l].hw)
       /\ RecordAt(l, replicaState[l].hw).epoch = replicaState[l].leaderEpoch

IsrReplicated(r1, members) ==
    \/ ~ Leads(r1)
    \/ replicaState[r1].hw = 0
    \/ \A r2 \in members, o \in 0 .. (replicaState[r1].hw - 1) :
           \E rec \in LogRecords : HasEntry(r1, rec, o) /\ HasEntry(r2, rec, o)

WeakIsr == \A r1 \in Replicas : IsrReplicated(r1, replicaState[r1].isr)
StrongIsr == \A r1 \in Replicas : IsrReplicated(r1, quorumState.isr)
LeaderInIsr == quorumState.leader \in quorumState.isr
=============================================================================
"""

VERSIONS = {
    "IsrcheckTruncateToHighWatermark": r"""
BecomeFollowerTruncateToHighWatermark == \E l, r \in Replicas :
    BecomeFollowerAndTruncateTo(l, r, replicaState[r].hw)

Next ==
    \/ ControllerElectLeader
    \/ ControllerShrinkIsr
    \/ BecomeLeader
    \/ LeaderExpandIsr
    \/ LeaderShrinkIsr
    \/ LeaderWrite
    \/ LeaderIncHighWatermark
    \/ BecomeFollowerTruncateToHighWatermark
    \/ FollowerReplicate
""",
    "IsrcheckKip101": r"""
LatestEpoch(r) == RecordAt(r, EndOf(r) - 1).epoch
LargerEpochOffsets(r, e) == {o \in 0 .. (EndOf(r) - 1) : RecordAt(r, o).epoch > e}

LookupOffsetForEpoch(l, f, e) ==
    IF IsEmpty(l) THEN replicaState[f].hw
    ELSE IF LatestEpoch(l) = e THEN EndOf(l)
    ELSE IF LargerEpochOffsets(l, e) = {} THEN replicaState[f].hw
    ELSE SetMin(LargerEpochOffsets(l, e))

BecomeFollowerTruncateKip101 == \E l, r \in Replicas :
    BecomeFollowerAndTruncateTo(l, r, IF IsEmpty(r) THEN 0 ELSE LookupOffsetForEpoch(l, r, LatestEpoch(r)))

Next ==
    \/ ControllerElectLeader
    \/ ControllerShrinkIsr
    \/ BecomeLeader
    \/ LeaderExpandIsr
    \/ LeaderShrinkIsr
    \/ LeaderWrite
    \/ LeaderIncHighWatermark
    \/ BecomeFollowerTruncateKip101
    \/ FollowerReplicate
""",
    "IsrcheckKip279": r"""
BecomeFollowerTruncateKip279 == \E l, r \in Replicas :
    BecomeFollowerAndTruncateTo(l, r, FirstNonMatchingOffsetFromTail(l, r))

Next ==
    \/ ControllerElectLeader
    \/ ControllerShrinkIsr
    \/ BecomeLeader
    \/ LeaderExpandIsr
    \/ LeaderShrinkIsr
    \/ LeaderWrite
    \/ LeaderIncHighWatermark
    \/ BecomeFollowerTruncateKip279
    \/ FollowerReplicate
""",
    "IsrcheckKip320FirstTry": r"""
CaughtUpToLeaderEpoch(l, f, end) ==
    /\ Leads(l)
    /\ Follows(f, l)
    /\ \/ end = 0
       \/ /\ end > 0
          /\ HasOffset(l, end - 1)
          /\ HasOffset(f, end - 1)
          /\ RecordAt(f, end - 1).epoch = RecordAt(l, end - 1).epoch

FollowerNeedsTruncation(f, l) ==
    \/ EndOf(f) > EndOf(l)
    \/ /\ ~ IsEmpty(f)
       /\ HasOffset(l, EndOf(f) - 1)
       /\ RecordAt(l, EndOf(f) - 1).epoch # RecordAt(f, EndOf(f) - 1).epoch

FollowerTruncate == \E l, f \in Replicas :
    /\ Leads(l)
    /\ Follows(f, l)
    /\ FollowerNeedsTruncation(f, l)
    /\ LET t == FirstNonMatchingOffsetFromTail(l, f)
       IN  /\ TruncateTo(f, t)
           /\ replicaState' = [replicaState EXCEPT ![f].hw = IF t < @ THEN t ELSE @]
    /\ UNCHANGED <<nextRecordId, quorumState, nextLeaderEpoch, leaderAndIsrRequests>>

ImprovedLeaderIncHighWatermark == \E l \in Replicas :
    /\ Leads(l)
    /\ HasOffset(l, replicaState[l].hw)
    /\ \A f \in replicaState[l].isr : CaughtUpToLeaderEpoch(l, f, replicaState[l].hw + 1)
    /\ replicaState' = [replicaState EXCEPT ![l].hw = @ + 1]
    /\ UNCHANGED <<nextRecordId, replicaLog, quorumState, nextLeaderEpoch, leaderAndIsrRequests>>

FollowerFetch == \E f, l \in Replicas :
    /\ CaughtUpToLeaderEpoch(l, f, EndOf(f))
    /\ ReplicateTo(l, f)
    /\ replicaState' = [replicaState EXCEPT ![f].hw = FollowerHw(l, f)]
    /\ UNCHANGED <<nextRecordId, quorumState, nextLeaderEpoch, leaderAndIsrRequests>>

LeaderShrinkIsrBetterFencing == \E l \in Replicas : \E f \in replicaState[l].isr \ {l} :
    /\ ~ CaughtUpToLeaderEpoch(l, f, EndOf(l))
    /\ QuorumUpdateIsr(l, replicaState[l].isr \ {f})
    /\ UNCHANGED <<nextRecordId, replicaLog, nextLeaderEpoch, leaderAndIsrRequests>>

LeaderExpandIsrBetterFencing == \E l \in Replicas : \E f \in Replicas \ replicaState[l].isr :
    /\ CaughtUpToLeaderEpoch(l, f, replicaState[l].hw)
    /\ HwReachedCurrentEpoch(l)
    /\ QuorumUpdateIsr(l, replicaState[l].isr \cup {f})
    /\ UNCHANGED <<nextRecordId, replicaLog, nextLeaderEpoch, leaderAndIsrRequests>>

BecomeFollower == \E l, r \in Replicas, req \in leaderAndIsrRequests :
    /\ l # r
    /\ req.leader = l
    /\ req.leaderEpoch > replicaState[r].leaderEpoch
    /\ replicaState' = [replicaState EXCEPT ![r] =
           [leaderEpoch |-> req.leaderEpoch, leader |-> l, isr |-> req.isr, hw |-> @.hw]]
    /\ UNCHANGED <<nextRecordId, replicaLog, quorumState, nextLeaderEpoch, leaderAndIsrRequests>>

Next ==
    \/ ControllerElectLeader
    \/ ControllerShrinkIsr
    \/ BecomeLeader
    \/ LeaderExpandIsrBetterFencing
    \/ LeaderShrinkIsrBetterFencing
    \/ LeaderWrite
    \/ ImprovedLeaderIncHighWatermark
    \/ BecomeFollower
    \/ FollowerFetch
    \/ FollowerTruncate
""",
    "IsrcheckKip320": r"""
FollowsEpoch(l, f) ==
    /\ Leads(l)
    /\ Follows(f, l)
    /\ replicaState[f].leaderEpoch = replicaState[l].leaderEpoch

FencedFollowerFetch == \E f, l \in Replicas :
    /\ FollowsEpoch(l, f)
    /\ ReplicateTo(l, f)
    /\ replicaState' = [replicaState EXCEPT ![f].hw = FollowerHw(l, f)]
    /\ UNCHANGED <<nextRecordId, quorumState, nextLeaderEpoch, leaderAndIsrRequests>>

FencedLeaderIncHighWatermark == \E l \in Replicas :
    /\ HasOffset(l, replicaState[l].hw)
    /\ \A f \in replicaState[l].isr : FollowsEpoch(l, f) /\ HasOffset(f, replicaState[l].hw)
    /\ replicaState' = [replicaState EXCEPT ![l].hw = @ + 1]
    /\ UNCHANGED <<nextRecordId, replicaLog, quorumState, nextLeaderEpoch, leaderAndIsrRequests>>

FencedLeaderShrinkIsr == \E l \in Replicas : \E f \in replicaState[l].isr \ {l} :
    /\ \/ ~ FollowsEpoch(l, f)
       \/ EndOf(f) < EndOf(l)
    /\ QuorumUpdateIsr(l, replicaState[l].isr \ {f})
    /\ UNCHANGED <<nextRecordId, replicaLog, nextLeaderEpoch, leaderAndIsrRequests>>

FencedLeaderExpandIsr == \E l \in Replicas : \E f \in Replicas \ replicaState[l].isr :
    /\ FollowsEpoch(l, f)
    /\ \/ replicaState[l].hw = 0
       \/ /\ replicaState[l].hw > 0
          /\ HasOffset(f, replicaState[l].hw - 1)
    /\ HwReachedCurrentEpoch(l)
    /\ QuorumUpdateIsr(l, replicaState[l].isr \cup {f})
    /\ UNCHANGED <<nextRecordId, replicaLog, nextLeaderEpoch, leaderAndIsrRequests>>

FencedBecomeFollowerAndTruncate == \E l, r \in Replicas, req \in leaderAndIsrRequests :
    /\ l # r
    /\ req.leader = l
    /\ req.leaderEpoch > replicaState[r].leaderEpoch
    /\ Leads(l)
    /\ replicaState[l].leaderEpoch = req.leaderEpoch
    /\ LET t == FirstNonMatchingOffsetFromTail(l, r)
       IN  /\ TruncateTo(r, t)
           /\ replicaState' = [replicaState EXCEPT ![r] =
                  [leaderEpoch |-> req.leaderEpoch, leader |-> l, isr |-> req.isr,
                   hw |-> IF t < @.hw THEN t ELSE @.hw]]
    /\ UNCHANGED <<nextRecordId, quorumState, nextLeaderEpoch, leaderAndIsrRequests>>

Next ==
    \/ ControllerElectLeader
    \/ ControllerShrinkIsr
    \/ BecomeLeader
    \/ FencedLeaderExpandIsr
    \/ FencedLeaderShrinkIsr
    \/ LeaderWrite
    \/ FencedLeaderIncHighWatermark
    \/ FencedBecomeFollowerAndTruncate
    \/ FencedFollowerFetch
""",
}


def version_module(name):
    bar = "-" * 20
    return (f"{bar} MODULE {name} {bar}\nEXTENDS IsrcheckKafka\n{VERSIONS[name]}"
            "\nSpec == Init /\\ [][Next]_vars\n" + "=" * 77 + "\n")


def config_text(bounds):
    replicas = ", ".join(f"r{i + 1}" for i in range(bounds["replicas"]))
    return (f"CONSTANTS\n    Replicas = {{{replicas}}}\n    LogSize = {bounds['log_size']}\n"
            f"    MaxRecords = {bounds['max_records']}\n    MaxLeaderEpoch = {bounds['max_epochs']}\n"
            "INIT Init\nNEXT Next\nINVARIANT TypeOk\n")


def write_tla(workdir, name, bounds, spec_dir=None):
    """Write the modules and the .cfg for spec ``name``; returns (root .tla file name, .cfg file name)."""
    original, embedded = MODULES[name]
    if spec_dir:
        for f in ORIGINAL_FILES:
            shutil.copy(os.path.join(spec_dir, f), os.path.join(workdir, f))
        root = original
    else:
        with open(os.path.join(workdir, "IsrcheckKafka.tla"), "w") as fh:
            fh.write(BASE.lstrip("\n"))
        with open(os.path.join(workdir, f"{embedded}.tla"), "w") as fh:
            fh.write(version_module(embedded))
        root = embedded
    cfg = f"{root}_{bounds['replicas']}r{bounds['log_size']}l{bounds['max_records']}m{bounds['max_epochs']}e.cfg"
    with open(os.path.join(workdir, cfg), "w") as fh:
        fh.write(config_text(bounds))
    return f"{root}.tla", cfg


def config_for(name, bounds, spec_dir):
    """(TLC's invariant or None, isrcheck's invariant) for spec ``name`` (see the module docstring)."""
    if not spec_dir:
        return "TypeOk", "type-ok"
    return ("StrongIsr", "strong-isr") if name == "tla-kip320" else (None, "type-ok")


def write_cfg(workdir, name, bounds, spec_dir, invariant):
    """Write the modules and a .cfg for spec ``name`` checking ``invariant`` (or none); returns (root .tla, .cfg)."""
    tla, cfg = write_tla(workdir, name, bounds, spec_dir)
    text = config_text(bounds).replace("INVARIANT TypeOk\n", f"INVARIANT {invariant}\n" if invariant else "")
    with open(os.path.join(workdir, cfg), "w") as fh:
        fh.write(text)
    return tla, cfg


def timed(cmd, cwd=None, env=None):
    """Run ``cmd`` to the end: (its stdout and stderr, exit code, wall seconds, CPU seconds of the whole process
    tree it waited for, load average when it started)."""
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return proc.stdout + proc.stderr, proc.returncode, wall, cpu, load


def run_tlc(jar, workdir, tla, cfg, workers, java_opts):
    """TLC on the given module: (distinct states, depth, wall, CPU, load)."""
    meta = tempfile.mkdtemp(prefix="tlc-meta-", dir=workdir)
    cmd = ["java", *java_opts, "-cp", jar, "tlc2.TLC", "-deadlock", "-workers", str(workers), "-metadir", meta,
           "-config", cfg, tla]
    try:
        out, code, wall, cpu, load = timed(cmd, cwd=workdir)
    finally:
        shutil.rmtree(meta, ignore_errors=True)
    # progress lines also say "... distinct states found": the final summary is the last one
    states = re.findall(r"([\d,]+) distinct states found", out)
    depth = re.search(r"depth of the complete state graph search is (\d+)", out)
    if code != 0 or not states or not depth:
        tail = "\n".join(out.strip().splitlines()[-15:])
        raise RuntimeError(f"TLC failed (exit {code}) on {tla} with {cfg}:\n{tail}")
    return int(states[-1].replace(",", "")), int(depth.group(1)), wall, cpu, load


def run_isrcheck(name, bounds, invariant, workers, extra, env=None):
    """``isrcheck check`` as a user runs it: (distinct states, depth, wall, CPU, load, its report)."""
    cmd = ["isrcheck", "check", "--spec", name, "--invariant", invariant, "--no-progress", "--format", "json",
           *(f"--{k.replace('_', '-')}={v}" for k, v in bounds.items()), *extra]
    if workers:
        cmd += ["--workers", str(workers)]
    out, code, wall, cpu, load = timed(cmd, env=env)
    if code != 0:
        raise RuntimeError(f"isrcheck failed (exit {code}): {' '.join(cmd)}\n{out[-2000:]}")
    report = json.loads(out[out.index("{"):])
    return report["distinct_states"], report["depth"], wall, cpu, load, report


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def compare(name, bounds, args, jar, spec_dir, workdir, tlc_workers, ours_workers):
    """Alternating pairs of TLC and isrcheck runs; prints each and the medians. Returns (rows, same answers)."""
    tlc_inv, inv = config_for(name, bounds, spec_dir)
    tla, cfg = write_cfg(workdir, name, bounds, spec_dir, tlc_inv)
    extra = [f"--fingerprint={args.fingerprint}"] if args.fingerprint else []
    # untimed: fills the caches (the spec's load verdict, its compiled kernels: a first search of this size
    # compiles them in the background, --kernels native at once) and writes Python's bytecode, as installing
    # isrcheck does (pip compiles it), even where PYTHONDONTWRITEBYTECODE is set
    run_isrcheck(name, bounds, inv, ours_workers, extra + ["--kernels", "native"],
                 env={k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"})
    mode = f"TLC -workers {tlc_workers} / isrcheck --workers {ours_workers or 'default (every core)'}"
    print(f"\n{name} {'/'.join(str(v) for v in bounds.values())}, {mode}; TLC checks {tlc_inv or 'no invariant'}, "
          f"isrcheck {inv}", flush=True)
    print(f"{'pair':>4} {'first':>8} {'TLC wall':>9} {'TLC CPU':>8} {'load':>5} {'ours wall':>9} {'ours CPU':>8} "
          f"{'load':>5} {'wall x':>7} {'CPU x':>7}", flush=True)
    rows, same = [], True
    for i in range(args.pairs):
        tlc_first = i % 2 == 0
        runs = {}
        for who in (("tlc", "ours") if tlc_first else ("ours", "tlc")):
            if who == "tlc":
                runs[who] = run_tlc(jar, workdir, tla, cfg, tlc_workers, args.java_opt)
            else:
                runs[who] = run_isrcheck(name, bounds, inv, ours_workers, extra)[:5]
        (ts, td, tw, tc, tl), (os_, od, ow, oc, ol) = runs["tlc"], runs["ours"]
        same = same and (ts, td) == (os_, od)
        rows.append((tw, tc, tl, ow, oc, ol, tw / ow, tc / oc))
        print(f"{i + 1:>4} {'TLC' if tlc_first else 'isrcheck':>8} {tw:>9.2f} {tc:>8.2f} {tl:>5.1f} {ow:>9.3f} "
              f"{oc:>8.3f} {ol:>5.1f} {tw / ow:>7.1f} {tc / oc:>7.1f}"
              + ("" if (ts, td) == (os_, od) else f"  MISMATCH: TLC {ts:,} states depth {td}, ours {os_:,} depth {od}"),
              flush=True)
    med = [median([r[k] for r in rows]) for k in range(8)]
    print(f"{'med':>4} {'':>8} {med[0]:>9.2f} {med[1]:>8.2f} {med[2]:>5.1f} {med[3]:>9.3f} {med[4]:>8.3f} "
          f"{med[5]:>5.1f} {med[6]:>7.1f} {med[7]:>7.1f}   ({ts:,} states, depth {td})", flush=True)
    return (name, bounds, mode, ts, td, rows, med), same


def markdown(results):
    """The results as the table of docs/benchmarks/tlc.md."""
    lines = ["| spec, constants | states | depth | workers (TLC / isrcheck) | TLC wall s | TLC CPU s | isrcheck wall s "
             "| isrcheck CPU s | TLC/isrcheck wall | TLC/isrcheck CPU | load |",
             "| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name, bounds, mode, states, depth, rows, med in results:
        workers = mode.replace("TLC -workers ", "").replace(" / isrcheck --workers ", " / ")
        loads = [r[k] for r in rows for k in (2, 5)]
        lines.append(f"| {name} {'/'.join(str(v) for v in bounds.values())} | {states:,} | {depth} | {workers} "
                     f"| {med[0]:.1f} | {med[1]:.1f} | {med[3]:.2f} | {med[4]:.2f} | **{med[6]:.0f}x** "
                     f"({min(r[6] for r in rows):.0f} to {max(r[6] for r in rows):.0f}) | **{med[7]:.0f}x** "
                     f"({min(r[7] for r in rows):.0f} to {max(r[7] for r in rows):.0f}) "
                     f"| {min(loads):.1f} to {max(loads):.1f} |")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("specs", nargs="*", default=["tla-kip320"], help=f"specs to run (default: tla-kip320; any of "
                                                                    f"{', '.join(MODULES)})")
    p.add_argument("--replicas", type=int, default=3)
    p.add_argument("--log-size", type=int, default=2)
    p.add_argument("--max-records", type=int, default=2)
    p.add_argument("--max-epochs", type=int, default=2, help="MaxLeaderEpoch (epochs 0 .. max)")
    p.add_argument("--pairs", type=int, default=5, help="alternating TLC / isrcheck pairs per mode (default 5)")
    p.add_argument("--modes", choices=["one", "all", "both"], default="both",
                   help="one worker each, every core, or both (default)")
    p.add_argument("--workdir", help="where to write the .tla/.cfg (default: a new temporary directory)")
    p.add_argument("--java-opt", action="append", default=None,
                   help="an option for java (repeatable; default -XX:+UseParallelGC, which TLC asks for)")
    p.add_argument("--fingerprint", choices=["auto", "64", "96"], default=None,
                   help="isrcheck's --fingerprint (default: its own default, auto)")
    p.add_argument("--markdown", action="store_true", help="also print the results as a markdown table")
    args = p.parse_args(argv)
    args.java_opt = args.java_opt if args.java_opt is not None else ["-XX:+UseParallelGC"]
    unknown = [s for s in args.specs if s not in TLA_SPECS]
    if unknown:
        p.error(f"unknown spec {unknown[0]!r} (known: {', '.join(MODULES)})")
    bounds = dict(replicas=args.replicas, log_size=args.log_size, max_records=args.max_records,
                  max_epochs=args.max_epochs)
    jar = os.environ.get("TLA2TOOLS_JAR")
    spec_dir = os.environ.get("KAFKA_SPEC_DIR")
    if not jar or not os.path.isfile(jar):
        print("tlc_compare: set TLA2TOOLS_JAR to a tla2tools.jar (the comparison runs TLC itself)", file=sys.stderr)
        return 2
    if spec_dir and not all(os.path.isfile(os.path.join(spec_dir, f)) for f in ORIGINAL_FILES):
        p.error(f"KAFKA_SPEC_DIR={spec_dir} does not hold all of {', '.join(ORIGINAL_FILES)}")
    for name in args.specs:
        try:
            TLA_SPECS[name](**bounds)
        except BoundsError as e:
            p.error(str(e))
    workdir = args.workdir or tempfile.mkdtemp(prefix="tlc_compare_")
    os.makedirs(workdir, exist_ok=True)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    modes = {"one": [(1, 1)], "all": [(cores, None)], "both": [(1, 1), (cores, None)]}[args.modes]
    print(f"{time.strftime('%Y-%m-%d %H:%M %Z')}, {cores} cores, load average {os.getloadavg()[0]:.1f}; "
          f"TLC: {jar} (java {' '.join(args.java_opt)}), modules: {spec_dir or 'the embedded rendering'}")
    results, same = [], True
    for name in args.specs:
        for tlc_workers, ours_workers in modes:
            result, ok = compare(name, bounds, args, jar, spec_dir, workdir, tlc_workers, ours_workers)
            results.append(result)
            same = same and ok
    if args.markdown:
        print("\n" + markdown(results))
    print(f"\nTLA+ modules and configurations in {workdir}; load average at the end {os.getloadavg()[0]:.1f}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
