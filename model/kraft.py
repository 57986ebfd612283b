"""The KRaft-era replication model for one partition (Kafka 3.5 to 4.x, KRaft controller).

``KRaftReplication`` shares the ZooKeeper-era model (model/kafka.py): the logs, offsets, HW checkpoint,
crashes, the leader-epoch cache, producers and the invariants are Kafka's own in both eras. The controller and the
metadata log are model/kraft_metadata.py (``KRaftController``, mixed in); this module is the brokers: each
broker's Partition, its fetcher, and its metadata listener. Mechanisms, each with its Kafka code path (3.9.0):

- the metadata log: a broker applies the partition's records in log order when its listener reaches them, one or a
  batch at a time (``apply_metadata``), and its Partition runs makeLeader or makeFollower for the record it lands on,
  equal partition epochs included (only a smaller one is skipped); the AlterPartition answer (``alter_partition``
  then ``alter_partition_response``) and the record path interleave as they can;
- AlterPartition (3.2+, KIP-841; AlterIsr 2.7): the leader's partition state is committed or pending
  (``alter_pending``, its maximal ISR with the proposed ISR ``pending_isr``), apart from the request
  AlterPartitionManager holds (``ap_sent``: one per partition; a second submit fails with OPERATION_NOT_ATTEMPTED);
  the controller compares leader epoch, partition epoch and each member's registration and broker epoch (KIP-903,
  3.5); an answer may be lost and the request handled again; a request may be handled after its sender crashed;
  the leader drops every out-of-sync follower in one request (``maybe_shrink_isr``);
- registrations: a broker that stops keeps its registration until its session expires (``fence_broker``); it
  registers a new incarnation once fenced (``restart``) and is unfenced when it asks (``unfence_broker``); elections
  take acceptable brokers (unfenced, not in controlled shutdown) as the controller sees them;
- truncate-on-fetch (2.7+): a follower fetches from its LEO with its last fetched epoch; a diverging leader answers
  DivergingEpoch and no records; the follower truncates (``truncate_on_fetch_response``) and fetches again;
- the lag (Replica.scala): ``caught_up`` (lastCaughtUpTimeMs within replica.lag.time.max.ms), ``fetch_recent``
  (lastFetchTimeMs) and ``last_fetch_leo`` (lastFetchLeaderLogEndOffset): a fetch at the leader's LEO, or at the LEO
  the leader had at the follower's previous fetch (as of that fetch's time), makes the follower caught up;
  ``lag_expires`` lets replica.lag.time.max.ms pass;
- the 3.x high watermark: the minimum LEO over the maximal ISR and the caught-up, ISR-eligible replicas
  (shouldWaitForReplicaToJoinIsr, KAFKA-15021, 3.6), no advance below min.insync.replicas (KAFKA-15583, 3.7);
  acks=all compares the maximal ISR with min(min.insync.replicas, replication factor);
- fetch answers may carry fewer records than the leader has (``fetch_partial``), and with ``fetch_responses`` they
  are messages of their own: lost, or read after the follower moved to another leader epoch (KAFKA-18991);
- ELR (KIP-966) when ``elr`` is on (4.0), with every new incarnation counted an unclean shutdown;
- partition reassignment (the bound ``reassignments``): model/kraft_reassignment.py, with its own departures.

Where each Kafka method the model encodes is called in 3.9.0, and the action covering each call (trunk of late 2024
has the same call sites):

- Partition.makeLeader: ReplicaManager.applyLocalLeadersDelta (applyDelta, from BrokerMetadataPublisher) ->
  ``apply_metadata``; ReplicaManager.becomeLeaderOrFollower (ZooKeeper LeaderAndIsr): not in KRaft.
- Partition.makeFollower: ReplicaManager.applyLocalFollowersDelta -> ``apply_metadata``; becomeLeaderOrFollower: not
  in KRaft.
- Partition.updateAssignmentAndIsr: makeLeader and makeFollower -> ``apply_metadata`` (make_leader, make_follower).
- Partition.maybeIncrementLeaderHW: makeLeader -> ``apply_metadata``; appendRecordsToLeader -> ``produce``;
  updateFollowerFetchState when the follower's LEO moved -> ``fetch``, ``fetch_partial``;
  handleAlterPartitionUpdate -> ``alter_partition_response``.
- Partition.updateFollowerFetchState (Replica.updateFetchStateOrThrow, maybeExpandIsr): ReplicaManager
  .updateFollowerFetchState for every follower fetch -> ``fetch``, ``fetch_partial`` (record_fetch).
- Replica.resetReplicaState: makeLeader on a new leader epoch -> ``apply_metadata``.
- Partition.maybeShrinkIsr: ReplicaManager's isr-expiration task -> ``maybe_shrink_isr``.
- Partition.maybeExpandIsr: updateFollowerFetchState -> ``fetch``, ``fetch_partial``.
- Partition.submitAlterPartition: maybeExpandIsr, maybeShrinkIsr -> the actions above (propose_isr); its own
  callback on a retriable error, and AlterPartitionManager's resend after a lost answer -> ``alter_partition`` again
  after ``alter_partition_response_lost``.
- Partition.handleAlterPartitionUpdate / handleAlterPartitionError: submitAlterPartition's callback ->
  ``alter_partition_response``.
- Partition.appendRecordsToLeader: ReplicaManager.appendToLocalLog -> ``produce``; GroupMetadataManager (the group
  coordinator's own partitions): not this partition.
- Partition.checkEnoughReplicasReachOffset: DelayedProduce.tryComplete -> the acknowledgement in
  maybe_increment_hw (model/kafka.py).
- AbstractFetcherThread.processFetchRequest / truncateOnFetchResponse: the fetcher's doWork -> ``fetch``,
  ``fetch_partial`` (``fetch_response`` with fetch_responses), ``truncate_on_fetch_response``.
- ReplicationControlManager.alterPartition: QuorumController.alterPartition -> ``alter_partition``.
- ReplicationControlManager.handleBrokerFenced: maybeFenceOneStaleBroker (session expiry) and
  processBrokerHeartbeat (FENCED, SHUTDOWN_NOW) -> ``fence_broker``.
- ReplicationControlManager.handleBrokerUnfenced: processBrokerHeartbeat (UNFENCED) -> ``unfence_broker``.
- ReplicationControlManager.handleBrokerInControlledShutdown: processBrokerHeartbeat (CONTROLLED_SHUTDOWN) ->
  ``controlled_shutdown``.
- ReplicationControlManager.handleBrokerUncleanShutdown: ClusterControlManager.registerBroker for every new
  incarnation (metadata.version 4.0+) -> ``restart``.
- ReplicationControlManager.generateLeaderAndIsrUpdates: the four handlers above; handleBrokerUnregistered and
  handleDirectoriesOffline / offline-dir-assignment: not modelled (one log directory per broker, no broker is
  unregistered; for the partition a failed log directory is a crash of its replica, ``crash`` and ``fence_broker``).
- PartitionChangeBuilder (electAnyLeader, electPreferredLeader, maybePopulateTargetElr, maybeUpdateLastKnownLeader):
  every controller action above, and maybeBalancePartitionLeaders / electLeaders (preferred) and
  maybeElectUncleanLeaders (unclean) -> ``elect_leader``, ``elect_last_known_leader``.
- ReplicationControlManager.changePartitionReassignment: alterPartitionReassignment (QuorumController
  .alterPartitionReassignments, AlterPartitionReassignments with target replicas) -> ``alter_partition_reassignments``;
  cancelPartitionReassignment (no target replicas): not modelled (the admin cancels nothing).
- PartitionChangeBuilder.completeReassignmentIfNeeded and triggerLeaderEpochBumpForReplicaReassignmentIfNeeded:
  every build -> ``alter_partition_reassignments``; alterPartition -> ``alter_partition`` and, when the completion
  elects another leader (NEW_LEADER_ELECTED), ``alter_partition_elects``; generateLeaderAndIsrUpdates for
  handleBrokerFenced, handleBrokerInControlledShutdown, handleBrokerUnfenced (leaderless partitions) and
  handleBrokerUncleanShutdown -> ``fence_broker``, ``controlled_shutdown``, ``unfence_broker``, ``restart``;
  electLeaders / maybeBalancePartitionLeaders / maybeElectUncleanLeaders -> ``elect_leader``; the last known leader's
  election (ISR empty: nothing to complete) -> ``elect_last_known_leader``; cancelPartitionReassignment: not
  modelled.
- ReplicaManager.stopPartitions with deleteLocalLog: applyDelta for TopicsDelta.localChanges deletes ->
  ``apply_metadata``; stopReplicas (ZooKeeper StopReplica): not in KRaft; updateStrayLogs and LogManager.startup's
  stray detection (a log kept from before a restart) -> ``apply_metadata`` at the broker's first publish;
  applyLocalFollowersDelta (controlled shutdown): left out as listed below.

Bounds. ``metadata_lag`` bounds how far a live broker's metadata image may lag the controller (the controller
waits beyond it); leader epochs are bounded by --max-epochs; ISR changes need no bound of their own: partition
epochs are relative to the controller's (model/kraft_metadata.py) and broker epochs are the flag
``pending_epochs_current`` (only equality with the registered epoch matters), so no counter grows.

Departures (each a sound over-approximation for safety unless said):
- lag: replica.lag.time.max.ms may pass at any moment (``lag_expires``), and the timestamps of different followers
  expire in any order;
- the leader's image of the other brokers' registrations (Partition.isReplicaIsrEligible: fenced, in controlled
  shutdown, broker epoch): with ``eligibility_lag`` any answer at any moment (``image_registration``); at 0 (the
  defaults) the controller's own view, which leaves out the leader proposing a broker the controller already fenced
  (rejected with INELIGIBLE_REPLICA) or not proposing one it already unfenced: the configuration eligibility-lag of
  each version checks that its verdicts stay;
- preferred-leader elections (``preferred_elections``) give leadership back to the partition's first leader, which
  the controller elected as its preferred replica (the first acceptable replica of the assignment, every broker
  being up then); any valid replica stands for the first valid one of the assignment in every other election;
- a broker's metadata image of the partition is exact (in order, batched), bounded by ``metadata_lag``: a run where a
  broker lags further is not explored (the controller waits instead);
- the AlterPartition a leader sends carries current broker epochs for every member (the expanded member's from the
  fetch that proposes it; a member whose broker epoch is stale has been fenced out of the ISR, which moved the
  partition epoch first: INVALID_UPDATE_VERSION, checked before INELIGIBLE_REPLICA);
- a request that fails at once with OPERATION_NOT_ATTEMPTED (AlterPartitionManager still holds one) is not sent: the
  partition state goes back to the committed one in the same call (Partition.submitAlterPartition's callback), and a
  concurrent HW computation seeing the short-lived pending state would only wait for more replicas;
- the DivergingEpoch response and the truncation are two steps (the HW checkpoint thread and a crash can come
  between them, as in Kafka); a truncation still runs after the follower moved to a new leader of the same
  partition (maybeTruncateToEpochEndOffsets truncates any partition still in the fetcher);
- a broker in controlled shutdown keeps fetching until it stops (ReplicaManager.applyLocalFollowersDelta stops the
  follower of a partition it is not in the ISR of: fewer fetches); the controller lets it stop (SHUTDOWN_NOW) or its
  shutdown times out at any moment (``shutdown``), and fences it when its session ends (``fence_broker``);
- KIP-966's last known ELR (``q_last_known_leader``, ELR on): 4.0 fills PartitionRegistration.lastKnownElr only
  with the last known leader (useLastKnownLeaderInBalancedRecovery is true and nothing sets it false); the election
  from it is unclean (ISR: the leader alone) and the leader's RECOVERING state (KIP-704, which keeps the ISR from
  growing until the leader has recovered) is not modelled: the ISR may grow at once; the election may come at any
  moment after the partition became leaderless (Kafka runs it at the next change that looks at the partition);
- the ZooKeeper-era options are fixed off (``controller_failover``, ``fetch_response_loss``: ``fetch_responses``
  models lost answers here).

The HW is recomputed exactly where Kafka 3.9 calls Partition.maybeIncrementLeaderHW (see above). Nothing else
does: a follower that stops being caught up (replica.lag.time.max.ms) or is fenced changes what the HW may wait for,
but recomputes nothing.
"""
from __future__ import annotations

