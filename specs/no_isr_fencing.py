"""KIP-320 without the zkVersion fence on ISR writes: a zombie leader shrinks the ISR to itself."""
from isrcheck.model.kafka import KafkaReplication
from isrcheck.specs.kip_320 import Kip320
from isrcheck.specs.kip_320_lemmas import LEMMAS
from isrcheck.specs.progress import FAIRNESS


class NoIsrFencing(Kip320):
    name = "no-isr-fencing"
    dropped_invariants = LEMMAS      # kip-320's proof lemmas are about kip-320's protocol
    summary = ("Kafka 2.1 (KIP-320) with one fence removed: a leader's ISR update is an unconditional "
               "ZooKeeper write, so a deposed leader that has not yet applied its LeaderAndIsr can shrink "
               "the ISR to itself and commit records alone.")
    missing_fence = ("The leader's ISR write is not conditional on its cached zkVersion; Kafka writes the ISR "
                     "with a conditional ZooKeeper setData on that version (the partition epoch in AlterPartition "
                     "since KIP-497), so a deposed leader's write fails.")
    references = ("KAFKA-1382 (ISR update must be conditional on the zkVersion; stale cached zkVersion)",
                  "KIP-497 (AlterIsr, partition epoch)", "KIP-320")
    defaults = {**Kip320.defaults, "max_epochs": 2}
    expected_liveness = {"isr-regrows": "holds", "hw-advances": "violated", "write-resolves": "violated",
                         "acked-fully-replicated": "violated"}
    expected_liveness_why = {
        "write-resolves": "the same emptied ISR: the HW never passes the new leader's record, so its acks=all "
                          "request waits for its timeout. " + FAIRNESS,
        "acked-fully-replicated": "the deposed leader acknowledges a record alone and the acting leader's unfenced "
                                  "ISR write removes it from the ISR; the record is on no live ISR member and none "
                                  "can fetch it any more. " + FAIRNESS,
        "hw-advances": "the missing fence itself: a stale shrink_isr of the deposed leader empties the new leader's "
                       "ISR (the leader is no member of it), so no HW advance ever covers its new record (9-state "
                       "lasso). Fairness: weak fetch, apply_leader_and_isr, truncate_by_epoch, alter_isr"}
    expected = {**KafkaReplication.expected,
                "no-committed-loss": "violated", "log-matching": "holds", "consistent-reads": "violated",
                "hw-monotonic": "violated", "single-leader-per-epoch": "holds", "leader-in-isr": "violated",
                "strong-isr": "violated", "no-committed-loss-anywhere": "violated", "hw-log-matching": "violated", "strong-live-isr": "violated"}
    expected_why = {**KafkaReplication.expected_why,
        "no-committed-loss": "KAFKA-1382: the deposed leader appends a record, shrinks the ISR to itself (its write "
                             "is not fenced) and acknowledges it alone; the new leader never had it (kip-320, "
                             "KIP-320 with the fence, holds at these bounds)",
        "consistent-reads": "old and new leader each shrink the ISR to themselves and expose different records "
                            "at the same offset",
        "hw-monotonic": "the deposed leader's HW exposes a record the acting leader's log does not reach",
        "leader-in-isr": "the deposed leader's ISR write removes the acting leader from the ISR in ZooKeeper "
                         "(fenced by the zkVersion in Kafka, by the partition epoch since KIP-497)",
        "no-committed-loss-anywhere": "the deposed leader acknowledges a record alone, then the acting leader's "
                                      "ISR write removes it from the ISR: no electable replica holds the record",
        "hw-log-matching": "the acting leader shrinks the ISR to nothing and its HW passes an offset where the "
                           "deposed leader committed a different record",
        "strong-live-isr": "as strong-isr: the ISR member is live",
        "strong-isr": "the deposed leader overwrites the ISR with itself, a member lacking the acting leader's "
                      "committed record",
    }

    def isr_write_succeeds(self, s, l):
        """The missing fence: the write goes through whatever zkVersion the leader cached."""
        return True
