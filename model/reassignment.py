"""Partition reassignment as the ZooKeeper-era controller runs it (mixed into model/kafka.py's KafkaReplication).

The partition's replica set is state: ``q_replicas`` (RS in ZooKeeper: the original replicas plus the target ones
while a reassignment runs), ``q_adding`` (AR) and ``q_removing`` (RR); the target is RS - RR. With the bound
``reassignments`` at 0 (the default) none of it exists: every broker holds a replica, as before. With it above 0,
the last ``reassign_add`` brokers start without a replica of the partition, and the admin may start that many
reassignments one after the other, each adding ``reassign_add`` brokers and removing ``reassign_remove`` replicas
(any such target set: moving the leader or not, a broker that was removed before coming back).

Kafka: KafkaController.onPartitionReassignment (2.4.0-2.8.x; the same phases since 0.8 through the
/admin/reassign_partitions znode) runs in the controller's event thread, so each of its phases is one step here:

- phase U and A (``start_reassignment``): RS = ORS + TRS, AR, RR in ZooKeeper; since the target is not yet in the ISR,
  A1 updateLeaderEpochAndSendRequest bumps the leader epoch (leader and ISR unchanged) and sends LeaderAndIsr with
  the new RS to every replica of RS; A2 starts the adding replicas (NewReplica: the same LeaderAndIsr);
- phase A again (``resume_reassignment``): the same, when the controller resumes an incomplete reassignment;
- phase B (``complete_reassignment``), once every target replica is in the ISR in ZooKeeper
  (isReassignmentComplete): B2 RS = TRS; B3 moveReassignedPartitionLeaderIfRequired elects a leader of the target
  (ReassignPartitionLeaderElectionStrategy: a live target replica in the ISR) if the leader is not in it or is
  dead, else bumps the leader epoch; either way LeaderAndIsr with RS = TRS goes to the target replicas, and the
  removed ones hear nothing more of the leader ("this will prevent the leader from adding any replica in [RR] back
  in the isr"); B4 takes each removed replica offline: removeReplicasFromIsr drops it from the ISR with another
  leader epoch (leader -1 if it led; the last ISR member stays) and StopReplica goes to it; B5 StopReplica with
  delete=true; B6 RS = TRS in ZooKeeper;
- the removed replica (``apply_stop_replica``): ReplicaManager.stopReplicas removes the partition, stops its
  fetcher and deletes the log; since 2.4 (KAFKA-9198) it also completes the produce requests waiting in its
  purgatory, which before waited for request.timeout.ms (``stop_replica_completes_produce``).

Call sites of onPartitionReassignment (2.4.0-2.8.x) and the step covering each:
maybeTriggerPartitionReassignment (processApiPartitionReassignment: AlterPartitionReassignments;
processZkPartitionReassignment: the znode) -> ``start_reassignment``; maybeResumeReassignments (onBrokerStartup
for a target replica's broker, initializePartitionReassignments on controller failover) -> ``resume_reassignment``
when the target is not in the ISR, ``complete_reassignment`` when it is; processPartitionReassignmentIsrChange (the
ISR znode's watch, before 2.7) and processAlterIsr -> maybeCompleteReassignment (2.7+) -> ``complete_reassignment``.
Call sites of updateLeaderEpochAndSendRequest: onPartitionReassignment (A1) and moveReassignedPartitionLeaderIfRequired
(B3), both covered. ReplicaStateMachine's OfflineReplica transition (removeReplicasFromIsr) is also reached from
onBrokerFailure, which is ``controller_shrink_isr`` / ``controller_offline`` (model/kafka.py).

What the replica set changes elsewhere: the controller elects only replicas of RS (PartitionLeaderElectionAlgorithms
reads the assignment) and sends each LeaderAndIsr to the replicas it names (ControllerChannelManager
.addLeaderAndIsrRequestForBrokers); a leader serves records to, and counts in its HW and ISR, only the replicas
of its own assignment (Partition.updateFollowerFetchState answers any other with no records: ReplicaManager logs
"the replica is not recognized to be one of the assigned replicas").

Departures (each a sound over-approximation for safety unless said):
- the admin neither cancels a reassignment nor replaces a running one (U3): an input the bounds leave out, as they
  bound the records producers send;
- a reassignment that completes at once (nothing added, the target already in the ISR) takes two steps, start
  then complete: nothing the controller does in between depends on the first;
- the removed replica's two StopReplica requests (B4: delete=false, B5: delete=true) are one step: in between the
  replica is out of the ISR and leads and follows no one, so its log matters to nothing;
- a StopReplica in flight is applied before any later LeaderAndIsr reaches the broker (the controller's requests to
  a broker go in order on one connection) and dies with the broker's connection; the broker keeps the log of a
  replica it never heard was removed (a stray log, as ZooKeeper-era brokers do);
- ``resume_reassignment`` may come any time a reassignment is incomplete (Kafka: a target broker's startup, a
  controller failover);
- not with ``controller_failover`` (a deposed controller's requests would carry a replica set of their own) or
  ``proof_ghosts`` (the kip-320 proof lemmas assume a fixed replica set): such bounds are refused.
"""
from __future__ import annotations

