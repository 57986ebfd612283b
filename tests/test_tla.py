"""The TLA+ ports (specs/tla) against TLC's numbers and against a naive transcription of the TLA+.

1. Pinned numbers at 2 replicas (LogSize 2, MaxRecords 2, MaxLeaderEpoch 2, no
   symmetry): distinct states, complete-search depth, and the length in states of
   the shortest StrongIsr / WeakIsr counterexamples where there are any.
2. A second, independent implementation in this file: plain Python tuples,
   frozensets and generators, written operator by operator from the TLA+ text of
   hachikuji/kafka-specification (KafkaReplication, FiniteReplicatedLog,
   IdSequence, and the five protocol modules), using nothing from model/ or specs/.
   Its BFS reachable set must equal ours state for state (our rows decoded and
   mapped into its representation), with the same depth and the same shortest
   counterexample lengths.
3. The 3-replica numbers TLC reports (a few CPU seconds per spec).
"""
from __future__ import annotations


import numpy as np
import pytest

from isrcheck.checker.exhaustive.bfs import Search, search
from isrcheck.specs.tla import TLA_SPECS
from isrcheck.model import backends

SMALL = dict(replicas=2, log_size=2, max_records=2, max_epochs=2)
ALL_INVARIANTS = ["type-ok", "weak-isr", "strong-isr", "leader-in-isr"]

# spec -> (distinct states, depth, {invariant: shortest counterexample length in states})
PINNED_2_REPLICAS = {
    "tla-truncate-to-hw": (10131, 20, {"leader-in-isr": 1, "weak-isr": 9, "strong-isr": 10}),
    "tla-kip101": (9045, 18, {"leader-in-isr": 1, "weak-isr": 12, "strong-isr": 12}),
    "tla-kip279": (9027, 18, {"leader-in-isr": 1}),
    "tla-kip320-first-try": (8429, 18, {"leader-in-isr": 1}),
    "tla-kip320": (5973, 18, {"leader-in-isr": 1}),
}

# TLC (-deadlock, no symmetry) at Replicas = 3 replicas, LogSize 2, MaxRecords 2, MaxLeaderEpoch 2
TLC_3_REPLICAS = {
    "tla-truncate-to-hw": (1988158, 28, 9),
    "tla-kip101": (1613089, 26, 11),
    "tla-kip279": (1616461, 26, 11),
    "tla-kip320-first-try": (1437076, 28, 13),
    "tla-kip320": (737794, 26, None),
}


# ==========================================================================================
# The naive transcription of the TLA+
# ==========================================================================================
NONE = "NONE"      # None == "NONE"
NIL = -1           # Nil == -1

# A state is (replicaLog, replicaState, nextRecordId, nextLeaderEpoch, leaderAndIsrRequests, quorumState):
#   replicaLog[r]   = (endOffset, records) with records a tuple over Offsets of (id, epoch) or NIL
#   replicaState[r] = (hw, leaderEpoch, leader, isr)        isr a frozenset
#   a request and quorumState = (leader, leaderEpoch, isr)
LOG, RS, NEXT_RECORD_ID, NEXT_LEADER_EPOCH, REQUESTS, QUORUM = range(6)
HW, EPOCH, LEADER, ISR = range(4)


def with_(t, i, v):
    return t[:i] + (v,) + t[i + 1:]


