"""The Kafka replication model for one partition (ZooKeeper-mode controller).

Protocol versions (specs/) subclass :class:`KafkaReplication` and override the
hooks that changed between versions: what a replica does on becoming follower,
how a follower truncates before fetching, which fetches a leader accepts, and
when a follower may rejoin the ISR.

Conventions: replicas are ``0..R-1``; ``R`` itself means "none" in fields that
hold a replica id. Offsets are ``0..L-1``; log cells at or past the log end
offset are kept at 0 so that equal logs are equal states. Record ids are
``1..M`` in the order producers sent them; leader epochs are ``1..E`` (0: none).

Where the model departs from Kafka (each a sound over-approximation for safety unless said):
- a leader may shrink its ISR by any follower at any time (replica.lag.time.max.ms abstracted away), unless the
  version declares its lag rule (``lag_rule``: Partition.getOutOfSyncReplicas as 0.8 and 0.9+ have it, with
  time as the actions ``lag_expires`` and ``catch_up_lapses``; see ``lag_fields``);
- LeaderAndIsr requests may arrive late, twice, out of order or never (Kafka's controller sends them in
  order and retries; a lost one only adds interleavings);
- after an unnoticed bounce (before 2.2) the current LeaderAndIsr may reach the broker any time;
- the leader-epoch cache is one entry per epoch (``epoch_cache``, bounded by max_epochs and log_size), exact as
  LeaderEpochFileCache keeps it: its entries increase in epoch and start offset in every version, so the entry of
  the largest epoch is the last one (only the log start offset, always 0 here, and truncateFromStart are left out);
- not exact: after a hard crash Log.recoverLog re-reads the segment and LogSegment.recover assigns the epoch of each
  batch above the cache's latest (0.11-2.7) before truncateFromEnd(LEO); the model only truncates the cache. They
  differ only on a log holding a record whose epoch has no entry, which 2.0.1-2.6.0 reach through truncateAndAppend's
  conflict removal (KAFKA-10706's no-op truncation keeps an entry at the LEO) followed by a truncation;
- liveness, not exact: truncation-terminates assumes a weakly fair elect_leader, stronger than Kafka's controller,
  which elects only when the leader fails (or for preferred-leader balance); it can end a loop Kafka would not;
- liveness, not exact: without a timed lag rule ``shrink_isr`` is not fair (it may drop a follower that fetches), so
  write-resolves and acked-fully-replicated end their obligation where the leader could drop an ISR member that
  does not fetch from it (``laggard``), as Kafka's lag rule does after replica.lag.time.max.ms: a wait that only
  the lag rule ends is not reported;
- partition reassignment (the bound ``reassignments``): model/reassignment.py, with its own departures.
"""
from __future__ import annotations

from isrcheck.model.expr import all_of, any_of, count_of, max_of, min_of, where
from isrcheck.model.kafka_present import KafkaPresentation
from isrcheck.model.layout import Field
from isrcheck.model.reassignment import REASSIGNMENT_BOUNDS, ZkReassignment
from isrcheck.model.spec import Bound, FuzzTarget, Spec, action, invariant, leads_to, strong, weak

#: replica.lag.max.messages: a version with the message lag rule (0.8) adds it to its declared bounds
LAG_MAX_MESSAGES = Bound("lag_max_messages", 1, 1, 6, "replica.lag.max.messages (0.8): a follower more than this many "
                         "messages behind the leader's LEO is out of sync")


