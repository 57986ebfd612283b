"""The KRaft controller and the metadata log for one partition: what the controller decides and how brokers learn it.

``KRaftController`` is the controller half of the KRaft family (model/kraft.py mixes it in): the partition's
registration in the metadata log and each broker's image of it, the brokers' registrations (fenced, in controlled
shutdown, a new broker epoch per incarnation), elections as PartitionChangeBuilder makes them, and AlterPartition
as ReplicationControlManager.alterPartition handles it. The brokers' side (Partition, ReplicaManager, the fetcher)
is model/kraft.py.

The metadata log. Every change of the partition is a PartitionChangeRecord with the next partition epoch; the
controller's current registration is ``q_leader``, ``q_epoch`` (leader epoch), ``q_isr`` (and ``q_elr``,
``q_last_known_leader`` with ELR). The records no live broker has applied yet are kept in a window: ``mlog_*[k]``
is the record ``k + 1`` records before the current one. Each broker's metadata image is ``img_lag`` records
behind the controller; it applies them in log order, one or a batch at a time (MetadataLoader publishes a delta
that may span several records: TopicDelta keeps the last registration of the partition), and its Partition runs
makeLeader or makeFollower for the record it lands on. Partition epochs are relative to the controller's:
``pe_lag[r]`` is how many records ago broker r's Partition.partitionEpoch was current (``metadata_lag``: as old as
the window or older, or no partition state), exact for every comparison Kafka makes with them (makeLeader's and
makeFollower's skip test, the window's records, and AlterPartition's equality test, which is the flag
``ap_pe_current``). The controller appends a record only while every live broker's image is less than
``metadata_lag`` records behind: that bound is a bound of the search, like --max-epochs.

Registrations (ClusterControlManager, BrokerHeartbeatManager): ``fenced[r]`` and ``shutting_down[r]`` as the
controller holds them. A broker that stops keeps its registration until its session expires
(broker.session.timeout.ms): the controller then fences it (``fence_broker``). A broker registers a new
incarnation (``restart``) only once the old one is fenced (DuplicateBrokerRegistrationException before), with a new
broker epoch; it is unfenced (``unfence_broker``) when it asks. The controller's view of a broker is exact; a
broker's view of the others (its metadata image of their registrations) is the ``eligibility_lag`` option of
model/kraft.py.
"""
from __future__ import annotations

from isrcheck.model.expr import all_of, any_of, count_of, min_of, where
from isrcheck.model.layout import Field
from isrcheck.model.spec import action

def none_of(values):
    """True where no value holds (the negation of any_of, also for constant values)."""
    found = any_of(values)
    return (not found) if isinstance(found, bool) else ~found


#: AlterPartition responses (``ap_resp``), as Partition.submitAlterPartition's callback tells them apart
NO_RESPONSE, ACCEPTED, ACCEPTED_NEW_EPOCH, STALE, INELIGIBLE = range(5)