class NaiveKafkaReplication:
    """KafkaReplication.tla with FiniteReplicatedLog, IdSequence and Util, as Python sets and loops."""

    def __init__(self, replicas, log_size, max_records, max_epochs):
        self.Replicas = tuple(range(replicas))
        self.LogSize = log_size
        self.MaxLeaderEpoch = max_epochs
        self.Offsets = tuple(range(log_size))                       # 0 .. MaxOffset
        self.RecordIds = tuple(range(max_records))                  # RecordSeq!IdSet == 0 .. MaxRecords - 1
        self.RecordMaxId = max_records - 1
        self.EpochIds = tuple(range(max_epochs + 1))                # LeaderEpochSeq!IdSet == 0 .. MaxLeaderEpoch
        self.LogRecords = frozenset((i, e) for i in self.RecordIds for e in self.EpochIds)

    # --- Init ----------------------------------------------------------------------------
    def init(self):
        empty_log = (0, tuple(NIL for _ in self.Offsets))
        return (tuple(empty_log for _ in self.Replicas),
                tuple((0, NIL, NONE, frozenset()) for _ in self.Replicas),
                0, 0, frozenset(), (NONE, NIL, frozenset(self.Replicas)))

    # --- FiniteReplicatedLog ---------------------------------------------------------------
    def IsEmpty(self, st, r):
        return st[LOG][r][0] == 0

    def IsFull(self, st, r):
        return st[LOG][r][0] == self.LogSize

    def GetEndOffset(self, st, r):
        return st[LOG][r][0]

    def GetRecordAtOffset(self, st, r, offset):
        return st[LOG][r][1][offset]

    def HasEntry(self, st, r, record, offset):
        end, records = st[LOG][r]
        return offset < end and records[offset] == record

    def HasOffset(self, st, r, offset):
        return offset < st[LOG][r][0]

    def IsLatestEntry(self, st, r, record, offset):
        end, records = st[LOG][r]
        return not self.IsEmpty(st, r) and offset == end - 1 and record == records[offset]

    def IsLatestRecord(self, st, r, record):
        return any(self.IsLatestEntry(st, r, record, o) for o in self.Offsets)

    def GetLatestRecord(self, st, r):
        end, records = st[LOG][r]
        return NIL if self.IsEmpty(st, r) else records[end - 1]

    def GetAllEntries(self, st, r):
        end, records = st[LOG][r]
        return set() if end == 0 else {(o, records[o]) for o in range(end)}

    def Append(self, logs, st, r, record, offset):
        """Returns logs' or None (the guard fails)."""
        end, records = st[LOG][r]
        if self.IsFull(st, r) or offset != end:
            return None
        return with_(logs, r, (end + 1, with_(records, offset, record)))

    def TruncateTo(self, st, r, new_end):
        end, records = st[LOG][r]
        if not new_end <= end:
            return None
        return with_(st[LOG], r, (new_end, tuple(records[o] if o < new_end else NIL for o in self.Offsets)))

    def ReplicateTo(self, st, src, dst):
        for offset in self.Offsets:
            for record in self.LogRecords:
                if self.HasEntry(st, src, record, offset):
                    logs = self.Append(st[LOG], st, dst, record, offset)
                    if logs is not None:
                        yield logs

    # --- IdSequence ----------------------------------------------------------------------
    def NextIdOk(self, next_id, max_id, id_):
        return id_ <= max_id and id_ == next_id

    # --- KafkaReplication ------------------------------------------------------------------
    def ReplicaPresumesLeadership(self, st, r):
        return st[RS][r][LEADER] == r

    def ReplicaIsFollowing(self, st, f, l):
        return st[RS][f][LEADER] == l

    def IsTrueLeader(self, st, l):
        q = st[QUORUM]
        return q[0] == l and self.ReplicaPresumesLeadership(st, l) and st[RS][l][EPOCH] == q[1]

    def ControllerUpdateIsr(self, st, new_leader, new_isr):
        for e in self.EpochIds:
            if self.NextIdOk(st[NEXT_LEADER_EPOCH], self.MaxLeaderEpoch, e):
                new = (new_leader, e, frozenset(new_isr))
                st2 = with_(st, NEXT_LEADER_EPOCH, st[NEXT_LEADER_EPOCH] + 1)
                st2 = with_(st2, QUORUM, new)
                yield with_(st2, REQUESTS, st[REQUESTS] | {new})

    def ControllerShrinkIsr(self, st):
        q_leader, _, q_isr = st[QUORUM]
        for r in self.Replicas:
            if q_leader == r and q_isr == {r}:
                yield from self.ControllerUpdateIsr(st, NONE, q_isr)
            if q_leader == r and q_isr != {r}:
                yield from self.ControllerUpdateIsr(st, NONE, q_isr - {r})
            if q_leader != r and r in q_isr:
                yield from self.ControllerUpdateIsr(st, q_leader, q_isr - {r})

    def ControllerElectLeader(self, st):
        q_leader, _, q_isr = st[QUORUM]
        for new_leader in q_isr:
            if q_leader != new_leader:
                yield from self.ControllerUpdateIsr(st, new_leader, q_isr)

    def BecomeLeader(self, st):
        for req in st[REQUESTS]:
            leader, epoch, isr = req
            if leader != NONE and epoch > st[RS][leader][EPOCH]:
                yield with_(st, RS, with_(st[RS], leader, (st[RS][leader][HW], epoch, leader, isr)))

    def LeaderWrite(self, st):
        for r in self.Replicas:
            for id_ in self.RecordIds:
                for offset in self.Offsets:
                    if not self.ReplicaPresumesLeadership(st, r):
                        continue
                    if not self.NextIdOk(st[NEXT_RECORD_ID], self.RecordMaxId, id_):
                        continue
                    logs = self.Append(st[LOG], st, r, (id_, st[RS][r][EPOCH]), offset)
                    if logs is not None:
                        yield with_(with_(st, LOG, logs), NEXT_RECORD_ID, st[NEXT_RECORD_ID] + 1)

    def QuorumUpdateLeaderAndIsr(self, st, leader, new_isr):
        if not (self.IsTrueLeader(st, leader) and st[QUORUM][0] == leader):
            return None
        new_isr = frozenset(new_isr)
        hw, epoch, ldr, _ = st[RS][leader]
        st2 = with_(st, QUORUM, (st[QUORUM][0], st[QUORUM][1], new_isr))
        return with_(st2, RS, with_(st[RS], leader, (hw, epoch, ldr, new_isr)))

    def IsFollowerCaughtUp(self, st, leader, follower, end_offset):
        if not self.ReplicaIsFollowing(st, follower, leader):
            return False
        if end_offset == 0:
            return True
        offset = end_offset - 1
        return end_offset > 0 and any(self.HasEntry(st, leader, rec, offset) and self.HasOffset(st, follower, offset)
                                      for rec in self.LogRecords)

    def LeaderShrinkIsr(self, st):
        for leader in self.Replicas:
            isr = st[RS][leader][ISR]
            end = self.GetEndOffset(st, leader)
            for r in isr - {leader}:
                if not self.IsFollowerCaughtUp(st, leader, r, end):
                    nxt = self.QuorumUpdateLeaderAndIsr(st, leader, isr - {r})
                    if nxt is not None:
                        yield nxt

    def LeaderExpandIsr(self, st):
        for leader in self.Replicas:
            isr, hw = st[RS][leader][ISR], st[RS][leader][HW]
            for r in set(self.Replicas) - isr:
                if self.IsFollowerCaughtUp(st, leader, r, hw):
                    nxt = self.QuorumUpdateLeaderAndIsr(st, leader, isr | {r})
                    if nxt is not None:
                        yield nxt

    def bump_hw(self, st, r):
        hw, epoch, ldr, isr = st[RS][r]
        return with_(st, RS, with_(st[RS], r, (hw + 1, epoch, ldr, isr)))

    def set_hw(self, st, r, new_hw):
        _, epoch, ldr, isr = st[RS][r]
        return with_(st, RS, with_(st[RS], r, (new_hw, epoch, ldr, isr)))

    def LeaderIncHighWatermark(self, st):
        for offset in self.Offsets:
            for leader in self.Replicas:
                if (self.ReplicaPresumesLeadership(st, leader) and offset == st[RS][leader][HW]
                        and all(self.ReplicaIsFollowing(st, f, leader) and self.HasOffset(st, f, offset)
                                for f in st[RS][leader][ISR])):
                    yield self.bump_hw(st, leader)

    def BecomeFollowerAndTruncateTo(self, st, leader, replica, truncation_offset):
        for req in st[REQUESTS]:
            r_leader, r_epoch, r_isr = req
            if not (leader != replica and r_leader == leader and r_epoch > st[RS][replica][EPOCH]):
                continue
            if leader == NONE:
                logs = st[LOG]
            else:
                logs = self.TruncateTo(st, replica, truncation_offset)
                if logs is None:
                    continue
            new_rs = (min(truncation_offset, st[RS][replica][HW]), r_epoch, leader, r_isr)
            yield with_(with_(st, LOG, logs), RS, with_(st[RS], replica, new_rs))

    def FollowerReplicate(self, st):
        for f in self.Replicas:
            for l in self.Replicas:
                if self.ReplicaPresumesLeadership(st, l) and self.ReplicaIsFollowing(st, f, l):
                    for logs in self.ReplicateTo(st, l, f):
                        new_end = self.GetEndOffset(st, f) + 1
                        yield self.set_hw(with_(st, LOG, logs), f, min(st[RS][l][HW], new_end))

    # --- invariants ------------------------------------------------------------------------
    def _isr_replicated(self, st, members_of):
        for r1 in self.Replicas:
            if not self.ReplicaPresumesLeadership(st, r1):
                continue
            hw = st[RS][r1][HW]
            if hw == 0:
                continue
            for r2 in members_of(r1):
                for offset in range(hw):
                    if not any(self.HasEntry(st, r1, rec, offset) and self.HasEntry(st, r2, rec, offset)
                               for rec in self.LogRecords):
                        return False
        return True

    def WeakIsr(self, st):
        return self._isr_replicated(st, lambda r1: st[RS][r1][ISR])

    def StrongIsr(self, st):
        return self._isr_replicated(st, lambda r1: st[QUORUM][2])

    def LeaderInIsr(self, st):
        return st[QUORUM][0] in st[QUORUM][2]

    def TypeOk(self, st):
        replica_opt = set(self.Replicas) | {NONE}
        epoch_opt = set(self.EpochIds) | {NIL}

        def quorum_ok(q):
            return q[1] in epoch_opt and q[0] in replica_opt and q[2] <= set(self.Replicas)
        ok = (st[NEXT_LEADER_EPOCH] in range(self.MaxLeaderEpoch + 2)
              and st[NEXT_RECORD_ID] in range(self.RecordMaxId + 2)
              and quorum_ok(st[QUORUM]) and all(quorum_ok(q) for q in st[REQUESTS]))
        for r in self.Replicas:
            end, records = st[LOG][r]
            ok = ok and 0 <= end <= self.LogSize
            ok = ok and all(records[o] in self.LogRecords for o in range(end))
            ok = ok and all(records[o] == NIL for o in range(end, self.LogSize))
            hw, epoch, leader, isr = st[RS][r]
            ok = ok and 0 <= hw <= self.LogSize and epoch in epoch_opt and leader in replica_opt
            ok = ok and isr <= set(self.Replicas)
        return ok

    INVARIANTS = {"type-ok": "TypeOk", "weak-isr": "WeakIsr", "strong-isr": "StrongIsr",
                  "leader-in-isr": "LeaderInIsr"}


