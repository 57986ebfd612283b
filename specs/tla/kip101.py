"""Kip101.tla: KIP-101, truncation by the leader epoch of the follower's last record."""
from isrcheck.model.expr import where
from isrcheck.model.spec import action
from isrcheck.specs.tla.base import TlaKafkaReplication


class TlaKip101(TlaKafkaReplication):
    name = "tla-kip101"
    summary = ("Port of Kip101.tla (hachikuji/kafka-specification): a replica becoming follower truncates "
               "to the leader's end offset for the epoch of its own last record (the start of the first "
               "larger epoch, or the leader's end offset when the epochs match), falling back to its own "
               "high watermark. LeaderInIsr is kept as the TLA+ has it, so it is false in the initial "
               "state, where the quorum leader is None.")
    references = TlaKafkaReplication.references + ("Kip101.tla", "KIP-101")
    expected = {"type-ok": "holds", "weak-isr": "violated", "strong-isr": "violated",
                "leader-in-isr": "violated"}
    expected_why = {**TlaKafkaReplication.expected_why,
                    "strong-isr": ("unfenced: a follower that applied a stale LeaderAndIsr still counts towards "
                                   "the HW, then truncates against a replica that does not lead (KIP-320)"),
                    "weak-isr": "the same unfenced truncation, by a member of the leader's own ISR"}

    def offsets_with_larger_epochs_min(self, s, leader, epoch):
        """Min(OffsetsWithLargerEpochs(leader, epoch)) (LogSize where the set is empty)."""
        return self.offsets_min([self.has_offset(s, leader, o) & (s.log_epoch[leader][o] > epoch)
                                 for o in self.OFFSETS])

    def lookup_offset_for_epoch(self, s, leader, follower, epoch):
        """LookupOffsetForEpoch(leader, follower, epoch).

        The follower's hw when the leader's log is empty; the leader's end offset
        when its last record has that epoch; otherwise the first leader offset with
        a larger epoch, or the follower's hw when there is none.
        """
        larger = self.offsets_with_larger_epochs_min(s, leader, epoch)
        return where(self.is_empty(s, leader), s.hw[follower],
                     where(self.latest_epoch(s, leader) == epoch, s.log_end_offset[leader],
                           where(larger == self.L, s.hw[follower], larger)))

    @action(l="REPLICAS", r="REPLICAS", e="EPOCHS")
    def become_follower_truncate_kip101(self, s, l, r, e):
        """BecomeFollowerTruncateKip101: replica r applies the LeaderAndIsr request of epoch e naming leader l
        and truncates to 0 if its log is empty, else to LookupOffsetForEpoch(l, r, epoch of its last record).

        With KIP-101 the leader epoch in the records gives a more accurate truncation
        point than the follower's hw. As in BecomeFollowerAndTruncateTo, the request's
        epoch must be newer than r's, and the point must not be past r's end offset.
        """
        s.require(l != r)
        truncation_offset = where(self.is_empty(s, r), 0,
                                  self.lookup_offset_for_epoch(s, l, r, self.latest_epoch(s, r)))
        s.require(self.become_follower_guard(s, l, r, e, truncation_offset))
        self.become_follower_and_truncate_to(s, l, r, e, truncation_offset)