from isrcheck.model.expr import all_of, any_of, count_of, max_of, min_of, where
from isrcheck.model.kafka import KafkaReplication
from isrcheck.model.kraft_metadata import ACCEPTED, INELIGIBLE, NO_RESPONSE, KRaftController
from isrcheck.model.kraft_present import KRaftPresentation
from isrcheck.model.kraft_reassignment import KRaftReassignment
from isrcheck.model.layout import Field
from isrcheck.model.spec import Bound, action, invariant, leads_to, strong, weak

#: ZooKeeper-era fields the KRaft family replaces: LeaderAndIsr requests (the metadata log instead), the cached
#: zkVersion (``pe_lag``), and the model's own knowledge of an unclean shutdown (the controller learns only that a
#: broker registers again)
_ZOOKEEPER_FIELDS = frozenset({"req_sent", "req_leader", "req_isr", "req_zk_version_current", "zk_version_current",
                               "unclean_shutdown", "req_replicas", "stop_epoch", "produce_orphaned"})


def _kraft_bounds():
    """The Kafka family's bounds as KRaft has them, and KRaft's own."""
    out = []
    for b in KafkaReplication.declared_bounds:
        if b.name == "max_epochs":
            b = Bound(b.name, 3, b.lo, b.hi, b.doc, kind="bound")
        elif b.name == "async_isr":
            b = Bound(b.name, 1, 1, 1, "a leader changes the ISR only by AlterPartition (always on in KRaft)")
        elif b.name == "controller_failover":
            b = Bound(b.name, 0, 0, 0, "ZooKeeper controller epochs: not in KRaft (the quorum fences a stale "
                                       "controller)")
        elif b.name == "fetch_response_loss":
            b = Bound(b.name, 0, 0, 0, "not in KRaft: fetch_responses models lost, late and partial responses")
        out.append(b)
    return tuple(out) + (
        Bound("metadata_lag", 1, 1, 4, "partition records a live broker's metadata image may be behind the "
              "controller's (the controller waits for the slowest live broker beyond that)", kind="bound"),
        Bound("preferred_elections", 1, 0, 1, "the controller may give leadership back to the preferred replica (the "
              "partition's first leader) whenever it is a valid leader (auto.leader.rebalance.enable, the "
              "ElectLeaders API); 0: a leader changes only when it is removed or the partition has none"),
        Bound("eligibility_lag", 0, 0, 1, "a leader's metadata image of the other brokers' registrations (fenced, "
              "in controlled shutdown, broker epoch) lags the controller's: its ISR-eligibility test may give either "
              "answer until it catches up; 0: it is the controller's"),
        Bound("fetch_responses", 0, 0, 1, "a fetch response is a message of its own: it may be lost, arrive after "
              "the follower moved to another leader epoch, or carry fewer records than the leader has"),
    )


