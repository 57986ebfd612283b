"""The KRaft-era replication model for one partition (Kafka 3.x and 4.x, KRaft controller).

``KRaftReplication`` shares the ZooKeeper-era model (model/kafka.py): the logs, offsets, HW checkpoint,
crashes, the leader-epoch cache and the controller's election rules are Kafka's own in both eras. What changed
is re-read in KRaft terms, and the mechanisms that are new are added here:

- the controller's partition state lives in the metadata log (PartitionRecord / PartitionChangeRecord):
  ``q_leader``, ``q_epoch`` (leader epoch), ``q_isr`` (and ``q_elr``); the partition epoch is the flag
  ``zk_version_current`` (a broker's partition epoch equals the controller's), exact because AlterPartition
  compares it for equality only; ``req_*`` is the latest partition record of each leader epoch, which a
  broker applies whenever its metadata catches up (ReplicaManager.applyDelta), so brokers lag;
- truncate-on-fetch (2.7+): a follower fetches from its LEO with its last fetched epoch; a diverging
  leader answers DivergingEpoch and no records; the follower truncates (``truncate_on_fetch_response``)
  and fetches again; no OffsetsForLeaderEpoch round trip (``truncate_by_epoch`` is gone);
- AlterPartition (3.2+; AlterIsr 2.7): the leader proposes ISR changes, compare-and-set on leader epoch
  and partition epoch, with the broker epochs it saw in its followers' fetches (KIP-903, 3.5); a broker
  that registers again (a new incarnation) makes an in-flight request for it stale;
- the 3.x high watermark: the minimum LEO over the maximal ISR and the caught-up, ISR-eligible replicas
  (shouldWaitForReplicaToJoinIsr, KAFKA-15021), no advance below min.insync.replicas (KAFKA-15583, 3.7);
  acks=all compares the maximal ISR with min(min.insync.replicas, replication factor);
- controlled shutdown (KIP-841): the controller takes a broker that asks to shut down out of the ISR, and it is
  ineligible (not re-added, not waited for) until it stops;
- lag: ``caught_up``, set by a fetch that reaches the leader's LEO, cleared by ``lag_expires`` once the
  leader has appended past the follower; the leader drops only followers that are not caught up;
- the controller's ISR changes keep the leader epoch (metadata.version 3.6+), brokers learn them with
  ``apply_partition_change``; ELR (KIP-966) as in model/kafka.py when ``elr`` is on (4.0).

Metadata changes are bounded by --max-epochs (each leader change is a new leader epoch); ISR changes need no
bound: the partition epoch is a flag and the broker epochs are the flag ``pending_epochs_current`` (only
equality with the registered epoch matters), so no counter grows.

Departures (each a sound over-approximation for safety unless said):
- lag: replica.lag.time.max.ms may pass at any moment (``lag_expires``); the second rule of
  Replica.updateFetchState (a fetch reaching the leader's LEO of the follower's previous fetch counts as
  caught up then) is not modelled: such a follower counts as lagging, which only permits more (it may be
  dropped, and the HW does not wait for it);
- ISR eligibility (KIP-841: registered, not fenced, not in controlled shutdown) is the broker being up and not in
  controlled shutdown for the leader (its metadata may still show a crashed broker as eligible, and then waits
  for it: the model allows more); the controller checks controlled shutdown and the broker epoch, not fencing
  (fencing after broker.session.timeout.ms may lag a crash, so it may accept a broker that is down but not yet
  fenced);
- a broker applies the latest partition record of a leader epoch; a record of the same epoch in between is not
  applied on its own (MetadataDelta batches records; with two replicas the ISR of one leader epoch alternates
  between two values and every change in between fails the leader's compare-and-set);
- only the leader applies a same-epoch ISR change (``apply_partition_change``): a follower's ISR view and
  partition epoch are read by no action until a new leader epoch overwrites them;
- the DivergingEpoch response and the truncation are two steps (the HW checkpoint thread and a crash can come
  between them, as in Kafka); a truncation still runs after the follower moved to a new leader of the same
  partition (maybeTruncateToEpochEndOffsets truncates any partition still in the fetcher);
- controlled shutdown: the controller first moves leadership away (``elect_leader``, which may come any time),
  then ``controlled_shutdown`` takes the broker out of the ISR; it stops with ``shutdown``, which may also come
  without it (a controlled shutdown that timed out);
- KIP-966's last known ELR (``q_last_known_leader``, ELR on): 4.0 fills PartitionRegistration.lastKnownElr only
  with the last known leader (PartitionChangeBuilder.useLastKnownLeaderInBalancedRecovery is true and nothing sets
  it false; the ELR members it would otherwise hold are for KIP-966's unclean recovery manager, which 4.0 does not
  have); the election from it is unclean (ISR: the leader alone) and the leader's RECOVERING state (KIP-704,
  which keeps the ISR from growing until the leader has recovered) is not modelled: the ISR may grow at once;
- the ZooKeeper-era options add nothing here: ``fetch_response_loss`` (its action is not modelled for
  truncate-on-fetch: setting it removes no behaviour and adds none) and ``controller_failover`` (the KRaft
  quorum fences a stale controller; its fields stay at their initial values);
- a crashed leader's in-flight AlterPartition dies with it (model/kafka.py, as for AlterIsr);
- an AlterPartition rejected for a stale leader or partition epoch (FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION)
  leaves Kafka's partition state pending until new metadata arrives (Partition.handleAlterPartitionError, 3.9);
  the model goes back to the committed ISR at once, as Kafka does for INELIGIBLE_REPLICA: the maximal ISR loses
  the proposed member earlier (the HW may rise sooner, which only permits more) and the leader may propose
  again before the metadata arrives (its compare-and-set fails until then).

The HW is recomputed exactly where Kafka 3.9 calls Partition.maybeIncrementLeaderHW (the same four callers in
the 4.0 line): makeLeader (``become_leader_or_follower``, ``apply_partition_change``), appendRecordsToLeader
(``produce``), updateFollowerFetchState when the follower's LEO moved (``fetch``) and handleAlterPartitionUpdate
(an accepted ``alter_partition``). Nothing else does: a follower that stops being caught up
(replica.lag.time.max.ms) or is fenced changes what the HW may wait for, but recomputes nothing.
"""
from __future__ import annotations