class NaiveTruncateToHighWatermark(NaiveKafkaReplication):
    def BecomeFollowerTruncateToHighWatermark(self, st):
        for leader in self.Replicas:
            for replica in self.Replicas:
                yield from self.BecomeFollowerAndTruncateTo(st, leader, replica, st[RS][replica][HW])

    NEXT = ("ControllerElectLeader", "ControllerShrinkIsr", "BecomeLeader", "LeaderExpandIsr",
            "LeaderShrinkIsr", "LeaderWrite", "LeaderIncHighWatermark",
            "BecomeFollowerTruncateToHighWatermark", "FollowerReplicate")


class NaiveKip101(NaiveKafkaReplication):
    def OffsetsWithLargerEpochs(self, st, r, epoch):
        return {o for (o, rec) in self.GetAllEntries(st, r) if rec[1] > epoch}

    def LookupOffsetForEpoch(self, st, leader, follower, epoch):
        if self.IsEmpty(st, leader):
            return st[RS][follower][HW]
        if self.GetLatestRecord(st, leader)[1] == epoch:
            return self.GetEndOffset(st, leader)
        larger = self.OffsetsWithLargerEpochs(st, leader, epoch)
        return st[RS][follower][HW] if not larger else min(larger)

    def BecomeFollowerTruncateKip101(self, st):
        for leader in self.Replicas:
            for replica in self.Replicas:
                if self.IsEmpty(st, replica):
                    yield from self.BecomeFollowerAndTruncateTo(st, leader, replica, 0)
                for rec in self.LogRecords:
                    if self.IsLatestRecord(st, replica, rec):
                        offset = self.LookupOffsetForEpoch(st, leader, replica, rec[1])
                        yield from self.BecomeFollowerAndTruncateTo(st, leader, replica, offset)

    NEXT = ("ControllerElectLeader", "ControllerShrinkIsr", "BecomeLeader", "LeaderExpandIsr",
            "LeaderShrinkIsr", "LeaderWrite", "LeaderIncHighWatermark", "BecomeFollowerTruncateKip101",
            "FollowerReplicate")