class KRaftReplication(KRaftReassignment, KRaftController, KafkaReplication):
    epoch_cached_on_election = True      # 2.0.1+ (KAFKA-7415): makeLeader caches (leader epoch, LEO)
    restart_noticed = True               # every incarnation registers with a new broker epoch
    #: ReplicaManager.stopPartitions completes the produce requests waiting for a removed replica (2.4+, KAFKA-9198)
    stop_replica_completes_produce = True
    truncation_clamps_hw = True          # UnifiedLog.truncateTo lowers the HW to the new LEO (2.4+)
    truncation_cleans_epoch_cache = True  # KAFKA-10706 (2.6.1+): truncateTo at the LEO drops the cache entry there
    #: KAFKA-13141 (fixed 2.7.2/2.8.1/3.0): the leader records a diverging follower's fetch offset
    records_diverging_fetch = False
    #: KAFKA-14704 (fixed 3.5): the follower applies a DivergingEpoch response's HW before it truncates
    hw_before_truncation = False
    #: KIP-903 (3.5; KAFKA-14617): the controller rejects an AlterPartition carrying a stale broker epoch
    checks_broker_epochs = True
    #: 3.6+ (KAFKA-15021): the HW waits for a caught-up replica outside the maximal ISR only if it is ISR-eligible
    #: (Partition.maybeIncrementLeaderHW's shouldWaitForReplicaToJoinIsr); 3.5 waits for any caught-up replica
    hw_waits_for_eligible_only = True
    #: 3.7+ (KAFKA-15583): no HW advance while the ISR is below min.insync.replicas (Partition.isUnderMinIsr)
    hw_stops_below_min_isr = True
    #: the fix of the equal-partition-epoch makeLeader: a partition record of the partition epoch the leader already
    #: has leaves its partition state (an AlterPartition in flight) alone; Kafka 3.5-4.x resets it
    make_leader_keeps_pending = False
    #: KAFKA-18991 (fixed 3.9.1, 4.0.1): the fetcher processes a response only if its request carried the leader
    #: epoch of the partition's current fetch state
    fetch_checks_request_epoch = False

    presentation_class = KRaftPresentation
    #: a broker the fuzzer leaves idle still applies the metadata log: the controller writes nothing while a live
    #: broker's image is metadata_lag records behind
    fuzz_keep_up = ("apply_metadata",)
    declared_bounds = _kraft_bounds()

    def configure(self, bounds):
        super().configure(bounds)
        # Partition.effectiveMinIsr (3.7+): min.insync.replicas above the replication factor counts as the factor
        self.min_isr = min(self.min_isr, self.R)
        self.W = bounds.metadata_lag
        self.preferred_elections = bool(bounds.preferred_elections)
        self.eligibility_lag = bool(bounds.eligibility_lag)
        self.fetch_responses = bool(bounds.fetch_responses)
        self.LAGS = range(self.W)
        self.LEADER_CHOICES = range(self.R + 1)
        self.PARTIAL_ENDS = range(1, self.L)

    def fields(self):
        return [f for f in super().fields() if f.name not in _ZOOKEEPER_FIELDS]

    def option_fields(self):
        R, L = self.R, self.L
        rep, pair = ("replica",), ("replica", "replica")
        out = super().option_fields() + self.metadata_fields() + [
            Field("caught_up", 0, 1, (R, R), boolean=True, axes=pair,
                  doc="as leader: the follower's lastCaughtUpTimeMs is within replica.lag.time.max.ms"),
            Field("fetch_recent", 0, 1, (R, R), boolean=True, axes=pair,
                  doc="as leader: the follower's lastFetchTimeMs is within replica.lag.time.max.ms"),
            Field("last_fetch_leo", -1, L, (R, R), axes=pair,
                  doc="as leader: lastFetchLeaderLogEndOffset, its LEO at the follower's fetches (-1: unknown)"),
            Field("diverging_end", 0, L, (R,), axes=rep,
                  doc="while truncating: the offset the DivergingEpoch response makes the follower truncate to"),
            Field("pending_epochs_current", 0, 1, (R,), boolean=True, axes=rep,
                  doc="as leader: the broker epochs its in-flight AlterPartition carries are still registered"),
        ]
        if self.fetch_responses:
            out += self.fetch_response_fields()
        if self.eligibility_lag:
            out.append(Field("eligible_view", 0, 1, (R, R), boolean=True, axes=pair,
                             doc="as leader: its metadata image has the broker ISR-eligible (unfenced, not in "
                                 "controlled shutdown, the broker epoch of its last fetch)"))
        out += self.kraft_reassignment_fields()
        if self.elr:
            out.append(Field("q_last_known_leader", 0, R, values="replica",
                             doc="KIP-966's last known ELR (PartitionRegistration.lastKnownElr) as 4.0 fills it: the "
                                 "leader when the ISR became empty (R: none)"))
        return [f for f in out if f.name not in _ZOOKEEPER_FIELDS]

    def fetch_response_fields(self):
        """fetch_responses: the answer in flight from each leader to each follower, index [follower][leader]."""
        R, L, E = self.R, self.L, self.E
        pair = ("replica", "replica")
        return [
            Field("resp_sent", 0, 1, (R, R), boolean=True, axes=pair, doc="an answer to the follower's fetch is in flight"),
            Field("resp_leader_epoch", 0, E, (R, R), axes=pair, unbounded=True,
                  doc="the leader epoch the fetch request carried (its current leader epoch)"),
            Field("resp_offset", 0, L, (R, R), axes=pair, doc="the fetch offset"),
            Field("resp_end", 0, L, (R, R), axes=pair,
                  doc="the answer's records end there (diverging: the leader's LEO when it read)"),
            Field("resp_hw", 0, L, (R, R), axes=pair, doc="the leader's HW the answer carries"),
            Field("resp_record", 0, self.M, (R, R, L), axes=("replica", "replica", None), unbounded=True,
                  doc="the records it carries, at their offsets"),
            Field("resp_epoch", 0, E, (R, R, L), axes=("replica", "replica", None), unbounded=True,
                  doc="their leader epochs"),
            Field("resp_diverging", 0, 1, (R, R), boolean=True, axes=pair, doc="the answer is DivergingEpoch"),
            Field("resp_div_epoch", -1, E, (R, R), axes=pair, doc="its epoch (-1: UNDEFINED)"),
            Field("resp_div_end", -1, L, (R, R), axes=pair, doc="its end offset (-1: UNDEFINED)"),
        ]

    def initial(self, s):
        super().initial(s)
        for r in self.REPLICAS:
            for i in self.REPLICAS:
                s.last_fetch_leo[r][i] = -1
                if self.fetch_responses:
                    s.resp_div_epoch[r][i] = -1
                    s.resp_div_end[r][i] = -1
        if self.elr:
            s.q_last_known_leader = self.NONE
        self.initial_kraft_reassignment(s)

    def initial_requests(self, s):
        """The metadata log holds the partition's first registration (no leader yet); every broker applied it."""
        self.metadata_initial(s)

    # ------------------------------------------------------------------------------------
    # hooks of model/kafka.py
    # ------------------------------------------------------------------------------------
    def fetch_accepted(self, s, f, l):
        """KIP-320 (2.1+): FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH unless both are on the same leader epoch."""
        return s.leader_epoch[f] == s.leader_epoch[l]

    def isr_eligible(self, s, l, i):
        """Partition.isReplicaIsrEligible (3.9, KIP-841/KIP-903) as leader l's metadata image has broker i: not fenced,
        not in controlled shutdown, and registered with the broker epoch of i's last fetch; with eligibility_lag the
        image may lag the controller and answer either way (``eligible_view``)."""
        if self.eligibility_lag:
            return s.eligible_view[l][i]
        return self.acceptable(s, i)

    def may_join_isr(self, s, l, f):
        """Partition.isFollowerInSync (3.9): the follower reached the HW and the leader's epoch start offset; and
        canAddReplicaToIsr: it is ISR-eligible."""
        return ((s.remote_leo[l][f] >= 0) & (s.remote_leo[l][f] >= s.hw[l]) & (s.remote_leo[l][f] >= s.epoch_start[l])
                & self.isr_eligible(s, l, f))

    def caught_up_now(self, s, l, f):
        """ReplicaState.isCaughtUp (3.9): at the leader's LEO, or there within replica.lag.time.max.ms."""
        return s.caught_up[l][f] | (s.remote_leo[l][f] == s.leo[l])

    def maximal(self, s, l, i):
        """Partition.partitionState.maximalIsr: the committed ISR, and a pending expansion (KIP-497)."""
        return s.isr[l][i] | (s.alter_pending[l] & s.pending_isr[l][i])

    def hw_isr_member(self, s, l, i):
        """Partition.maybeIncrementLeaderHW (3.9): the maximal ISR (KIP-497), and every replica that is caught up
        and ISR-eligible though not in it (shouldWaitForReplicaToJoinIsr, 3.6+; 3.5: every caught-up replica)."""
        if i == l:
            return self.maximal(s, l, i)
        waits = self.caught_up_now(s, l, i)
        if self.hw_waits_for_eligible_only:
            waits = waits & self.isr_eligible(s, l, i)
        return self.maximal(s, l, i) | waits

    def hw_may_advance(self, s, l):
        """Partition.isUnderMinIsr (3.7+, KAFKA-15583): no HW advance while the ISR is below the effective min ISR."""
        if not self.hw_stops_below_min_isr:
            return True
        return count_of(s.isr[l][i] for i in self.REPLICAS) >= self.leader_min_isr(s, l)

    def enough_replicas(self, s, l):
        """Partition.checkEnoughReplicasReachOffset (3.9): the maximal ISR has min(min.insync.replicas, RF) members."""
        return count_of(self.maximal(s, l, i) for i in self.REPLICAS) >= self.leader_min_isr(s, l)

    def leader_min_isr(self, s, l):
        """Partition.effectiveMinIsr (3.7+): min.insync.replicas, at most the replicas of leader l's assignment."""
        if not self.reassign:
            return self.min_isr
        return min_of([self.min_isr, count_of(s.assigned[l][i] for i in self.REPLICAS)])

    def note_unclean_shutdown(self, s, r):
        """Nothing: the controller learns of a broker's shutdown only when it registers again (``restart``)."""

    def forget_partition_epoch(self, s, r):
        """A stopped broker's Partition (its partition epoch and state) dies with it; an AlterPartition it sent
        may still reach the controller (``alter_partition``), its answer is lost."""
        s.pe_lag[r] = self.W
        s.alter_pending[r] = False
        s.ap_resp[r] = NO_RESPONSE
        s.ap_resp_pe_lag[r] = 0
        for i in self.REPLICAS:
            s.pending_isr[r][i] = s.pending_isr[r][i] & s.ap_sent[r]

    def propose_isr(self, s, l, new_isr, when=True):
        """Partition.prepareIsrExpand / prepareIsrShrink and submitAlterPartition (3.9): the partition state becomes
        pending with the proposed ISR (its maximal ISR: the larger of the two), and AlterPartitionManager sends
        it with l's leader epoch, partition epoch and each member's broker epoch from its last fetch (KIP-903),
        current when it is sent."""
        super().propose_isr(s, l, new_isr, when)
        s.ap_sent[l] = s.ap_sent[l] | when
        s.ap_epoch_current[l] = where(when, s.leader_epoch[l] == s.q_epoch, s.ap_epoch_current[l])
        s.ap_pe_current[l] = where(when, s.pe_lag[l] == 0, s.ap_pe_current[l])
        s.pending_epochs_current[l] = s.pending_epochs_current[l] | when

    def maybe_expand_isr(self, s, l, f, fetched):
        """Partition.maybeExpandIsr (3.9), run on every fetch: a follower in sync and ISR-eligible is proposed for
        the ISR, unless a change is pending (isInflight) or AlterPartitionManager still holds an earlier request
        (submit fails with OPERATION_NOT_ATTEMPTED and the state goes back to the committed one)."""
        join = fetched & ~s.isr[l][f] & self.may_join_isr(s, l, f) & ~s.alter_pending[l] & ~s.ap_sent[l]
        self.propose_isr(s, l, [s.isr[l][i] | (i == f) for i in self.REPLICAS], when=join)

    # ------------------------------------------------------------------------------------
    # actions removed: the ZooKeeper controller, LeaderAndIsr requests and the OffsetsForLeaderEpoch phase
    # ------------------------------------------------------------------------------------
    apply_leader_and_isr = None      # the metadata log instead: apply_metadata
    apply_stale_leader_and_isr = None
    controller_failover = None       # ZooKeeper controller epochs; the KRaft quorum fences a stale controller
    controller_shrink_isr = None     # fence_broker and controlled_shutdown
    controller_offline = None        # fence_broker with no valid leader
    truncate_by_epoch = None         # 2.7+: truncation on fetch (DivergingEpoch) instead
    exit_out_of_range = None         # 0.10.2-2.0 only
    shrink_isr = None                # maybe_shrink_isr drops every out-of-sync follower at once
    alter_isr = None                 # AlterPartition: alter_partition (controller), alter_partition_response
    start_reassignment = None        # the metadata log's reassignment: model/kraft_reassignment.py
    resume_reassignment = None
    complete_reassignment = None
    apply_stop_replica = None

    # ------------------------------------------------------------------------------------
    # brokers: the metadata log
    # ------------------------------------------------------------------------------------
    @action(r="REPLICAS", k="LAGS")
    def apply_metadata(self, s, r, k):
        """Broker r's metadata listener publishes the records up to the one ``k`` records before the controller's
        (MetadataLoader, BrokerMetadataPublisher.onMetadataUpdate -> ReplicaManager.applyDelta, 3.9).

        TopicsDelta.localChanges lists the partition (its partition epoch changed); applyLocalLeadersDelta calls
        Partition.makeLeader when the record names r leader, applyLocalFollowersDelta Partition.makeFollower
        otherwise. Both skip a partition epoch smaller than the Partition's own (which an AlterPartition response
        may have moved ahead) and run on an equal one. With reassignment on, only for a record naming r a replica;
        a record that does not, after an image that did, stops the partition and deletes its log (deletes:
        stopPartitions with deleteLocalLog, 3.9), and a log left from before r's restart is stray (LogManager.startup
        with isStrayKraftReplica, 3.7+).
        """
        s.require(s.up[r] & (k < s.img_lag[r]))
        leader, epoch, isr = self.record_at(s, k)
        runs = k <= s.pe_lag[r]            # the record's partition epoch is not smaller than the Partition's
        replicas = self.replicas_at(s, k)
        if self.reassign:
            runs = runs & replicas[r]
        s.img_lag[r] = k
        self.make_leader(s, r, epoch, isr, k, when=runs & (leader == r), replicas=replicas)
        self.make_follower(s, r, leader, epoch, k, when=runs & (leader != r))
        if self.reassign:
            self.delete_replica(s, r, when=~replicas[r] & (s.img_replica[r] | (s.leo[r] > 0)))
            s.img_replica[r] = replicas[r]
        self.trim_window(s)

    def make_leader(self, s, r, epoch, isr, k, when, replicas=None):
        """Partition.makeLeader (3.9) for a record (leader epoch, ISR) ``k`` records old, where ``when``.

        updateAssignmentAndIsr sets the partition state to CommittedPartitionState(isr), dropping a pending
        AlterPartition (its request stays in flight; the response will find the state changed and be ignored);
        ``make_leader_keeps_pending`` is the fix that keeps it when the partition epoch is unchanged. On a new leader
        epoch: the epoch start offset is the LEO (maybeAssignEpochStartOffset), and each follower's state is reset
        (Replica.resetReplicaState: a new leader forgets their LEOs, lastFetchLeaderLogEndOffset -1 and
        lastFetchTimeMs 0; a re-elected one keeps their LEOs, lastFetchLeaderLogEndOffset = its LEO, lastFetchTimeMs
        now for ISR members; lastCaughtUpTimeMs now for ISR members, else 0). ReplicaManager removes the
        partition's fetcher. makeLeader ends with maybeIncrementLeaderHW.
        """
        was_leader = s.leader[r] == r
        new_epoch = when & (epoch > s.leader_epoch[r])
        fresh = new_epoch & ~was_leader
        resets = when
        if self.make_leader_keeps_pending:
            resets = when & (k != s.pe_lag[r])
        for i in self.REPLICAS:
            s.isr[r][i] = where(resets, isr[i], s.isr[r][i])
        s.alter_pending[r] = s.alter_pending[r] & ~resets
        for i in self.REPLICAS:
            s.pending_isr[r][i] = s.pending_isr[r][i] & (s.alter_pending[r] | s.ap_sent[r])
        s.epoch_start[r] = where(new_epoch, s.leo[r], s.epoch_start[r])
        self.assign_epoch(s, r, epoch, s.leo[r], when=new_epoch)
        for i in self.REPLICAS:
            if i == r:
                continue
            s.remote_leo[r][i] = where(fresh, -1, s.remote_leo[r][i])
            s.last_fetch_leo[r][i] = where(new_epoch, where(was_leader, s.leo[r], -1), s.last_fetch_leo[r][i])
            s.fetch_recent[r][i] = where(new_epoch, was_leader & isr[i], s.fetch_recent[r][i])
            s.caught_up[r][i] = where(new_epoch, isr[i], s.caught_up[r][i])
            if self.eligibility_lag:
                s.eligible_view[r][i] = where(when & ~was_leader, self.acceptable(s, i), s.eligible_view[r][i])
        s.leader_epoch[r] = where(when, epoch, s.leader_epoch[r])
        s.pe_lag[r] = where(when, k, s.pe_lag[r])
        if self.reassign:       # updateAssignmentAndIsr: the record's replicas are the leader's remote replicas
            for i in self.REPLICAS:
                s.assigned[r][i] = where(when, replicas[i], s.assigned[r][i])
        s.ack_from[r] = where(when & ~was_leader, s.leo[r], s.ack_from[r])
        s.leader[r] = where(when, r, s.leader[r])
        s.truncating[r] = s.truncating[r] & ~when
        s.diverging_end[r] = where(when, 0, s.diverging_end[r])
        self.maybe_increment_hw(s, r, when=when)

    def make_follower(self, s, r, leader, epoch, k, when):
        """Partition.makeFollower (3.9) for a record (leader, leader epoch) ``k`` records old, where ``when``.

        The broker takes the leader and leader epoch, updateAssignmentAndIsr(isLeader = false) clears the ISR and
        the followers' states (and any pending AlterPartition: its response will be ignored); on a new leader epoch
        ReplicaManager.applyLocalFollowersDelta restarts the fetcher (InitialFetchState at the LEO with the log's
        latest epoch: no truncation until a DivergingEpoch answer), with no leader it removes it.
        """
        restarts = when & (epoch > s.leader_epoch[r])
        if self.reassign:       # a follower counts no remote replicas
            for i in self.REPLICAS:
                s.assigned[r][i] = s.assigned[r][i] & ~when
        s.leader[r] = where(when, leader, s.leader[r])
        s.leader_epoch[r] = where(when, epoch, s.leader_epoch[r])
        s.epoch_start[r] = where(when, 0, s.epoch_start[r])
        s.pe_lag[r] = where(when, k, s.pe_lag[r])
        s.ack_from[r] = where(when, 0, s.ack_from[r])
        s.alter_pending[r] = s.alter_pending[r] & ~when
        for i in self.REPLICAS:
            s.isr[r][i] = s.isr[r][i] & ~when
            s.pending_isr[r][i] = s.pending_isr[r][i] & (s.alter_pending[r] | s.ap_sent[r])
            s.remote_leo[r][i] = where(when, -1, s.remote_leo[r][i])
            s.caught_up[r][i] = s.caught_up[r][i] & ~when
            s.fetch_recent[r][i] = s.fetch_recent[r][i] & ~when
            s.last_fetch_leo[r][i] = where(when, -1, s.last_fetch_leo[r][i])
            if self.eligibility_lag:
                s.eligible_view[r][i] = s.eligible_view[r][i] & ~when
        s.truncating[r] = s.truncating[r] & ~restarts
        s.diverging_end[r] = where(restarts, 0, s.diverging_end[r])

    # ------------------------------------------------------------------------------------
    # brokers: the leader's ISR and the controller's answers
    # ------------------------------------------------------------------------------------
    @action(l="REPLICAS")
    def maybe_shrink_isr(self, s, l):
        """Leader l's isr-expiration task (ReplicaManager.maybeShrinkIsr every replica.lag.time.max.ms / 2 ->
        Partition.maybeShrinkIsr, 3.9) proposes an ISR without every follower that is out of sync
        (getOutOfSyncReplicas: not caught up), in one AlterPartition; nothing while a change is pending or
        AlterPartitionManager still holds an earlier request."""
        out = [s.isr[l][i] & (i != l) & ~self.caught_up_now(s, l, i) for i in self.REPLICAS]
        s.require(self.believes_leads(s, l) & ~s.alter_pending[l] & ~s.ap_sent[l] & any_of(out))
        self.propose_isr(s, l, [s.isr[l][i] & ~out[i] for i in self.REPLICAS])

    @action(l="REPLICAS")
    def alter_partition_response(self, s, l):
        """Leader l reads the controller's answer to its AlterPartition (AlterPartitionManager's response handler ->
        Partition.submitAlterPartition's callback, 3.9).

        If the partition state is no longer the pending state the request proposed (makeLeader or makeFollower
        replaced it), the answer is ignored. Else, accepted (handleAlterPartitionUpdate): the state becomes
        CommittedPartitionState(new ISR) at the answer's partition epoch and the HW may rise; accepted with another
        leader epoch (3.5's shrink), FENCED_LEADER_EPOCH or INVALID_UPDATE_VERSION (handleAlterPartitionError): the
        state stays pending until new metadata arrives; INELIGIBLE_REPLICA: back to the last committed state.
        AlterPartitionManager then forgets the request.
        """
        s.require(s.up[l] & (s.ap_resp[l] != NO_RESPONSE))
        mine = s.alter_pending[l]
        commit = mine & (s.ap_resp[l] == ACCEPTED)
        revert = mine & (s.ap_resp[l] == INELIGIBLE)
        for i in self.REPLICAS:
            s.isr[l][i] = where(commit, s.pending_isr[l][i], s.isr[l][i])
        s.pe_lag[l] = where(commit, s.ap_resp_pe_lag[l], s.pe_lag[l])
        s.alter_pending[l] = mine & ~commit & ~revert
        s.ap_sent[l] = False
        s.ap_resp[l] = NO_RESPONSE
        s.ap_resp_pe_lag[l] = 0
        self.clear_request(s, l)
        self.maybe_increment_hw(s, l, when=commit)

    @action(l="REPLICAS")
    def alter_partition_response_lost(self, s, l):
        """The connection to the controller drops before leader l reads the answer: NodeToControllerChannelManager
        sends the request again (no timeout: retryTimeoutMs = Long.MaxValue, 3.9), and the controller handles it
        anew; Partition.submitAlterPartition's future is still incomplete (the same on a retriable error:
        handleAlterPartitionError returns true and the callback submits again)."""
        s.require(s.ap_resp[l] != NO_RESPONSE)
        s.ap_resp[l] = NO_RESPONSE
        s.ap_resp_pe_lag[l] = 0

    @action(l="REPLICAS", f="REPLICAS")
    def lag_expires(self, s, l, f):
        """replica.lag.time.max.ms passes since a time leader l holds for follower f (Replica.scala, 3.9): first its
        lastCaughtUpTimeMs (f is no longer caught up, ReplicaState.isCaughtUp), then its lastFetchTimeMs (a fetch
        reaching the LEO l had at f's previous fetch no longer makes f caught up, updateFetchStateOrThrow).
        Only once l has appended past f: at l's LEO f is caught up whatever the time."""
        older = s.caught_up[l][f] & (s.remote_leo[l][f] != s.leo[l])
        s.require((f != l) & self.believes_leads(s, l) & (older | (~s.caught_up[l][f] & s.fetch_recent[l][f])))
        s.fetch_recent[l][f] = s.fetch_recent[l][f] & s.caught_up[l][f]
        s.caught_up[l][f] = False

    @action(l="REPLICAS", i="REPLICAS")
    def image_registration(self, s, l, i):
        """eligibility_lag: leader l's metadata image of broker i's registration changes (it applies a
        BrokerRegistrationChangeRecord, RegisterBrokerRecord, fencing or unfencing record of i, in its own time:
        KRaftMetadataCache.isBrokerFenced / isBrokerShuttingDown / getAliveBrokerEpoch, 3.9), so
        Partition.isReplicaIsrEligible(i) turns to the other answer. Any sequence of answers is allowed: a sound
        over-approximation of an image that lags the controller's view."""
        if not self.eligibility_lag:
            s.require(False)
            return
        s.require((i != l) & self.believes_leads(s, l))
        s.eligible_view[l][i] = ~s.eligible_view[l][i]

    # ------------------------------------------------------------------------------------
    # brokers: fetching
    # ------------------------------------------------------------------------------------
    @action(f="REPLICAS", l="REPLICAS")
    def fetch(self, s, f, l):
        """Follower f fetches from l at its LEO with its last fetched epoch and reads the whole answer
        (AbstractFetcherThread.processFetchRequest, ReplicaManager.fetchMessages -> Partition.fetchRecords /
        readRecords, 3.9).

        l looks up f's last fetched epoch in its leader-epoch cache (lastOffsetForLeaderEpoch); if l's epoch
        is smaller or its end offset is below the fetch offset, the answer is DivergingEpoch (epoch, end
        offset) with no records: l does not record f's fetch (KAFKA-13141, 2.7.2/3.0) and f does not
        apply the response's HW before truncating (KAFKA-14704, 3.5). Otherwise l reads the records from the fetch
        offset and its HW, then records the fetch (Partition.updateFollowerFetchState -> Replica
        .updateFetchStateOrThrow: caught up if the fetch reached its LEO, or reached the LEO it had at f's previous
        fetch, as of that fetch), may propose f for the ISR (maybeExpandIsr) and raises its HW only if f's LEO moved
        (``prevFollowerEndOffset != logEndOffset``). f appends the records and takes the HW (at most its LEO).
        """
        self.serve_fetch(s, f, l, None)

    @action(f="REPLICAS", l="REPLICAS", end="PARTIAL_ENDS")
    def fetch_partial(self, s, f, l, end):
        """As ``fetch``, but the answer carries the records up to offset ``end`` only, fewer than l has
        (ReplicaManager.fetchMessages reads at most replica.fetch.max.bytes / replica.fetch.response.max.bytes, and
        at least one batch, 3.9)."""
        self.serve_fetch(s, f, l, end)

    def serve_fetch(self, s, f, l, end):
        """One fetch of f from l, read up to ``end`` (None: l's LEO): l reads and records it; f reads the answer at
        once, or (fetch_responses) later, from the response in flight (``fetch_response``)."""
        ok = ((f != l) & s.up[f] & s.up[l] & (s.leader[f] == l) & self.believes_leads(s, l)
              & self.fetch_accepted(s, f, l) & ~s.truncating[f])
        if end is not None:
            ok = ok & (s.leo[f] < end) & (end < s.leo[l])
        if self.fetch_responses:        # the fetcher thread waits for the answer before it fetches again
            ok = ok & ~s.resp_sent[f][l]
        if self.reassign:       # Partition.followerReplicaOrThrow: UNKNOWN_LEADER_EPOCH for a replica not assigned
            ok = ok & self.serves(s, l, f)
        s.require(ok)
        response_hw, fetch_offset, leader_leo = s.hw[l], s.leo[f], s.leo[l]
        upto = leader_leo if end is None else end
        last_fetched = self.cache_latest_epoch(s, f)
        epoch, end_offset = self.end_offset_for_epoch(s, l, last_fetched)
        diverging = (last_fetched > 0) & ((epoch < last_fetched) | (end_offset < fetch_offset))
        if self.proof_ghosts:
            s.followed_epoch[f] = s.leader_epoch[f]
            s.fetched_epoch[f] = s.leader_epoch[f]
        if self.fetch_responses:
            s.resp_sent[f][l] = True
            s.resp_leader_epoch[f][l] = s.leader_epoch[f]
            s.resp_offset[f][l] = fetch_offset
            s.resp_end[f][l] = where(diverging, leader_leo, upto)
            s.resp_hw[f][l] = response_hw
            s.resp_diverging[f][l] = diverging
            s.resp_div_epoch[f][l] = where(diverging, epoch, -1)
            s.resp_div_end[f][l] = where(diverging, end_offset, -1)
            for o in self.OFFSETS:
                carried = ~diverging & (o >= fetch_offset) & (o < upto)
                s.resp_record[f][l][o] = where(carried, s.log_record[l][o], 0)
                s.resp_epoch[f][l][o] = where(carried, s.log_epoch[l][o], 0)
        else:
            self.apply_fetch_response(s, f, fetch_offset, upto, [s.log_record[l][o] for o in self.OFFSETS],
                                      [s.log_epoch[l][o] for o in self.OFFSETS], response_hw, diverging, epoch,
                                      end_offset, leader_leo)
        self.record_fetch(s, f, l, fetch_offset, leader_leo, ~diverging | self.records_diverging_fetch)

    def apply_fetch_response(self, s, f, fetch_offset, upto, records, epochs, response_hw, diverging, epoch,
                             end_offset, leader_leo, when=True):
        """Follower f processes a fetch answer (AbstractFetcherThread.processFetchRequest, 3.9), where ``when``:
        records at offsets fetch_offset..upto-1 (ReplicaFetcherThread.processPartitionData: appendAsFollower,
        then the HW from the answer, at most the new LEO), or a DivergingEpoch (epoch, end offset) that f must
        truncate on (truncateOnFetchResponse -> getOffsetTruncationState; an UNDEFINED epoch is OffsetOutOfRange
        and f truncates to the leader's LEO, fetchOffsetAndTruncate); the HW of a diverging answer waits for
        the next fetch (KAFKA-14704, 3.5)."""
        offset, _ = self.offset_truncation_state(s, f, epoch, end_offset)
        target = where(epoch < 0, min_of([leader_leo, fetch_offset]), offset)
        appends = ~diverging if when is True else when & ~diverging
        for o in self.OFFSETS:
            copy = appends & (o >= fetch_offset) & (o < upto)
            s.log_record[f][o] = where(copy, records[o], s.log_record[f][o])
            s.log_epoch[f][o] = where(copy, epochs[o], s.log_epoch[f][o])
        self.assign_appended(s, f, fetch_offset, upto, when=appends)     # UnifiedLog.append -> assign
        s.leo[f] = where(when, where(diverging, fetch_offset, upto), s.leo[f])
        if self.hw_before_truncation:       # KAFKA-14704: processPartitionData runs on the diverging response too
            hw = where(diverging, min_of([response_hw, fetch_offset]), min_of([response_hw, upto]))
        else:
            hw = where(diverging, s.hw[f], min_of([response_hw, upto]))
        s.hw[f] = where(when, hw, s.hw[f])
        s.truncating[f] = where(when, diverging, s.truncating[f])
        s.diverging_end[f] = where(when, where(diverging, target, 0), s.diverging_end[f])

    @action(f="REPLICAS", l="REPLICAS")
    def fetch_response(self, s, f, l):
        """fetch_responses: follower f reads l's answer to its fetch (AbstractFetcherThread.processFetchRequest,
        3.9). The fetcher thread for l processes it only if the partition is still in that thread (f still
        follows l), at the offset the request was for, and ready to fetch (not truncating); 3.9 and 4.0 do not
        compare the request's leader epoch with the partition's (KAFKA-18991, fixed in 3.9.1 and 4.0.1): an
        answer read in an older leader epoch of the same leader applies. Else it is dropped."""
        if not self.fetch_responses:
            s.require(False)
            return
        s.require(s.up[f] & s.resp_sent[f][l])
        valid = (s.leader[f] == l) & (s.leo[f] == s.resp_offset[f][l]) & ~s.truncating[f]
        if self.fetch_checks_request_epoch:
            valid = valid & (s.resp_leader_epoch[f][l] == s.leader_epoch[f])
        self.apply_fetch_response(s, f, s.resp_offset[f][l], s.resp_end[f][l],
                                  [s.resp_record[f][l][o] for o in self.OFFSETS],
                                  [s.resp_epoch[f][l][o] for o in self.OFFSETS], s.resp_hw[f][l],
                                  s.resp_diverging[f][l], s.resp_div_epoch[f][l], s.resp_div_end[f][l],
                                  s.resp_end[f][l], when=valid)
        self.clear_fetch_response(s, f, l)

    @action(f="REPLICAS", l="REPLICAS")
    def fetch_response_lost(self, s, f, l):
        """fetch_responses: l's answer to f's fetch never arrives (the connection drops); l recorded the fetch,
        and f's fetcher fetches again from the same offset after a back-off (AbstractFetcherThread
        .processFetchRequest: partitionsWithError, 3.9)."""
        if not self.fetch_responses:
            s.require(False)
            return
        s.require(s.resp_sent[f][l])
        self.clear_fetch_response(s, f, l)

    def clear_fetch_response(self, s, f, l):
        """No answer from l to f in flight any more."""
        s.resp_sent[f][l] = False
        s.resp_leader_epoch[f][l] = 0
        s.resp_offset[f][l] = 0
        s.resp_end[f][l] = 0
        s.resp_hw[f][l] = 0
        s.resp_diverging[f][l] = False
        s.resp_div_epoch[f][l] = -1
        s.resp_div_end[f][l] = -1
        for o in self.OFFSETS:
            s.resp_record[f][l][o] = 0
            s.resp_epoch[f][l][o] = 0

    def record_fetch(self, s, f, l, fetch_offset, leader_leo, recorded):
        """Partition.updateFollowerFetchState (3.9) where ``recorded``: Replica.updateFetchStateOrThrow, then
        maybeExpandIsr, then maybeIncrementLeaderHW if the follower's LEO moved."""
        moved = recorded & (fetch_offset != s.remote_leo[l][f])
        s.remote_leo[l][f] = where(recorded, fetch_offset, s.remote_leo[l][f])
        caught = (fetch_offset >= leader_leo) | ((fetch_offset >= s.last_fetch_leo[l][f]) & s.fetch_recent[l][f])
        s.caught_up[l][f] = s.caught_up[l][f] | (recorded & caught)
        s.fetch_recent[l][f] = s.fetch_recent[l][f] | recorded
        s.last_fetch_leo[l][f] = where(recorded, max_of([leader_leo, s.last_fetch_leo[l][f]]), s.last_fetch_leo[l][f])
        self.maybe_expand_isr(s, l, f, recorded)
        self.maybe_increment_hw(s, l, when=moved)

    @action(f="REPLICAS")
    def truncate_on_fetch_response(self, s, f):
        """Follower f truncates where the DivergingEpoch answer says (AbstractFetcherThread.truncateOnFetchResponse,
        UnifiedLog.truncateTo, 3.9), then fetches again from its new LEO with its new latest epoch."""
        s.require(s.up[f] & s.truncating[f])
        self.truncate_to(s, f, s.diverging_end[f])
        s.truncating[f] = False
        s.diverging_end[f] = 0

    # ------------------------------------------------------------------------------------
    # brokers: starting and stopping
    # ------------------------------------------------------------------------------------
    @action(r="REPLICAS")
    def restart(self, s, r):
        """Broker r starts again and registers a new incarnation with a new broker epoch (BrokerLifecycleManager,
        ClusterControlManager.registerBroker, 3.9), fenced until it asks to be unfenced.

        It registers only once the controller fenced its previous incarnation (the old session expired:
        DuplicateBrokerRegistrationException before). An AlterPartition carrying r's old broker epoch is now stale
        (KIP-903). With ELR (metadata.version 4.0) every new incarnation counts as an unclean shutdown: the
        controller takes r out of the ISR and the ELR (handleBrokerUncleanShutdown). r's metadata image then loads
        the partition (its first publish: ``apply_metadata``).
        """
        s.require(self.may_stop & ~s.up[r] & s.fenced[r])
        if self.elr:
            # a reassignment this record completes keeps the leader: only an election from the ELR (or an unclean
            # one) leaves an ISR holding the target uncompleted, and it elected the ISR's one member, a target replica
            isr, completes = self.completion(s, [s.q_isr[i] & (i != r) for i in self.REPLICAS])
            elr = self.elr_after(s, isr, unclean=r)
            epoch = self.reassignment_epoch(s, s.q_leader, s.q_epoch, completes)
            writes = self.partition_changes(s, s.q_leader, epoch, isr, elr) | completes
            s.require(~writes | ((epoch <= self.E) & self.window_has_room(s)))
            self.write_partition(s, s.q_leader, epoch, isr, elr, when=writes, completes=completes)
        s.up[r] = True
        s.img_lag[r] = 1
        if self.reassign:       # its image starts empty: the first publish creates the partition, or finds it stray
            s.img_replica[r] = False
        s.shutting_down[r] = False
        s.ap_sent[r] = False
        self.clear_request(s, r)
        for l in self.REPLICAS:
            s.pending_epochs_current[l] = s.pending_epochs_current[l] & ~s.pending_isr[l][r]
        if self.proof_ghosts:
            s.up_since[r] = s.q_epoch

    def go_down(self, s, r):
        """A stopped broker forgets its Partition (KafkaReplication.go_down), its fetcher state (answers on their
        way to it are lost) and its metadata image; the controller keeps its registration until its session
        expires."""
        super().go_down(s, r)
        if self.fetch_responses:
            for l in self.REPLICAS:
                if l != r:
                    self.clear_fetch_response(s, r, l)
        s.diverging_end[r] = 0
        s.img_lag[r] = 0
        for i in self.REPLICAS:
            s.caught_up[r][i] = False
            s.fetch_recent[r][i] = False
            s.last_fetch_leo[r][i] = -1
            if self.eligibility_lag:
                s.eligible_view[r][i] = False
        self.trim_window(s)

    # ------------------------------------------------------------------------------------
    # invariants the KRaft family adds
    # ------------------------------------------------------------------------------------
    @invariant("candidates-complete")
    def candidates_complete(self, s):
        """Every live leader candidate (ISR member, or ELR member with KIP-966) holds every acknowledged record.

        The controller may elect any of them (PartitionChangeBuilder.isValidNewLeader once it is unfenced).
        When it breaks, an election the controller is free to make loses an acknowledged record.
        """
        ok = []
        for m in self.RECORDS:
            at = s.acked_at[m - 1]
            for r in self.REPLICAS:
                candidate = s.up[r] & ((s.q_isr[r] | s.q_elr[r]) if self.elr else s.q_isr[r])
                if self.reassign:       # electAnyLeader walks the partition's replicas
                    candidate = candidate & s.q_replicas[r]
                ok.append((at < 0) | ~candidate | ((s.leo[r] > at) & (s.log_record[r][at] == m)))
        return all_of(ok)

    @invariant("leader-unfenced")
    def leader_unfenced(self, s):
        """The controller's leader is a broker it has not fenced.

        PartitionChangeBuilder elects only acceptable brokers (LeaderAcceptor: unfenced, not in controlled
        shutdown), and fencing a leader elects another in the same record. When it breaks, the partition's leader
        is a broker the controller itself considers gone: produce and fetch requests to the partition fail until it
        is unfenced.
        """
        return all_of((s.q_leader != r) | ~s.fenced[r] for r in self.REPLICAS)

    @invariant("maximal-isr-covers-isr")
    def maximal_isr_covers_isr(self, s):
        """The acting leader's maximal ISR contains the controller's ISR.

        Its high watermark and its acks=all acknowledgements wait only for its maximal ISR (Partition.maximalIsr:
        the committed ISR and a pending expansion), while the controller may elect any member of its own ISR.
        When it breaks, the leader can commit a record that an ISR member, electable at once, does not have.
        """
        return all_of(~self.acting_leader(s, l) | all_of(~s.q_isr[i] | self.maximal(s, l, i) for i in self.REPLICAS)
                      for l in self.REPLICAS)

    # ------------------------------------------------------------------------------------
    # liveness
    # ------------------------------------------------------------------------------------
    #: what keeps a partition moving: a live follower fetches and truncates, a live broker applies the metadata
    #: records that reach it, the controller answers AlterPartition and unfences a broker that asks (weakly fair);
    #: answers are not lost forever (strongly fair: their loss disables reading them, and the retry enables it again)
    FOLLOWER_FAIRNESS = (weak("fetch"), weak("apply_metadata"), weak("truncate_on_fetch_response"),
                         weak("alter_partition"), weak("alter_partition_elects"), strong("alter_partition_response"),
                         weak("unfence_broker"), strong("fetch_response", optional=True))

    @leads_to("eventually-leader", fairness=[weak("elect_leader"), weak("apply_metadata"), weak("unfence_broker"),
                                             weak("fence_broker"), weak("elect_last_known_leader", optional=True)])
    def eventually_leader(self, s):
        """Once every broker stays up, some replica becomes the acting leader.

        Fairness: the controller eventually elects a valid leader for a leaderless partition, fences a broker whose
        session expired and unfences a broker that asks, and a live broker eventually applies the metadata records
        that reach it (each instance weakly fair). A broker in controlled shutdown is leaving (it stops when the
        controller lets it, or when its shutdown times out) and ends the obligation as a stop does.
        """
        waiting, done = KafkaReplication.eventually_leader(self, s)
        leaving = any_of(s.shutting_down[r] for r in self.REPLICAS)
        return waiting & ~leaving, done | leaving

    @leads_to("hw-advances", fairness=FOLLOWER_FAIRNESS)
    def hw_advances(self, s):
        """A record appended by the acting leader while its ISR members stay up is eventually below the HW.

        Fairness: a live follower eventually fetches from the leader it believes in and applies a DivergingEpoch
        answer, a live broker eventually applies the metadata records that reach it, and the controller eventually
        answers an AlterPartition and the leader reads the answer (each instance weakly fair).

        The obligation also ends while fewer than min.insync.replicas brokers are acceptable to the controller
        (unfenced, not in controlled shutdown): then the ISR cannot reach min.insync.replicas, and
        Partition.maybeIncrementLeaderHW (3.7+, KAFKA-15583) keeps the HW where it is by design. With reassignment on,
        it ends too while a reassignment runs at the last leader epoch of the bounds (``unless_cut_off``).
        """
        stuck, advanced = KafkaReplication.hw_advances(self, s)
        too_few = count_of(self.acceptable(s, i) & s.up[i] for i in self.REPLICAS) < self.controller_min_isr(s)
        stuck, advanced = stuck & ~too_few, advanced | too_few
        return self.unless_cut_off(s, stuck, advanced)

    @leads_to("isr-regrows", fairness=FOLLOWER_FAIRNESS)
    def isr_regrows(self, s):
        """A live follower that keeps fetching is eventually back in the acting leader's ISR.

        Fairness as for hw-advances. Stated for the last replica as the follower (model/kafka.py); a follower in
        controlled shutdown is leaving and owes nothing (KIP-841 keeps it out of the ISR until it stops). The end at
        the last leader epoch as for hw-advances.
        """
        out, back = KafkaReplication.isr_regrows(self, s)
        leaving = s.shutting_down[self.R - 1]
        return self.unless_cut_off(s, out & ~leaving, back | leaving)

    def unless_cut_off(self, s, trigger, goal):
        """(trigger, goal) of a progress property whose obligation also ends while a reassignment runs at the last
        leader epoch of the bounds: the AlterPartition that completes it needs one more (the replica list shrinks), so
        --max-epochs, not Kafka, would keep the ISR from changing (an under-approximation, as epochs_exhausted)."""
        if not self.reassign:
            return trigger, goal
        cut = self.reassigning(s) & self.epochs_exhausted(s)
        return trigger & ~cut, goal | cut

    def alter_accepted(self, s, l):
        """The controller would commit an AlterPartition leader l sends now (ReplicationControlManager.alterPartition,
        3.9): l leads in the controller's leader epoch and partition epoch."""
        return (s.q_leader == l) & (s.leader_epoch[l] == s.q_epoch) & (s.pe_lag[l] == 0)

    def current_request_pending(self, s, r):
        """Live broker r's metadata image lacks a partition record the controller committed."""
        return s.up[r] & (s.img_lag[r] > 0)

    @leads_to("write-resolves", fairness=FOLLOWER_FAIRNESS)
    def write_resolves(self, s):
        """Every acks=all produce request is eventually answered while its leader stays leader.

        Answered: acknowledged, or rejected (NOT_ENOUGH_REPLICAS_AFTER_APPEND, NOT_LEADER_OR_FOLLOWER, a broken
        connection); the request's own timeout (request.timeout.ms) is not counted as an answer.

        Fairness as for hw-advances. The obligation also ends while the leader could drop an ISR member that does not
        fetch from it (its isr-expiration task does after replica.lag.time.max.ms, and the controller, which leads in
        its leader epoch and partition epoch, commits the change): a dead member is one, so the controller's fencing
        needs no fairness here; and at the last leader epoch as for hw-advances."""
        return self.unless_cut_off(s, *KafkaReplication.write_resolves(self, s))

    @leads_to("acked-fully-replicated", fairness=FOLLOWER_FAIRNESS)
    def acked_fully_replicated(self, s):
        """While the leader is up, an acknowledged record eventually sits on every live ISR member at its offset.

        The ISR as the metadata log records it. Fairness and the end of the obligation as for write-resolves."""
        return self.unless_cut_off(s, *KafkaReplication.acked_fully_replicated(self, s))

    @leads_to("metadata-converges", fairness=[weak("apply_metadata")])
    def metadata_converges(self, s):
        """Every live broker's metadata image eventually holds the controller's latest partition record.

        Fairness: a live broker eventually applies the records that reach it (weakly fair: its metadata listener
        keeps fetching the log)."""
        return KafkaReplication.metadata_converges(self, s)

    @leads_to("reassignment-completes", fairness=FOLLOWER_FAIRNESS)
    def reassignment_completes(self, s):
        """A reassignment whose target replicas stay up and acceptable to the controller, and whose leader stays up,
        completes.

        Fairness as for hw-advances: an added replica applies the record that names it and fetches, the leader
        proposes it for the ISR and the controller's AlterPartition handling completes the reassignment
        (PartitionChangeBuilder.completeReassignmentIfNeeded). The obligation ends when a target replica stops or is
        fenced or in controlled shutdown (an AlterPartition adding it is INELIGIBLE_REPLICA), when the partition has
        no live leader (eventually-leader's business), or at the last leader epoch the bounds allow (the completion's
        bump needs one more). Holds trivially without reassignments.
        """
        if not self.reassign:
            return False, True
        up = all_of(~self.target(s, i) | (s.up[i] & self.acceptable(s, i)) for i in self.REPLICAS)
        led = any_of((s.q_leader == l) & s.up[l] for l in self.REPLICAS)
        running = self.reassigning(s) & up & led & (s.q_epoch < self.E)
        return running, ~running

    @leads_to("fenced-eventually-unfenced", fairness=[weak("unfence_broker"), weak("apply_metadata")])
    def fenced_eventually_unfenced(self, s):
        """A live broker the controller has fenced, and that is not shutting down, is eventually unfenced.

        Fairness: the controller unfences a live fenced broker that asks (weakly fair: BrokerLifecycleManager's
        heartbeat loop asks every broker.heartbeat.interval.ms, and BrokerHeartbeatManager.calculateNextBrokerState
        unfences it once its metadata caught up), and a live broker applies the metadata records that reach it (the
        controller's record waits for them: metadata_lag). The obligation ends when the broker stops or enters
        controlled shutdown (it is leaving), and at the last leader epoch the bounds allow (the unfencing may elect
        it). Stated for the last replica, as isr-regrows is.
        """
        r = self.R - 1
        fenced = s.up[r] & s.fenced[r] & ~s.shutting_down[r]
        return fenced, ~fenced | self.epochs_exhausted(s)

    @leads_to("alter-partition-completes", fairness=[weak("alter_partition"), weak("alter_partition_elects"),
                                                     strong("alter_partition_response"), weak("apply_metadata")])
    def alter_partition_completes(self, s):
        """An AlterPartition a live leader has in flight is eventually answered and the answer read.

        Fairness: the controller handles every AlterPartition that reaches it (weakly fair: QuorumController's event
        queue), the leader reads an answer that is not lost forever (strongly fair: AlterPartitionManager's
        NodeToControllerChannelManager resends the request until it is answered, retryTimeoutMs = Long.MaxValue),
        and a live broker applies the metadata records that reach it (a record the answer needs waits for them).
        The obligation ends when the leader stops, and at the last leader epoch the bounds allow (a 3.5 shrink and a
        completed reassignment bump it). Stated for the last replica, as isr-regrows is.
        """
        l = self.R - 1
        waiting = s.up[l] & s.ap_sent[l]
        return waiting, ~waiting | self.epochs_exhausted(s)

    @leads_to("truncation-terminates", fairness=[weak("truncate_on_fetch_response"), weak("apply_metadata"),
                                                 weak("elect_leader"), weak("restart"), weak("fence_broker"),
                                                 weak("unfence_broker")])
    def truncation_terminates(self, s):
        """A live follower with a DivergingEpoch answer to apply eventually fetches again.

        Fairness: a live follower eventually truncates as the answer says, a live broker eventually applies the
        metadata records that reach it, the controller eventually fences and unfences and elects, and a stopped
        broker eventually restarts (each instance weakly fair). Stated for the last replica (model/kafka.py).
        """
        return KafkaReplication.truncation_terminates(self, s)