from isrcheck.model.expr import all_of, any_of, count_of, min_of, where
from isrcheck.model.kafka import KafkaReplication
from isrcheck.model.kraft_present import KRaftPresentation
from isrcheck.model.layout import Field
from isrcheck.model.spec import action, leads_to, weak


class KRaftReplication(KafkaReplication):
    epoch_cached_on_election = True      # 2.0.1+ (KAFKA-7415): makeLeader caches (leader epoch, LEO)
    restart_noticed = True               # KRaft: every incarnation registers with a new broker epoch
    truncation_clamps_hw = True          # UnifiedLog.truncateTo lowers the HW to the new LEO (2.4+)
    truncation_cleans_epoch_cache = True  # KAFKA-10706 (2.6.1+): truncateTo at the LEO drops the cache entry there
    #: KAFKA-13141 (fixed 2.7.2/2.8.1/3.0): the leader records a diverging follower's fetch offset
    records_diverging_fetch = False
    #: KAFKA-14704 (fixed 3.5): the follower applies a DivergingEpoch response's HW before it truncates
    hw_before_truncation = False
    #: KIP-903 (3.5; KAFKA-14617): the controller rejects an AlterPartition carrying a stale broker epoch
    checks_broker_epochs = True

    presentation_class = KRaftPresentation
    defaults = {**KafkaReplication.defaults, "async_isr": 1, "max_epochs": 3}
    limits = {**KafkaReplication.limits, "async_isr": (1, 1)}   # AlterPartition is the only way an ISR changes

    def configure(self, bounds):
        super().configure(bounds)
        # Partition.effectiveMinIsr (3.7+): min.insync.replicas above the replication factor counts as the factor
        self.min_isr = min(self.min_isr, self.R)

    def option_fields(self):
        R, L = self.R, self.L
        rep = ("replica",)
        return super().option_fields() + [
            Field("caught_up", 0, 1, (R, R), boolean=True, axes=("replica", "replica"),
                  doc="as leader: the follower reached its LEO within replica.lag.time.max.ms (lastCaughtUpTimeMs)"),
            Field("diverging_end", 0, L, (R,), axes=rep,
                  doc="while truncating: the offset the DivergingEpoch response makes the follower truncate to"),
            Field("pending_epochs_current", 0, 1, (R,), boolean=True, axes=rep,
                  doc="as leader: the broker epochs its in-flight AlterPartition carries are still registered"),
            Field("shutting_down", 0, 1, (R,), boolean=True, axes=rep,
                  doc="the controller has the broker in controlled shutdown (BrokerHeartbeatManager)"),
        ] + ([Field("q_last_known_leader", 0, R, values="replica",
                    doc="KIP-966's last known ELR (PartitionRegistration.lastKnownElr) as 4.0 fills it: the leader "
                        "when the ISR became empty (R: none)")] if self.elr else [])

    def initial(self, s):
        super().initial(s)
        if self.elr:
            s.q_last_known_leader = self.NONE

    # ------------------------------------------------------------------------------------
    # hooks of model/kafka.py
    # ------------------------------------------------------------------------------------
    def become_follower(self, s, r, follows):
        """ReplicaManager.applyLocalFollowersDelta (3.x): the fetcher starts at the LEO with the log's latest epoch
        as last fetched epoch (InitialFetchState); the log is truncated only on a DivergingEpoch answer."""

    def follower_changes(self, s, old_leader, old_epoch, new_leader, epoch):
        """Partition.makeFollower (3.x): the fetcher restarts when the leader or the leader epoch changed."""
        return (old_leader != new_leader) | (epoch != old_epoch)

    def fetch_accepted(self, s, f, l):
        """KIP-320 (2.1+): FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH unless both are on the same leader epoch."""
        return s.leader_epoch[f] == s.leader_epoch[l]

    def may_join_isr(self, s, l, f):
        """Partition.isFollowerInSync (3.9): the follower reached the HW and the leader's epoch start offset."""
        return super().may_join_isr(s, l, f) & (s.remote_leo[l][f] >= s.epoch_start[l]) & self.isr_eligible(s, f)

    def isr_eligible(self, s, i):
        """Partition.isReplicaIsrEligible (3.9, KIP-841): the broker is neither fenced (here: up) nor in controlled
        shutdown."""
        return s.up[i] & ~s.shutting_down[i]

    def caught_up_now(self, s, l, f):
        """ReplicaState.isCaughtUp (3.9): at the leader's LEO, or there within replica.lag.time.max.ms."""
        return s.caught_up[l][f] | (s.remote_leo[l][f] == s.leo[l])

    def hw_isr_member(self, s, l, i):
        """Partition.maybeIncrementLeaderHW (3.9): the maximal ISR (KIP-497), and every replica that is caught up
        and ISR-eligible though not yet in it (shouldWaitForReplicaToJoinIsr, KAFKA-15021, 3.6)."""
        maximal = s.isr[l][i] | (s.alter_pending[l] & s.pending_isr[l][i])
        if i == l:
            return maximal
        return maximal | (self.caught_up_now(s, l, i) & self.isr_eligible(s, i))

    def hw_may_advance(self, s, l):
        """Partition.isUnderMinIsr (3.7+, KAFKA-15583): no HW advance while the ISR is below the effective min ISR."""
        return self.count_isr(s, l) >= self.min_isr

    def enough_replicas(self, s, l):
        """Partition.checkEnoughReplicasReachOffset (3.9): the maximal ISR has min(min.insync.replicas, RF) members."""
        return self.count_maximal_isr(s, l) >= self.min_isr

    def count_isr(self, s, l):
        """Partition.partitionState.isr.size: the committed ISR leader l knows."""
        return count_of(s.isr[l][i] for i in self.REPLICAS)

    def count_maximal_isr(self, s, l):
        """Partition.partitionState.maximalIsr.size: the committed ISR plus a pending expansion (KIP-497)."""
        return count_of(s.isr[l][i] | (s.alter_pending[l] & s.pending_isr[l][i]) for i in self.REPLICAS)

    def follower_out_of_sync(self, s, l, f):
        """Partition.getOutOfSyncReplicas (3.x): only a follower that is not caught up (isCaughtUp false)."""
        return ~self.caught_up_now(s, l, f)

    def alter_accepted(self, s, l):
        """ReplicationControlManager.alterPartition (3.9): l leads in the leader epoch and partition epoch the
        request carries (FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION), and, with KIP-903 (3.5), every broker epoch
        it carries is the broker's registered one; KIP-841 (3.3): no replica it adds is in controlled shutdown
        (INELIGIBLE_REPLICA otherwise)."""
        ok = super().alter_accepted(s, l) & all_of(~(s.pending_isr[l][i] & ~s.isr[l][i] & s.shutting_down[i])
                                                   for i in self.REPLICAS)
        return ok & s.pending_epochs_current[l] if self.checks_broker_epochs else ok

    def propose_isr(self, s, l, new_isr, when=True):
        """AlterPartitionManager.submit (3.5+): the request carries each proposed member's broker epoch from the
        leader's fetch state (Replica.stateSnapshot.brokerEpoch), current when it is sent."""
        super().propose_isr(s, l, new_isr, when)
        s.pending_epochs_current[l] = s.pending_epochs_current[l] | when

    def clear_pending_isr(self, s, r):
        super().clear_pending_isr(s, r)
        s.pending_epochs_current[r] = False

    def commit_isr(self, s, new_isr, writer=None, when=True):
        """A PartitionChangeRecord that keeps the leader: the ISR (ELR, last known ELR) change in the metadata log."""
        self.update_last_known_leader(s, s.q_leader, new_isr, when)
        super().commit_isr(s, new_isr, writer, when)

    def send_leader_and_isr(self, s, epoch, leader, isr):
        """A PartitionChangeRecord with a new leader epoch (an election, or the partition going leaderless)."""
        self.update_last_known_leader(s, leader, isr)
        super().send_leader_and_isr(s, epoch, leader, isr)

    def update_last_known_leader(self, s, leader, new_isr, when=True):
        """PartitionChangeBuilder.maybeUpdateLastKnownLeader (4.0, ELR on; useLastKnownLeaderInBalancedRecovery is
        never turned off): a record that empties the ISR stores the partition's leader as it was as the last known
        ELR; one that leaves the partition with a leader clears it; a leaderless partition keeps it."""
        if not self.elr:
            return
        empties = ~any_of(new_isr[i] for i in self.REPLICAS)
        value = where(empties, s.q_leader, where(leader != self.NONE, self.NONE, s.q_last_known_leader))
        s.q_last_known_leader = where(when, value, s.q_last_known_leader)

    def become_leader_or_follower(self, s, r, epoch, new_leader, isr, zk_version_current, controller_epoch=None):
        """Partition.makeLeader (3.9): a new leader resets its followers' state; those in the ISR count as caught up
        (Replica.resetReplicaState: lastCaughtUpTimeMs = now), the others not."""
        still_leader = (new_leader == r) & (s.leader[r] == r) & (epoch == s.leader_epoch[r] + 1) & s.up[r]
        for i in self.REPLICAS:
            s.caught_up[r][i] = where(new_leader == r, where(still_leader, s.caught_up[r][i], isr[i] & (i != r)),
                                      False)
        super().become_leader_or_follower(s, r, epoch, new_leader, isr, zk_version_current, controller_epoch)
        s.diverging_end[r] = where(s.truncating[r], s.diverging_end[r], 0)   # a leader's fetcher is gone

    # ------------------------------------------------------------------------------------
    # actions removed: the ZooKeeper controller and the OffsetsForLeaderEpoch phase
    # ------------------------------------------------------------------------------------
    truncate_by_epoch = None         # 2.7+: truncation on fetch (DivergingEpoch) instead
    exit_out_of_range = None         # 0.10.2-2.0 only
    fetch_response_lost = None       # not modelled for truncate-on-fetch (see the module doc)
    controller_failover = None       # ZooKeeper controller epochs; the KRaft quorum fences a stale controller
    apply_stale_leader_and_isr = None
    alter_isr = None                 # renamed AlterPartition (3.2, KIP-841): alter_partition

    # ------------------------------------------------------------------------------------
    # controller
    # ------------------------------------------------------------------------------------
    @action(r="REPLICAS")
    def controller_shrink_isr(self, s, r):
        """The controller fences dead broker r and removes it from the ISR (ReplicationControlManager.handleBrokerFenced,
        PartitionChangeBuilder, 3.9).

        Since metadata.version 3.6-IV0 an ISR shrink keeps the leader epoch and bumps the partition epoch only
        (PartitionChangeBuilder.triggerLeaderEpochBumpForIsrShrinkIfNeeded); the last ISR member stays unless
        ELR is on (KIP-966, 4.0).
        """
        s.require(self.may_stop & ~s.up[r] & s.q_isr[r] & (s.q_leader != r))
        if not self.elr:
            s.require(count_of(s.q_isr[i] for i in self.REPLICAS) > 1)
        self.commit_isr(s, [s.q_isr[i] & (i != r) for i in self.REPLICAS])

    @action(l="REPLICAS")
    def elect_last_known_leader(self, s, l):
        """With the ISR and the ELR both empty, the controller elects l, the last known leader, once it is unfenced
        (PartitionChangeBuilder.electAnyLeader / canElectLastKnownLeader, 4.0, KIP-966 with ELR on).

        The election counts as unclean: the ISR becomes l alone (tryElection: "forcibly set the ISR to just the
        new leader") and the leader is RECOVERING (KIP-704). ReplicationControlManager runs it in any partition
        change that finds the partition leaderless (the unclean-shutdown registration that empties the ELR,
        handleBrokerUnfenced); the model lets it come any time after.
        """
        if not self.elr:
            s.require(False)
            return
        # Kafka 4.0 (ELR on): electAnyLeader's last resort, after the ISR and the ELR (KAFKA-15584, 3.7+)
        s.require((s.q_epoch < self.E) & s.up[l] & ~s.shutting_down[l] & (s.q_leader == self.NONE)
                  & (s.q_last_known_leader == l) & ~any_of(s.q_isr[i] | s.q_elr[i] for i in self.REPLICAS))
        self.send_leader_and_isr(s, s.q_epoch + 1, l, [s.up[i] & (i == l) for i in self.REPLICAS])  # l alone

    @action(r="REPLICAS")
    def controlled_shutdown(self, s, r):
        """The controller puts broker r, which asks to shut down, in controlled shutdown and takes it out of the ISR
        (BrokerHeartbeatManager, ReplicationControlManager.handleBrokerInControlledShutdown, 3.9).

        Leadership has moved away first (``elect_leader``); the leader epoch stays and the partition epoch moves
        on; the last ISR member stays unless ELR is on (KIP-966). r keeps fetching until it stops, but is no
        longer ISR-eligible (KIP-841).
        """
        s.require(self.may_stop & s.up[r] & ~s.shutting_down[r] & (s.q_leader != r) & (s.crashes < self.C))
        s.shutting_down[r] = True
        last = count_of(s.q_isr[i] for i in self.REPLICAS) == 1
        leaves = s.q_isr[r] if self.elr else s.q_isr[r] & ~last
        self.commit_isr(s, [s.q_isr[i] & (i != r) for i in self.REPLICAS], when=leaves)

    @action(l="REPLICAS")
    def alter_partition(self, s, l):
        """The controller handles leader l's AlterPartition and l reads the response (ReplicationControlManager
        .alterPartition, Partition.handleAlterPartitionError, 3.9).

        Accepted (handleAlterPartitionUpdate): the ISR and partition epoch change, l adopts them and may raise
        its HW ("we may need to increment high watermark since ISR could be down to 1"). Rejected
        (handleAlterPartitionError: FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION, or INELIGIBLE_REPLICA for a
        stale broker epoch, KIP-903): l goes back to its committed ISR and retries on a later fetch; the HW is
        not recomputed.
        """
        s.require(s.alter_pending[l] & s.up[l])
        ok = self.alter_accepted(s, l)
        proposed = [s.pending_isr[l][i] for i in self.REPLICAS]
        self.clear_pending_isr(s, l)
        # Partition.handleAlterPartitionUpdate (3.2+) ends with maybeIncrementLeaderHW; the error path does not
        self.write_isr(s, l, proposed, when=ok)
        self.maybe_increment_hw(s, l, when=ok)

    # ------------------------------------------------------------------------------------
    # brokers
    # ------------------------------------------------------------------------------------
    @action(r="REPLICAS")
    def apply_partition_change(self, s, r):
        """Leader r applies a PartitionChangeRecord of its own leader epoch, with a newer partition epoch
        (ReplicaManager.applyLocalLeadersDelta -> Partition.makeLeader, 3.9).

        The controller changed the ISR without a new leader epoch (a fenced follower removed); r takes the ISR
        and partition epoch, drops its in-flight AlterPartition (it would fail the compare-and-set) and may
        raise its HW (makeLeader ends with maybeIncrementLeaderHW).
        """
        s.require(self.believes_leads(s, r) & (s.leader_epoch[r] == s.q_epoch) & ~s.zk_version_current[r])
        for i in self.REPLICAS:
            s.isr[r][i] = s.q_isr[i]
        s.zk_version_current[r] = True
        self.clear_pending_isr(s, r)
        self.maybe_increment_hw(s, r)

    @action(f="REPLICAS", l="REPLICAS")
    def fetch(self, s, f, l):
        """Follower f fetches from l at its LEO with its last fetched epoch (AbstractFetcherThread.processFetchRequest,
        Partition.fetchRecords / readRecords, 3.9).

        l looks up f's last fetched epoch in its leader-epoch cache (lastOffsetForLeaderEpoch); if l's epoch
        is smaller or its end offset is below the fetch offset, the answer is DivergingEpoch (epoch, end
        offset) with no records: l does not record f's fetch offset (KAFKA-13141, 2.7.2/3.0) and f does not
        apply the response's HW before truncating (KAFKA-14704, 3.5). Otherwise f appends the records from
        its LEO and learns l's HW as read before l records f's fetch offset; l marks f caught up if the fetch
        reached its LEO, may propose f for the ISR (AlterPartition), and raises its HW only if f's LEO moved
        (``prevFollowerEndOffset != logEndOffset``: a fetch at the same offset recomputes nothing).
        """
        s.require((f != l) & s.up[f] & s.up[l] & (s.leader[f] == l) & self.believes_leads(s, l)
                  & self.fetch_accepted(s, f, l) & ~s.truncating[f])
        response_hw, fetch_offset, leader_leo = s.hw[l], s.leo[f], s.leo[l]
        last_fetched = self.cache_latest_epoch(s, f)
        epoch, end = self.end_offset_for_epoch(s, l, last_fetched)
        diverging = (last_fetched > 0) & ((epoch < last_fetched) | (end < fetch_offset))
        # the follower's side, truncateOnFetchResponse -> getOffsetTruncationState; an UNDEFINED answer is
        # OffsetOutOfRange (readRecords), and the follower truncates to the leader's LEO (fetchOffsetAndTruncate)
        offset, _ = self.offset_truncation_state(s, f, epoch, end)
        target = where(epoch < 0, min_of([leader_leo, fetch_offset]), offset)
        if self.proof_ghosts:
            s.followed_epoch[f] = s.leader_epoch[f]
            s.fetched_epoch[f] = s.leader_epoch[f]
        for o in self.OFFSETS:
            copy = ~diverging & (o >= fetch_offset) & (o < leader_leo)
            s.log_record[f][o] = where(copy, s.log_record[l][o], s.log_record[f][o])
            s.log_epoch[f][o] = where(copy, s.log_epoch[l][o], s.log_epoch[f][o])
        self.assign_appended(s, f, fetch_offset, leader_leo, when=~diverging)     # UnifiedLog.append -> assign
        s.leo[f] = where(diverging, fetch_offset, leader_leo)
        if self.hw_before_truncation:       # KAFKA-14704: processPartitionData runs on the diverging response too
            s.hw[f] = where(diverging, min_of([response_hw, fetch_offset]), response_hw)
        else:
            s.hw[f] = where(diverging, s.hw[f], response_hw)
        s.truncating[f] = diverging
        s.diverging_end[f] = where(diverging, target, 0)
        recorded = ~diverging | self.records_diverging_fetch
        moved = recorded & (fetch_offset != s.remote_leo[l][f])
        s.remote_leo[l][f] = where(recorded, fetch_offset, s.remote_leo[l][f])
        s.caught_up[l][f] = s.caught_up[l][f] | (recorded & (fetch_offset >= leader_leo))
        self.maybe_expand_isr(s, l, f, recorded)
        # Partition.updateFollowerFetchState (3.9): the HW is recomputed only when the follower's LEO moved
        self.maybe_increment_hw(s, l, when=moved)

    @action(f="REPLICAS")
    def truncate_on_fetch_response(self, s, f):
        """Follower f truncates where the DivergingEpoch answer says (AbstractFetcherThread.truncateOnFetchResponse,
        UnifiedLog.truncateTo, 3.9), then fetches again from its new LEO with its new latest epoch."""
        s.require(s.up[f] & s.truncating[f])
        self.truncate_to(s, f, s.diverging_end[f])
        s.truncating[f] = False
        s.diverging_end[f] = 0

    @action(l="REPLICAS", f="REPLICAS")
    def lag_expires(self, s, l, f):
        """replica.lag.time.max.ms passes since follower f was last at leader l's LEO (Replica.lastCaughtUpTimeMs):
        f no longer counts as caught up (ReplicaState.isCaughtUp, 3.9). Only once l has appended past f."""
        s.require((f != l) & self.believes_leads(s, l) & s.caught_up[l][f] & (s.remote_leo[l][f] != s.leo[l]))
        s.caught_up[l][f] = False

    @action(r="REPLICAS")
    def restart(self, s, r):
        """Broker r starts again and registers a new incarnation with a new broker epoch (BrokerLifecycleManager,
        ClusterControlManager.registerBroker, 3.9); an in-flight AlterPartition carrying its old broker
        epoch is now stale (KIP-903). See model/kafka.py for the rest."""
        KafkaReplication.restart(self, s, r)
        for l in self.REPLICAS:
            s.pending_epochs_current[l] = s.pending_epochs_current[l] & ~s.pending_isr[l][r]

    def go_down(self, s, r):
        """A stopped broker forgets its followers' fetch state and any DivergingEpoch it had not applied."""
        super().go_down(s, r)
        s.diverging_end[r] = 0
        s.shutting_down[r] = False          # the next incarnation registers afresh
        for i in self.REPLICAS:
            s.caught_up[r][i] = False

    # ------------------------------------------------------------------------------------
    # liveness: the follower's steps are fetch and truncate_on_fetch_response, the controller's alter_partition
    # ------------------------------------------------------------------------------------
    FOLLOWER_FAIRNESS = (weak("fetch"), weak("apply_leader_and_isr"), weak("truncate_on_fetch_response"),
                         weak("alter_partition"), weak("apply_partition_change"))

    @leads_to("eventually-leader", fairness=[weak("elect_leader"), weak("apply_leader_and_isr"),
                                             weak("elect_last_known_leader")])
    def eventually_leader(self, s):
        """Once every broker stays up, some replica becomes the acting leader.

        Fairness as in model/kafka.py, and with ELR on (4.0) the controller eventually elects the last known
        leader of a partition whose ISR and ELR are empty.
        """
        return KafkaReplication.eventually_leader(self, s)

    @leads_to("hw-advances", fairness=FOLLOWER_FAIRNESS)
    def hw_advances(self, s):
        """A record appended by the acting leader while its ISR members stay up is eventually below the HW.

        Fairness: a live follower eventually fetches from the leader it believes in and applies a DivergingEpoch
        answer, a live broker eventually applies the partition records that reach it, and the controller
        eventually answers a pending AlterPartition (each instance weakly fair).

        The obligation also ends while fewer than min.insync.replicas brokers are ISR-eligible (up and not in
        controlled shutdown): then the ISR cannot reach min.insync.replicas, and Partition.maybeIncrementLeaderHW
        (3.7+, KAFKA-15583; the rule KIP-966 builds on) keeps the HW where it is by design until a broker
        returns (restarts need no fairness).
        """
        stuck, advanced = KafkaReplication.hw_advances(self, s)
        too_few = count_of(self.isr_eligible(s, i) for i in self.REPLICAS) < self.min_isr
        return stuck & ~too_few, advanced | too_few

    @leads_to("isr-regrows", fairness=FOLLOWER_FAIRNESS)
    def isr_regrows(self, s):
        """A live follower that keeps fetching is eventually back in the acting leader's ISR.

        Fairness as for hw-advances. Stated for the last replica as the follower (model/kafka.py); a follower in
        controlled shutdown is leaving and owes nothing (KIP-841 keeps it out of the ISR until it stops).
        """
        out, back = KafkaReplication.isr_regrows(self, s)
        leaving = s.shutting_down[self.R - 1]
        return out & ~leaving, back | leaving

    @leads_to("truncation-terminates", fairness=[weak("truncate_on_fetch_response"), weak("apply_leader_and_isr"),
                                                 weak("elect_leader"), weak("restart"), weak("controller_shrink_isr"),
                                                 weak("controller_offline")])
    def truncation_terminates(self, s):
        """A live follower with a DivergingEpoch answer to apply eventually fetches again.

        Fairness: a live follower eventually truncates as the answer says, a live broker eventually applies a
        partition record, the controller eventually fences dead brokers and elects, and a stopped broker
        eventually restarts (each instance weakly fair). Stated for the last replica (model/kafka.py).
        """
        return KafkaReplication.truncation_terminates(self, s)
