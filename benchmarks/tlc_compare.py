"""Our BFS engine against TLC on the TLA+ ports (specs/tla): states, depth, seconds.

    python benchmarks/tlc_compare.py                                  # all five, 3 replicas
    python benchmarks/tlc_compare.py --replicas 2 tla-kip320          # one spec, other constants

For each spec it runs ``checker.bfs.search`` for ``type-ok`` (an invariant that holds,
so the search is complete) and prints distinct states, depth and seconds, then the
same check as a user runs it (``isrcheck check``, whole process: the figure the ratio
to TLC uses). ``--ours-workers`` and ``--kernels`` are our search's options;
``--tlc-seconds`` takes TLC's time from an earlier measurement instead of running it; ``--runs N`` times the
whole process N times after an untimed one (the ratio uses the best wall; each run's CPU seconds are printed).

When the environment variable TLA2TOOLS_JAR names a TLC jar (tla2tools.jar), it also
writes, into a work directory, the TLA+ modules and a .cfg for the same constants
(Replicas = {r1, ..., rN} as model values, no symmetry, INVARIANT TypeOk), runs
``java -cp $TLA2TOOLS_JAR tlc2.TLC -deadlock`` on them, and prints TLC's distinct
states, depth and seconds next to ours with the ratio of the times. The TLA+ comes
from KAFKA_SPEC_DIR when that names a local checkout of hachikuji/kafka-specification
(the original modules, run as they are); otherwise from the rendering embedded below,
written for isrcheck to the same definitions (same variables, Init, actions and
quantifiers). Nothing is downloaded. Without the jar the TLC part is skipped with a
one-line note.
"""
from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from isrcheck.checker.bfs import search  # noqa: E402
from isrcheck.model.spec import BoundsError  # noqa: E402
from isrcheck.specs.tla import TLA_SPECS  # noqa: E402

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


def config_text(bounds, invariant="TypeOk"):
    replicas = ", ".join(f"r{i + 1}" for i in range(bounds["replicas"]))
    return (f"CONSTANTS\n    Replicas = {{{replicas}}}\n    LogSize = {bounds['log_size']}\n"
            f"    MaxRecords = {bounds['max_records']}\n    MaxLeaderEpoch = {bounds['max_epochs']}\n"
            f"INIT Init\nNEXT Next\nINVARIANT {invariant}\n")


def write_tla(workdir, name, bounds, spec_dir=None, invariant="TypeOk"):
    """Write the modules and the .cfg checking ``invariant`` for spec ``name``; returns (root .tla file name,
    .cfg file name)."""
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
    cfg = (f"{root}_{bounds['replicas']}r{bounds['log_size']}l{bounds['max_records']}m{bounds['max_epochs']}e"
           f"{'' if invariant == 'TypeOk' else '_' + invariant}.cfg")
    with open(os.path.join(workdir, cfg), "w") as fh:
        fh.write(config_text(bounds, invariant))
    return f"{root}.tla", cfg


def run_tlc(jar, workdir, tla, cfg, workers, java_opts):
    cmd = ["java", *java_opts, "-cp", jar, "tlc2.TLC", "-deadlock", "-workers", str(workers),
           "-config", cfg, tla]
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    out = proc.stdout + proc.stderr
    # progress lines also say "... distinct states found": the final summary is the last one
    states = re.findall(r"([\d,]+) distinct states found", out)
    depth = re.search(r"depth of the complete state graph search is (\d+)", out)
    if proc.returncode != 0 or not states or not depth:
        tail = "\n".join(out.strip().splitlines()[-15:])
        raise RuntimeError(f"TLC failed (exit {proc.returncode}) on {tla} with {cfg}:\n{tail}")
    return int(states[-1].replace(",", "")), int(depth.group(1)), seconds


