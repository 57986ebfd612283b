"""Kip279.tla: KIP-279, truncation to just past the last offset where follower and leader match."""
from isrcheck.model.expr import where
from isrcheck.model.spec import action
from isrcheck.specs.tla.base import TlaKafkaReplication


class TlaKip279(TlaKafkaReplication):
    name = "tla-kip279"
    summary = ("Port of Kip279.tla (hachikuji/kafka-specification): a replica becoming follower compares "
               "offset and epoch with the leader going back from its log's tail and truncates to one past "
               "the last offset where both hold the same record. LeaderInIsr is kept as the TLA+ has it, "
               "so it is false in the initial state, where the quorum leader is None.")
    references = TlaKafkaReplication.references + ("Kip279.tla", "KIP-279")
    expected = {"type-ok": "holds", "weak-isr": "violated", "strong-isr": "violated",
                "leader-in-isr": "violated"}
    expected_why = {**TlaKafkaReplication.expected_why,
                    "strong-isr": ("unfenced: a follower that applied a stale LeaderAndIsr still counts towards "
                                   "the HW, then truncates against a replica that does not lead (KIP-320)"),
                    "weak-isr": "the same unfenced truncation, by a member of the leader's own ISR"}

    def first_non_matching_offset_from_tail(self, s, leader, follower):
        """FirstNonMatchingOffsetFromTail(leader, follower).

        0 when the leader's log is empty or no offset matches; otherwise one more
        than the largest offset where the follower's record is also the leader's
        (MatchingOffsets(follower, leader)).
        """
        matching = self.offsets_max([self.same_entry(s, follower, leader, o) for o in self.OFFSETS])
        return where(self.is_empty(s, leader) | (matching < 0), 0, matching + 1)

    @action(l="REPLICAS", r="REPLICAS", e="EPOCHS")
    def become_follower_truncate_kip279(self, s, l, r, e):
        """BecomeFollowerTruncateKip279: replica r applies the LeaderAndIsr request of epoch e naming leader l
        and truncates to FirstNonMatchingOffsetFromTail(l, r) (0 for an empty log, which is the same).

        This closes KIP-101's hole with consecutive fast leader changes. As in
        BecomeFollowerAndTruncateTo, the request's epoch must be newer than r's.
        """
        s.require(l != r)
        truncation_offset = where(self.is_empty(s, r), 0, self.first_non_matching_offset_from_tail(s, l, r))
        s.require(self.become_follower_guard(s, l, r, e, truncation_offset))
        self.become_follower_and_truncate_to(s, l, r, e, truncation_offset)