class NaiveKip279(NaiveKafkaReplication):
    def MatchingOffsets(self, st, r1, r2):
        return {o for (o, rec) in self.GetAllEntries(st, r1) if self.HasEntry(st, r2, rec, o)}

    def FirstNonMatchingOffsetFromTail(self, st, leader, follower):
        if self.IsEmpty(st, leader):
            return 0
        matching = self.MatchingOffsets(st, follower, leader)
        return 0 if not matching else max(matching) + 1

    def BecomeFollowerTruncateKip279(self, st):
        for leader in self.Replicas:
            for replica in self.Replicas:
                if self.IsEmpty(st, replica):
                    yield from self.BecomeFollowerAndTruncateTo(st, leader, replica, 0)
                offset = self.FirstNonMatchingOffsetFromTail(st, leader, replica)
                yield from self.BecomeFollowerAndTruncateTo(st, leader, replica, offset)

    NEXT = ("ControllerElectLeader", "ControllerShrinkIsr", "BecomeLeader", "LeaderExpandIsr",
            "LeaderShrinkIsr", "LeaderWrite", "LeaderIncHighWatermark", "BecomeFollowerTruncateKip279",
            "FollowerReplicate")


def _has_hw_reached_current_epoch(m, st, leader):
    hw = st[RS][leader][HW]
    return hw == m.GetEndOffset(st, leader) or any(
        m.HasEntry(st, leader, rec, hw) and rec[1] == st[RS][leader][EPOCH] for rec in m.LogRecords)