from isrcheck.model.expr import all_of, any_of, count_of, max_of, where
from isrcheck.model.layout import Field
from isrcheck.model.spec import Bound, BoundsError, action

#: the bounds and options of reassignment (KafkaReplication.declared_bounds)
REASSIGNMENT_BOUNDS = (
    Bound("reassignments", 0, 0, 3, "partition reassignments the admin starts, one after the other "
          "(AlterPartitionReassignments, KIP-455; 0: the replica set never changes)", kind="bound"),
    Bound("reassign_add", 1, 0, 4, "brokers each reassignment adds to the replica set (the last ones start without a "
          "replica)"),
    Bound("reassign_remove", 1, 0, 2, "replicas each reassignment removes from the replica set"),
)


class ZkReassignment:
    """The replica set and the controller's reassignment steps (see the module doc)."""

    #: 2.4+ (KAFKA-9198): StopReplica completes the produce requests waiting in the broker's purgatory
    #: (ReplicaManager.stopReplicas -> completeDelayedFetchOrProduceRequests); before, they wait for their timeout
    stop_replica_completes_produce = False
    #: B3 bumps the leader epoch even when the leader stays, so the leader learns the target replica set and adds
    #: no removed replica back to the ISR ("This will prevent the leader from adding any replica in TRS - ORS back
    #: in the isr", KafkaController 2.4-2.8; the point of KAFKA-12803's review for KRaft). False: a version built
    #: without it, where only a new leader or a removed ISR member brings a new epoch
    reassignment_bumps_epoch = True

    def configure_reassignment(self, b):
        self.reassign = b.reassignments > 0
        self.N_REASSIGN, self.ADD, self.REMOVE = b.reassignments, b.reassign_add, b.reassign_remove
        #: a StopReplica leaves produce requests waiting for their timeout (before 2.4): ``produce_orphaned``
        self.orphans = self.reassign and not self.stop_replica_completes_produce and bool(b.acks_all)
        self.TARGETS = range(1, 2 ** self.R)       # a target replica set as a bitmask of brokers
        if not self.reassign:
            return
        if self.ADD + self.REMOVE == 0:
            raise BoundsError(f"{self.name}: --set reassign_add=0 with reassign_remove=0 moves nothing")
        if self.ADD >= self.R:
            raise BoundsError(f"{self.name}: --set reassign_add={self.ADD} leaves no broker to start with a replica "
                              f"(--replicas {self.R})")
        for option in ("controller_failover", "proof_ghosts"):
            if getattr(b, option):
                raise BoundsError(f"{self.name}: --reassignments with --set {option}=1 is not modelled")

    def reassignment_fields(self):
        """State fields of reassignment (none unless ``reassignments`` is above 0)."""
        if not self.reassign:
            return []
        R, E = self.R, self.E
        rep = ("replica",)
        out = [
            Field("q_replicas", 0, 1, (R,), boolean=True, axes=rep,
                  doc="the partition's replica set in ZooKeeper (RS; original plus target while a reassignment runs)"),
            Field("q_adding", 0, 1, (R,), boolean=True, axes=rep, doc="AR: the replicas the reassignment adds"),
            Field("q_removing", 0, 1, (R,), boolean=True, axes=rep, doc="RR: the replicas the reassignment removes"),
            Field("reassigns", 0, self.N_REASSIGN, unbounded=True, doc="reassignments started so far"),
            Field("req_replicas", 0, 1, (E, R), boolean=True, axes=(None, "replica"),
                  doc="the replica set each LeaderAndIsr carries; it goes to those brokers"),
            Field("assigned", 0, 1, (R, R), boolean=True, axes=("replica", "replica"),
                  doc="as leader: the replica set of its LeaderAndIsr (Partition's assignment)"),
            Field("stop_epoch", 0, E, (R,), axes=rep, unbounded=True,
                  doc="a StopReplica (delete) in flight to the broker: the leader epoch when it was sent (0: none)"),
        ]
        if self.orphans:
            out.append(Field("produce_orphaned", 0, 1, (R,), boolean=True, axes=rep,
                             doc="the broker stopped its replica while produce requests waited in its purgatory: "
                                 "they are answered only by their timeout (before 2.4, KAFKA-9198)"))
        return out

    def initial_reassignment(self, s):
        """The first R - reassign_add brokers hold the partition's replicas, all in the ISR; the others none."""
        if not self.reassign:
            return
        for r in self.REPLICAS:
            s.q_replicas[r] = r < self.R - self.ADD
            s.q_isr[r] = r < self.R - self.ADD

    # ------------------------------------------------------------------------------------
    # the replica set as the rest of the model reads it (every broker when reassignment is off)
    # ------------------------------------------------------------------------------------
    def is_replica(self, s, r):
        """r is in the partition's replica set (RS in ZooKeeper)."""
        return s.q_replicas[r] if self.reassign else True

    def serves(self, s, l, f):
        """Leader l counts f as one of its followers: f is in l's assignment (Partition.remoteReplicasMap)."""
        return s.assigned[l][f] if self.reassign else True

    def target(self, s, i):
        """i is in the target replica set (TRS = RS - RR)."""
        return s.q_replicas[i] & ~s.q_removing[i]

    def reassigning(self, s):
        """A reassignment is in progress (AR or RR not empty: ReplicaAssignment.isBeingReassigned)."""
        return any_of(s.q_adding[i] | s.q_removing[i] for i in self.REPLICAS)

    def target_in_isr(self, s):
        """KafkaController.isReassignmentComplete: every target replica is in the ISR in ZooKeeper."""
        return all_of(~self.target(s, i) | s.q_isr[i] for i in self.REPLICAS)

    def record_replicas(self, s, e, when):
        """The LeaderAndIsr of epoch ``e`` (where ``when``) carries, and goes to, the replica set in ZooKeeper now."""
        for i in self.REPLICAS:
            s.req_replicas[e - 1][i] = where(when, s.q_replicas[i], s.req_replicas[e - 1][i])

    def learn_assignment(self, s, r, e):
        """Broker r applies the LeaderAndIsr of epoch e: as its leader it keeps the replica set it carries."""
        for i in self.REPLICAS:
            s.assigned[r][i] = (s.req_leader[e - 1] == r) & s.req_replicas[e - 1][i]

    def forget_partition(self, s, r):
        """r holds no Partition any more (it stopped, or its replica was removed): no assignment, nothing pending."""
        for i in self.REPLICAS:
            s.assigned[r][i] = False
        s.stop_epoch[r] = 0

    # ------------------------------------------------------------------------------------
    # the controller
    # ------------------------------------------------------------------------------------
    @action(t="TARGETS")
    def start_reassignment(self, s, t):
        """The admin reassigns the partition to the brokers of bitmask t; the controller runs phases U and A.

        Kafka: KafkaController.processApiPartitionReassignment (AlterPartitionReassignments, 2.4+; the
        /admin/reassign_partitions znode: processZkPartitionReassignment) -> replicasAreValid (the added brokers are
        live) -> maybeTriggerPartitionReassignment -> onPartitionReassignment (2.4.0-2.8.x): U1/U2 RS = ORS + TRS,
        AR, RR; not complete, so A1 updateLeaderEpochAndSendRequest (leader epoch + 1, LeaderAndIsr with the new RS to
        every replica of RS) and A2 (the adding replicas: NewReplica, the same request).
        """
        if not self.reassign:
            s.require(False)
            return
        inside = [i for i in self.REPLICAS if t >> i & 1]
        outside = [i for i in self.REPLICAS if not t >> i & 1]
        s.require((s.reassigns < self.N_REASSIGN) & ~self.reassigning(s)
                  & (count_of(~s.q_replicas[i] for i in inside) == self.ADD)
                  & (count_of(s.q_replicas[i] for i in outside) == self.REMOVE)
                  & all_of(s.q_replicas[i] | s.up[i] for i in inside))
        complete = all_of(s.q_isr[i] for i in inside)       # possible only when nothing is added
        s.require(complete | (s.q_epoch < self.E))
        s.reassigns = s.reassigns + 1
        for i in self.REPLICAS:
            if i in inside:
                s.q_adding[i] = ~s.q_replicas[i]
                s.q_replicas[i] = True
            else:
                s.q_removing[i] = s.q_replicas[i]
        self.send_leader_and_isr(s, s.q_epoch + 1, s.q_leader, [s.q_isr[i] for i in self.REPLICAS], when=~complete)

    @action()
    def resume_reassignment(self, s):
        """The controller resumes a reassignment whose target is not yet in the ISR: phase A again.

        Kafka: KafkaController.maybeResumeReassignments -> onPartitionReassignment (2.4.0-2.8.x), from
        onBrokerStartup (a target replica's broker registers) and initializePartitionReassignments (controller
        failover): A1 updateLeaderEpochAndSendRequest bumps the leader epoch and sends LeaderAndIsr to RS again.
        """
        if not self.reassign:
            s.require(False)
            return
        s.require(self.reassigning(s) & ~self.target_in_isr(s) & (s.q_epoch < self.E))
        self.send_leader_and_isr(s, s.q_epoch + 1, s.q_leader, [s.q_isr[i] for i in self.REPLICAS])

    @action(l="LEADER_CHOICES", first="LEADER_CHOICES")
    def complete_reassignment(self, s, l, first):
        """Every target replica is in the ISR: the controller completes the reassignment (phase B), l leading after B3,
        the removed replica ``first`` leaving the ISR first (R: none is removed).

        Kafka: onPartitionReassignment phase B (2.4.0-2.8.x), reached from processPartitionReassignmentIsrChange (the
        ISR znode's watch, before 2.7), processAlterIsr -> maybeCompleteReassignment (2.7+) and maybeResumeReassignments.
        B3 moveReassignedPartitionLeaderIfRequired: a leader in the target and alive stays (updateLeaderEpochAndSendRequest:
        epoch + 1; the controller takes a leader for alive until it has handled its failure, after which the leader
        in ZooKeeper is another or none); otherwise PartitionStateMachine elects l, a live target replica in the ISR
        (reassignPartitionLeaderElection: the first such in the admin's target list, any one here), epoch + 1; with no
        such replica the election fails and the leader stays (l: the current one, no new epoch). LeaderAndIsr with
        RS = TRS goes to the target replicas. B4: ReplicaStateMachine OfflineReplica for each removed replica:
        StopReplica, and doRemoveReplicasFromIsr drops it from the ISR with a new leader epoch (leader -1 if it led;
        the last ISR member stays), LeaderAndIsr to the target replicas; B5 StopReplica (delete); B6 RS = TRS.
        The removed replicas go in the order of RR (ReplicaStateMachine.handleStateChanges groups them by replica
        in an insertion-ordered map), which is the original assignment's: any order here.
        """
        if not self.reassign:
            s.require(False)
            return
        target = [self.target(s, i) for i in self.REPLICAS]
        leader = s.q_leader
        # isReplicaOnline: the controller takes the leader for alive until it handles the broker's failure, which
        # elects another leader or none (elect_leader, controller_offline)
        stays = any_of((leader == i) & target[i] for i in self.REPLICAS)
        candidates = [target[i] & s.q_isr[i] & s.up[i] for i in self.REPLICAS]
        if l < self.R:
            moves = ~stays & (leader != l) & candidates[l]
            keeps = (leader == l) & (stays | ~any_of(candidates))
            bump = moves | stays if self.reassignment_bumps_epoch else moves
        else:       # the partition has no leader and no target replica can be elected
            moves, keeps, bump = False, (leader == self.NONE) & ~any_of(candidates), False
        s.require(self.reassigning(s) & self.target_in_isr(s) & (moves | keeps))
        if first < self.R:
            s.require(s.q_removing[first])
        else:
            s.require(~any_of(s.q_removing[i] for i in self.REPLICAS))
        removed_in_isr = count_of(s.q_removing[i] & s.q_isr[i] for i in self.REPLICAS)
        s.require(s.q_epoch + where(bump, 1, 0) + removed_in_isr <= self.E)
        for i in self.REPLICAS:                                              # B2: RS = TRS
            s.q_replicas[i] = target[i]
        removing = [s.q_removing[i] for i in self.REPLICAS]
        isr = [s.q_isr[i] for i in self.REPLICAS]
        if l < self.R:                                                       # B3
            self.send_leader_and_isr(s, s.q_epoch + 1, l, isr, when=bump)
        order = [first] + [r for r in self.REPLICAS if r != first] if first < self.R else []
        for r in order:                                                      # B4, one removed replica after another
            drop = removing[r] & s.q_isr[r]
            last = count_of(s.q_isr[i] for i in self.REPLICAS) == 1
            self.send_leader_and_isr(s, s.q_epoch + 1, where(s.q_leader == r, self.NONE, s.q_leader),
                                     [s.q_isr[i] & ((i != r) | last) for i in self.REPLICAS], when=drop)
            s.stop_epoch[r] = where(removing[r] & s.up[r], s.q_epoch, s.stop_epoch[r])    # B4/B5: StopReplica
        for i in self.REPLICAS:                                              # B6
            s.q_adding[i] = False
            s.q_removing[i] = False
            if self.elr:            # a broker that holds no replica is no eligible leader replica
                s.q_elr[i] = s.q_elr[i] & target[i]

    # ------------------------------------------------------------------------------------
    # the removed replica
    # ------------------------------------------------------------------------------------
    @action(r="REPLICAS")
    def apply_stop_replica(self, s, r):
        """Broker r applies StopReplica (delete=true): it drops the partition and deletes its log.

        Kafka: ReplicaManager.stopReplicas (2.4.0-2.8.x; 0.8+): removeFetcherForPartitions, allPartitions.remove and
        Partition.delete (the log and its leader-epoch checkpoint go, and the replication-offset checkpoint forgets
        the partition); since 2.4 (KAFKA-9198) completeDelayedFetchOrProduceRequests answers the produce requests in
        its purgatory (NOT_LEADER_OR_FOLLOWER), before they wait for their timeout. Its only call site is
        KafkaApis.handleStopReplicaRequest. The broker then accepts only requests the controller sent after it.
        """
        if not self.reassign:
            s.require(False)
            return
        s.require(s.up[r] & (s.stop_epoch[r] > 0))
        if self.orphans:
            s.produce_orphaned[r] = s.produce_orphaned[r] | self.produce_waiting(s, r)
        self.leave_partition(s, r)
        self.truncate_to(s, r, 0)
        s.hw[r] = 0
        s.checkpoint_hw[r] = 0
        if self.leader_epoch_cache:
            for e in self.EPOCHS:
                s.epoch_cache[r][e - 1] = -1
        s.leader_epoch[r] = s.stop_epoch[r]
        self.forget_partition(s, r)

    def produce_waiting(self, s, l):
        """l leads (it believes) and holds an acks=all produce request it has not answered: a record it appended at
        or past the first offset it took requests for (``ack_from``) that its HW has not passed."""
        return self.believes_leads(s, l) & (max_of([s.ack_from[l], s.hw[l]]) < s.leo[l])
