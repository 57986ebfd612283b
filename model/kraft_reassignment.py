"""Partition reassignment as the KRaft controller and brokers run it (mixed into model/kraft.py's KRaftReplication).

The bound ``reassignments`` and the options ``reassign_add`` / ``reassign_remove`` are the ZooKeeper era's
(model/reassignment.py): with ``reassignments`` at 0 none of this exists. With it above 0 the partition registration
carries its replica set (``q_replicas``, with ``q_adding`` and ``q_removing`` while a reassignment runs), every
partition record in the metadata window carries its own (``mlog_replicas``), each broker's image says whether it holds
a replica (``img_replica``), and a leader keeps the replica set of the record it made itself leader with
(``assigned``: Partition.remoteReplicasMap).

Kafka 3.9 (ReplicationControlManager, PartitionChangeBuilder, PartitionReassignmentReplicas):

- the admin's AlterPartitionReassignments (``alter_partition_reassignments``): changePartitionReassignment writes one
  PartitionChangeRecord with replicas = target + removing, addingReplicas and removingReplicas; adding replicas
  leaves the leader epoch alone (the new replica list contains the old one);
- the completion runs in every PartitionChangeBuilder.build (completeReassignmentIfNeeded, first of all): once the
  target ISR less the removing replicas is not empty and holds every target replica
  (PartitionReassignmentReplicas.maybeCompleteReassignment, 3.8+; 3.1-3.7 wait for the adding replicas only,
  KAFKA-15665), the record narrows the ISR to it, sets replicas = target
  and clears adding and removing; the election that follows (tryElection, electAnyLeader) replaces a leader that left
  the ISR; triggerLeaderEpochBumpForReplicaReassignmentIfNeeded bumps the leader epoch when the new replica list lacks
  a broker of the old one and the leader does not change (setLeader(current)). The builders that can meet a target ISR
  covering the target are the reassignment's own, AlterPartition's (the leader's expansion; an answer with
  NEW_LEADER_ELECTED when the completion elects another leader) and every other builder of the model
  (fencing, controlled shutdown, unfencing, elections), which run it on their own target ISR (the last known
  leader's election starts from an empty ISR: it never completes one);
- min.insync.replicas counts at most the replication factor (Partition.effectiveMinIsr, the leader's assignment;
  ReplicationControlManager.getTopicEffectiveMinIsr, the registration's replicas), which a reassignment changes;
- a broker applying a record that does not name it, after an image that did (TopicsDelta.localChanges deletes),
  stops the partition and deletes its log (ReplicaManager.applyDelta -> stopPartitions, deleteLocalLog = true);
  a broker named by a record it did not hold a replica for creates the partition (makeFollower or makeLeader).
  A broker that was down when its replica was removed finds its log stray at its first publish
  (LogManager.startup, isStrayKraftReplica, 3.7+) and no longer uses it.

Departures (each a sound over-approximation for safety unless said):
- the admin neither cancels a reassignment nor replaces a running one (cancelPartitionReassignment): an input the
  bounds leave out, as in the ZooKeeper era;
- the added brokers need only be registered (validateManualPartitionAssignment): every broker of the model is;
- the admin's target list is a set plus its first broker (the preferred replica, ``p``); any order of the others;
- a stray log is dropped at once (Kafka renames it with the -stray suffix and deletes it later): nothing reads it;
- the record of handleBrokerUncleanShutdown (ELR on) completes a reassignment keeping the leader: only an election
  from the ELR, or an unclean one, leaves an ISR holding the target uncompleted (they set the ISR after the
  completion's check), and it elected that ISR's one member, a target replica;
- AlterPartition's validateIsr (INVALID_REQUEST for an ISR member outside the replica set) is not modelled: no
  request reaches it. A leader's ISR and replica set come from the same record (makeLeader) or from an accepted
  answer with its own leader epoch, and a completion that removes a replica changes the leader epoch, whose answer
  the leader ignores; so a request carrying the current partition epoch proposes replicas of the current set;
- an accepted answer commits the ISR the leader proposed (Partition.handleAlterPartitionUpdate takes the answer's):
  the two differ only when the record completes a reassignment that removes a replica, whose answer carries a new
  leader epoch and is ignored.
"""
from __future__ import annotations

from isrcheck.model.expr import all_of, any_of, count_of, where
from isrcheck.model.layout import Field
from isrcheck.model.spec import action


def _not(value):
    """Negation of a state value or of a constant (Python's ``~False`` is -1)."""
    return (not value) if isinstance(value, bool) else ~value