class NaiveKip320FirstTry(NaiveKip279):
    def IsFollowerCaughtUpToLeaderEpoch(self, st, leader, follower, end_offset):
        if not (self.ReplicaPresumesLeadership(st, leader) and self.ReplicaIsFollowing(st, follower, leader)):
            return False
        if end_offset == 0:
            return True
        offset = end_offset - 1
        return end_offset > 0 and any(
            self.HasEntry(st, leader, rec, offset) and self.HasOffset(st, follower, offset)
            and self.GetRecordAtOffset(st, follower, offset)[1] == rec[1] for rec in self.LogRecords)

    def FollowerNeedsTruncation(self, st, follower, leader):
        if self.GetEndOffset(st, follower) > self.GetEndOffset(st, leader):
            return True
        return any(self.IsLatestEntry(st, follower, rec, o) and self.HasOffset(st, leader, o)
                   and self.GetRecordAtOffset(st, leader, o)[1] != rec[1]
                   for rec in self.LogRecords for o in self.Offsets)

    def FollowerTruncate(self, st):
        for leader in self.Replicas:
            for follower in self.Replicas:
                if (self.ReplicaPresumesLeadership(st, leader) and self.ReplicaIsFollowing(st, follower, leader)
                        and self.FollowerNeedsTruncation(st, follower, leader)):
                    t = self.FirstNonMatchingOffsetFromTail(st, leader, follower)
                    logs = self.TruncateTo(st, follower, t)
                    if logs is not None:
                        yield self.set_hw(with_(st, LOG, logs), follower, min(t, st[RS][follower][HW]))

    def ImprovedLeaderIncHighWatermark(self, st):
        for leader in self.Replicas:
            if not self.ReplicaPresumesLeadership(st, leader):
                continue
            hw = st[RS][leader][HW]
            if any(self.HasEntry(st, leader, rec, hw)
                   and all(self.IsFollowerCaughtUpToLeaderEpoch(st, leader, f, hw + 1) for f in st[RS][leader][ISR])
                   for rec in self.LogRecords):
                yield self.bump_hw(st, leader)

    def FollowerFetch(self, st):
        for f in self.Replicas:
            for l in self.Replicas:
                end = self.GetEndOffset(st, f)
                if self.IsFollowerCaughtUpToLeaderEpoch(st, l, f, end):
                    for logs in self.ReplicateTo(st, l, f):
                        yield self.set_hw(with_(st, LOG, logs), f, min(st[RS][l][HW], end + 1))

    def LeaderShrinkIsrBetterFencing(self, st):
        for leader in self.Replicas:
            isr, end = st[RS][leader][ISR], self.GetEndOffset(st, leader)
            for r in isr - {leader}:
                if not self.IsFollowerCaughtUpToLeaderEpoch(st, leader, r, end):
                    nxt = self.QuorumUpdateLeaderAndIsr(st, leader, isr - {r})
                    if nxt is not None:
                        yield nxt

    def LeaderExpandIsrBetterFencing(self, st):
        for leader in self.Replicas:
            isr, hw = st[RS][leader][ISR], st[RS][leader][HW]
            for r in set(self.Replicas) - isr:
                if (self.IsFollowerCaughtUpToLeaderEpoch(st, leader, r, hw)
                        and _has_hw_reached_current_epoch(self, st, leader)):
                    nxt = self.QuorumUpdateLeaderAndIsr(st, leader, isr | {r})
                    if nxt is not None:
                        yield nxt

    def BecomeFollower(self, st):
        for leader in self.Replicas:
            for replica in self.Replicas:
                for req in st[REQUESTS]:
                    r_leader, r_epoch, r_isr = req
                    if leader != replica and r_leader == leader and r_epoch > st[RS][replica][EPOCH]:
                        new_rs = (st[RS][replica][HW], r_epoch, leader, r_isr)
                        yield with_(st, RS, with_(st[RS], replica, new_rs))

    NEXT = ("ControllerElectLeader", "ControllerShrinkIsr", "BecomeLeader", "LeaderExpandIsrBetterFencing",
            "LeaderShrinkIsrBetterFencing", "LeaderWrite", "ImprovedLeaderIncHighWatermark", "BecomeFollower",
            "FollowerFetch", "FollowerTruncate")


