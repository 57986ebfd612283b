"""Jason Gustafson's TLA+ model of Kafka replication, ported onto isrcheck's modelling layer.

This module mirrors ``KafkaReplication.tla`` of github.com/hachikuji/kafka-specification
(the revision that defines ``LeaderInIsr``), together with the modules it
instantiates: ``FiniteReplicatedLog.tla`` (the replica logs), ``IdSequence.tla``
(record ids and leader epochs) and ``Util.tla`` (``Min``/``Max``). The protocol
versions (``KafkaTruncateToHighWatermark.tla``, ``Kip101.tla``, ``Kip279.tla``,
``Kip320FirstTry.tla``, ``Kip320.tla``) are the sibling modules of this package.

The port keeps the TLA+ state space exactly: one row here is one TLA+ state and
back (``tests/test_tla.py`` checks the reachable sets state for state against a
naive transcription of the TLA+). The variables map as follows, with the
constants ``Replicas = 0..R-1`` (``R`` stands for ``None``), ``LogSize = L``,
``MaxRecords = M``, ``MaxLeaderEpoch = E`` and ``Nil = -1``:

- ``replicaLog[r]`` (FiniteReplicatedLog: an end offset and a records array):
  ``log_end_offset[r]``, and ``log_id[r][o]`` / ``log_epoch[r][o]`` for the record
  ``[id, epoch]`` at offset ``o``, both ``-1`` where the record is ``Nil`` (every
  offset at or past the end offset, as ``TruncateTo`` leaves them);
- ``replicaState[r]``: ``hw[r]``, ``leader_epoch[r]`` (``-1``: Nil), ``leader[r]``,
  ``isr[r][i]`` (membership of ``i``);
- ``nextRecordId`` / ``nextLeaderEpoch`` (IdSequence): ``next_record_id`` (ids are
  ``0..M-1``) and ``next_leader_epoch`` (epochs are ``0..E``: ``E + 1`` elections);
- ``leaderAndIsrRequests``: the set only grows and ``ControllerUpdateIsr`` adds the
  request of epoch ``nextLeaderEpoch`` as it bumps it, so it holds at most one
  request per leader epoch: ``req_sent[e]``, ``req_leader[e]``, ``req_isr[e][i]``
  (an unsent slot keeps ``req_leader = None`` and an empty ISR);
- ``quorumState`` (ZooKeeper): ``q_leader_epoch`` (``-1``: Nil), ``q_leader``, ``q_isr[i]``.

Whenever the TLA+ says ``\\E record \\in LogRecords : HasEntry(r, record, o) ...``
the record is the one stored at ``o``; ``entry_is_log_record`` keeps the
membership test in ``LogRecords`` literally (it always holds in a well-typed state).
"""
from __future__ import annotations

from isrcheck.model.expr import all_of, max_of, min_of, where
from isrcheck.model.layout import Field
from isrcheck.model.spec import Bound, FuzzTarget, Spec, action, invariant
from isrcheck.specs.tla.present import TlaPresentation

NIL = -1


