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
    expected = {**Kip279.expected, "no-committed-loss": "holds", "consistent-reads": "holds",
                "hw-monotonic": "holds", "strong-isr": "holds", **{name: "holds" for name in LEMMAS}}
    expected_why = {**KafkaReplication.expected_why, **LEMMAS_WHY}
    expected_liveness = {"eventually-leader": "holds", "isr-regrows": "holds", "truncation-terminates": "holds",
                         "hw-advances": "violated"}
    expected_liveness_why = {
        "hw-advances": "model gap, not a Kafka bug: a leader whose ISR shrank to itself by a LeaderAndIsr "
                       "(controller_shrink_isr after a follower crashed) keeps its HW below its LEO until the next "
                       "produce; Kafka's Partition.makeLeader ends with maybeIncrementLeaderHW (0.8+, 'ISR could "
                       "be down to 1'), which become_leader_or_follower does not model. Fairness: weak fetch, "
                       "apply_leader_and_isr, truncate_by_epoch (no follower is left to fetch)"}

    def fetch_accepted(self, s, f, l):
        """KIP-320: FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH unless both are on the same leader epoch."""
        return s.leader_epoch[f] == s.leader_epoch[l]

    def may_join_isr(self, s, l, f):
        """KAFKA-7128 fix: caught up to the HW *and* past the start offset of the leader's current epoch."""
        return super().may_join_isr(s, l, f) & (s.remote_leo[l][f] >= self.epoch_start_offset(s, l))