class NaiveKip320(NaiveKip279):
    def IsFollowingLeaderEpoch(self, st, leader, follower):
        return (self.ReplicaPresumesLeadership(st, leader) and st[RS][follower][LEADER] == leader
                and st[RS][follower][EPOCH] == st[RS][leader][EPOCH])

    def FencedFollowerFetch(self, st):
        for f in self.Replicas:
            for l in self.Replicas:
                if self.IsFollowingLeaderEpoch(st, l, f):
                    for logs in self.ReplicateTo(st, l, f):
                        new_end = self.GetEndOffset(st, f) + 1
                        yield self.set_hw(with_(st, LOG, logs), f, min(st[RS][l][HW], new_end))

    def FencedLeaderIncHighWatermark(self, st):
        for leader in self.Replicas:
            hw = st[RS][leader][HW]
            if self.HasOffset(st, leader, hw) and all(
                    self.IsFollowingLeaderEpoch(st, leader, f) and self.HasOffset(st, f, hw)
                    for f in st[RS][leader][ISR]):
                yield self.bump_hw(st, leader)

    def FencedLeaderShrinkIsr(self, st):
        for leader in self.Replicas:
            isr, end = st[RS][leader][ISR], self.GetEndOffset(st, leader)
            for f in isr - {leader}:
                if not self.IsFollowingLeaderEpoch(st, leader, f) or self.GetEndOffset(st, f) < end:
                    nxt = self.QuorumUpdateLeaderAndIsr(st, leader, isr - {f})
                    if nxt is not None:
                        yield nxt

    def HasFollowerReachedHighWatermark(self, st, leader, follower):
        hw = st[RS][leader][HW]
        return hw == 0 or (hw > 0 and self.HasOffset(st, follower, hw - 1))

    def FencedLeaderExpandIsr(self, st):
        for leader in self.Replicas:
            isr = st[RS][leader][ISR]
            for f in set(self.Replicas) - isr:
                if (self.IsFollowingLeaderEpoch(st, leader, f) and self.HasFollowerReachedHighWatermark(st, leader, f)
                        and _has_hw_reached_current_epoch(self, st, leader)):
                    nxt = self.QuorumUpdateLeaderAndIsr(st, leader, isr | {f})
                    if nxt is not None:
                        yield nxt

    def FencedBecomeFollowerAndTruncate(self, st):
        for leader in self.Replicas:
            for replica in self.Replicas:
                for req in st[REQUESTS]:
                    r_leader, r_epoch, r_isr = req
                    if not (leader != replica and r_leader == leader and r_epoch > st[RS][replica][EPOCH]):
                        continue
                    if leader == NONE:
                        yield with_(st, RS, with_(st[RS], replica, (st[RS][replica][HW], r_epoch, r_leader, r_isr)))
                    elif self.ReplicaPresumesLeadership(st, leader) and st[RS][leader][EPOCH] == r_epoch:
                        t = self.FirstNonMatchingOffsetFromTail(st, leader, replica)
                        new_hw = min(t, st[RS][replica][HW])
                        logs = self.TruncateTo(st, replica, t)
                        if logs is not None:
                            yield with_(with_(st, LOG, logs), RS,
                                        with_(st[RS], replica, (new_hw, r_epoch, r_leader, r_isr)))

    NEXT = ("ControllerElectLeader", "ControllerShrinkIsr", "BecomeLeader", "FencedLeaderExpandIsr",
            "FencedLeaderShrinkIsr", "LeaderWrite", "FencedLeaderIncHighWatermark",
            "FencedBecomeFollowerAndTruncate", "FencedFollowerFetch")