class TlaKafkaReplication(Spec):
    """KafkaReplication.tla: state, Init, the shared actions and the invariants."""

    references = ("github.com/hachikuji/kafka-specification (Jason Gustafson's TLA+ specs, 2018; "
                  "LeaderInIsr added 2020)",)
    declared_bounds = (
        Bound("replicas", 3, 1, 5, "Replicas (brokers)", kind="bound"),
        Bound("log_size", 2, 1, 6, "LogSize: offsets each replica's log can hold", kind="bound"),
        Bound("max_records", 2, 1, 8, "MaxRecords: records appended, in all", kind="bound"),
        Bound("max_epochs", 2, 0, 8, "MaxLeaderEpoch", kind="bound"),
    )
    expected_why = {
        "type-ok": "THEOREM Spec => []TypeOk",
        "leader-in-isr": ("false in the initial state: the quorum leader starts as None, "
                          "and None is never a member of the ISR"),
    }

    presentation_class = TlaPresentation
    #: the fuzzer steers towards runs with many elections, truncations and ISR shrinks (there are no crashes)
    fuzz_targets = (FuzzTarget("leader changes", "q_leader_epoch", "moves"),
                    FuzzTarget("truncations", "log_end_offset", "drops"),
                    FuzzTarget("ISR shrinks", "q_isr", "drops"))

    def configure(self, bounds):
        self.R, self.L, self.M, self.E = bounds.replicas, bounds.log_size, bounds.max_records, bounds.max_epochs
        self.NONE = self.R                        # None == "NONE"
        self.REPLICAS = range(self.R)             # Replicas
        self.OFFSETS = range(self.L)              # ReplicaLog!Offsets == 0 .. LogSize - 1
        self.EPOCHS = range(self.E + 1)           # LeaderEpochSeq!IdSet == 0 .. MaxLeaderEpoch
        self.RECORD_IDS = range(self.M)           # RecordSeq!IdSet == 0 .. MaxRecords - 1

    def fields(self):
        R, L, M, E = self.R, self.L, self.M, self.E
        rep = ("replica",)
        return [
            # replicaLog (FiniteReplicatedLog)
            Field("log_end_offset", 0, L, (R,), axes=rep, doc="replicaLog[r].endOffset"),
            Field("log_id", NIL, M - 1, (R, L), axes=("replica", None),
                  doc="replicaLog[r].records[o].id (-1: the record is Nil)"),
            Field("log_epoch", NIL, E, (R, L), axes=("replica", None), unbounded=True,
                  doc="replicaLog[r].records[o].epoch (-1: the record is Nil)"),
            # replicaState
            Field("hw", 0, L, (R,), axes=rep, doc="replicaState[r].hw"),
            Field("leader_epoch", NIL, E, (R,), axes=rep, unbounded=True, doc="replicaState[r].leaderEpoch (-1: Nil)"),
            Field("leader", 0, R, (R,), axes=rep, values="replica", doc="replicaState[r].leader (R: None)"),
            Field("isr", 0, 1, (R, R), boolean=True, axes=("replica", "replica"), doc="replicaState[r].isr"),
            # the id sequences (IdSequence)
            Field("next_record_id", 0, M, doc="nextRecordId (RecordSeq, ids 0 .. MaxRecords - 1)"),
            Field("next_leader_epoch", 0, E + 1, doc="nextLeaderEpoch (LeaderEpochSeq, epochs 0 .. MaxLeaderEpoch)"),
            # leaderAndIsrRequests: at most one request per leader epoch
            Field("req_sent", 0, 1, (E + 1,), boolean=True, doc="a request of leader epoch e is in the set"),
            Field("req_leader", 0, R, (E + 1,), values="replica", doc="its leader (R: None)"),
            Field("req_isr", 0, 1, (E + 1, R), boolean=True, axes=(None, "replica"), doc="its ISR"),
            # quorumState
            Field("q_leader_epoch", NIL, E, doc="quorumState.leaderEpoch (-1: Nil)"),
            Field("q_leader", 0, R, values="replica", doc="quorumState.leader (R: None)"),
            Field("q_isr", 0, 1, (R,), boolean=True, axes=rep, doc="quorumState.isr"),
        ]

    def initial(self, s):
        """Init: empty logs, replicas with hw 0, epoch Nil, leader None and an empty ISR;
        the quorum has epoch Nil, leader None and every replica in the ISR; no requests.

        (Cells not written start at their lower bound: -1 for Nil records and epochs.)
        """
        for r in self.REPLICAS:
            s.leader[r] = self.NONE
            s.q_isr[r] = True
        s.q_leader = self.NONE
        for e in self.EPOCHS:
            s.req_leader[e] = self.NONE

    # ------------------------------------------------------------------------------------
    # FiniteReplicatedLog operators (logs <- replicaLog)
    # ------------------------------------------------------------------------------------
    def is_empty(self, s, r):
        return s.log_end_offset[r] == 0

    def has_offset(self, s, r, offset):
        """HasOffset(replica, offset) == offset < logs[replica].endOffset."""
        return offset < s.log_end_offset[r]

    def entry_is_log_record(self, s, r, offset):
        """The record stored at ``offset`` is a member of LogRecords (not Nil, id and epoch in range)."""
        i, e = s.log_id[r][offset], s.log_epoch[r][offset]
        return (i >= 0) & (i <= self.M - 1) & (e >= 0) & (e <= self.E)

    def same_entry(self, s, a, b, offset):
        """\\E record \\in LogRecords : HasEntry(a, record, offset) /\\ HasEntry(b, record, offset)."""
        return (self.has_offset(s, a, offset) & self.has_offset(s, b, offset)
                & self.entry_is_log_record(s, a, offset)
                & (s.log_id[a][offset] == s.log_id[b][offset])
                & (s.log_epoch[a][offset] == s.log_epoch[b][offset]))

    def latest_epoch(self, s, r):
        """GetLatestRecord(r).epoch where r's log is not empty (the epoch of Nil otherwise)."""
        return where(self.is_empty(s, r), NIL, s.log_epoch[r][s.log_end_offset[r] - 1])

    def truncate_to_guard(self, s, r, new_end_offset):
        """TruncateTo's guard: newEndOffset \\leq log.endOffset."""
        return new_end_offset <= s.log_end_offset[r]

    def truncate_to(self, s, r, new_end_offset):
        """TruncateTo's update: records from newEndOffset on become Nil; the end offset moves there."""
        for o in self.OFFSETS:
            keep = o < new_end_offset
            s.log_id[r][o] = where(keep, s.log_id[r][o], NIL)
            s.log_epoch[r][o] = where(keep, s.log_epoch[r][o], NIL)
        s.log_end_offset[r] = new_end_offset

    def append_guard(self, s, r, offset):
        """Append's guard: ~ IsFull(replica) /\\ offset = log.endOffset."""
        return (s.log_end_offset[r] < self.L) & (offset == s.log_end_offset[r])

    def append(self, s, r, record_id, record_epoch):
        """Append's update at the end offset (the guard fixed offset = endOffset)."""
        end = s.log_end_offset[r]
        s.log_id[r][end] = record_id
        s.log_epoch[r][end] = record_epoch
        s.log_end_offset[r] = end + 1

    def replicate_to_guard(self, s, source, target):
        """ReplicateTo(from, to) == \\E offset, record : HasEntry(from, record, offset) /\\ Append(to, record, offset).

        Append fixes the offset to the target's end offset, so the source must hold
        a record there and the target must not be full.
        """
        end = s.log_end_offset[target]
        return ((end < self.L) & self.has_offset(s, source, end)
                & self.entry_is_log_record(s, source, end))

    def replicate_to(self, s, source, target):
        end = s.log_end_offset[target]
        self.append(s, target, s.log_id[source][end], s.log_epoch[source][end])

    # ------------------------------------------------------------------------------------
    # KafkaReplication operators
    # ------------------------------------------------------------------------------------
    def presumes_leadership(self, s, r):
        """ReplicaPresumesLeadership(replica) == replicaState[replica].leader = replica."""
        return s.leader[r] == r

    def is_following(self, s, follower, leader):
        """ReplicaIsFollowing(follower, leader) == replicaState[follower].leader = leader."""
        return s.leader[follower] == leader

    def is_true_leader(self, s, l):
        """IsTrueLeader: the quorum's leader, presuming leadership, on the quorum's leader epoch."""
        return ((s.q_leader == l) & self.presumes_leadership(s, l)
                & (s.leader_epoch[l] == s.q_leader_epoch))

    def request_exists(self, s, e):
        return s.req_sent[e]

    def controller_update_isr_guard(self, s):
        """ControllerUpdateIsr's guard: LeaderEpochSeq!NextId needs nextLeaderEpoch <= MaxLeaderEpoch."""
        return s.next_leader_epoch <= self.E

    def controller_update_isr(self, s, new_leader, new_isr):
        """ControllerUpdateIsr(newLeader, newIsr): take the next leader epoch, write the quorum state
        and add the same [leader, leaderEpoch, isr] to the LeaderAndIsr request set."""
        epoch = s.next_leader_epoch
        s.next_leader_epoch = epoch + 1
        s.q_leader_epoch = epoch
        s.q_leader = new_leader
        for i in self.REPLICAS:
            s.q_isr[i] = new_isr[i]
        s.req_sent[epoch] = True
        s.req_leader[epoch] = new_leader
        for i in self.REPLICAS:
            s.req_isr[epoch][i] = new_isr[i]

    def quorum_update_guard(self, s, l):
        """QuorumUpdateLeaderAndIsr's guard: IsTrueLeader(leader) /\\ quorumState.leader = leader."""
        return self.is_true_leader(s, l) & (s.q_leader == l)

    def quorum_update_leader_and_isr(self, s, l, new_isr):
        """QuorumUpdateLeaderAndIsr's update: the new ISR in the quorum and in the leader's own state."""
        for i in self.REPLICAS:
            s.q_isr[i] = new_isr[i]
            s.isr[l][i] = new_isr[i]

    def is_follower_caught_up(self, s, leader, follower, end_offset):
        """IsFollowerCaughtUp: the follower follows the leader and, unless endOffset = 0,
        both hold offset endOffset - 1."""
        last = end_offset - 1
        return self.is_following(s, follower, leader) & (
            (end_offset == 0)
            | ((end_offset > 0) & self.has_offset(s, leader, last)
               & self.entry_is_log_record(s, leader, last) & self.has_offset(s, follower, last)))

    def become_follower_guard(self, s, l, r, e, truncation_offset):
        """BecomeFollowerAndTruncateTo's guard for leader l (a replica, never None here) and request e.

        The follower applies a request naming l as leader whose epoch is newer than
        its own, and truncates: TruncateTo requires the offset to be at most its end offset.
        """
        return (self.request_exists(s, e) & (s.req_leader[e] == l) & (e > s.leader_epoch[r])
                & self.truncate_to_guard(s, r, truncation_offset))

    def become_follower_and_truncate_to(self, s, l, r, e, truncation_offset):
        """BecomeFollowerAndTruncateTo's update: truncate, then adopt the request's epoch, leader
        and ISR, with hw = Min({truncationOffset, hw})."""
        new_hw = min_of([truncation_offset, s.hw[r]])
        self.truncate_to(s, r, truncation_offset)
        s.leader_epoch[r] = e
        s.leader[r] = l
        for i in self.REPLICAS:
            s.isr[r][i] = s.req_isr[e][i]
        s.hw[r] = new_hw

    def offsets_min(self, conditions):
        """Min of {o \\in Offsets : conditions[o]} (LogSize when the set is empty)."""
        return min_of([self.L] + [where(c, o, self.L) for o, c in zip(self.OFFSETS, conditions)])

    def offsets_max(self, conditions):
        """Max of {o \\in Offsets : conditions[o]} (-1 when the set is empty)."""
        return max_of([NIL] + [where(c, o, NIL) for o, c in zip(self.OFFSETS, conditions)])

    # ------------------------------------------------------------------------------------
    # controller actions (in every version's Next)
    # ------------------------------------------------------------------------------------
    @action(r="REPLICAS")
    def controller_shrink_isr(self, s, r):
        """ControllerShrinkIsr: the controller takes a failed broker out of the ISR.

        Node failures are not modelled: a broker taken out of the ISR may keep
        fetching at once or later, so a clean shutdown and a zombie that keeps
        making progress are the same here. When the failed broker is the leader,
        the leader becomes None and it leaves the ISR unless it is the ISR's only
        member; electing a new leader is a separate step. When it is another ISR
        member, it leaves the ISR and the leader stays. Either way the controller
        bumps the leader epoch and sends a LeaderAndIsr request.
        """
        is_leader = s.q_leader == r
        only_member = s.q_isr[r] & all_of(~s.q_isr[i] for i in self.REPLICAS if i != r)
        s.require(is_leader | s.q_isr[r])
        s.require(self.controller_update_isr_guard(s))
        new_leader = where(is_leader, self.NONE, s.q_leader)
        new_isr = [s.q_isr[i] if i != r else (is_leader & only_member) for i in self.REPLICAS]
        self.controller_update_isr(s, new_leader, new_isr)

    @action(l="REPLICAS")
    def controller_elect_leader(self, s, l):
        """ControllerElectLeader: clean election of an ISR member other than the current leader.

        Triggered by a broker failure or by leader balancing; here the controller
        may choose to elect at any time. The leader epoch is bumped and the ISR kept.
        """
        s.require(s.q_isr[l] & (s.q_leader != l))
        s.require(self.controller_update_isr_guard(s))
        self.controller_update_isr(s, l, [s.q_isr[i] for i in self.REPLICAS])

    # ------------------------------------------------------------------------------------
    # replica actions shared by every version
    # ------------------------------------------------------------------------------------
    @action(l="REPLICAS", e="EPOCHS")
    def become_leader(self, s, l, e):
        """BecomeLeader: replica l applies a LeaderAndIsr request naming it leader, with a higher epoch than its own.

        Requests can be lost, duplicated or reordered: any request in the set may
        be observed, and older epochs are ignored. The new leader keeps its own
        high watermark, which typically lags the previous leader's "true" one.
        """
        s.require(self.request_exists(s, e) & (s.req_leader[e] == l) & (e > s.leader_epoch[l]))
        s.leader_epoch[l] = e
        s.leader[l] = l
        for i in self.REPLICAS:
            s.isr[l][i] = s.req_isr[e][i]

    @action(r="REPLICAS")
    def leader_write(self, s, r):
        """LeaderWrite: a replica that presumes to lead appends the next record, tagged with its leader epoch.

        A presumed leader accepts writes even when it is wrong: replication then
        fails and the ISR shrinks; Kafka's primary fencing of zombies is in ISR changes.
        """
        s.require(self.presumes_leadership(s, r))
        s.require(s.next_record_id <= self.M - 1)                 # RecordSeq!NextId(id)
        s.require(self.append_guard(s, r, s.log_end_offset[r]))
        self.append(s, r, s.next_record_id, s.leader_epoch[r])
        s.next_record_id = s.next_record_id + 1

    # ------------------------------------------------------------------------------------
    # leader and follower actions before KIP-320 (replaced by Kip320FirstTry and Kip320)
    # ------------------------------------------------------------------------------------
    @action(l="REPLICAS", r="REPLICAS")
    def leader_shrink_isr(self, s, l, r):
        """LeaderShrinkIsr: the leader drops an ISR member (other than itself) that is not caught up to its end offset.

        ISR changes are fenced by the write to the quorum: allowed only for the
        true leader on the current epoch (zkVersion propagation is not modelled).
        """
        s.require(r != l)
        s.require(s.isr[l][r] & ~self.is_follower_caught_up(s, l, r, s.log_end_offset[l]))
        s.require(self.quorum_update_guard(s, l))
        self.quorum_update_leader_and_isr(s, l, [s.isr[l][i] & (i != r) for i in self.REPLICAS])

    @action(l="REPLICAS", r="REPLICAS")
    def leader_expand_isr(self, s, l, r):
        """LeaderExpandIsr: the leader adds a replica that follows it and has caught up to its high watermark.

        Zombie leaders are fenced by the conditional write to the quorum: allowed
        only when the leader is the true leader on the quorum's epoch.
        """
        s.require(~s.isr[l][r] & self.is_follower_caught_up(s, l, r, s.hw[l]))
        s.require(self.quorum_update_guard(s, l))
        self.quorum_update_leader_and_isr(s, l, [s.isr[l][i] | (i == r) for i in self.REPLICAS])

    @action(l="REPLICAS")
    def leader_inc_high_watermark(self, s, l):
        """LeaderIncHighWatermark: the old rule; the HW moves up one offset when every member of the
        leader's ISR follows it and holds the offset at the HW (no leader epoch check).

        Fetches are not modelled: followers that acknowledge the leader could all
        fetch and so advance the HW; this is that transition.
        """
        hw = s.hw[l]
        s.require(self.presumes_leadership(s, l) & (hw < self.L))   # offset \in Offsets, offset = hw
        s.require(all_of(~s.isr[l][f] | (self.is_following(s, f, l) & self.has_offset(s, f, hw))
                         for f in self.REPLICAS))
        s.hw[l] = hw + 1

    @action(f="REPLICAS", l="REPLICAS")
    def follower_replicate(self, s, f, l):
        """FollowerReplicate: a follower copies the leader's next record while both agree on who leads.

        No fencing: neither the current leader epoch nor the epoch of the last
        fetched record is checked. The follower's HW becomes Min({leader's hw, its new end offset}).
        """
        s.require(self.presumes_leadership(s, l) & self.is_following(s, f, l))
        s.require(self.replicate_to_guard(s, l, f))
        new_hw = min_of([s.hw[l], s.log_end_offset[f] + 1])
        self.replicate_to(s, l, f)
        s.hw[f] = new_hw

    # ------------------------------------------------------------------------------------
    # invariants
    # ------------------------------------------------------------------------------------
    @invariant("type-ok")
    def type_ok(self, s):
        """TypeOk: every variable has its TLA+ type.

        Id sequences within 0 .. MaxId + 1; each log an end offset in 0 .. LogSize with
        records from LogRecords below it and Nil from it on; each replica state and
        the quorum state (and every request) well formed. When it breaks, the port
        has produced a state the TLA+ spec cannot have.
        """
        ok = [(s.next_record_id >= 0) & (s.next_record_id <= self.M),
              (s.next_leader_epoch >= 0) & (s.next_leader_epoch <= self.E + 1),
              (s.q_leader_epoch >= NIL) & (s.q_leader_epoch <= self.E),
              (s.q_leader >= 0) & (s.q_leader <= self.NONE)]
        for r in self.REPLICAS:
            end = s.log_end_offset[r]
            ok.append((end >= 0) & (end <= self.L))
            for o in self.OFFSETS:
                nil = (s.log_id[r][o] == NIL) & (s.log_epoch[r][o] == NIL)
                ok.append(where(o < end, self.entry_is_log_record(s, r, o), nil))
            ok.append((s.hw[r] >= 0) & (s.hw[r] <= self.L))
            ok.append((s.leader_epoch[r] >= NIL) & (s.leader_epoch[r] <= self.E))
            ok.append((s.leader[r] >= 0) & (s.leader[r] <= self.NONE))
        for e in self.EPOCHS:
            ok.append(~s.req_sent[e] | ((s.req_leader[e] >= 0) & (s.req_leader[e] <= self.NONE)))
        return all_of(ok)

    def isr_replicated_below_hw(self, s, member):
        ok = []
        for r1 in self.REPLICAS:
            hw = s.hw[r1]
            for r2 in self.REPLICAS:
                for o in self.OFFSETS:
                    ok.append(~self.presumes_leadership(s, r1) | (hw == 0) | ~member(r1, r2) | (o >= hw)
                              | self.same_entry(s, r1, r2, o))
        return all_of(ok)

    @invariant("weak-isr")
    def weak_isr(self, s):
        """WeakIsr: members of a presumed leader's own ISR hold exactly its records below its high watermark.

        Weak, because leaders are elected from the quorum's ISR, not the leader's;
        still intuitively expected. When it breaks, a leader believes a replica is
        in sync that lacks (or differs in) records it has exposed to consumers.
        """
        return self.isr_replicated_below_hw(s, lambda r1, r2: s.isr[r1][r2])

    @invariant("strong-isr")
    def strong_isr(self, s):
        """StrongIsr: members of the quorum's ISR hold exactly a presumed leader's records below its high watermark.

        This ensures that data exposed to consumers is present on any broker that
        becomes leader. When it breaks, the controller can elect an ISR member that
        lacks committed records: committed data is lost.
        """
        return self.isr_replicated_below_hw(s, lambda r1, r2: s.q_isr[r2])

    @invariant("leader-in-isr")
    def leader_in_isr(self, s):
        """LeaderInIsr: the quorum's leader is a member of the quorum's ISR.

        As written in the TLA+ (quorumState.leader \\in quorumState.isr) it is false
        whenever the leader is None, including the initial state. When it breaks
        with a real leader, the partition is led by a replica not known to hold
        the committed records.
        """
        return (s.q_leader != self.NONE) & s.q_isr[s.q_leader]
