"""KafkaTruncateToHighWatermark.tla: before KIP-101, a new follower truncates to its own high watermark."""
from isrcheck.model.spec import action
from isrcheck.specs.tla.base import TlaKafkaReplication


class TlaTruncateToHighWatermark(TlaKafkaReplication):
    name = "tla-truncate-to-hw"
    summary = ("Port of KafkaTruncateToHighWatermark.tla (hachikuji/kafka-specification): in older Kafka a "
               "replica becoming follower truncates to its local high watermark, and can be elected "
               "leader right after, losing committed data. LeaderInIsr is kept as the TLA+ has it "
               "(quorumState.leader \\in quorumState.isr), so it is false in the initial state, where "
               "the quorum leader is None.")
    references = TlaKafkaReplication.references + ("KafkaTruncateToHighWatermark.tla", "KIP-101")
    expected = {"type-ok": "holds", "weak-isr": "violated", "strong-isr": "violated",
                "leader-in-isr": "violated"}
    expected_why = {**TlaKafkaReplication.expected_why,
                    "strong-isr": ("a follower's HW lags the leader's: on its next LeaderAndIsr it truncates to it, "
                                   "dropping a record below the leader's HW while in the ISR (KIP-101)"),
                    "weak-isr": "the same truncation to a lagging HW, by a member of the leader's own ISR"}

    @action(l="REPLICAS", r="REPLICAS", e="EPOCHS")
    def become_follower_truncate_to_high_watermark(self, s, l, r, e):
        """BecomeFollowerTruncateToHighWatermark: replica r applies the LeaderAndIsr request of epoch e naming
        leader l (another replica) and truncates its log to its own high watermark.

        The guard is BecomeFollowerAndTruncateTo's: the request names l, its epoch is
        newer than r's, and the truncation point (r's hw) is not past r's end offset.
        The follower's hw is behind the previous leader's, so it may drop committed records.
        """
        s.require(l != r)
        truncation_offset = s.hw[r]
        s.require(self.become_follower_guard(s, l, r, e, truncation_offset))
        self.become_follower_and_truncate_to(s, l, r, e, truncation_offset)