class KafkaReplication(ZkReassignment, Spec):
    #: 0.11+ (KIP-101): each replica keeps a LeaderEpochFileCache (the state field ``epoch_cache``), assigned on every
    #: append of a new epoch and truncated with the log; before 0.11 (hw-truncation) there is none
    leader_epoch_cache = True
    #: 2.0.1+ (KAFKA-7415): makeLeader assigns (leader epoch, LEO) in the leader-epoch cache and keeps that LEO as
    #: the epoch's start offset (the state field ``epoch_start``); LeaderEpochFileCache.assign removes the entries
    #: a new one conflicts with (0.11-2.0.0 ignores an epoch not above the latest) and endOffsetFor answers an
    #: epoch below the first entry with that entry's start offset (0.11-2.0.0: UNDEFINED)
    epoch_cached_on_election = False
    #: 2.2+ (KIP-380, broker epochs): the controller notices every new incarnation of a broker and handles it as a
    #: failure before the broker registers again; before 2.2 a fast bounce can go unnoticed (KAFKA-1120)
    restart_noticed = False
    #: 0.10.2-2.0: a follower whose fetch offset is past the leader's LEO exits instead of truncating when unclean
    #: election is off (ReplicaFetcherThread.handleOffsetOutOfRange); 2.1+ truncates to the leader's LEO
    out_of_range_exits = False
    #: 2.4+: truncation clamps the HW to the new LEO (Log.updateLogEndOffset, since the HW moved into Log in 2.4,
    #: apache/kafka#7055); before, a follower's HW (Replica.highWatermark) may stay past its LEO until the next
    #: fetch response sets it to min(LEO, leader's HW), a restart loads min(checkpoint, LEO), and makeLeader
    #: resets it to the log start offset (Replica.convertHWToLocalOffsetMetadata finds no such offset)
    truncation_clamps_hw = False
    #: 2.6.1/2.7.0+ (KAFKA-10706, apache/kafka#9633): Log.truncateTo at or past the LEO still calls
    #: LeaderEpochFileCache.truncateFromEnd(LEO), which drops the entry makeLeader assigned at the LEO; before, that
    #: no-op truncation kept it, and a follower could ask the same OffsetsForLeaderEpoch forever
    truncation_cleans_epoch_cache = False
    #: how a leader tells that a follower is out of sync (Partition.getOutOfSyncReplicas, run by ReplicaManager's
    #: "isr-expiration" task: ``shrink_isr``). None: not declared, any follower may be dropped any time (sound for
    #: safety). "message" (0.8): more than replica.lag.max.messages (``lag_max_messages``) behind the leader's LEO, or
    #: no fetch within replica.lag.time.max.ms; "time" (0.9+, KIP-16): no fetch from the leader's LEO within
    #: replica.lag.time.max.ms (``caught_up``)
    lag_rule = None
    #: 0.10.2+ (KAFKA-4485), with the time rule: a fetch reaching the leader's LEO as of the follower's previous fetch
    #: counts as caught up as of that fetch (Replica.updateLogReadResult's second rule), and every makeLeader resets
    #: each follower's lastCaughtUpTimeMs (ISR members: now; the others: never); before, a fetch counts only if it
    #: starts at the leader's LEO and a new leader keeps the times it had
    caught_up_by_previous_fetch = False
    #: 0.9+ (Partition.makeLeader's isNewLeader): a broker that already leads keeps its followers' fetch offsets on a
    #: new LeaderAndIsr; 0.8.2's makeLeader resets them to unknown on every one
    leader_keeps_fetch_state = True
    #: before 0.10.2: a follower whose fetch offset is past the leader's LEO with unclean election off halts
    #: (ReplicaFetcherThread.handleOffsetOutOfRange: Runtime.halt, a hard stop) rather than exiting cleanly
    out_of_range_halts = False
    #: for a version built to show a missing fence: one sentence naming it and what Kafka uses instead
    missing_fence = None
    #: what every version shares; specs start their own dicts from these
    expected = {"single-acting-leader": "violated"}
    expected_why = {"single-acting-leader": "benign split brain, in every version: a deposed leader still "
                                            "believes it leads until its LeaderAndIsr arrives"}

    presentation_class = KafkaPresentation
    #: the fuzzer steers towards runs with many leader changes, truncations and crashes
    fuzz_targets = (FuzzTarget("leader changes", "q_epoch", "moves"), FuzzTarget("truncations", "leo", "drops"),
                    FuzzTarget("crashes", "up", "drops"))

    #: The options added for the fencing specs (specs/no_isr_fencing.py and friends) all default to 0, the
    #: behaviour above; each adds its state fields only when enabled, so the state layout, the action
    #: instances and the state counts of a spec that leaves them at 0 are exactly what they were.
    declared_bounds = (
        Bound("replicas", 2, 2, 5, "replicas of the partition (brokers)", kind="bound"),
        Bound("log_size", 2, 1, 6, "offsets each replica's log can hold", kind="bound"),
        Bound("max_records", 2, 1, 8, "records the producers may append, in all", kind="bound"),
        Bound("max_epochs", 4, 1, 8, "leader epochs the controller may start", kind="bound"),
        Bound("max_crashes", 1, 0, 6, "broker crashes and clean shutdowns, in all", kind="bound"),
        Bound("acks_all", 1, 0, 1, "1: producers use acks=all; 0: acks=1"),
        Bound("min_isr", 1, 1, 5, "min.insync.replicas"),
        Bound("unclean", 0, 0, 1, "unclean.leader.election.enable"),
        Bound("unflushed_loss", 0, 0, 1, "a hard crash loses the unflushed tail of the log"),
        Bound("controller_failover", 0, 0, 1, "one controller failover; a deposed (zombie) controller's "
              "LeaderAndIsr may still be in flight; requests carry the controller epoch (KAFKA-1188, KAFKA-6082)"),
        Bound("async_isr", 0, 0, 1, "a leader's ISR change is an AlterIsr request the controller commits "
              "later (KIP-497, 2.7)"),
        Bound("elr", 0, 0, 1, "eligible leader replicas (KIP-966): the ISR may shrink to empty, replicas removed "
              "while it is below min.insync.replicas stay electable, an unclean shutdown makes one ineligible"),
        Bound("fetch_response_loss", 0, 0, 1, "a fetch the leader has processed may never reach the follower"),
        Bound("proof_ghosts", 0, 0, 1, "history fields no action reads, for the lemmas of k-induction proofs: "
              "they change no behaviour, only split states that differ in history alone"),
    ) + REASSIGNMENT_BOUNDS

    def configure(self, bounds):
        b = bounds
        self.R, self.L, self.M, self.E, self.C = b.replicas, b.log_size, b.max_records, b.max_epochs, b.max_crashes
        self.may_stop = self.C > 0        # a broker can be down (crash or shutdown); else actions on one drop out
        self.NONE = self.R
        self.NO_OFFSET = self.L + 1       # "no such offset": past any LEO
        self.acks_all, self.min_isr = bool(b.acks_all), b.min_isr
        self.unclean, self.unflushed_loss = bool(b.unclean), bool(b.unflushed_loss)
        self.controller_failover, self.async_isr, self.elr = bool(b.controller_failover), bool(b.async_isr), bool(b.elr)
        self.fetch_response_loss, self.proof_ghosts = bool(b.fetch_response_loss), bool(b.proof_ghosts)
        self.lag_max_messages = b.lag_max_messages if self.lag_rule == "message" else None
        self.REPLICAS = range(self.R)
        self.OFFSETS = range(self.L)
        self.EPOCHS = range(1, self.E + 1)
        self.RECORDS = range(1, self.M + 1)
        self.LEADER_CHOICES = range(self.R + 1)       # a replica, or R: none
        self.configure_reassignment(b)

    def fields(self):
        R, L, M, E, C = self.R, self.L, self.M, self.E, self.C
        rep, none = ("replica",), R
        return [
            # --- each replica's log and offsets (on disk) ---
            Field("log_record", 0, M, (R, L), axes=("replica", None), unbounded=True,
                  doc="record id at each offset (0: empty)"),
            Field("log_epoch", 0, E, (R, L), axes=("replica", None), unbounded=True, doc="leader epoch of each record"),
            Field("leo", 0, L, (R,), axes=rep, doc="log end offset"),
            Field("hw", 0, L, (R,), axes=rep, doc="high watermark"),
            Field("flushed", 0, L, (R,), axes=rep, doc="offset up to which the log is fsynced"),
            Field("checkpoint_hw", 0, L, (R,), axes=rep, doc="HW in the replication-offset-checkpoint file"),
            Field("up", 0, 1, (R,), boolean=True, axes=rep, doc="broker process running"),
            # --- each replica's view from the last LeaderAndIsr it applied (in memory) ---
            Field("leader_epoch", 0, E, (R,), axes=rep, unbounded=True, doc="leader epoch the replica is on"),
            Field("leader", 0, none, (R,), axes=rep, values="replica", doc="who it believes leads"),
            Field("isr", 0, 1, (R, R), boolean=True, axes=("replica", "replica"), doc="ISR it believes"),
            Field("zk_version_current", 0, 1, (R,), boolean=True, axes=rep,
                  doc="its cached zkVersion equals the quorum's (its ISR writes can succeed)"),
            Field("remote_leo", -1, L, (R, R), axes=("replica", "replica"),
                  doc="as leader: each follower's LEO learned from its fetches (-1: unknown)"),
            Field("truncating", 0, 1, (R,), boolean=True, axes=rep,
                  doc="follower must truncate by leader epoch before fetching (0.11+)"),
            Field("ack_from", 0, L, (R,), axes=rep,
                  doc="as leader: first offset whose produce request it still holds (earlier ones failed)"),
        ] + self.epoch_cache_fields() + [
            # --- the controller and the quorum state (ZooKeeper) ---
            Field("q_leader", 0, none, values="replica", doc="leader in ZooKeeper (R: none)"),
            Field("q_epoch", 0, E, unbounded=True, doc="leader epoch in ZooKeeper"),
            Field("q_isr", 0, 1, (R,), boolean=True, axes=rep, doc="ISR in ZooKeeper"),
            # --- LeaderAndIsr requests, one per leader epoch, delivered any time, any number of times ---
            Field("req_sent", 0, 1, (E,), boolean=True, doc="the request for this epoch exists"),
            Field("req_leader", 0, none, (E,), values="replica", doc="its leader"),
            Field("req_isr", 0, 1, (E, R), boolean=True, axes=(None, "replica"), doc="its ISR"),
            Field("req_zk_version_current", 0, 1, (E,), boolean=True,
                  doc="the zkVersion it carries is still the quorum's"),
            Field("crashes", 0, C, doc="crashes so far (bounded by max_crashes)"),
            # --- ghosts, for the invariants ---
            Field("next_record", 1, M + 1, ghost=True, unbounded=True, doc="id of the next record a producer sends"),
            Field("acked_at", -1, L - 1, (M,), ghost=True, doc="offset of each acknowledged record (-1: not acked)"),
            Field("exposed", 0, M, (L,), ghost=True, unbounded=True,
                  doc="record first exposed to consumers at each offset"),
        ] + self.option_fields() + self.lag_fields() + self.reassignment_fields()

    def epoch_cache_fields(self):
        """0.11+ (KIP-101): each replica's LeaderEpochFileCache, one start offset per leader epoch; 2.0.1+ (KAFKA-7415)
        also the leader's epoch start offset.

        The cache is a checkpoint file written on every change, so it survives a crash; loading the log drops the
        entries at or past the LEO (Log.loadSegments: clearAndFlushLatest / truncateFromEnd(LEO), 0.11-2.7).
        """
        if not self.leader_epoch_cache:
            return []
        R, L, E = self.R, self.L, self.E
        rep = ("replica",)
        fields = [Field("epoch_cache", -1, L, (R, E), axes=("replica", None),
                        doc="LeaderEpochFileCache: the start offset of each leader epoch's entry (-1: no entry)")]
        if self.epoch_cached_on_election:
            fields.append(Field("epoch_start", 0, L, (R,), axes=rep,
                                doc="as leader: its LEO when it became leader in its epoch "
                                    "(Partition.leaderEpochStartOffsetOpt)"))
        return fields

    def option_fields(self):
        """State fields of the options that are on (none at the defaults)."""
        R, E = self.R, self.E
        rep, none = ("replica",), R
        out = []
        if self.controller_failover:
            out += [
                Field("q_controller_epoch", 1, 2, doc="controller epoch in ZooKeeper (/controller_epoch)"),
                Field("req_controller_epoch", 0, 2, (E,), doc="controller epoch each LeaderAndIsr carries"),
                Field("controller_epoch_seen", 0, 2, (R,), axes=rep,
                      doc="highest controller epoch the broker has seen (ReplicaManager.controllerEpoch)"),
                Field("zreq_epoch", 0, E, doc="leader epoch of the deposed controller's in-flight LeaderAndIsr (0: none)"),
                Field("zreq_leader", 0, none, values="replica", doc="its leader"),
                Field("zreq_isr", 0, 1, (R,), boolean=True, axes=rep, doc="its ISR"),
            ]
        if self.async_isr:
            out += [
                Field("alter_pending", 0, 1, (R,), boolean=True, axes=rep,
                      doc="as leader: an AlterIsr request is in flight (Partition.isrState is pending)"),
                Field("pending_isr", 0, 1, (R, R), boolean=True, axes=("replica", "replica"),
                      doc="as leader: the ISR that request proposes"),
            ]
        if self.elr:
            out += [
                Field("q_elr", 0, 1, (R,), boolean=True, axes=rep, doc="eligible leader replicas in the quorum state"),
                Field("unclean_shutdown", 0, 1, (R,), boolean=True, axes=rep,
                      doc="the broker's last stop was a hard crash that lost unflushed data"),
            ]
        if self.proof_ghosts:
            out += [
                Field("applied_epoch", 0, E, (R,), ghost=True, axes=rep, unbounded=True,
                      doc="leader epoch of the last LeaderAndIsr the broker applied (kept across restarts, "
                          "which reset leader_epoch)"),
                Field("followed_epoch", 0, E, (R,), ghost=True, axes=rep, unbounded=True,
                      doc="leader epoch in which the broker last fetched or truncated its log (0: never): "
                          "since then its log changed only by its own appends as leader"),
                Field("fetched_epoch", 0, E, (R,), ghost=True, axes=rep, unbounded=True,
                      doc="leader epoch in which the broker last fetched (0: never)"),
                Field("up_since", 0, E, (R,), ghost=True, axes=rep, unbounded=True,
                      doc="the quorum's leader epoch when the broker last started (0: up from the start)"),
                Field("led_since", 0, E, (R,), ghost=True, axes=rep,
                      doc="the leader epoch from which the broker has led without a break (0: not leading); "
                          "its followers' fetch offsets date from then"),
                Field("exposed_epoch", 0, E, (self.L,), ghost=True, unbounded=True,
                      doc="the earliest leader epoch from which a leader whose HW passed each offset had led without "
                          "a break (0: not yet exposed)"),
            ]
        return out

    def lag_fields(self):
        """The lag rule's state (``lag_rule``; none without one): the leader's clocks of its followers, as flags.

        A clock reads "within replica.lag.time.max.ms" or not; time passes by ``lag_expires`` (no fetch from the
        follower for that long) and, with the time rule before KAFKA-4485, ``catch_up_lapses`` (fetches that all start
        below the leader's LEO for that long). The clocks live in the broker's Replica objects, created fresh with the
        partition at its first LeaderAndIsr and lost when the broker stops. ``stalled`` is a follower whose fetcher
        stops for good; ``healthy`` is the ghost of isr-keeps-healthy-followers.
        """
        if self.lag_rule is None:
            return []
        R, L = self.R, self.L
        pair = ("replica", "replica")
        docs = {"fetched_recently": "as leader: the follower fetched within replica.lag.time.max.ms "
                                    "(Replica.logEndOffsetUpdateTimeMs 0.8, lastFetchTimeMs 0.10.2+)",
                "caught_up": "as leader: the follower fetched from its LEO within replica.lag.time.max.ms "
                             "(Replica.lastCaughtUpTimeMs)"}
        out = [Field(n, 0, 1, (R, R), boolean=True, axes=pair, doc=docs[n]) for n in self.lag_clock_names()]
        if self.caught_up_by_previous_fetch:
            out.append(Field("last_fetch_leo", 0, L, (R, R), axes=pair,
                             doc="as leader: its LEO at the follower's last fetch (Replica.lastFetchLeaderLogEndOffset)"))
        return out + [
            Field("stalled", 0, 1, (R,), boolean=True, axes=("replica",),
                  doc="the broker's fetcher has stopped until it restarts (its ZooKeeper session lives on)"),
            Field("healthy", 0, 1, (R, R), boolean=True, axes=pair, ghost=True,
                  doc="as leader: the follower was in its ISR when it took over or last fetched from its LEO, and "
                      "has fetched within every replica.lag.time.max.ms since"),
        ]

    def initial(self, s):
        """A new partition: every replica up and in the ISR, empty logs, no leader elected yet."""
        for r in self.REPLICAS:
            s.up[r] = True
            s.leader[r] = self.NONE
            s.q_isr[r] = True
            for i in self.REPLICAS:
                s.remote_leo[r][i] = -1
        s.q_leader = self.NONE
        self.initial_requests(s)
        for m in self.RECORDS:
            s.acked_at[m - 1] = -1
        if self.leader_epoch_cache:
            for r in self.REPLICAS:
                for e in self.EPOCHS:
                    s.epoch_cache[r][e - 1] = -1
        if self.controller_failover:
            s.q_controller_epoch = 1
            s.zreq_leader = self.NONE
            for r in self.REPLICAS:
                s.controller_epoch_seen[r] = 1
        for l in self.REPLICAS:
            self.reset_lag_clocks(s, l)
        self.initial_reassignment(s)

    def initial_requests(self, s):
        """No LeaderAndIsr request is sent yet."""
        for e in self.EPOCHS:
            s.req_leader[e - 1] = self.NONE

    # ------------------------------------------------------------------------------------
    # helpers over the state (plain functions of the expression language)
    # ------------------------------------------------------------------------------------
    def replica_pairs(self):
        """Every pair of distinct replicas, once: (a, b) with a < b."""
        return [(a, b) for a in self.REPLICAS for b in self.REPLICAS if a < b]

    def believes_leads(self, s, r):
        return s.up[r] & (s.leader[r] == r)

    def acting_leader(self, s, r):
        """r is the quorum's leader and has applied the LeaderAndIsr that made it so."""
        return self.believes_leads(s, r) & (s.q_leader == r) & (s.leader_epoch[r] == s.q_epoch)

    def latest_epoch(self, s, r):
        """Epoch of the last record in r's log (0 if empty)."""
        return where(s.leo[r] > 0, s.log_epoch[r][s.leo[r] - 1], 0)

    def cache_latest_epoch(self, s, r):
        """LeaderEpochFileCache.latestEpoch: the epoch of r's last entry (0: none), what its OffsetsForLeaderEpoch carries.

        Entries increase in epoch (assign keeps them so in 0.11-2.0.0 and 2.0.1+), so the last is the largest.
        """
        return max_of([0] + [where(s.epoch_cache[r][e - 1] >= 0, e, 0) for e in self.EPOCHS])

    def cache_latest_offset(self, s, r):
        """LeaderEpochFileCache.latestOffset: the start offset of r's last entry (-1: none); entries increase in it too."""
        return max_of([-1] + [s.epoch_cache[r][e - 1] for e in self.EPOCHS])

    def assign_epoch(self, s, r, epoch, offset, when=True):
        """LeaderEpochFileCache.assign(epoch, offset) in r's cache (where ``when``).

        0.11-2.0.0: only an epoch above the latest, at or past the latest entry's start, is added; anything else is
        ignored (logged as out of order). 2.0.1+: unless the last entry already has that epoch at or before that
        offset, the new entry replaces every entry of a larger or equal epoch or a start at or past the offset
        (truncateAndAppend: "assume that the latest append is always accurate").
        """
        latest, latest_offset = self.cache_latest_epoch(s, r), self.cache_latest_offset(s, r)
        if self.epoch_cached_on_election:
            update = (latest != epoch) | (offset < latest_offset)
        else:
            update = (latest < epoch) & (latest_offset <= offset)
        if when is not True:
            update = update & when
        for e in self.EPOCHS:
            start = s.epoch_cache[r][e - 1]
            if self.epoch_cached_on_election:
                kept = where((epoch == e), offset, where((epoch > e) & (start < offset), start, -1))
            else:
                kept = where((epoch == e), offset, start)
            s.epoch_cache[r][e - 1] = where(update, kept, start)

    def assign_appended(self, s, r, start, end, when=True):
        """Log.append (0.11+): each batch appended at offsets ``start``..``end``-1 of r's log assigns its epoch (one
        record, one batch here), in offset order."""
        for o in self.OFFSETS:
            appended = (o >= start) & (o < end)
            self.assign_epoch(s, r, s.log_epoch[r][o], o, appended if when is True else appended & when)

    def truncate_from_end(self, s, r, end, when=True):
        """LeaderEpochFileCache.truncateFromEnd(end) (2.0.1+; clearAndFlushLatest 0.11-2.0.0): drop r's entries that
        start at or past ``end`` (where ``when``)."""
        for e in self.EPOCHS:
            start = s.epoch_cache[r][e - 1]
            drop = start >= end
            s.epoch_cache[r][e - 1] = where(drop if when is True else drop & when, -1, start)

    def end_offset_for_epoch(self, s, r, requested):
        """LeaderEpochFileCache.endOffsetFor(requested) on r's cache: (epoch, end offset), (-1, -1) for UNDEFINED.

        No epoch (requested 0) is UNDEFINED (2.0+); the latest epoch ends at the LEO; otherwise the answer is the
        largest epoch <= requested with the start of the first larger one as its end, UNDEFINED when no epoch is
        larger. Below the first entry: UNDEFINED in 0.11-2.0.0, (requested, the first entry's start) from 2.0.1.
        (0.11's answer is the end offset alone.)
        """
        latest = self.cache_latest_epoch(s, r)
        starts = [s.epoch_cache[r][e - 1] for e in self.EPOCHS]
        subsequent = min_of([self.NO_OFFSET] + [where((requested < e) & (starts[e - 1] >= 0), starts[e - 1],
                                                      self.NO_OFFSET) for e in self.EPOCHS])
        previous = max_of([0] + [where((requested >= e) & (starts[e - 1] >= 0), e, 0) for e in self.EPOCHS])
        undefined = (requested <= 0) | (subsequent == self.NO_OFFSET)
        if not self.epoch_cached_on_election:
            undefined = undefined | (previous == 0)
        is_latest = (requested > 0) & (requested == latest)
        epoch = where(is_latest, requested, where(undefined, -1, where(previous == 0, requested, previous)))
        end = where(is_latest, s.leo[r], where(undefined, -1, subsequent))
        return epoch, end

    def offset_truncation_state(self, s, f, leader_epoch, leader_end):
        """AbstractFetcherThread.getOffsetTruncationState (2.0+): (offset, done) for follower f, given the leader's
        (epoch, end offset) for f's latest epoch (-1, -1: UNDEFINED, f goes back to its HW).

        f looks up the largest epoch <= the leader's in its own cache; holding that same epoch it truncates to
        the smaller end offset (done), else to its own end of the earlier epoch and goes round again.
        """
        follower_epoch, follower_end = self.end_offset_for_epoch(s, f, leader_epoch)
        empty = s.leo[f] == 0
        offset = where(empty, 0,
                 where(leader_end < 0, s.hw[f],                                 # leader has no such epoch
                 where(follower_end < 0, min_of([leader_end, s.leo[f]]),
                 where(follower_epoch != leader_epoch, min_of([follower_end, s.leo[f]]),   # go round again
                       min_of([leader_end, follower_end, s.leo[f]])))))
        done = empty | (leader_end < 0) | (follower_end < 0) | (follower_epoch == leader_epoch)
        return offset, done

    def truncate_to(self, s, r, offset):
        """Drop r's log from ``offset`` on (Log.truncateTo); the flush point follows it down, and the HW too from 2.4.

        Log.truncateTo at or past the LEO does nothing. Before 2.4 the HW lives in Replica and Log.truncateTo leaves
        it alone, so a follower's HW can pass its LEO (``truncation_clamps_hw``).
        """
        for o in self.OFFSETS:
            keep = o < offset
            s.log_record[r][o] = where(keep, s.log_record[r][o], 0)
            s.log_epoch[r][o] = where(keep, s.log_epoch[r][o], 0)
        new_leo = min_of([s.leo[r], offset])
        if self.leader_epoch_cache:
            # Log.truncateTo: the cache drops its entries from the new LEO on; at or past the LEO only from 2.6.1
            # (KAFKA-10706: truncateFromEnd(LEO)), before it is a no-op that keeps an entry at the LEO
            self.truncate_from_end(s, r, new_leo, when=True if self.truncation_cleans_epoch_cache else offset < s.leo[r])
        if self.proof_ghosts:
            s.followed_epoch[r] = where(new_leo < s.leo[r], s.leader_epoch[r], s.followed_epoch[r])
        s.leo[r] = new_leo
        if self.truncation_clamps_hw:     # Log.updateLogEndOffset (2.4+): a HW past the new LEO comes down to it
            s.hw[r] = min_of([s.hw[r], new_leo])
        s.flushed[r] = min_of([s.flushed[r], new_leo])

    def bump_zk_version(self, s, writer=None, when=True):
        """A successful write to the partition state in ZooKeeper (where ``when``): every cached zkVersion is now stale."""
        for r in self.REPLICAS:
            s.zk_version_current[r] = where(when, r == writer, s.zk_version_current[r])
        for e in self.EPOCHS:
            s.req_zk_version_current[e - 1] = where(when, False, s.req_zk_version_current[e - 1])

    def send_leader_and_isr(self, s, epoch, leader, isr, when=True):
        """The controller writes the new LeaderAndIsr to ZooKeeper and sends it to the brokers (where ``when``); with
        reassignment on, it carries the replica set in ZooKeeper and goes to those brokers."""
        if self.elr:
            self.update_elr(s, isr, when)
        if self.controller_failover:
            for e in self.EPOCHS:
                s.req_controller_epoch[e - 1] = where(epoch == e, s.q_controller_epoch, s.req_controller_epoch[e - 1])
        self.bump_zk_version(s, when=when)
        if when is True:
            s.q_epoch = epoch
            s.q_leader = leader
        else:
            epoch = where(when, epoch, s.q_epoch)
            s.q_epoch = epoch
            s.q_leader = where(when, leader, s.q_leader)
        for e in self.EPOCHS:
            new = epoch == e if when is True else when & (epoch == e)
            s.req_sent[e - 1] = s.req_sent[e - 1] | new
            s.req_leader[e - 1] = where(new, leader, s.req_leader[e - 1])
            s.req_zk_version_current[e - 1] = s.req_zk_version_current[e - 1] | new
            for i in self.REPLICAS:
                s.q_isr[i] = isr[i] if when is True else where(when, isr[i], s.q_isr[i])
                s.req_isr[e - 1][i] = where(new, isr[i], s.req_isr[e - 1][i])
            if self.reassign:
                self.record_replicas(s, e, new)

    def expose(self, s, l):
        """Records below a leader's HW are visible to consumers: remember the first record seen at each offset."""
        leads = self.believes_leads(s, l)
        for o in self.OFFSETS:
            seen = leads & (o < s.hw[l]) & (s.exposed[o] == 0)
            s.exposed[o] = where(seen, s.log_record[l][o], s.exposed[o])
            if self.proof_ghosts:
                epoch, first = s.led_since[l], s.exposed_epoch[o]
                earlier = leads & (o < s.hw[l]) & ((first == 0) | (epoch < first))
                s.exposed_epoch[o] = where(earlier, epoch, first)

    def maybe_increment_hw(self, s, l, when=True):
        """Partition.maybeIncrementLeaderHW: the leader's HW rises to the smallest LEO it knows in its ISR.

        Records below the new HW are acknowledged to acks=all producers if the ISR
        still has min.insync.replicas members (Partition.checkEnoughReplicasReachOffset;
        2.7+ counts the maximal ISR, ``hw_isr_member``), and if their produce request is
        still waiting in this leader's purgatory (``ack_from``). Only where ``when`` holds.
        """
        old = s.hw[l]
        members = [self.hw_isr_member(s, l, i) for i in self.REPLICAS]
        if self.reassign:       # only the followers of its assignment (Partition.remoteReplicas)
            members = [members[i] if i == l else members[i] & self.serves(s, l, i) for i in self.REPLICAS]
        known = [where(members[i], s.leo[l] if i == l else s.remote_leo[l][i], self.L) for i in self.REPLICAS]
        # an empty ISR view leaves the HW alone (0.8-2.x: ``allLogEndOffsets.min`` of nothing throws)
        new = where(any_of(members), max_of([old, min_of(known)]), old)
        may_advance = self.hw_may_advance(s, l)
        if may_advance is not True:
            new = where(may_advance, new, old)
        if when is not True:
            new = where(when, new, old)
        s.hw[l] = new
        if self.acks_all:
            enough = self.enough_replicas(s, l)
            for m in self.RECORDS:
                for o in self.OFFSETS:
                    acked = (enough & (s.acked_at[m - 1] < 0) & (o >= old) & (o < new) & (o >= s.ack_from[l])
                             & (s.log_record[l][o] == m))
                    s.acked_at[m - 1] = where(acked, o, s.acked_at[m - 1])
        self.expose(s, l)

    def leader_min_isr(self, s, l):
        """The min.insync.replicas leader l enforces (Partition: the topic's config)."""
        return self.min_isr

    def write_isr(self, s, l, new_isr, when=True):
        """A leader's ISR change (where ``when``): a conditional ZooKeeper write, fenced by the cached zkVersion."""
        for i in self.REPLICAS:
            s.isr[l][i] = where(when, new_isr[i], s.isr[l][i])
        self.commit_isr(s, new_isr, writer=l, when=when)

    def commit_isr(self, s, new_isr, writer=None, when=True):
        """The quorum's ISR becomes ``new_isr`` in the current leader epoch (where ``when``); ``writer`` alone
        learns the new zkVersion (partition epoch)."""
        if self.elr:
            self.update_elr(s, new_isr, when)
        for i in self.REPLICAS:
            s.q_isr[i] = where(when, new_isr[i], s.q_isr[i])
        self.bump_zk_version(s, writer=writer, when=when)
        for e in self.EPOCHS:   # what the controller resends for the current epoch (e.g. on broker startup)
            current = when & (s.q_epoch == e)
            s.req_zk_version_current[e - 1] = s.req_zk_version_current[e - 1] | current
            for i in self.REPLICAS:
                s.req_isr[e - 1][i] = where(current, new_isr[i], s.req_isr[e - 1][i])

    def maybe_expand_isr(self, s, l, f, fetched):
        """Partition.maybeExpandIsr, run on every fetch (0.8-2.6): a caught-up follower rejoins the ISR.

        With async_isr (2.7+, KIP-497) the leader only sends an AlterIsr request, one at a time.
        """
        if self.async_isr:
            join = fetched & ~s.isr[l][f] & self.may_join_isr(s, l, f) & ~s.alter_pending[l]
            self.propose_isr(s, l, [s.isr[l][i] | (i == f) for i in self.REPLICAS], when=join)
            return
        join = fetched & ~s.isr[l][f] & self.may_join_isr(s, l, f) & self.isr_write_succeeds(s, l)
        self.write_isr(s, l, [s.isr[l][i] | ((i == f) & join) for i in self.REPLICAS], when=join)

    def propose_isr(self, s, l, new_isr, when=True):
        """async_isr: leader l sends AlterIsr proposing ``new_isr`` (where ``when``); its ISR changes only on commit."""
        s.alter_pending[l] = s.alter_pending[l] | when
        for i in self.REPLICAS:
            s.pending_isr[l][i] = where(when, new_isr[i], s.pending_isr[l][i])

    def clear_pending_isr(self, s, r):
        """async_isr: r forgets its in-flight AlterIsr (response received, new LeaderAndIsr, or restart)."""
        s.alter_pending[r] = False
        for i in self.REPLICAS:
            s.pending_isr[r][i] = False

    def update_elr(self, s, new_isr, when=True):
        """elr (KIP-966): keep the eligible leader replicas in step with an ISR change to ``new_isr`` (where ``when``).

        Members of the new ISR leave the ELR; with an ISR of at least min.insync.replicas
        the ELR is empty; otherwise replicas leaving the ISR join the ELR unless their
        last stop was an unclean shutdown.
        """
        below = count_of(new_isr[i] for i in self.REPLICAS) < self.min_isr
        for i in self.REPLICAS:
            leaving = s.q_isr[i] & ~new_isr[i] & ~s.unclean_shutdown[i]
            elr = ~new_isr[i] & below & (s.q_elr[i] | leaving)
            s.q_elr[i] = where(when, elr, s.q_elr[i])

    # ------------------------------------------------------------------------------------
    # the lag rule (``lag_rule``): the leader's clocks of its followers
    # ------------------------------------------------------------------------------------
    def lag_clocks(self, s, l, f):
        """The clocks leader l keeps of follower f, as flags (none without a lag rule)."""
        return [getattr(s, clock)[l][f] for clock in self.lag_clock_names()]

    def lag_clock_names(self):
        """The clocks the lag rule keeps of each follower: ``fetched_recently`` (0.8's logEndOffsetUpdateTimeMs, 0.10.2+'s
        lastFetchTimeMs), ``caught_up`` (the time rule's lastCaughtUpTimeMs)."""
        names = ()
        if self.lag_rule == "message" or self.caught_up_by_previous_fetch:
            names += ("fetched_recently",)
        if self.lag_rule == "time":
            names += ("caught_up",)
        return names

    def reset_lag_clocks(self, s, l):
        """Broker l's Replica objects as a new partition or a restarted broker creates them: every clock fresh, no
        fetch seen; l judges no follower healthy."""
        if self.lag_rule is None:
            return
        for f in self.REPLICAS:
            for clock in self.lag_clock_names():
                getattr(s, clock)[l][f] = True
            if self.caught_up_by_previous_fetch:
                s.last_fetch_leo[l][f] = 0
            s.healthy[l][f] = False

    def lag_clock_runs(self, s, l):
        """Whether leader l's clocks can run out now: while it leads when makeLeader resets them (0.8, and 0.10.2+ with
        KAFKA-4485); in 0.9-0.10.1 whenever the broker holds the partition (it has applied a LeaderAndIsr naming a
        leader), so a broker that becomes leader may find them long run out."""
        if self.lag_rule == "time" and not self.caught_up_by_previous_fetch:
            return s.up[l] & (s.leader[l] != self.NONE)
        return self.believes_leads(s, l)

    def apply_lag_clocks(self, s, r, leads, keeps, still_leader, isr):
        """What a LeaderAndIsr does to broker r's clocks (Partition.makeLeader / makeFollower); ``keeps``: r leads
        already and keeps its followers' fetch state (not isNewLeader).

        0.8's makeLeader sets every follower's LEO to unknown, which stamps logEndOffsetUpdateTimeMs (fresh). 0.9-0.10.1
        keep lastCaughtUpTimeMs as it was. 0.10.2 (KAFKA-4485) resetLastCaughtUpTime: lastCaughtUpTimeMs now for ISR
        members and 0 for the others, lastFetchTimeMs and lastFetchLeaderLogEndOffset now; a new leader then records
        UnknownLogReadResult, whose lastFetchTimeMs -1 leaves no previous fetch to count. A follower's clocks are read
        by nothing until it leads (0.8 and 0.10.2+ reset them then): left fresh. The ghost ``healthy``: the ISR members
        that are up and fetching, for a new leader; for one re-elected in the next epoch, those healthy before.
        """
        if self.lag_rule is None:
            return
        for i in self.REPLICAS:
            if self.lag_rule == "message":
                s.fetched_recently[r][i] = True
            if self.caught_up_by_previous_fetch:
                s.caught_up[r][i] = where(leads, isr[i] & (i != r), True)
                s.fetched_recently[r][i] = where(leads, keeps, True)
                s.last_fetch_leo[r][i] = where(leads & keeps, s.leo[r], 0)
            fetching = isr[i] & s.up[i] & ~s.stalled[i] & (i != r)
            s.healthy[r][i] = leads & fetching & where(still_leader, s.healthy[r][i], True)

    def record_fetch_time(self, s, l, f, fetch_offset, leader_leo, when):
        """The leader's clocks on f's fetch (where ``when``); returns whether it started at l's LEO.

        0.8: Replica.logEndOffset_= stamps logEndOffsetUpdateTimeMs on every fetch (KafkaApis.recordFollowerLogEndOffsets).
        Time rule: Replica.updateLogReadResult stamps lastCaughtUpTimeMs when the fetch starts at the LEO the leader had
        when it read (readToEndOfLog, 0.9); from 0.10.2 (KAFKA-4485) also when it starts at or past the leader's LEO of
        f's previous fetch, as of that fetch (lastFetchTimeMs, here: still within replica.lag.time.max.ms).
        """
        at_end = when & (fetch_offset >= leader_leo)
        if self.lag_rule == "time":
            reached = at_end
            if self.caught_up_by_previous_fetch:
                reached = reached | (when & (fetch_offset >= s.last_fetch_leo[l][f]) & s.fetched_recently[l][f])
                s.last_fetch_leo[l][f] = where(when, leader_leo, s.last_fetch_leo[l][f])
            s.caught_up[l][f] = s.caught_up[l][f] | reached
        if "fetched_recently" in self.lag_clock_names():
            s.fetched_recently[l][f] = s.fetched_recently[l][f] | when
        return at_end

    # ------------------------------------------------------------------------------------
    # hooks that protocol versions override
    # ------------------------------------------------------------------------------------
    def become_follower(self, s, r, follows):
        """What replica r does to its log where ``follows`` holds: a LeaderAndIsr made it a follower."""
        raise NotImplementedError

    def follower_changes(self, s, old_leader, old_epoch, new_leader, epoch):
        """Partition.makeFollower's answer: the follower restarts its fetcher (and truncates) where this holds.

        0.8-2.0.0: only when the leader changed; a LeaderAndIsr that keeps the leader (an ISR change by
        the controller) updates the epoch and nothing else (Partition.makeFollower, 1.0.0, 2.0.0).
        """
        return old_leader != new_leader

    def fetch_accepted(self, s, f, l):
        """Extra conditions for leader l to serve a fetch (or OffsetsForLeaderEpoch) from f."""
        return True

    def may_join_isr(self, s, l, f):
        """Whether leader l considers follower f caught up enough to rejoin the ISR."""
        return (s.remote_leo[l][f] >= 0) & (s.remote_leo[l][f] >= s.hw[l])

    def isr_write_succeeds(self, s, l):
        """Whether l's conditional ISR write matches the zkVersion in ZooKeeper."""
        return s.zk_version_current[l]

    def restart_allowed(self, s, r):
        """Extra condition for broker r to register again after it stopped.

        Before 2.2 a fast bounce can go unnoticed by the controller (KAFKA-1120): no condition.
        2.2+ (KIP-380, KafkaController.onBrokerStartup with broker epochs) and KRaft: the controller
        handles every new incarnation as a failure first, so the broker has lost the leadership and
        left the ISR, unless it is the last member, which Kafka keeps in the ISR.
        """
        if not self.restart_noticed:
            return True
        last = count_of(s.q_isr[i] for i in self.REPLICAS) == 1
        return (s.q_leader != r) & (~s.q_isr[r] | last)

    def hw_isr_member(self, s, l, i):
        """Whether leader l waits for replica i before raising its HW: its current ISR (before KIP-497's maximal ISR)."""
        return s.isr[l][i]

    def alter_accepted(self, s, l):
        """async_isr: the controller commits leader l's pending ISR change: l still leads in the leader epoch and
        partition epoch (zkVersion) it last learnt."""
        return (s.q_leader == l) & (s.leader_epoch[l] == s.q_epoch) & self.isr_write_succeeds(s, l)

    def follower_out_of_sync(self, s, l, f):
        """Partition.getOutOfSyncReplicas: whether leader l may drop follower f from its ISR.

        Without a lag rule any follower (the lag is not timed). 0.8: a stuck follower (logEndOffsetUpdateTimeMs older
        than replica.lag.time.max.ms) or a slow one (a known LEO more than replica.lag.max.messages behind the leader's:
        ``r.logEndOffset.messageOffset >= 0 && leaderLogEndOffset - r.logEndOffset > keepInSyncMessages``). 0.9+: one
        whose lastCaughtUpTimeMs is older than replica.lag.time.max.ms.
        """
        if self.lag_rule == "message":
            known = s.remote_leo[l][f] >= 0
            return ~s.fetched_recently[l][f] | (known & (s.leo[l] - s.remote_leo[l][f] > self.lag_max_messages))
        if self.lag_rule == "time":
            return ~s.caught_up[l][f]
        return True

    def enough_replicas(self, s, l):
        """Partition.checkEnoughReplicasReachOffset: the ISR the HW waits for has min.insync.replicas members,
        so records below the HW are acknowledged to acks=all producers."""
        return count_of(self.hw_isr_member(s, l, i) for i in self.REPLICAS) >= self.min_isr

    def hw_may_advance(self, s, l):
        """Extra condition for leader l to raise its HW at all (KIP-966: an ISR of at least min.insync.replicas)."""
        return True

    def controller_epoch_accepted(self, s, r, controller_epoch):
        """controller_failover: whether broker r accepts a LeaderAndIsr from that controller epoch.

        Kafka rejects a request from a controller epoch older than the newest it has seen
        (STALE_CONTROLLER_EPOCH, ReplicaManager.becomeLeaderOrFollower).
        """
        return controller_epoch >= s.controller_epoch_seen[r]

    # ------------------------------------------------------------------------------------
    # controller actions
    # ------------------------------------------------------------------------------------
    @action(l="REPLICAS")
    def elect_leader(self, s, l):
        """Controller elects l (on leader failure, preferred election, or the old leader's session expiry).

        Kafka: OfflinePartitionLeaderSelector (0.8-1.0), PartitionLeaderElectionAlgorithms
        .offlinePartitionLeaderElection (1.1+), both under KafkaController's PartitionStateMachine.

        Clean election picks a live ISR member and keeps the live part of the ISR;
        unclean election (unclean.leader.election.enable, default off since 0.11,
        KIP-106) may pick any live replica when no ISR member is alive.
        """
        s.require((s.q_epoch < self.E) & s.up[l] & (s.q_leader != l))
        if self.reassign:       # PartitionLeaderElectionAlgorithms choose among the partition's assigned replicas
            s.require(s.q_replicas[l])
        live_isr = [s.q_isr[i] & s.up[i] for i in self.REPLICAS]
        clean = s.q_isr[l]
        if self.elr:
            # KIP-966: with no live ISR member, a live eligible leader replica is a clean choice
            clean = clean | (s.q_elr[l] & ~any_of(live_isr))
            live_isr = [live_isr[i] | ((i == l) & ~s.q_isr[l]) for i in self.REPLICAS]
        if self.unclean:
            s.require(clean | ~any_of(live_isr))
            isr = [where(clean, live_isr[i], i == l) for i in self.REPLICAS]
        else:
            s.require(clean)
            isr = live_isr
        self.send_leader_and_isr(s, s.q_epoch + 1, l, isr)

    @action(r="REPLICAS")
    def controller_shrink_isr(self, s, r):
        """Controller removes a dead follower from the ISR and bumps the leader epoch (ZK mode, 0.8+).

        Kafka: KafkaController.onBrokerFailure moves its replicas to OfflineReplica (ReplicaStateMachine), which
        calls KafkaController.removeReplicaFromIsr (0.8-1.0) / ReplicaStateMachine.removeReplicasFromIsr (1.1+).
        """
        s.require(self.may_stop & ~s.up[r] & s.q_isr[r] & (s.q_leader != r) & (s.q_epoch < self.E))
        if not self.elr:        # KIP-966 lets the ISR become empty
            s.require(count_of(s.q_isr[i] for i in self.REPLICAS) > 1)
        self.send_leader_and_isr(s, s.q_epoch + 1, s.q_leader,
                                 [s.q_isr[i] & (i != r) for i in self.REPLICAS])

    @action(r="REPLICAS")
    def controller_offline(self, s, r):
        """Leader r died and no live ISR member can replace it: the partition goes offline.

        Kafka keeps the last ISR member in the ISR (it may hold data nobody else has).
        Kafka: the dead leader's OfflineReplica transition writes leader -1 (LeaderAndIsr.NoLeader) and keeps an ISR
        of one as it is (ReplicaStateMachine.doRemoveReplicasFromIsr, 1.1+; KafkaController.removeReplicaFromIsr,
        0.8.2-1.0, only with unclean election off, where an emptied ISR and the model's lead to the same elections).
        """
        others_alive = any_of(s.q_isr[i] & s.up[i] for i in self.REPLICAS if i != r)
        s.require(self.may_stop & ~s.up[r] & (s.q_leader == r) & ~others_alive & (s.q_epoch < self.E))
        last = count_of(s.q_isr[i] for i in self.REPLICAS) == 1
        if self.elr:
            last = False        # KIP-966: the ISR may become empty (the last member goes to the ELR)
        self.send_leader_and_isr(s, s.q_epoch + 1, self.NONE,
                                 [s.q_isr[i] & ((i != r) | last) for i in self.REPLICAS])

    @action(l="REPLICAS")
    def controller_failover(self, s, l):
        """controller_failover: the controller loses its ZooKeeper session; another broker takes over (controller epoch 2).

        The deposed controller had just decided to elect l (a live ISR member) in the
        next leader epoch; its ZooKeeper write dies with its session but its
        LeaderAndIsr request is in flight, and the new controller knows nothing of it.
        The new controller announces its epoch to every live broker before it acts
        (onControllerFailover sends UpdateMetadata first); brokers that are down learn
        it when they restart. (The race where the zombie's request overtakes that
        announcement is closed in Kafka on the ZooKeeper side, KAFKA-6082, and is not
        modelled.)
        Kafka: KafkaController.onControllerFailover increments /controller_epoch (incrementControllerEpoch) and sends
        UpdateMetadata to every live broker before it elects (0.8.2, 0.11.0, 2.0.0 alike).
        """
        if not self.controller_failover:
            s.require(False)
            return
        s.require((s.q_controller_epoch == 1) & (s.q_epoch < self.E) & s.up[l] & s.q_isr[l] & (s.q_leader != l))
        s.q_controller_epoch = 2
        s.zreq_epoch = s.q_epoch + 1
        s.zreq_leader = l
        for i in self.REPLICAS:
            s.zreq_isr[i] = s.q_isr[i] & s.up[i]
            s.controller_epoch_seen[i] = where(s.up[i], 2, s.controller_epoch_seen[i])

    # ------------------------------------------------------------------------------------
    # broker actions
    # ------------------------------------------------------------------------------------
    @action(r="REPLICAS", e="EPOCHS")
    def apply_leader_and_isr(self, s, r, e):
        """Broker r applies the LeaderAndIsr of epoch e, if newer than its own (ReplicaManager.becomeLeaderOrFollower).

        Requests may arrive late, twice, out of order or never; a stale one is ignored
        by the leader-epoch check.
        Kafka: ReplicaManager.becomeLeaderOrFollower applies a partition's state only if its leader epoch is above
        the local one (0.8+; 0.11.0: ``partitionLeaderEpoch < stateInfo.leaderEpoch``).
        """
        s.require(s.req_sent[e - 1] & s.up[r] & (s.leader_epoch[r] < e))
        if self.reassign:
            # it goes to the replicas it names, after any StopReplica the controller sent the broker before it
            s.require(s.req_replicas[e - 1][r] & (s.stop_epoch[r] == 0))
        if not self.elr:
            # ZooKeeper mode (0.8-3.x): makeFollowers skips a partition whose leader is not alive (leader -1 after
            # the last ISR member died): the broker keeps its leader, epoch and fetcher (ReplicaManager, 1.0-2.7)
            s.require(s.req_leader[e - 1] != self.NONE)
        if self.controller_failover:
            s.require(self.controller_epoch_accepted(s, r, s.req_controller_epoch[e - 1]))
        if self.reassign:       # Partition.makeLeader takes the assignment before it computes the HW
            self.learn_assignment(s, r, e)
        self.become_leader_or_follower(s, r, e, s.req_leader[e - 1], [s.req_isr[e - 1][i] for i in self.REPLICAS],
                                       s.req_zk_version_current[e - 1],
                                       s.req_controller_epoch[e - 1] if self.controller_failover else None)

    def become_leader_or_follower(self, s, r, epoch, new_leader, isr, zk_version_current, controller_epoch=None):
        """ReplicaManager.becomeLeaderOrFollower: broker r takes the role a LeaderAndIsr gives it.

        A replica that was not leading holds no produce requests: records already in
        its log are never acknowledged by it (their producers got errors and retried).
        Partition.makeLeader (0.9+) forgets the followers' fetch offsets only when the
        replica was not the leader already (isNewLeader; 0.8.2 on every LeaderAndIsr,
        ``leader_keeps_fetch_state``). The model keeps them only when the
        epoch also moved by one: a leader that skipped an epoch missed a LeaderAndIsr, which the
        controller's in-order, retried delivery does not do, and its followers may have followed
        another leader meanwhile. makeFollower tells ReplicaManager whether the follower must
        restart its fetcher and truncate (``follower_changes``).
        Partition.makeLeader ends with maybeIncrementLeaderHW ("we may need to increment high
        watermark since ISR could be down to 1"; 0.11.0, 2.1.0, 2.7.0 alike).
        """
        old_leader, old_epoch = s.leader[r], s.leader_epoch[r]
        was_leading = self.believes_leads(s, r)
        leads = new_leader == r
        s.ack_from[r] = where(leads, where(was_leading, s.ack_from[r], s.leo[r]), 0)
        if not self.truncation_clamps_hw:
            # Partition.makeLeader (0.11-2.3): a new leader's convertHWToLocalOffsetMetadata finds no offset at a HW
            # past its LEO and falls back to the log start offset (1.1+; 0.11-1.0: unknown, -1, which exposes no more)
            s.hw[r] = where(leads & (s.hw[r] > s.leo[r]), 0, s.hw[r])
        if self.epoch_cached_on_election:
            # Partition.makeLeader (2.0.1+): leaderEpochStartOffsetOpt = LEO; cache.assign(epoch, LEO) adds an entry
            # unless the last one already has that epoch (a leader bounced and re-elected in its own epoch)
            s.epoch_start[r] = where(leads, s.leo[r], 0)
            self.assign_epoch(s, r, epoch, s.leo[r], when=leads)
        s.leader_epoch[r] = epoch
        if self.proof_ghosts:
            s.applied_epoch[r] = epoch
        s.leader[r] = new_leader
        s.zk_version_current[r] = zk_version_current
        still_leader = leads & (old_leader == r) & (epoch == old_epoch + 1)
        if self.proof_ghosts:
            s.led_since[r] = where(still_leader, s.led_since[r], where(leads, epoch, 0))
        keeps = still_leader if self.leader_keeps_fetch_state else False   # 0.8.2: reset on every LeaderAndIsr
        self.apply_lag_clocks(s, r, leads, keeps, still_leader, isr)
        for i in self.REPLICAS:
            s.isr[r][i] = isr[i]
            s.remote_leo[r][i] = where(keeps, s.remote_leo[r][i], -1)
        if controller_epoch is not None:
            s.controller_epoch_seen[r] = max_of([s.controller_epoch_seen[r], controller_epoch])
        if self.async_isr:
            self.clear_pending_isr(s, r)
        follows = ~leads & (new_leader != self.NONE)
        changes = follows & self.follower_changes(s, old_leader, old_epoch, new_leader, epoch)
        s.truncating[r] = where(leads | (new_leader == self.NONE), False, s.truncating[r])
        self.become_follower(s, r, changes)
        # Partition.makeLeader (0.8+): the new leader may raise its HW at once, e.g. when its ISR is itself alone
        self.maybe_increment_hw(s, r, when=leads)

    @action(r="REPLICAS")
    def apply_stale_leader_and_isr(self, s, r):
        """controller_failover: broker r receives the deposed controller's in-flight LeaderAndIsr (controller epoch 1).

        Only the broker's checks stand between it and a decision the new controller
        never made: the leader-epoch check, and the controller-epoch check.
        Kafka: ReplicaManager.becomeLeaderOrFollower answers STALE_CONTROLLER_EPOCH to a request whose controller
        epoch is below the newest it has seen (0.8+, 0.11.0 and 2.0.0 alike).
        """
        if not self.controller_failover:
            s.require(False)
            return
        s.require((s.zreq_epoch > 0) & s.up[r] & (s.leader_epoch[r] < s.zreq_epoch)
                  & self.controller_epoch_accepted(s, r, 1))
        self.become_leader_or_follower(s, r, s.zreq_epoch, s.zreq_leader, [s.zreq_isr[i] for i in self.REPLICAS],
                                       False, 1)

    @action(l="REPLICAS")
    def produce(self, s, l):
        """A producer appends the next record to the replica that believes it leads (Partition.appendRecordsToLeader).

        With acks=all the leader refuses the write when its ISR is smaller than
        min.insync.replicas; with acks=1 the record is acknowledged on append.
        Kafka: Partition.appendRecordsToLeader (0.10.2+; appendMessagesToLeader since 0.8.2) throws
        NotEnoughReplicasException when acks=-1 and the ISR is below min.insync.replicas.
        """
        s.require(self.believes_leads(s, l) & (s.leo[l] < self.L) & (s.next_record <= self.M))
        if self.acks_all:
            s.require(count_of(s.isr[l][i] for i in self.REPLICAS) >= self.leader_min_isr(s, l))
        record, offset = s.next_record, s.leo[l]
        s.log_record[l][offset] = record
        s.log_epoch[l][offset] = s.leader_epoch[l]
        s.leo[l] = offset + 1
        if self.leader_epoch_cache:     # Log.append (0.11+): assign(leader epoch, offset) for the new batch
            self.assign_epoch(s, l, s.leader_epoch[l], offset)
        s.next_record = record + 1
        if not self.acks_all:
            for m in self.RECORDS:
                s.acked_at[m - 1] = where(record == m, offset, s.acked_at[m - 1])
        self.maybe_increment_hw(s, l)

    @action(f="REPLICAS", l="REPLICAS")
    def fetch(self, s, f, l):
        """Follower f fetches from l, the leader it believes in (ReplicaFetcherThread, 0.8+).

        The leader reads the response (records from f's LEO, and its current HW)
        before it records f's fetch offset and maybe raises its HW, so the follower
        learns that new HW only from a later fetch. A fetch offset past the
        leader's LEO gets OffsetOutOfRange and the follower truncates to it
        (AbstractFetcherThread.fetchOffsetAndTruncate, 2.1+; before, see ``exit_out_of_range``).
        A caught-up follower rejoins the ISR in the same step. A follower outside the leader's assignment gets
        nothing and is not recorded (Partition.updateFollowerFetchState, 2.4+; the replica is unknown before).
        """
        s.require((f != l) & s.up[f] & s.up[l] & (s.leader[f] == l) & self.believes_leads(s, l)
                  & self.fetch_accepted(s, f, l))
        s.require(~s.truncating[f])
        if self.reassign:
            s.require(self.serves(s, l, f))
        if self.lag_rule is not None:
            s.require(~s.stalled[f])
        response_hw, fetch_offset, leader_leo = s.hw[l], s.leo[f], s.leo[l]
        if self.out_of_range_exits and not self.unclean:
            s.require(fetch_offset <= leader_leo)
        if self.proof_ghosts:
            s.followed_epoch[f] = s.leader_epoch[f]
            s.fetched_epoch[f] = s.leader_epoch[f]
        for o in self.OFFSETS:
            copy = (o >= fetch_offset) & (o < leader_leo)
            keep = o < leader_leo
            s.log_record[f][o] = where(copy, s.log_record[l][o], where(keep, s.log_record[f][o], 0))
            s.log_epoch[f][o] = where(copy, s.log_epoch[l][o], where(keep, s.log_epoch[f][o], 0))
        if self.leader_epoch_cache:
            # an out-of-range follower truncates to the leader's LEO (Log.truncateTo), then appends what it got
            self.truncate_from_end(s, f, leader_leo, when=leader_leo < fetch_offset)
            self.assign_appended(s, f, fetch_offset, leader_leo)
        s.leo[f] = leader_leo
        s.hw[f] = response_hw
        s.flushed[f] = min_of([s.flushed[f], leader_leo])
        in_range = fetch_offset <= leader_leo
        self.record_fetch(s, l, f, fetch_offset, leader_leo, in_range)

    def record_fetch(self, s, l, f, fetch_offset, leader_leo, in_range):
        """Leader l handles f's fetch from ``fetch_offset`` (a fetch offset past its LEO gets OffsetOutOfRange): it
        records the offset as f's LEO, stamps its lag clocks, maybe adds f to the ISR and raises its HW
        (ReplicaManager.updateReplicaLEOAndPartitionHW 0.8, updateFollowerLogReadResults 0.9+)."""
        s.remote_leo[l][f] = where(in_range, fetch_offset, s.remote_leo[l][f])
        if self.lag_rule is None:
            self.maybe_expand_isr(s, l, f, in_range)
        else:
            at_end = self.record_fetch_time(s, l, f, fetch_offset, leader_leo, in_range)
            self.maybe_expand_isr(s, l, f, in_range)
            s.healthy[l][f] = s.healthy[l][f] | (at_end & s.isr[l][f])     # at the log end, in the ISR
        self.maybe_increment_hw(s, l)

    @action(f="REPLICAS", l="REPLICAS")
    def exit_out_of_range(self, s, f, l):
        """Follower f's fetch offset is past leader l's LEO and unclean election is off: f exits (0.10.2-2.0).

        ReplicaFetcherThread.handleOffsetOutOfRange (0.10.2-2.0.0): "Exiting because log truncation is
        not allowed" (System.exit, so the shutdown hook stops the broker cleanly; before 0.10.2 it was
        Runtime.halt, a hard stop: ``out_of_range_halts``, 0.8.2 and 0.9.0 alike). It counts as one of the max_crashes
        stops.
        """
        if not (self.out_of_range_exits and not self.unclean):
            s.require(False)
            return
        s.require((f != l) & s.up[f] & s.up[l] & (s.leader[f] == l) & self.believes_leads(s, l)
                  & self.fetch_accepted(s, f, l) & ~s.truncating[f] & (s.leo[f] > s.leo[l]))
        s.require(s.crashes < self.C)
        if self.lag_rule is not None:
            s.require(~s.stalled[f])
        if self.out_of_range_halts:
            self.hard_stop(s, f)
        else:
            self.stop_cleanly(s, f)

    @action(f="REPLICAS", l="REPLICAS")
    def fetch_response_lost(self, s, f, l):
        """fetch_response_loss: leader l handles f's fetch, but the response never reaches f (the connection drops).

        The leader records f's fetch offset, may add f to the ISR and raise its HW,
        exactly as for a delivered fetch; f's log and HW stay as they were and it
        will fetch again from the same offset.
        Kafka: ReplicaManager.fetchMessages records the follower's read (updateFollowerLogReadResults) before the
        response is sent; AbstractFetcherThread.processFetchRequest catches the lost connection and fetches again
        from the same offset after a back-off (0.11.0, 2.0.0 alike).
        """
        if not self.fetch_response_loss:
            s.require(False)
            return
        s.require((f != l) & s.up[f] & s.up[l] & (s.leader[f] == l) & self.believes_leads(s, l)
                  & self.fetch_accepted(s, f, l))
        s.require(~s.truncating[f])
        if self.lag_rule is not None:
            s.require(~s.stalled[f])
        if self.reassign:
            s.require(self.serves(s, l, f))
        fetch_offset = s.leo[f]
        self.record_fetch(s, l, f, fetch_offset, s.leo[l], fetch_offset <= s.leo[l])

    @action(l="REPLICAS", f="REPLICAS")
    def shrink_isr(self, s, l, f):
        """Leader l drops follower f from the ISR after replica.lag.time.max.ms (Partition.maybeShrinkIsr).

        Without a lag rule any follower, any time: Kafka drops only one that is out of sync, which the model then
        does not time; the extra shrinks only add behaviour (sound for safety). With one, only a follower
        ``follower_out_of_sync`` names. Kafka drops every out-of-sync follower in one write; the model drops one
        per step (with three replicas or more it also has the ISR in between).
        Kafka: ReplicaManager schedules "isr-expiration" (0.8+, every replica.lag.time.max.ms; half that from
        0.10.2), which runs Partition.maybeShrinkIsr on every partition it leads; the ZooKeeper write is
        conditional on the cached zkVersion (0.8-2.6).
        """
        if self.async_isr:
            # 2.7+ (KIP-497): the leader sends AlterIsr and keeps its current ISR until the controller commits
            s.require((f != l) & self.believes_leads(s, l) & s.isr[l][f] & ~s.alter_pending[l]
                      & self.follower_out_of_sync(s, l, f))
            self.propose_isr(s, l, [s.isr[l][i] & (i != f) for i in self.REPLICAS])
            return
        s.require((f != l) & self.believes_leads(s, l) & s.isr[l][f] & self.isr_write_succeeds(s, l))
        if self.lag_rule is not None:
            s.require(self.follower_out_of_sync(s, l, f))
        self.write_isr(s, l, [s.isr[l][i] & (i != f) for i in self.REPLICAS])
        self.maybe_increment_hw(s, l)

    @action(l="REPLICAS")
    def alter_isr(self, s, l):
        """async_isr: the controller handles leader l's AlterIsr request and l reads the response (KIP-497, 2.7+).

        The controller commits the proposed ISR only if l is still the leader in the
        leader epoch and partition epoch (zkVersion) it last learnt; otherwise the
        request fails (FENCED_LEADER_EPOCH / INVALID_UPDATE_VERSION) and the ISR stays.
        On success l adopts the ISR and may raise its HW.
        Kafka: Partition.sendAlterIsrRequest (via AlterIsrManager) and KafkaController.processAlterIsr, 2.7.0.
        """
        if not self.async_isr:
            s.require(False)
            return
        s.require(s.alter_pending[l] & s.up[l])
        ok = self.alter_accepted(s, l)
        proposed = [s.pending_isr[l][i] for i in self.REPLICAS]
        self.clear_pending_isr(s, l)
        self.write_isr(s, l, proposed, when=ok)
        self.maybe_increment_hw(s, l)

    @action(r="REPLICAS")
    def flush(self, s, r):
        """The log flusher fsyncs r's log (only matters when a hard crash loses unflushed data).

        Kafka: LogManager's "kafka-log-flusher" task runs flushDirtyLogs, Log.flush past log.flush.interval.ms
        (0.8+; 0.8.2, 0.11.0 alike).
        """
        s.require(self.unflushed_loss)
        s.require(s.up[r] & (s.flushed[r] < s.leo[r]))
        s.flushed[r] = s.leo[r]

    @action(r="REPLICAS")
    def checkpoint_hw(self, s, r):
        """The HW checkpoint thread writes r's HW to disk (every replica.high.watermark.checkpoint.interval.ms).

        Kafka: ReplicaManager's "highwatermark-checkpoint" task runs checkpointHighWatermarks into the
        replication-offset-checkpoint file (0.8+; 0.8.2, 0.11.0 alike).
        """
        s.require(s.up[r] & (s.checkpoint_hw[r] != s.hw[r]))
        s.checkpoint_hw[r] = s.hw[r]

    @action(r="REPLICAS")
    def crash(self, s, r):
        """Hard crash: the HW comes back from its checkpoint; with unflushed_loss the unflushed tail is gone too.

        Kafka: with no .kafka_cleanshutdown file Log.recoverLog re-reads the segments past the recovery point
        (LogManager.loadLogs, 0.8.1+), and Partition.getOrCreateReplica loads min(checkpointed HW, LEO) (0.8-2.3).
        """
        s.require(s.up[r] & (s.crashes < self.C))
        self.hard_stop(s, r)

    def hard_stop(self, s, r):
        """The broker process dies without its shutdown hook: with unflushed_loss the unflushed tail is gone."""
        if self.unflushed_loss:
            self.truncate_to(s, r, s.flushed[r])
            self.note_unclean_shutdown(s, r)
        self.go_down(s, r)

    def note_unclean_shutdown(self, s, r):
        """What the model remembers of r's hard crash losing its unflushed tail: with KIP-966 (elr) the flag the
        controller's ELR rules read when r leaves the ISR or registers again."""
        if self.elr:
            s.unclean_shutdown[r] = True

    @action(r="REPLICAS")
    def shutdown(self, s, r):
        """Clean shutdown: the log is flushed and the HW checkpointed before the process exits.

        Kafka: KafkaServer.shutdown runs ReplicaManager.shutdown (checkpointHighWatermarks) and then
        LogManager.shutdown (flush, .kafka_cleanshutdown) (0.8.2, 0.11.0 alike).
        """
        s.require(s.up[r] & (s.crashes < self.C))
        self.stop_cleanly(s, r)

    def stop_cleanly(self, s, r):
        """KafkaServer.shutdown: flush the log and checkpoint the HW, then stop."""
        s.flushed[r] = s.leo[r]
        s.checkpoint_hw[r] = s.hw[r]
        self.go_down(s, r)

    def go_down(self, s, r):
        """A stopped broker forgets everything it held in memory; its HW is what it loads when it starts again.

        Partition.getOrCreateReplica (0.8-2.3) and Log (2.4+) load min(checkpointed HW, LEO).
        """
        s.hw[r] = min_of([s.checkpoint_hw[r], s.leo[r]])
        s.up[r] = False
        s.crashes = s.crashes + 1
        self.leave_partition(s, r)
        s.leader_epoch[r] = 0
        if self.proof_ghosts:
            s.led_since[r] = 0
        if self.leader_epoch_cache:
            # loading the log drops cache entries at or past the LEO (Log.loadSegments: clearAndFlushLatest(LEO)
            # 0.11-2.0.0, truncateFromEnd(LEO) 2.0.1+), e.g. makeLeader's entry at the LEO
            self.truncate_from_end(s, r, s.leo[r])
        if self.controller_failover:
            s.controller_epoch_seen[r] = 0
        if self.lag_rule is not None:
            for l in self.REPLICAS:
                s.healthy[l][r] = False
        if self.reassign:       # requests in flight to it die with its connections, and so do its producers'
            self.forget_partition(s, r)
            if self.orphans:
                s.produce_orphaned[r] = False

    def leave_partition(self, s, r):
        """Broker r's Partition and fetcher are gone (it stopped, or its replica was removed): it leads and follows no
        one, holds no ISR view, no fetch state of followers, no in-flight ISR change; its lag clocks start afresh."""
        s.leader[r] = self.NONE
        self.forget_partition_epoch(s, r)
        s.truncating[r] = False
        s.ack_from[r] = 0
        if self.epoch_cached_on_election:
            s.epoch_start[r] = 0
        for i in self.REPLICAS:
            s.isr[r][i] = False
            s.remote_leo[r][i] = -1
        if self.lag_rule is not None:
            # its Replica objects are gone (the next ones start fresh); it fetches from no one, and its next
            # incarnation's fetcher starts afresh
            self.reset_lag_clocks(s, r)
            s.stalled[r] = False

    def forget_partition_epoch(self, s, r):
        """A stopped broker's cached zkVersion and its in-flight AlterIsr die with its memory."""
        s.zk_version_current[r] = False
        if self.async_isr:
            self.clear_pending_isr(s, r)

    # ------------------------------------------------------------------------------------
    # time, for the lag rule (none without one)
    # ------------------------------------------------------------------------------------
    @action(l="REPLICAS", f="REPLICAS")
    def lag_expires(self, s, l, f):
        """replica.lag.time.max.ms passes in which follower f does not fetch from l: every clock l keeps of f runs out.

        Kafka: Partition.getOutOfSyncReplicas compares Replica.logEndOffsetUpdateTimeMs (0.8) or lastCaughtUpTimeMs
        (0.9+) with the time (0.8.2, 0.9.0 alike); f may be paused, cut off from l, or stopped (``fetcher_stops``).
        """
        if self.lag_rule is None:
            s.require(False)
            return
        running = self.lag_clocks(s, l, f) + [s.healthy[l][f]]
        s.require((f != l) & self.lag_clock_runs(s, l) & any_of(running))
        for clock in self.lag_clock_names():
            getattr(s, clock)[l][f] = False
        s.healthy[l][f] = False

    @action(l="REPLICAS", f="REPLICAS")
    def catch_up_lapses(self, s, l, f):
        """The time rule before KAFKA-4485 (0.9-0.10.1): replica.lag.time.max.ms passes in which f keeps fetching from
        leader l, but l appends between any two of its fetches, so none starts at l's LEO: f's lastCaughtUpTimeMs runs
        out although it holds all but the newest records. Only once f's last fetch started below l's LEO.

        Kafka: Replica.updateLogReadResult stamps lastCaughtUpTimeMs only for a fetch with readToEndOfLog (0.9.0);
        KAFKA-4485 (0.10.2) also counts a fetch that reaches the leader's LEO of the follower's previous fetch.
        """
        if self.lag_rule != "time" or self.caught_up_by_previous_fetch:
            s.require(False)
            return
        s.require((f != l) & self.believes_leads(s, l) & s.caught_up[l][f] & (s.remote_leo[l][f] >= 0)
                  & (s.remote_leo[l][f] < s.leo[l]) & s.up[f] & (s.leader[f] == l) & ~s.stalled[f])
        s.caught_up[l][f] = False

    @action(f="REPLICAS")
    def fetcher_stops(self, s, f):
        """Follower f's fetcher stops until its broker restarts (a ReplicaFetcherThread that died, a network partition
        from the leader), while its ZooKeeper session lives on: the controller sees nothing; only the leader's lag rule
        can take f out of the ISR (KIP-16: a "stuck" follower).

        Kafka: the leader's Partition.getOutOfSyncReplicas calls it stuck once its clock runs out (0.8.2: no fetch
        for replica.lag.time.max.ms; 0.9.0: no fetch from the log end).
        """
        if self.lag_rule is None:
            s.require(False)
            return
        s.require(s.up[f] & ~s.stalled[f] & (s.leader[f] != f) & (s.leader[f] != self.NONE))
        s.stalled[f] = True

    @action(r="REPLICAS")
    def restart(self, s, r):
        """Broker r starts again; it learns its role from the next LeaderAndIsr it applies.

        Kafka: KafkaController.onBrokerStartup (0.8+) sends it UpdateMetadata and LeaderAndIsr for its replicas.
        Before 2.2 the controller may not have handled its failure yet: a fast bounce
        can go unnoticed (KAFKA-1120), so r may still be in the ISR or even the leader
        in ZooKeeper (``restart_allowed``). Requests sent before it stopped died with
        its connection: it accepts the controller's current LeaderAndIsr and newer ones
        only. After an unnoticed bounce Kafka sends the current one again only on a later
        event (the controller's RequestSendThread retrying it on the new connection, a
        controller failover's replicaStateMachine.startup); the model lets it arrive any
        time, an over-approximation that is sound for safety (it only adds timings).
        """
        s.require(self.may_stop & ~s.up[r])
        allowed = self.restart_allowed(s, r)
        if allowed is not True:
            s.require(allowed)
        if self.elr:
            # KIP-966 (KRaft): the controller fences the old incarnation out of the ISR before the new one
            # registers; registering after an unclean shutdown also takes it out of the ELR
            s.require(~(s.unclean_shutdown[r] & s.q_isr[r]))
            s.q_elr[r] = s.q_elr[r] & ~s.unclean_shutdown[r]
            s.unclean_shutdown[r] = False
        s.up[r] = True
        s.leader_epoch[r] = where(s.q_epoch > 0, s.q_epoch - 1, 0)
        if self.proof_ghosts:
            s.up_since[r] = s.q_epoch
        if self.controller_failover:
            s.controller_epoch_seen[r] = s.q_controller_epoch     # the current controller's startup requests

    # ------------------------------------------------------------------------------------
    # invariants
    # ------------------------------------------------------------------------------------
    @invariant("no-committed-loss")
    def no_committed_loss(self, s):
        """Every acknowledged record stays in the acting leader's log at its offset.

        When it breaks, a producer was told a record was committed (acks=all) and
        consumers will never see it: silent data loss.
        """
        ok = []
        for l in self.REPLICAS:
            for m in self.RECORDS:
                at = s.acked_at[m - 1]
                has = (s.leo[l] > at) & (s.log_record[l][at] == m)
                ok.append(~self.acting_leader(s, l) | (at < 0) | has)
        return all_of(ok)

    @invariant("no-committed-loss-anywhere")
    def no_committed_loss_anywhere(self, s):
        """Every acknowledged record stays at its offset on some replica that can still become leader.

        A replica can become leader by a clean election if it is in the ISR in ZooKeeper
        (up or down: a stopped broker keeps its log), or, with KIP-966, an eligible leader
        replica. Unlike no-committed-loss this also sees a loss while no leader acts.
        When it breaks, no clean election can bring the record back: it is lost for good.
        """
        ok = []
        for m in self.RECORDS:
            at = s.acked_at[m - 1]
            kept = []
            for r in self.REPLICAS:
                electable = s.q_isr[r] | s.q_elr[r] if self.elr else s.q_isr[r]
                if self.reassign:       # only a replica of the partition can be elected
                    electable = electable & s.q_replicas[r]
                kept.append(electable & (s.leo[r] > at) & (s.log_record[r][at] == m))
            ok.append((at < 0) | any_of(kept))
        return all_of(ok)

    @invariant("log-matching")
    def log_matching(self, s):
        """Replicas holding the same epoch at an offset agree on the whole log up to it.

        When it breaks, replica logs have diverged below an offset they both
        consider settled: consumers see different data depending on the leader.
        """
        ok = []
        for a, b in self.replica_pairs():
            for o in self.OFFSETS:
                same_epoch = (o < s.leo[a]) & (o < s.leo[b]) & (s.log_epoch[a][o] == s.log_epoch[b][o])
                prefix_equal = all_of((s.log_record[a][p] == s.log_record[b][p])
                                      & (s.log_epoch[a][p] == s.log_epoch[b][p]) for p in range(o + 1))
                ok.append(~same_epoch | prefix_equal)
        return all_of(ok)

    @invariant("hw-log-matching")
    def hw_log_matching(self, s):
        """Below both replicas' high watermarks their logs agree (record and epoch at every offset).

        Each replica considers the records below its HW committed and may serve them once it leads.
        Unlike log-matching this also sees logs that diverged under different epochs (KIP-101
        scenario 2). When it breaks, two replicas hold different committed data at one offset.
        """
        ok = []
        for a, b in self.replica_pairs():
            for o in self.OFFSETS:     # before 2.4 a follower's HW may be past its LEO: it holds nothing there
                below = (o < s.hw[a]) & (o < s.leo[a]) & (o < s.hw[b]) & (o < s.leo[b])
                ok.append(~below | ((s.log_record[a][o] == s.log_record[b][o])
                                    & (s.log_epoch[a][o] == s.log_epoch[b][o])))
        return all_of(ok)

    @invariant("consistent-reads")
    def consistent_reads(self, s):
        """No offset is ever read with two different records.

        Every replica that believes it leads serves, below its HW, exactly the
        records consumers were first shown there. When it breaks, two consumers
        read different data at the same offset.
        """
        ok = []
        for r in self.REPLICAS:
            for o in self.OFFSETS:
                ok.append(~self.believes_leads(s, r) | (o >= s.hw[r]) | (s.log_record[r][o] == s.exposed[o]))
        return all_of(ok)

    @invariant("hw-monotonic")
    def hw_monotonic(self, s):
        """The acting leader's log reaches every offset ever exposed to consumers (the committed HW never moves back).

        It checks the acting leader's LEO against the highest offset consumers were ever
        shown, not the HW field itself (a new leader's HW may lag until its followers fetch).
        When it breaks, consumers positioned at the old HW get OffsetOutOfRange
        and reset, skipping or re-reading data.
        """
        committed = count_of(s.exposed[o] != 0 for o in self.OFFSETS)
        return all_of(~self.acting_leader(s, l) | (s.leo[l] >= committed) for l in self.REPLICAS)

    @invariant("single-leader-per-epoch")
    def single_leader_per_epoch(self, s):
        """No two replicas believe they lead in the same leader epoch.

        When it breaks, two brokers accept writes under one epoch and epoch-based
        truncation can no longer tell their logs apart.
        """
        return all_of(~(self.believes_leads(s, a) & self.believes_leads(s, b)
                        & (s.leader_epoch[a] == s.leader_epoch[b]))
                      for a, b in self.replica_pairs())

    @invariant("single-acting-leader", benign=True)
    def single_acting_leader(self, s):
        """At most one replica believes it leads at any moment.

        Violated in every Kafka version, by design: a deposed leader keeps believing
        it leads until its LeaderAndIsr arrives (benign split brain). It costs
        nothing while the fences hold: the deposed leader's ISR writes fail on the
        zkVersion, followers on the new epoch refuse it (KIP-320), and acks=all
        records it takes are never acknowledged. When a fence is missing, this is
        where committed-record loss starts.
        """
        return all_of(~(self.believes_leads(s, a) & self.believes_leads(s, b))
                      for a, b in self.replica_pairs())

    @invariant("leader-in-isr")
    def leader_in_isr(self, s):
        """The leader in ZooKeeper is a member of the ISR in ZooKeeper.

        When it breaks, the partition is led by a replica that is not known to
        hold the committed records.
        """
        return (s.q_leader == self.NONE) | s.q_isr[s.q_leader]

    def isr_holds_committed(self, s, live_only):
        """Every ISR member in ZooKeeper (``live_only``: that is up) holds everything below the acting leader's HW."""
        ok = []
        for l in self.REPLICAS:
            for i in self.REPLICAS:
                if i == l:
                    continue
                member = s.q_isr[i] & s.up[i] if live_only else s.q_isr[i]
                for o in self.OFFSETS:
                    below = self.acting_leader(s, l) & member & (o < s.hw[l])
                    ok.append(~below | ((s.leo[i] > o) & (s.log_record[i][o] == s.log_record[l][o])))
        return all_of(ok)

    @invariant("strong-isr")
    def strong_isr(self, s):
        """Every ISR member (in ZooKeeper) holds everything below the acting leader's HW.

        When it breaks, the controller could elect an ISR member that lacks
        committed records.
        """
        return self.isr_holds_committed(s, live_only=False)

    @invariant("strong-live-isr")
    def strong_live_isr(self, s):
        """Every live ISR member (in ZooKeeper) holds everything below the acting leader's HW.

        strong-isr over the brokers that are up: a stopped member that lost its unflushed
        tail may stay in the ISR until the controller notices (KIP-966 then keeps it from
        being elected); a live member without a committed record can be elected at once.
        """
        return self.isr_holds_committed(s, live_only=True)

    # ------------------------------------------------------------------------------------
    # liveness properties (checker/exhaustive/liveness.py): P leads to Q under the fairness each declares
    # ------------------------------------------------------------------------------------
    def acting_leader_stuck(self, s, l):
        """l is the acting leader with records above its HW while every member of its ISR is up."""
        return (self.acting_leader(s, l) & (s.hw[l] < s.leo[l])
                & all_of(~s.isr[l][i] | s.up[i] for i in self.REPLICAS))

    def follower_out_of_isr(self, s, l, f):
        """Live follower f of the acting leader l (one of its assignment) is outside l's ISR."""
        out = self.acting_leader(s, l) & s.up[f] & ~s.isr[l][f]
        return out & self.serves(s, l, f) if self.reassign else out

    @leads_to("eventually-leader", fairness=[weak("elect_leader"), weak("apply_leader_and_isr")])
    def eventually_leader(self, s):
        """Once every broker stays up, some replica becomes the acting leader.

        Fairness: the controller eventually elects a live ISR member it keeps being able to elect, and a live
        broker eventually applies a LeaderAndIsr it keeps being able to apply (each instance weakly fair).
        A broker going down ends the obligation (the assumption broke), and so does the controller reaching
        the last leader epoch the bounds allow (epochs_exhausted).
        """
        all_up = all_of(s.up[r] for r in self.REPLICAS)
        led = any_of(self.acting_leader(s, l) for l in self.REPLICAS)
        return all_up & ~led, led | ~all_up | self.epochs_exhausted(s)

    def epochs_exhausted(self, s):
        """The controller is at the last leader epoch of the bounds: the elections that would end a wait are
        cut off by --max-epochs, not by Kafka, so liveness obligations end here (an under-approximation: a
        liveness bug that needs the last epoch is missed; raise --max-epochs to look past it)."""
        return s.q_epoch == self.E

    #: what a live follower does until it is back in step: fetch, truncate, apply LeaderAndIsr; the controller
    #: answers AlterIsr (async_isr, KIP-497)
    FOLLOWER_FAIRNESS = (weak("fetch"), weak("apply_leader_and_isr"), weak("truncate_by_epoch", optional=True),
                         weak("alter_isr"))

    @leads_to("hw-advances", fairness=FOLLOWER_FAIRNESS)
    def hw_advances(self, s):
        """A record appended by the acting leader while its ISR members stay up is eventually below the HW.

        Fairness: a live follower eventually fetches from the leader it believes in, finishes truncating, and
        applies a LeaderAndIsr that reaches it, and the controller eventually answers a pending AlterIsr (each
        instance weakly fair); producers, ISR changes, elections and crashes need no fairness. The obligation
        ends when the leader stops acting or an ISR member goes down.
        """
        return (any_of(self.acting_leader_stuck(s, l) for l in self.REPLICAS),
                all_of(~self.acting_leader_stuck(s, l) for l in self.REPLICAS))

    @leads_to("isr-regrows", fairness=FOLLOWER_FAIRNESS)
    def isr_regrows(self, s):
        """A live follower that keeps fetching is eventually back in the acting leader's ISR.

        Fairness as for hw-advances. The obligation ends when the leader stops acting or the follower stops.
        Stated for the last replica as the follower: replicas are interchangeable in the model (as symmetry
        reduction assumes), so it covers every follower, and two followers that take turns outside the ISR
        (shrink_isr needs no fairness) do not count as one that never returns.
        """
        f = self.R - 1
        out = any_of(self.follower_out_of_isr(s, l, f) for l in self.REPLICAS if l != f)
        return out, ~out

    @leads_to("truncation-terminates", fairness=[weak("truncate_by_epoch", optional=True),
                                                 weak("apply_leader_and_isr"), weak("elect_leader"),
                                                 weak("restart"), weak("controller_shrink_isr"),
                                                 weak("controller_offline"), weak("apply_stop_replica")])
    def truncation_terminates(self, s):
        """A live follower in the truncation phase (0.11+, OffsetsForLeaderEpoch) eventually fetches again.

        Fairness: a live follower eventually sends OffsetsForLeaderEpoch to the leader it believes in, a live
        broker eventually applies a LeaderAndIsr that reaches it, the controller eventually handles a broker
        failure and elects a live ISR member it keeps being able to elect, and a stopped broker eventually
        restarts (each instance weakly fair): a follower whose leader died waits for the next leader, or for
        the last ISR member to come back (unclean election off); a replica a reassignment removed, fenced from its
        old leader, waits for its StopReplica (weakly fair too). Stopping ends the obligation. Stated for the
        last replica, as isr-regrows is; the obligation also ends at the last leader epoch (epochs_exhausted).
        Weak elect_leader is stronger than Kafka, whose controller does not elect while the leader is alive: it
        ends a truncation loop whose follower is still in the ISR, so KAFKA-10706 shows here only once the leader
        dropped the follower from its ISR, which needs one epoch more than hw-advances (kip-320: max_epochs=5).
        """
        f = self.R - 1
        truncating = s.up[f] & s.truncating[f]
        return truncating, ~truncating | self.epochs_exhausted(s)

    # ------------------------------------------------------------------------------------
    # progress a producer is promised, and a reassignment's; the fairness is each family's retry loops and timers
    # ------------------------------------------------------------------------------------
    #: a live follower fetches, truncates and applies what reaches it (each family names its own steps: the
    #: ZooKeeper era's truncate_by_epoch and alter_isr, KRaft's truncate_on_fetch_response, alter_partition and
    #: apply_partition_change); the controller removes a dead ISR member (its ZooKeeper session or broker session
    #: expires: zookeeper.session.timeout.ms, broker.session.timeout.ms); a broker applies a StopReplica sent to it
    PROGRESS_FAIRNESS = (weak("fetch"), weak("apply_leader_and_isr"), weak("truncate_by_epoch", optional=True),
                         weak("alter_isr", optional=True), weak("truncate_on_fetch_response", optional=True),
                         weak("alter_partition", optional=True), weak("apply_partition_change", optional=True),
                         weak("controller_shrink_isr"), weak("apply_stop_replica"))

    def produce_unanswered(self, s, l):
        """Broker l holds an acks=all produce request it has not answered: one it leads for and its HW has not
        passed, or (before 2.4) one left in its purgatory when StopReplica removed its replica."""
        waiting = self.produce_waiting(s, l)
        return waiting | s.produce_orphaned[l] if self.orphans else waiting

    def fetches_from(self, s, f, l):
        """Follower f keeps fetching from leader l: it is up, follows l, is not fenced by its leader epoch nor
        truncating, and its fetcher runs."""
        fetching = s.up[f] & (s.leader[f] == l) & self.fetch_accepted(s, f, l) & ~s.truncating[f]
        return fetching & ~s.stalled[f] if self.lag_rule is not None else fetching

    def laggard(self, s, l, i):
        """ISR member i (of leader l's view) does not fetch from l, and l's ISR change would be accepted: Kafka's lag
        rule drops such a member after replica.lag.time.max.ms (a timer the model does not run for every version:
        ``shrink_isr`` may also drop a follower that fetches, so it is not made fair)."""
        can_change = self.alter_accepted(s, l) if self.async_isr else self.isr_write_succeeds(s, l)
        return s.isr[l][i] & ~self.fetches_from(s, i, l) & can_change

    def drops_laggard(self, s, l):
        """Leader l has a laggard (``laggard``): its lag rule drops it and the HW moves on."""
        return any_of(self.laggard(s, l, i) for i in self.REPLICAS if i != l)

    @leads_to("write-resolves", fairness=PROGRESS_FAIRNESS)
    def write_resolves(self, s):
        """Every acks=all produce request is eventually answered while its leader stays leader: acknowledged, or
        rejected (NOT_ENOUGH_REPLICAS_AFTER_APPEND once the HW passes it, NOT_LEADER_OR_FOLLOWER when the leader
        learns it no longer leads, a broken connection when it stops).

        The request's own timeout (request.timeout.ms, 30 s by default) is not counted as an answer: a request that
        only its timeout ends is a producer stalled for that long (KAFKA-9198). Fairness: a live follower eventually
        fetches, finishes truncating and applies what reaches it, the controller answers a pending ISR change and
        removes a dead ISR member (the broker's ZooKeeper or KRaft session expires), a broker applies a StopReplica
        sent to it (each instance weakly fair). The obligation also ends while the leader could drop an ISR member
        that does not fetch from it (``drops_laggard``: its lag rule, replica.lag.time.max.ms, does). With acks=1
        nothing waits.
        """
        if not self.acks_all:
            return False, True
        open_ = [self.produce_unanswered(s, l) & ~self.drops_laggard(s, l) for l in self.REPLICAS]
        return any_of(open_), ~any_of(open_)

    def lacks_acked(self, s, i):
        """Replica i does not hold some acknowledged record at its offset."""
        missing = []
        for m in self.RECORDS:
            at = s.acked_at[m - 1]
            missing.append((at >= 0) & ~((s.leo[i] > at) & (s.log_record[i][at] == m)))
        return any_of(missing)

    @leads_to("acked-fully-replicated", fairness=PROGRESS_FAIRNESS)
    def acked_fully_replicated(self, s):
        """While the partition's leader is up, an acknowledged record eventually sits at its offset on every live ISR
        member (as the controller records the ISR).

        Fairness as for write-resolves. The obligation ends when the leader in ZooKeeper (or the metadata log)
        stops or there is none (electing the next one is eventually-leader's business), and for a member that does
        not fetch from the leader while the leader could drop it (``laggard``: its lag rule does). A record no live
        replica can fetch any more (a committed record lost) keeps it open forever.
        """
        led = any_of((s.q_leader == l) & s.up[l] for l in self.REPLICAS)
        short = []
        for i in self.REPLICAS:
            dropped = any_of((s.q_leader == l) & self.laggard(s, l, i) for l in self.REPLICAS if l != i)
            short.append(s.q_isr[i] & s.up[i] & self.lacks_acked(s, i) & ~dropped)
        return led & any_of(short), ~any_of(short) | ~led

    def current_request_pending(self, s, r):
        """Live broker r has not applied the partition state of the controller's current leader epoch, which is
        meant for it (a replica it names; ZooKeeper-era brokers skip one that names no leader)."""
        current = []
        for e in self.EPOCHS:
            meant = s.req_sent[e - 1]
            if self.reassign:
                meant = meant & s.req_replicas[e - 1][r]
            if not self.elr:
                meant = meant & (s.req_leader[e - 1] != self.NONE)
            current.append((s.q_epoch == e) & meant)
        return s.up[r] & any_of(current) & (s.leader_epoch[r] < s.q_epoch)

    @leads_to("metadata-converges", fairness=[weak("apply_leader_and_isr"), weak("apply_stop_replica")])
    def metadata_converges(self, s):
        """Every live broker eventually applies the controller's latest partition state (its leader epoch) meant
        for it.

        Fairness: a live broker eventually applies a LeaderAndIsr (a partition record) that reaches it, and a
        StopReplica sent before it (each instance weakly fair: the controller's RequestSendThread retries until the
        broker answers; a KRaft broker's metadata listener keeps fetching the log).
        """
        behind = any_of(self.current_request_pending(s, r) for r in self.REPLICAS)
        return behind, ~behind

    @leads_to("reassignment-completes", fairness=PROGRESS_FAIRNESS + (strong("complete_reassignment"),))
    def reassignment_completes(self, s):
        """A reassignment whose target replicas and leader stay up completes.

        Fairness as for write-resolves, and the controller completes the reassignment when it finds its target in the
        ISR again and again (strongly fair: every ISR change queues a controller event, the ISR znode's watch before
        2.7 and the AlterIsr answer since, which the controller handles well within the replica.lag.time.max.ms a
        follower needs to drop out again; without a lag rule the model may drop a caught-up follower at once). The obligation ends when a target
        replica or the leader stops, or there is no leader (the election is eventually-leader's business), or the
        controller lacks the leader epochs the bounds allow for the completion's steps (``--max-epochs``).
        Holds trivially without reassignments.
        """
        if not self.reassign:
            return False, True
        up = all_of(~self.target(s, i) | s.up[i] for i in self.REPLICAS)
        led = any_of((s.q_leader == l) & s.up[l] for l in self.REPLICAS)
        room = s.q_epoch + 1 + count_of(s.q_removing[i] & s.q_isr[i] for i in self.REPLICAS) <= self.E
        running = self.reassigning(s) & up & led & room
        return running, ~running
