"""Kafka 2.0.1: 2.0 (KIP-279) with KAFKA-7415, KAFKA-7128, KAFKA-7164 and KAFKA-7414, before KIP-320's fencing."""
from isrcheck.model.configuration import Configuration
from isrcheck.model.kafka import KafkaReplication
from isrcheck.specs.kip_279 import Kip279

#: KAFKA-10706 as 2.0.1 and 2.1 run into it (the liveness expectations of kafka-2.0.1 and kip-320)
TRUNCATION_LOOP = (
    "a replica elected in an epoch it never wrote in (its cache got that epoch at its LEO, Partition.makeLeader "
    "2.0.1+, KAFKA-7415) follows a leader that does not know the epoch; the leader answers an earlier epoch "
    "ending at the follower's LEO, the follower knows that one under another epoch and truncates to its LEO "
    "'to go round again' (AbstractFetcherThread.getOffsetTruncationState, 2.0.0+); Log.truncateTo at the LEO "
    "is a no-op that keeps the cache entry, so it asks the same OffsetsForLeaderEpoch forever: KAFKA-10706, "
    "fixed in Nov 2020 (apache/kafka#9633: truncateTo cleans the cache even at the end offset)")


class Kafka201(Kip279):
    name = "kafka-2.0.1"
    summary = ("Kafka 2.0.1: a new leader caches its epoch at its LEO (KAFKA-7415), a follower rejoins the ISR "
               "only once it reached the start of the leader's epoch (KAFKA-7128), a follower restarts its "
               "fetcher unless the leader is unchanged and the epoch moved by at most one (KAFKA-7164), and an "
               "out-of-range follower truncates instead of exiting (KAFKA-7414); fetches are not yet fenced by "
               "the leader epoch (KIP-320, 2.1).")
    references = ("KAFKA-6880 (zombie replicas must be fenced: only KIP-320, 2.1, does)",
                  "KAFKA-7415 (a new leader persists its epoch and start offset: fixed here)")
    # Partition.makeLeader (2.0.1, KAFKA-7415): leaderEpochStartOffsetOpt = LEO and cache.assign(epoch, LEO);
    # LeaderEpochFileCache.assign removes conflicting entries and endOffsetFor answers below the first entry
    epoch_cached_on_election = True
    # ReplicaFetcherThread.handleOffsetOutOfRange (2.0.1, KAFKA-7414): truncate to the leader's LEO, never exit
    out_of_range_exits = False
    expected = {**KafkaReplication.expected,
                "no-committed-loss": "violated", "log-matching": "holds", "consistent-reads": "violated",
                "hw-monotonic": "violated", "single-leader-per-epoch": "holds", "leader-in-isr": "holds",
                "strong-isr": "violated", "no-committed-loss-anywhere": "violated", "hw-log-matching": "violated",
                "strong-live-isr": "violated"}
    expected_why = {**KafkaReplication.expected_why,
        "no-committed-loss": "KAFKA-6880: OffsetsForLeaderEpoch is not fenced by the leader epoch. A replica that led "
                             "an epoch keeps its KAFKA-7415 cache entry after stepping down and asks for that epoch's "
                             "end offset; a deposed leader still on an older epoch does not know it and answers "
                             "UNDEFINED, and the follower truncates a committed record to its HW and is elected "
                             "(KAFKA-7415's entry cannot help a leader that never had the epoch; KIP-320, 2.1, "
                             "fences the request, and kip-320 holds at these bounds)",
        "hw-monotonic": "the same truncation leaves the next leader's log below the committed HW",
        "strong-isr": "the same: an ISR member truncates a committed record to its HW on the deposed leader's "
                      "UNDEFINED answer",
        "strong-live-isr": "the same: the truncating ISR member is live",
        "no-committed-loss-anywhere": "the same truncation; the deposed leader then leaves the ISR and no electable "
                                      "replica holds the record",
        "consistent-reads": "the same truncation; the follower is elected and writes another record where "
                            "consumers read the lost one (kip-279 holds here: without the KAFKA-7415 entry the "
                            "follower asks for the epoch of its last record, which the deposed leader knows)",
        "hw-log-matching": "the same: the elected follower commits its new record where the deposed leader, which "
                           "stays up, holds the old one below its HW (KAFKA-6880)",
    }
    configurations = {
        "kafka-7415": Configuration(
            bounds={"max_records": 3, "max_epochs": 3}, expected={"log-matching": "holds"},
            why={"log-matching": "KAFKA-7415's LeaderEpochFileCache (2.0.1): endOffsetFor answers an epoch below the "
                                 "first entry with that entry's start offset instead of UNDEFINED, so a follower whose "
                                 "cache starts above the leader's answer truncates to it (kip-279, 2.0.0, diverges at "
                                 "these bounds in 13 states, as its kafka-6361 configuration does at max_epochs=4)"}),
        "kafka-6880": Configuration(
            bounds={"max_records": 3}, expected={"hw-log-matching": "violated"},
            why={"hw-log-matching": "KAFKA-6880: 2.0.1's fixes (KAFKA-7415, KAFKA-7128, KAFKA-7164) leave fetches and "
                                    "OffsetsForLeaderEpoch unfenced, so a zombie leader still serves a follower of a "
                                    "newer epoch: two replicas hold different records below their HWs (kip-320 "
                                    "holds at these bounds)"}),
    }
    expected_liveness = {"eventually-leader": "holds", "truncation-terminates": "holds",
                         "hw-advances": "violated", "isr-regrows": "violated"}
    expected_liveness_why = {
        "hw-advances": "the truncation loop of 2.0.1 and 2.1: " + TRUNCATION_LOOP + "; the leader's ISR still holds the "
                       "looping follower, so its HW stays below the record. Fairness: weak fetch, "
                       "apply_leader_and_isr, truncate_by_epoch, alter_isr",
        "isr-regrows": "the same truncation loop: " + TRUNCATION_LOOP + "; the follower never fetches, so it never "
                       "rejoins the ISR. Fairness: weak fetch, apply_leader_and_isr, truncate_by_epoch, alter_isr"}

    def follower_changes(self, s, old_leader, old_epoch, new_leader, epoch):
        """Partition.makeFollower (2.0.1, KAFKA-7164): the fetcher restarts (and truncates) unless the leader is
        unchanged and the epoch moved by at most one; a missed epoch means the leader's log may have been
        truncated meanwhile."""
        return (old_leader != new_leader) | (epoch > old_epoch + 1)

    def may_join_isr(self, s, l, f):
        """Partition.maybeExpandIsr (2.0.1+, KAFKA-7128): caught up to the HW *and* to leaderEpochStartOffsetOpt,
        the leader's LEO when it became leader in its epoch."""
        return super().may_join_isr(s, l, f) & (s.remote_leo[l][f] >= s.epoch_start[l])