class KRaftController:
    """The controller and the metadata log (see the module doc); mixed into KRaftReplication."""

    #: 3.6+ (KAFKA-15021, metadata.version 3.6-IV0): an ISR shrink keeps the leader epoch
    #: (PartitionChangeBuilder.triggerLeaderEpochBumpForIsrShrinkIfNeeded); before, every shrink bumps it
    #: (triggerLeaderEpochBumpIfNeeded, 3.5)
    shrink_keeps_leader_epoch = True
    #: KAFKA-19522: 4.0.0's PartitionChangeBuilder.canElectLastKnownLeader elects the last known leader even when
    #: it is fenced (the acceptability test only logs); the fix returns false then
    elects_fenced_last_known_leader = False

    # ------------------------------------------------------------------------------------
    # state
    # ------------------------------------------------------------------------------------
    def metadata_fields(self):
        R, W, E = self.R, self.W, self.E
        rep = ("replica",)
        return [
            Field("mlog_leader", 0, R, (W,), values="replica",
                  doc="the leader in the partition record k+1 records before the controller's (R: none)"),
            Field("mlog_epoch", 0, E, (W,), unbounded=True, doc="its leader epoch"),
            Field("mlog_isr", 0, 1, (W, R), boolean=True, axes=(None, "replica"), doc="its ISR"),
            Field("img_lag", 0, W, (R,), axes=rep,
                  doc="partition records the broker's metadata image has not applied yet"),
            Field("pe_lag", 0, W, (R,), axes=rep,
                  doc="how many records ago the broker's Partition.partitionEpoch was the controller's "
                      f"({W}: that long ago or more, or no partition state)"),
            Field("q_preferred", 0, R, values="replica",
                  doc="the preferred replica (the first of the assignment): the partition's first leader (R: none yet)"),
            Field("fenced", 0, 1, (R,), boolean=True, axes=rep, doc="the controller has the broker fenced"),
            Field("shutting_down", 0, 1, (R,), boolean=True, axes=rep,
                  doc="the controller has the broker in controlled shutdown"),
            Field("ap_sent", 0, 1, (R,), boolean=True, axes=rep,
                  doc="as leader: AlterPartitionManager holds an AlterPartition for the partition (sent, no "
                      "response read yet)"),
            Field("ap_epoch_current", 0, 1, (R,), boolean=True, axes=rep,
                  doc="that request's leader epoch is still the controller's"),
            Field("ap_pe_current", 0, 1, (R,), boolean=True, axes=rep,
                  doc="that request's partition epoch is still the controller's"),
            Field("ap_resp", 0, 4, (R,), axes=rep,
                  doc="its response in flight: 0 none, 1 accepted, 2 accepted with a new leader epoch, "
                      "3 FENCED_LEADER_EPOCH or INVALID_UPDATE_VERSION, 4 INELIGIBLE_REPLICA"),
            Field("ap_resp_pe_lag", 0, W, (R,), axes=rep,
                  doc="the partition epoch an accepted response carries, as pe_lag counts"),
        ]

    def metadata_initial(self, s):
        """The partition exists with every replica in the ISR and no leader; every broker's image has it."""
        s.q_preferred = self.NONE
        for k in range(self.W):
            s.mlog_leader[k] = self.NONE

    # ------------------------------------------------------------------------------------
    # the metadata log
    # ------------------------------------------------------------------------------------
    def record_at(self, s, k):
        """(leader, leader epoch, ISR) of the partition record ``k`` records before the controller's (k constant)."""
        if k == 0:
            return s.q_leader, s.q_epoch, [s.q_isr[i] for i in self.REPLICAS]
        return s.mlog_leader[k - 1], s.mlog_epoch[k - 1], [s.mlog_isr[k - 1][i] for i in self.REPLICAS]

    def window_has_room(self, s):
        """The controller may append a record: every live broker's image is less than ``metadata_lag`` behind."""
        return all_of(~s.up[r] | (s.img_lag[r] < self.W) for r in self.REPLICAS)

    def write_partition(self, s, leader, epoch, isr, elr=None, when=True, completes=False, plan=None):
        """The controller commits a PartitionChangeRecord (where ``when``): the partition's registration becomes
        (leader, leader epoch, ISR, ELR) with the next partition epoch; the previous one enters the window of
        records brokers have yet to apply. ELR (KIP-966) as PartitionChangeBuilder.maybePopulateTargetElr and
        maybeUpdateLastKnownLeader keep it (``elr``: the target ELR when the builder sets it, e.g. an election
        from the ELR). With reassignment on, the record carries the replica set, the target where it
        ``completes`` the reassignment, or the ``plan`` of a reassignment's first record
        (model/kraft_reassignment.py)."""
        self.write_replicas(s, completes, when, plan)
        if self.elr:
            self.update_last_known_leader(s, leader, isr, when)
            if elr is None:
                self.update_elr(s, isr, when)
            else:
                for i in self.REPLICAS:
                    s.q_elr[i] = where(when, elr[i], s.q_elr[i])
        for k in reversed(range(1, self.W)):
            s.mlog_leader[k] = where(when, s.mlog_leader[k - 1], s.mlog_leader[k])
            s.mlog_epoch[k] = where(when, s.mlog_epoch[k - 1], s.mlog_epoch[k])
            for i in self.REPLICAS:
                s.mlog_isr[k][i] = where(when, s.mlog_isr[k - 1][i], s.mlog_isr[k][i])
        new_epoch = epoch != s.q_epoch
        s.mlog_leader[0] = where(when, s.q_leader, s.mlog_leader[0])
        s.mlog_epoch[0] = where(when, s.q_epoch, s.mlog_epoch[0])
        for i in self.REPLICAS:
            s.mlog_isr[0][i] = where(when, s.q_isr[i], s.mlog_isr[0][i])
        s.q_leader = where(when, leader, s.q_leader)
        s.q_epoch = where(when, epoch, s.q_epoch)
        for i in self.REPLICAS:
            s.q_isr[i] = where(when, isr[i], s.q_isr[i])
        for r in self.REPLICAS:
            s.img_lag[r] = where(when & s.up[r], s.img_lag[r] + 1, s.img_lag[r])
            s.pe_lag[r] = where(when, min_of([s.pe_lag[r] + 1, self.W]), s.pe_lag[r])
            s.ap_resp_pe_lag[r] = where(when & (s.ap_resp[r] == ACCEPTED),
                                        min_of([s.ap_resp_pe_lag[r] + 1, self.W]), s.ap_resp_pe_lag[r])
            s.ap_pe_current[r] = where(when, False, s.ap_pe_current[r])
            s.ap_epoch_current[r] = s.ap_epoch_current[r] & ~(when & new_epoch)
        self.trim_window(s)

    def trim_window(self, s):
        """Records every live broker has applied are gone from the window (equal logs, equal states)."""
        for k in range(self.W):
            needed = any_of(s.up[r] & (s.img_lag[r] >= k + 2) for r in self.REPLICAS)
            s.mlog_leader[k] = where(needed, s.mlog_leader[k], self.NONE)
            s.mlog_epoch[k] = where(needed, s.mlog_epoch[k], 0)
            for i in self.REPLICAS:
                s.mlog_isr[k][i] = s.mlog_isr[k][i] & needed
                if self.reassign:
                    s.mlog_replicas[k][i] = s.mlog_replicas[k][i] & needed

    def acceptable(self, s, i):
        """ReplicationControlManager's LeaderAcceptor (clusterControl.isActive): registered, not fenced, not in
        controlled shutdown, as the controller holds it (it does not know whether the process runs)."""
        return ~s.fenced[i] & ~s.shutting_down[i]

    def valid_leader(self, s, i, isr, elr):
        """PartitionChangeBuilder.isValidNewLeader: in the target ISR, or (ELR on) in the target ELR when the target
        ISR is empty; and acceptable."""
        ok = isr[i]
        if self.elr:
            ok = ok | (none_of(isr) & elr[i])
        return ok & self.acceptable(s, i)

    def elect(self, s, l, isr, removed, completes=False, plan=None):
        """The record PartitionChangeBuilder.build makes for target ISR ``isr`` with broker ``removed`` out of the
        ISR and leadership (handleBrokerFenced, handleBrokerInControlledShutdown: brokerToRemove).

        maybePopulateTargetElr first (ELR on); then tryElection: the current leader stays if it is still a valid
        leader (electAnyLeader); else ``l`` must be a valid one (the first valid replica in assignment order: any,
        every assignment order being possible), or, none being valid, R (no leader). A leader from the ELR makes
        the ISR that replica alone and leaves the ELR. Returns (leader, leader epoch, ISR, ELR or None, whether
        ``l`` is the choice the rules allow). With reassignment on, a new leader is one of the record's replicas
        (electAnyLeader walks targetReplicas, the target where the record ``completes`` the reassignment).
        """
        NONE, current = self.NONE, s.q_leader
        elr = self.elr_after(s, isr) if self.elr else None
        valid = [self.valid_leader(s, i, isr, elr) & (i != removed) for i in self.REPLICAS]
        stays = any_of((current == i) & valid[i] for i in self.REPLICAS)
        members = self.replicas_after(s, completes, plan)
        choice_ok = where(stays, l == NONE, where(l == NONE, none_of(valid[i] & members[i] for i in self.REPLICAS),
                                                  any_of((l == i) & valid[i] & members[i] for i in self.REPLICAS)))
        leader = where(stays, current, l)
        epoch = where(leader != current, s.q_epoch + 1, s.q_epoch)
        if not self.elr:
            return leader, epoch, isr, None, choice_ok
        from_elr = none_of(isr) & ~stays & (l != NONE)
        new_isr = [where(from_elr, l == i, isr[i]) for i in self.REPLICAS]
        new_elr = [elr[i] & ~(from_elr & (l == i)) for i in self.REPLICAS]
        return leader, epoch, new_isr, new_elr, choice_ok

    def shrink_epoch(self, s, leader, epoch, isr):
        """3.5 (before KAFKA-15021): a record that drops an ISR member bumps the leader epoch even when the leader
        stays (PartitionChangeBuilder.triggerLeaderEpochBumpIfNeeded)."""
        if self.shrink_keeps_leader_epoch:
            return epoch
        shrinks = any_of(s.q_isr[i] & ~isr[i] for i in self.REPLICAS)
        return where(shrinks & (epoch == s.q_epoch) & (leader != self.NONE), s.q_epoch + 1, epoch)

    def partition_changes(self, s, leader, epoch, isr, elr):
        """PartitionChangeBuilder.changeRecordIsNoOp, negated: the record changes something."""
        out = (leader != s.q_leader) | (epoch != s.q_epoch) | any_of(isr[i] != s.q_isr[i] for i in self.REPLICAS)
        if self.elr:
            target = elr if elr is not None else self.elr_after(s, isr)
            out = out | any_of(target[i] != s.q_elr[i] for i in self.REPLICAS)
        return out

    def elr_after(self, s, new_isr, unclean=None):
        """PartitionChangeBuilder.maybePopulateTargetElr (KIP-966): with a target ISR below min.insync.replicas the
        ELR is the current ELR and ISR less the target ISR (less ``unclean``, a broker registering again after
        any shutdown: handleBrokerUncleanShutdown); at or above it, empty."""
        below = count_of(new_isr[i] for i in self.REPLICAS) < self.controller_min_isr(s)
        return [~new_isr[i] & below & (s.q_elr[i] | s.q_isr[i]) & ((i != unclean) if unclean is not None else True)
                for i in self.REPLICAS]

    def controller_min_isr(self, s):
        """ReplicationControlManager.getTopicEffectiveMinIsr (3.9): min.insync.replicas, at most the replication
        factor of the partition registration's replica list (with reassignment on, the list changes)."""
        if not self.reassign:
            return self.min_isr
        return min_of([self.min_isr, count_of(s.q_replicas[i] for i in self.REPLICAS)])

    def update_elr(self, s, new_isr, when=True):
        """KIP-966 as PartitionChangeBuilder keeps the ELR when the ISR becomes ``new_isr`` (where ``when``): the
        controller does not know how a replica left the ISR (an unclean shutdown is learnt only when the broker
        registers again, ``restart``)."""
        elr = self.elr_after(s, new_isr)
        for i in self.REPLICAS:
            s.q_elr[i] = where(when, elr[i], s.q_elr[i])

    def update_last_known_leader(self, s, leader, new_isr, when=True):
        """PartitionChangeBuilder.maybeUpdateLastKnownLeader (4.0, ELR on; useLastKnownLeaderInBalancedRecovery is
        never turned off): a record that empties the ISR (sets an empty one) stores the partition's leader as it was
        as the last known ELR; one that leaves the partition with a leader clears it; otherwise it stays."""
        empties = none_of(new_isr[i] for i in self.REPLICAS) & any_of(s.q_isr[i] for i in self.REPLICAS)
        value = where(empties, s.q_leader, where(leader != self.NONE, self.NONE, s.q_last_known_leader))
        s.q_last_known_leader = where(when, value, s.q_last_known_leader)

    def drop_from_isr(self, s, r):
        """The target ISR without broker r (generateLeaderAndIsrUpdates: Replicas.copyWithout); with ELR off the
        last member stays (PartitionChangeBuilder.build sets no empty ISR unless ELR is enabled)."""
        isr = [s.q_isr[i] & (i != r) for i in self.REPLICAS]
        if self.elr:
            return isr
        keeps = none_of(isr)
        return [where(keeps, s.q_isr[i], isr[i]) for i in self.REPLICAS]

    # ------------------------------------------------------------------------------------
    # controller actions
    # ------------------------------------------------------------------------------------
    @action(l="REPLICAS")
    def elect_leader(self, s, l):
        """The controller elects l: for a leaderless partition once l is a valid leader (electAnyLeader, run by the
        next change that looks at the partition, e.g. ReplicationControlManager.handleBrokerUnfenced for partitions
        without a leader, 3.9; the partition's first election is its creation, whose leader is the preferred
        replica), or, with ``preferred_elections``, a preferred-leader election giving leadership back to the
        preferred replica (the auto leader rebalance and ReplicationControlManager.electLeaders,
        PartitionChangeBuilder.electPreferredLeader, 3.9).

        l must be in the ISR, or (ELR on) in the ELR with the ISR empty, and acceptable (unfenced, not in
        controlled shutdown); the ISR stays, but an election from the ELR makes it l alone (tryElection). With
        unclean.leader.election.enable a leaderless partition with no valid leader may elect any acceptable
        replica, the ISR becoming that replica alone and the ELR empty (electAnyLeader's last resort).
        """
        isr, completes = self.completion(s, [s.q_isr[i] for i in self.REPLICAS])
        elr = self.elr_after(s, isr) if self.elr else None
        valid = self.valid_leader(s, l, isr, elr) & self.replicas_after(s, completes)[l]
        may = s.q_leader == self.NONE
        if self.preferred_elections:
            may = may | ((s.q_preferred == l) & (s.q_leader != l))
        unclean = False
        if self.unclean:
            nobody = none_of(self.valid_leader(s, i, isr, elr) for i in self.REPLICAS)
            unclean = (s.q_leader == self.NONE) & nobody & self.acceptable(s, l) & self.replicas_after(s, completes)[l]
        s.require((s.q_epoch < self.E) & may & (valid | unclean) & self.window_has_room(s))
        s.q_preferred = where(s.q_preferred == self.NONE, l, s.q_preferred)
        from_elr = none_of(isr) if self.elr else False
        alone = from_elr | unclean
        new_elr = None
        if self.elr:
            new_elr = [where(unclean, False, elr[i] & (i != l)) for i in self.REPLICAS]
        self.write_partition(s, l, s.q_epoch + 1, [where(alone, i == l, isr[i]) for i in self.REPLICAS], new_elr,
                             completes=completes)

    @action(r="REPLICAS", l="LEADER_CHOICES")
    def fence_broker(self, s, r, l):
        """Broker r's session expires (no heartbeat for broker.session.timeout.ms): the controller fences it and
        takes it out of the ISR; if it led, the same record elects l (R: no valid leader, the partition goes
        leaderless) (BrokerHeartbeatManager, ReplicationControlManager.handleBrokerFenced, 3.9).

        r's process is down (it crashed or shut down), or it runs but its heartbeats do not reach the controller
        (a long pause, a network partition: one of the max_crashes failures); it keeps running, and acting as the
        leader it believes it is, until its metadata image learns otherwise. The ISR shrink keeps the leader epoch
        (3.6+; 3.5 bumps it); with ELR off the last ISR member stays; with ELR on r joins the ELR when the ISR falls
        below min.insync.replicas (the controller does not know whether r's shutdown was clean). Only a partition
        with r in its ISR changes (partitionsWithBrokerInIsr).
        """
        self._remove_broker(s, r, l, ~s.fenced[r] & (~s.up[r] | (s.crashes < self.C)))
        s.fenced[r] = True
        s.crashes = where(s.up[r], s.crashes + 1, s.crashes)

    @action(r="REPLICAS", l="LEADER_CHOICES")
    def controlled_shutdown(self, s, r, l):
        """Broker r asks to shut down: the controller puts it in controlled shutdown, takes it out of the ISR and
        moves its leadership to l (R: no valid leader) in one record (BrokerHeartbeatManager, ReplicationControl
        Manager.handleBrokerInControlledShutdown, 3.9).

        The ISR shrink keeps the leader epoch (3.6+); with ELR off the last ISR member stays. r keeps running and
        fetching until it stops (``shutdown``), no longer acceptable as leader nor ISR-eligible (KIP-841).
        """
        self._remove_broker(s, r, l, s.up[r] & ~s.fenced[r] & ~s.shutting_down[r] & (s.crashes < self.C))
        s.shutting_down[r] = True

    def _remove_broker(self, s, r, l, guard):
        """generateLeaderAndIsrUpdates(brokerToRemove = r) for the partition, enabled where ``guard`` holds."""
        in_isr = s.q_isr[r]
        isr, completes = self.completion(s, self.drop_from_isr(s, r))
        leader, epoch, new_isr, elr, choice_ok = self.elect(s, l, isr, removed=r, completes=completes)
        epoch = self.reassignment_epoch(s, leader, self.shrink_epoch(s, leader, epoch, new_isr), completes)
        writes = in_isr & (self.partition_changes(s, leader, epoch, new_isr, elr) | completes)
        s.require(self.may_stop & guard & where(in_isr, choice_ok, l == self.NONE)
                  & (~writes | ((epoch <= self.E) & self.window_has_room(s))))
        self.write_partition(s, leader, epoch, new_isr, elr, when=writes, completes=completes)

    @action(r="REPLICAS")
    def unfence_broker(self, s, r):
        """Broker r, registered again and caught up, asks to be unfenced and is (BrokerHeartbeatManager
        .calculateNextBrokerState, ReplicationControlManager.handleBrokerUnfenced, 3.9).

        A partition without a leader whose ISR (or, with ELR and an empty ISR, ELR) holds r elects r (brokerToAdd
        counts as acceptable; any other valid replica would have been elected when it became valid); with ELR
        on, a partition whose ISR and ELR are empty may elect its last known leader
        (``elect_last_known_leader``).
        """
        leaderless = s.q_leader == self.NONE
        isr, completes = self.completion(s, [s.q_isr[i] for i in self.REPLICAS])
        member = isr[r]
        if self.elr:
            member = member | (none_of(isr) & s.q_elr[r])
        elects = leaderless & member & self.replicas_after(s, completes)[r]
        writes = elects | (leaderless & completes)
        s.require(s.up[r] & s.fenced[r] & ~s.shutting_down[r]
                  & (~writes | ((s.q_epoch < self.E) & self.window_has_room(s))))
        s.fenced[r] = False
        alone = none_of(isr) if self.elr else False
        elr = None
        if self.elr:
            kept = self.elr_after(s, isr)
            elr = [where(elects, s.q_elr[i] & (i != r), kept[i]) for i in self.REPLICAS]
        epoch = where(elects, s.q_epoch + 1, self.reassignment_epoch(s, self.NONE, s.q_epoch, completes))
        self.write_partition(s, where(elects, r, self.NONE), epoch,
                             [where(alone & elects, i == r, isr[i]) for i in self.REPLICAS], elr, when=writes,
                             completes=completes)

    @action(l="REPLICAS")
    def elect_last_known_leader(self, s, l):
        """With the ISR and the ELR both empty, the controller elects l, the last known leader
        (PartitionChangeBuilder.electAnyLeader / canElectLastKnownLeader, 4.0, KIP-966 with ELR on).

        The election counts as unclean: the ISR becomes l alone (tryElection: "forcibly set the ISR to just the
        new leader") and the leader is RECOVERING (KIP-704). ReplicationControlManager runs it in any partition
        change that finds the partition leaderless (handleBrokerUnfenced of any broker); the model lets it come
        any time after. l must be acceptable; 4.0.0 elects it even when fenced (KAFKA-19522).
        """
        if not self.elr:
            s.require(False)
            return
        ok = (s.q_epoch < self.E) & (s.q_leader == self.NONE) & (s.q_last_known_leader == l)
        ok = ok & none_of(s.q_isr[i] | s.q_elr[i] for i in self.REPLICAS) & self.window_has_room(s)
        if not self.elects_fenced_last_known_leader:
            ok = ok & self.acceptable(s, l)
        s.require(ok)
        self.write_partition(s, l, s.q_epoch + 1, [i == l for i in self.REPLICAS], [False for _ in self.REPLICAS])

    @action(l="REPLICAS")
    def alter_partition(self, s, l):
        """The controller handles leader l's AlterPartition (ReplicationControlManager.alterPartition,
        validateAlterPartitionData, 3.9).

        In order: the request's leader epoch must be the partition's (FENCED_LEADER_EPOCH), its partition epoch too
        (INVALID_UPDATE_VERSION), and every member of the new ISR registered, unfenced, not in controlled shutdown and
        with the broker epoch the request carries (INELIGIBLE_REPLICA: KIP-841, 3.3; KIP-903, 3.5). Accepted, the
        controller commits the ISR (a PartitionChangeRecord, none if nothing changes; 3.5 bumps the leader epoch of
        a shrink) and answers with the new state. The request may come from a leader that has crashed since it sent
        it (its broker epoch stays registered until it registers again): nobody reads that answer. With reassignment
        on, the record completes a reassignment whose target the new ISR holds (model/kraft_reassignment.py), with the
        leader epoch bump of a shrinking replica list (answered with the new epoch: the leader's state stays pending
        until its metadata catches up); one that also elects another leader is ``alter_partition_elects``.
        """
        self.handle_alter_partition(s, l, self.NONE)

    @action(l="REPLICAS", n="REPLICAS")
    def alter_partition_elects(self, s, l, n):
        """The controller handles leader l's AlterPartition, whose ISR completes a reassignment that removes l: the
        same record elects n (ReplicationControlManager.alterPartition, 3.9: PartitionChangeBuilder.build completes
        the reassignment, electAnyLeader replaces the leader, which is answered NEW_LEADER_ELECTED (3.3+; before,
        FENCED_LEADER_EPOCH) and waits, its state pending, for the metadata that removes it:
        Partition.handleAlterPartitionError)."""
        if not self.reassign:
            s.require(False)
            return
        self.handle_alter_partition(s, l, n)

    def handle_alter_partition(self, s, l, n):
        """ReplicationControlManager.alterPartition for leader l's request; n: the leader the record elects when it
        completes a reassignment that removes the leader (R: none elected)."""
        proposed = [s.pending_isr[l][i] for i in self.REPLICAS]
        members_ok = all_of(~proposed[i] | self.acceptable(s, i) for i in self.REPLICAS)
        if self.checks_broker_epochs:
            members_ok = members_ok & s.pending_epochs_current[l]
        stale = ~s.ap_epoch_current[l] | ~s.ap_pe_current[l]
        accepted = ~stale & members_ok
        if self.reassign:
            narrowed, completes = self.completion(s, proposed)
            completes = completes & accepted        # a rejected request builds nothing
            isr = [where(completes, narrowed[i], proposed[i]) for i in self.REPLICAS]
            leader, epoch, isr, elr, choice_ok = self.elect(s, n, isr, removed=None, completes=completes)
            epoch = self.reassignment_epoch(s, leader, self.shrink_epoch(s, leader, epoch, isr), completes)
            elected = leader != s.q_leader
            s.require(where(accepted, choice_ok & (elected if n != self.NONE else ~elected), n == self.NONE))
        else:
            leader, isr, completes, elected = s.q_leader, proposed, False, False
            elr = self.elr_after(s, proposed) if self.elr else None
            epoch = self.shrink_epoch(s, s.q_leader, s.q_epoch, proposed)
        writes = accepted & (self.partition_changes(s, leader, epoch, isr, elr) | completes)
        s.require(s.ap_sent[l] & (s.ap_resp[l] == NO_RESPONSE)
                  & (~writes | ((epoch <= self.E) & self.window_has_room(s))))
        answer = where(stale | elected, STALE, where(~members_ok, INELIGIBLE,
                                                     where(epoch != s.q_epoch, ACCEPTED_NEW_EPOCH, ACCEPTED)))
        self.write_partition(s, leader, epoch, isr, elr, when=writes, completes=completes)
        s.ap_resp[l] = where(s.up[l], answer, NO_RESPONSE)
        s.ap_resp_pe_lag[l] = 0
        gone = ~s.up[l]
        s.ap_sent[l] = s.ap_sent[l] & ~gone
        self.clear_request(s, l, when=gone)

    def clear_request(self, s, l, when=True):
        """The in-flight AlterPartition of l is done (where ``when``): its flags go, and its ISR unless l's partition
        state is still pending with it."""
        s.ap_epoch_current[l] = where(when, False, s.ap_epoch_current[l])
        s.ap_pe_current[l] = where(when, False, s.ap_pe_current[l])
        s.pending_epochs_current[l] = where(when, False, s.pending_epochs_current[l])
        for i in self.REPLICAS:
            s.pending_isr[l][i] = where(when & ~s.alter_pending[l], False, s.pending_isr[l][i])