class KRaftReassignment:
    """The replica set in the metadata log, and its changes (see the module doc)."""

    #: 3.8+ (KAFKA-15665): a reassignment completes only once the ISR less the removing replicas holds every target
    #: replica; 3.1-3.7 wait for the adding replicas alone (PartitionReassignmentReplicas.maybeCompleteReassignment)
    completion_waits_for_every_target = True

    def kraft_reassignment_fields(self):
        """The KRaft-only fields of reassignment (none unless ``reassignments`` is above 0)."""
        if not self.reassign:
            return []
        R, W = self.R, self.W
        return [
            Field("mlog_replicas", 0, 1, (W, R), boolean=True, axes=(None, "replica"),
                  doc="the replica set of the partition record k+1 records before the controller's"),
            Field("img_replica", 0, 1, (R,), boolean=True, axes=("replica",),
                  doc="the broker's metadata image names it a replica (it holds the Partition and its log)"),
        ]

    def initial_kraft_reassignment(self, s):
        """The first R - reassign_add brokers hold the partition's replicas and know it."""
        if self.reassign:
            for r in self.REPLICAS:
                s.img_replica[r] = r < self.R - self.ADD

    # ------------------------------------------------------------------------------------
    # the builder's steps (PartitionChangeBuilder.build, 3.9)
    # ------------------------------------------------------------------------------------
    def assignment(self, s, plan=None):
        """(replicas, adding, removing) of the partition registration, or of ``plan`` (the builder's targets)."""
        if plan is not None:
            return plan
        return ([s.q_replicas[i] for i in self.REPLICAS], [s.q_adding[i] for i in self.REPLICAS],
                [s.q_removing[i] for i in self.REPLICAS])

    def completion(self, s, isr, plan=None):
        """PartitionChangeBuilder.completeReassignmentIfNeeded (3.9; since 3.1) on target ISR ``isr``: (the ISR
        after it, whether it completes). It completes when the ISR less the removing replicas is not empty and holds
        every target replica (PartitionReassignmentReplicas.maybeCompleteReassignment, 3.8+; before, every adding
        replica: ``completion_waits_for_every_target``)."""
        if not self.reassign:
            return isr, False
        replicas, adding, removing = self.assignment(s, plan)
        kept = [isr[i] & _not(removing[i]) for i in self.REPLICAS]
        running = any_of(adding[i] | removing[i] for i in self.REPLICAS)
        if self.completion_waits_for_every_target:
            waited = [replicas[i] & _not(removing[i]) for i in self.REPLICAS]
        else:
            waited = adding
        completes = running & any_of(kept) & all_of(_not(waited[i]) | kept[i] for i in self.REPLICAS)
        return [where(completes, kept[i], isr[i]) for i in self.REPLICAS], completes

    def replicas_after(self, s, completes, plan=None):
        """The replica set of the record: the target where it completes the reassignment, else the current one."""
        if not self.reassign:
            return [True for _ in self.REPLICAS]
        replicas, _, removing = self.assignment(s, plan)
        return [where(completes, replicas[i] & _not(removing[i]), replicas[i]) for i in self.REPLICAS]

    def reassignment_epoch(self, s, leader, epoch, completes, plan=None):
        """PartitionChangeBuilder.triggerLeaderEpochBumpForReplicaReassignmentIfNeeded (3.9; since 3.3, KAFKA-12803
        review): a record whose replica list drops a broker and that changes no leader sets the leader anyway, so the
        leader epoch moves (the removed replica's fetches are fenced, the leader learns the smaller assignment)."""
        if not self.reassign:
            return epoch
        shrinks = completes & any_of(self.assignment(s, plan)[2])
        return where(shrinks & (leader == s.q_leader) & (epoch == s.q_epoch), s.q_epoch + 1, epoch)

    def write_replicas(self, s, completes, when, plan=None):
        """The record (where ``when``) sets the replica set of ``plan`` (default: keeps the registration's), or the
        target, clearing adding and removing, where it ``completes``; the previous registration's replica set enters
        the window."""
        if not self.reassign:
            return
        replicas, adding, removing = self.assignment(s, plan)
        after = self.replicas_after(s, completes, plan)
        for k in reversed(range(1, self.W)):
            for i in self.REPLICAS:
                s.mlog_replicas[k][i] = where(when, s.mlog_replicas[k - 1][i], s.mlog_replicas[k][i])
        for i in self.REPLICAS:
            s.mlog_replicas[0][i] = where(when, s.q_replicas[i], s.mlog_replicas[0][i])
            s.q_replicas[i] = where(when, after[i], s.q_replicas[i])
            s.q_adding[i] = where(when, adding[i] & _not(completes), s.q_adding[i])
            s.q_removing[i] = where(when, removing[i] & _not(completes), s.q_removing[i])

    def replicas_at(self, s, k):
        """The replica set of the partition record ``k`` records before the controller's (k constant)."""
        if not self.reassign:
            return [True for _ in self.REPLICAS]
        if k == 0:
            return [s.q_replicas[i] for i in self.REPLICAS]
        return [s.mlog_replicas[k - 1][i] for i in self.REPLICAS]

    # ------------------------------------------------------------------------------------
    # the admin and the controller
    # ------------------------------------------------------------------------------------
    @action(t="TARGETS", p="REPLICAS", l="LEADER_CHOICES")
    def alter_partition_reassignments(self, s, t, p, l):
        """The admin reassigns the partition to the brokers of bitmask t, p first (the preferred replica); the
        controller writes the reassignment's first record, which completes it at once if the ISR already holds the
        target (then l leads if the leader leaves; R: the leader stays or none is valid).

        Kafka: QuorumController.alterPartitionReassignments -> ReplicationControlManager.alterPartitionReassignment ->
        changePartitionReassignment (3.9; since 3.1, KAFKA-12803: KIP-455 in KRaft):
        PartitionReassignmentReplicas(current, target) gives replicas = target + removing, adding and removing;
        PartitionChangeBuilder.build runs completeReassignmentIfNeeded, tryElection and the epoch bump for a replica
        list that shrinks.
        """
        inside = [i for i in self.REPLICAS if t >> i & 1]
        outside = [i for i in self.REPLICAS if not t >> i & 1]
        if not self.reassign or p not in inside:
            s.require(False)
            return
        s.require((s.reassigns < self.N_REASSIGN) & ~self.reassigning(s)
                  & (count_of(~s.q_replicas[i] for i in inside) == self.ADD)
                  & (count_of(s.q_replicas[i] for i in outside) == self.REMOVE))
        # PartitionReassignmentReplicas(current, target): replicas = target + removing
        plan = ([s.q_replicas[i] | (i in inside) for i in self.REPLICAS],
                [~s.q_replicas[i] if i in inside else False for i in self.REPLICAS],
                [s.q_replicas[i] if i in outside else False for i in self.REPLICAS])
        isr, completes = self.completion(s, [s.q_isr[i] for i in self.REPLICAS], plan)
        leader, epoch, new_isr, elr, choice_ok = self.elect(s, l, isr, removed=None, completes=completes, plan=plan)
        epoch = self.reassignment_epoch(s, leader, epoch, completes, plan)
        s.require(choice_ok & (epoch <= self.E) & self.window_has_room(s))
        s.reassigns = s.reassigns + 1
        s.q_preferred = p
        self.write_partition(s, leader, epoch, new_isr, elr, completes=completes, plan=plan)

    # ------------------------------------------------------------------------------------
    # the brokers
    # ------------------------------------------------------------------------------------
    def delete_replica(self, s, r, when):
        """Broker r stops its replica and deletes the log (where ``when``): ReplicaManager.stopPartitions (3.9) removes
        the fetcher and the Partition, completes the requests in its purgatories (NOT_LEADER_OR_FOLLOWER) and
        LogManager.asyncDelete drops the log, its leader-epoch checkpoint and its HW checkpoint entry."""
        s.leader[r] = where(when, self.NONE, s.leader[r])
        s.leader_epoch[r] = where(when, 0, s.leader_epoch[r])
        s.pe_lag[r] = where(when, self.W, s.pe_lag[r])
        s.alter_pending[r] = s.alter_pending[r] & ~when
        s.truncating[r] = s.truncating[r] & ~when
        s.diverging_end[r] = where(when, 0, s.diverging_end[r])
        s.ack_from[r] = where(when, 0, s.ack_from[r])
        s.epoch_start[r] = where(when, 0, s.epoch_start[r])
        for o in self.OFFSETS:
            s.log_record[r][o] = where(when, 0, s.log_record[r][o])
            s.log_epoch[r][o] = where(when, 0, s.log_epoch[r][o])
        for e in self.EPOCHS:
            s.epoch_cache[r][e - 1] = where(when, -1, s.epoch_cache[r][e - 1])
        for x in ("leo", "hw", "flushed", "checkpoint_hw"):
            getattr(s, x)[r] = where(when, 0, getattr(s, x)[r])
        for i in self.REPLICAS:
            s.isr[r][i] = s.isr[r][i] & ~when
            s.pending_isr[r][i] = s.pending_isr[r][i] & (~when | s.ap_sent[r])
            s.remote_leo[r][i] = where(when, -1, s.remote_leo[r][i])
            s.caught_up[r][i] = s.caught_up[r][i] & ~when
            s.fetch_recent[r][i] = s.fetch_recent[r][i] & ~when
            s.last_fetch_leo[r][i] = where(when, -1, s.last_fetch_leo[r][i])
            s.assigned[r][i] = s.assigned[r][i] & ~when
            if self.eligibility_lag:
                s.eligible_view[r][i] = s.eligible_view[r][i] & ~when

    def forget_partition(self, s, r):
        """A stopped broker's Partition is gone: it keeps no assignment (its metadata image goes too: ``restart``)."""
        for i in self.REPLICAS:
            s.assigned[r][i] = False