NAIVE = {"tla-truncate-to-hw": NaiveTruncateToHighWatermark, "tla-kip101": NaiveKip101,
         "tla-kip279": NaiveKip279, "tla-kip320-first-try": NaiveKip320FirstTry, "tla-kip320": NaiveKip320}


def naive_bfs(model):
    """Reachable states, depth (levels, the initial state is level 1), and each invariant's first violating level."""
    init = model.init()
    seen, frontier, depth = {init}, [init], 1
    first_violation = {}

    def check(states, level):
        for inv, op in model.INVARIANTS.items():
            if inv not in first_violation and not all(getattr(model, op)(st) for st in states):
                first_violation[inv] = level
    check(frontier, 1)
    actions = [getattr(model, name) for name in model.NEXT]
    while True:
        nxt = []
        for st in frontier:
            for act in actions:
                for succ in act(st):
                    if succ not in seen:
                        seen.add(succ)
                        nxt.append(succ)
        if not nxt:
            return seen, depth, first_violation
        depth += 1
        check(nxt, depth)
        frontier = nxt


# ==========================================================================================
# our engine's reachable set, mapped into the naive representation
# ==========================================================================================
class CollectingSearch(Search):
    """The BFS engine, keeping every new row it checks (each distinct state exactly once)."""

    def run(self, **budgets):
        self.rows = []
        return super().run(on_states=lambda rows: self.rows.append(np.array(rows, copy=True)), **budgets)


def to_naive(spec, row):
    d = spec.layout.decode(row)
    R = spec.R

    def rid(v):
        return NONE if v == R else v

    def members(bits):
        return frozenset(i for i in range(R) if bits[i])
    logs = tuple((d["log_end_offset"][r],
                  tuple(NIL if (i, e) == (NIL, NIL) else (i, e) for i, e in zip(d["log_id"][r], d["log_epoch"][r])))
                 for r in range(R))
    rs = tuple((d["hw"][r], d["leader_epoch"][r], rid(d["leader"][r]), members(d["isr"][r])) for r in range(R))
    requests = frozenset((rid(d["req_leader"][e]), e, members(d["req_isr"][e]))
                         for e in range(len(d["req_sent"])) if d["req_sent"][e])
    quorum = (rid(d["q_leader"]), d["q_leader_epoch"], members(d["q_isr"]))
    return (logs, rs, d["next_record_id"], d["next_leader_epoch"], requests, quorum)


# ==========================================================================================
# tests
# ==========================================================================================
@pytest.fixture(scope="module", params=sorted(TLA_SPECS))
def small_run(request):
    name = request.param
    spec = TLA_SPECS[name](**SMALL)
    engine = CollectingSearch(spec, ["type-ok"])
    full = engine.run()
    violations = search(spec, [i for i in ALL_INVARIANTS if i != "type-ok"])
    return name, spec, engine, full, violations


