"""Kafka 2.1 (KIP-320): fetches fenced by the current leader epoch."""
from isrcheck.model.kafka import KafkaReplication
from isrcheck.specs.kip_279 import Kip279
from isrcheck.specs.kip_320_lemmas import LEMMAS, LEMMAS_WHY, Kip320Lemmas


class Kip320(Kip320Lemmas, Kip279):
    name = "kip-320"
    summary = ("Kafka 2.1: Fetch and OffsetsForLeaderEpoch carry the follower's current leader epoch and "
               "the leader rejects any other; a follower rejoins the ISR only once it reached the start "
               "of the leader's epoch.")
    references = ("KIP-320", "KAFKA-6880 (zombie replicas must be fenced)", "KAFKA-7128 (fixed here)",
                  "KAFKA-7415 (fixed here: a new leader answers UNDEFINED for epochs before its first write)")
    epoch_cached_on_election = True
    out_of_range_exits = False       # 2.1: AbstractFetcherThread.fetchOffsetAndTruncate truncates instead
    expected = {**Kip279.expected, "no-committed-loss": "holds", "consistent-reads": "holds",
                "hw-monotonic": "holds", "strong-isr": "holds", "no-committed-loss-anywhere": "holds", "hw-log-matching": "holds",
                "strong-live-isr": "holds", **{name: "holds" for name in LEMMAS}}
    expected_why = {**KafkaReplication.expected_why, **LEMMAS_WHY}

    def follower_changes(self, s, old_leader, old_epoch, new_leader, epoch):
        """Partition.makeFollower (2.1.0): the fetcher restarts unless both leader and epoch are unchanged.

        (2.0.1 skipped it while the epoch moved by at most one, KAFKA-7164.) The model applies only newer
        epochs, so every LeaderAndIsr that makes a follower truncates again.
        """
        return (old_leader != new_leader) | (epoch != old_epoch)

    def fetch_accepted(self, s, f, l):
        """KIP-320: FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH unless both are on the same leader epoch."""
        return s.leader_epoch[f] == s.leader_epoch[l]

    def may_join_isr(self, s, l, f):
        """Partition.maybeExpandIsr (2.0.1+, KAFKA-7128): caught up to the HW *and* to leaderEpochStartOffsetOpt,
        the leader's LEO when it became leader in its epoch."""
        return super().may_join_isr(s, l, f) & (s.remote_leo[l][f] >= s.epoch_start[l])