def whole_process(name, bounds, workers, kernels, env=None):
    """(wall, CPU) seconds of ``isrcheck check --invariant type-ok`` as a user runs it: start-up, the spec's
    load (its checks' verdict comes from the cache after the first run), the kernels (compiled ones come from
    the cache too) and the search. CPU is the process's user and system time."""
    cmd = ["isrcheck", "check", "--spec", name, "--invariant", "type-ok", "--no-progress", "--format", "json",
           "--kernels", kernels, *(f"--{k.replace('_', '-')}={v}" for k, v in bounds.items())]
    if workers:
        cmd += ["--workers", str(workers)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("specs", nargs="*", default=sorted(TLA_SPECS, key=list(MODULES).index),
                   help=f"specs to run (default: all of {', '.join(MODULES)})")
    p.add_argument("--replicas", type=int, default=3)
    p.add_argument("--log-size", type=int, default=2)
    p.add_argument("--max-records", type=int, default=2)
    p.add_argument("--max-epochs", type=int, default=2, help="MaxLeaderEpoch (epochs 0 .. max)")
    p.add_argument("--workers", type=int, default=1, help="TLC worker threads (default 1, like our engine)")
    p.add_argument("--workdir", help="where to write the .tla/.cfg (default: a new temporary directory)")
    p.add_argument("--java-opt", action="append", default=[], help="an option for java (repeatable)")
    p.add_argument("--ours-workers", type=int, default=None, help="our --workers (default: every core)")
    p.add_argument("--kernels", choices=["auto", "native", "numpy"], default="auto", help="our kernels")
    p.add_argument("--runs", type=int, default=5,
                   help="whole-process runs of ours (after one not timed): each one's wall and CPU seconds are "
                        "printed, the ratio is taken on the best wall (the machine may be shared)")
    p.add_argument("--tlc-seconds", type=float, default=None,
                   help="TLC's time measured before (e.g. 106 for tla-kip320 at 3/2/2/2 with 1 worker): the ratio "
                        "is taken against it and TLC is not run")
    args = p.parse_args(argv)
    unknown = [s for s in args.specs if s not in TLA_SPECS]
    if unknown:
        p.error(f"unknown spec {unknown[0]!r} (known: {', '.join(MODULES)})")
    bounds = dict(replicas=args.replicas, log_size=args.log_size, max_records=args.max_records,
                  max_epochs=args.max_epochs)

    jar = os.environ.get("TLA2TOOLS_JAR")
    spec_dir = os.environ.get("KAFKA_SPEC_DIR")
    if jar and not os.path.isfile(jar):
        p.error(f"TLA2TOOLS_JAR={jar} is not a file")
    if spec_dir and not all(os.path.isfile(os.path.join(spec_dir, f)) for f in ORIGINAL_FILES):
        p.error(f"KAFKA_SPEC_DIR={spec_dir} does not hold all of {', '.join(ORIGINAL_FILES)}")
    workdir = args.workdir or (tempfile.mkdtemp(prefix="tlc_compare_") if jar else None)
    if workdir:
        os.makedirs(workdir, exist_ok=True)

    print(f"constants: Replicas={bounds['replicas']} LogSize={bounds['log_size']} "
          f"MaxRecords={bounds['max_records']} MaxLeaderEpoch={bounds['max_epochs']} (no symmetry)")
    if not jar:
        print("TLC: skipped (set TLA2TOOLS_JAR to a tla2tools.jar to run TLC -deadlock on the same constants)")
    mismatches = 0
    for name in args.specs:
        try:
            spec = TLA_SPECS[name](**bounds)
        except BoundsError as e:
            p.error(str(e))
        r = search(spec, ["type-ok"], workers=args.ours_workers, kernels=args.kernels)
        # untimed: fills the caches (the spec's load verdict, compiled kernels) and writes Python's bytecode, as
        # installing isrcheck does (pip compiles it), even where PYTHONDONTWRITEBYTECODE is set
        whole_process(name, bounds, args.ours_workers, args.kernels,
                      env={k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"})
        runs = [whole_process(name, bounds, args.ours_workers, args.kernels) for _ in range(max(args.runs, 1))]
        whole = min(w for w, _ in runs)
        print(f"{name}: whole process, wall / CPU s: " + ", ".join(f"{w:.2f} / {c:.2f}" for w, c in runs), flush=True)
        line = (f"{name:22s} ours: {r.distinct_states:>10,} states  depth {r.depth:>3}  search {r.seconds:6.1f} s"
                f"  whole process best of {len(runs)} {whole:6.2f} s (CPU {min(c for _, c in runs):.2f} s)")
        if args.tlc_seconds:
            line += f" | TLC (measured before): {args.tlc_seconds:8.1f} s | TLC/ours {args.tlc_seconds / whole:5.1f}x"
        elif jar:
            tla, cfg = write_tla(workdir, name, bounds, spec_dir)
            states, depth, seconds = run_tlc(jar, workdir, tla, cfg, args.workers, args.java_opt)
            same = (states, depth) == (r.distinct_states, r.depth)
            mismatches += not same
            line += (f" | TLC: {states:>10,} states  depth {depth:>3}  {seconds:8.1f} s"
                     f" | TLC/ours {seconds / whole:5.1f}x{'' if same else '  MISMATCH'}")
        print(line, flush=True)
    if workdir:
        print(f"TLA+ modules and configurations in {workdir}")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