def test_registry():
    assert sorted(TLA_SPECS) == sorted(PINNED_2_REPLICAS)
    for name, cls in TLA_SPECS.items():
        assert cls.name == name
        assert set(cls.expected) == set(ALL_INVARIANTS)
        assert set(cls.defaults) == {"replicas", "log_size", "max_records", "max_epochs"}
        assert "initial state" in cls.summary and "LeaderInIsr" in cls.summary
        spec = cls(**SMALL)
        assert set(spec.invariants) == set(ALL_INVARIANTS)
        for inst in spec.actions:
            assert (inst.fn.__doc__ or "").strip(), f"{name}: {inst.name} has no docstring"


def test_pinned_counts_at_two_replicas(small_run):
    name, _, _, full, violations = small_run
    states, depth, lengths = PINNED_2_REPLICAS[name]
    assert full.complete and not full.violations
    assert (full.distinct_states, full.depth) == (states, depth)
    assert full.never_fired == []
    assert {inv: len(v.steps) for inv, v in violations.violations.items()} == lengths


def test_same_reachable_states_as_naive_tla(small_run):
    name, spec, engine, full, violations = small_run
    ours = [to_naive(spec, row) for rows in engine.rows for row in rows.T]
    ours_set = set(ours)
    assert len(ours_set) == len(ours) == full.distinct_states     # the mapping is one-to-one

    model = NAIVE[name](**SMALL)
    reachable, depth, first_violation = naive_bfs(model)
    assert len(reachable) == full.distinct_states and depth == full.depth
    assert ours_set == reachable, (f"only ours: {len(ours_set - reachable)}, "
                                   f"only TLA+: {len(reachable - ours_set)}")
    assert {inv: len(v.steps) for inv, v in violations.violations.items()} == first_violation
    assert all(model.TypeOk(st) for st in reachable)


def test_counterexamples_replay_and_are_shortest(small_run):
    """Each trace starts in the initial state, every step is enabled, only the last state violates."""
    name, spec, _, _, violations = small_run
    for inv, v in violations.violations.items():
        rows = [row for _, row in v.steps]
        assert np.array_equal(rows[0], backends.scalar(spec).initial_row())
        for (_, before), (inst, after) in zip(v.steps, v.steps[1:]):
            assert np.array_equal(backends.scalar(spec).step(before, inst), after)
        check = spec.invariants[inv]
        assert not backends.scalar(spec).holds(rows[-1], check)
        assert all(backends.scalar(spec).holds(r, check) for r in rows[:-1])


def test_leader_in_isr_false_initially():
    for cls in TLA_SPECS.values():
        spec = cls(**SMALL)
        assert not backends.scalar(spec).holds(backends.scalar(spec).initial_row(), spec.invariants["leader-in-isr"])
        assert backends.scalar(spec).holds(backends.scalar(spec).initial_row(), spec.invariants["type-ok"])


@pytest.mark.parametrize("name", sorted(TLC_3_REPLICAS))
def test_tlc_numbers_at_three_replicas(name):
    states, depth, strong = TLC_3_REPLICAS[name]
    spec = TLA_SPECS[name](replicas=3, log_size=2, max_records=2, max_epochs=2)
    r = search(spec, ALL_INVARIANTS)
    assert (r.distinct_states, r.depth, r.complete) == (states, depth, True)
    assert r.verdicts == spec.expected
    if strong is None:
        assert "strong-isr" not in r.violations
    else:
        assert len(r.violations["strong-isr"].steps) == strong


@pytest.mark.parametrize("name", sorted(TLA_SPECS))
def test_same_reachable_states_as_naive_tla_longer_logs(name):
    """Longer logs and more records, fewer epochs: the same agreement, state for state."""
    bounds = dict(replicas=2, log_size=3, max_records=3, max_epochs=1)
    spec = TLA_SPECS[name](**bounds)
    engine = CollectingSearch(spec, ["type-ok"])
    full = engine.run()
    ours = {to_naive(spec, row) for rows in engine.rows for row in rows.T}
    reachable, depth, _ = naive_bfs(NAIVE[name](**bounds))
    assert len(ours) == full.distinct_states == len(reachable) and depth == full.depth
    assert ours == reachable
