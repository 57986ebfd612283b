"""KIP-320 with unclean leader election enabled."""
from isrcheck.model.kafka import KafkaReplication
from isrcheck.specs.kip_320 import Kip320
from isrcheck.specs.kip_320_lemmas import LEMMAS
from isrcheck.specs.progress import record_lost

#: the acknowledged record that acked-fully-replicated finds lost at the defaults
LOST = record_lost("the unclean leader replaces the ISR with itself, without the acknowledged record")


class UncleanElection(Kip320):
    name = "unclean-election"
    dropped_invariants = LEMMAS      # kip-320's proof lemmas are about kip-320's protocol
    summary = ("Kafka 2.1 (KIP-320) with unclean.leader.election.enable=true: when no ISR member is alive "
               "the controller elects any live replica, which may lack committed records (by design).")
    missing_fence = ("Election is not restricted to the ISR; Kafka elects only ISR members unless "
                     "unclean.leader.election.enable is set (off by default since 0.11, KIP-106).")
    references = ("KIP-106 (unclean.leader.election.enable defaults to false)",
                  "KAFKA-3163 (unclean election loses committed data)")
    defaults = {**Kip320.defaults, "unclean": 1, "max_epochs": 2}
    #: liveness at the defaults (max_epochs=2 leaves no room for kip-320's truncation loop): all four hold
    expected_liveness = {"hw-advances": "holds", "isr-regrows": "holds", **LOST[0]}
    expected_liveness_why = LOST[1]
    expected = {**KafkaReplication.expected,
                "no-committed-loss": "violated", "log-matching": "holds", "consistent-reads": "violated",
                "hw-monotonic": "violated", "single-leader-per-epoch": "holds", "leader-in-isr": "holds",
                "strong-isr": "holds", "no-committed-loss-anywhere": "violated", "hw-log-matching": "violated", "strong-live-isr": "holds"}
    expected_why = {**KafkaReplication.expected_why,
        "no-committed-loss": "by design (KIP-106, KAFKA-3163): the ISR shrinks to the leader, which commits a record "
                             "and dies; the out-of-sync follower is elected without it",
        "consistent-reads": "the unclean leader writes a different record at an offset consumers already read",
        "hw-monotonic": "the unclean leader's log ends below the committed HW",
        "no-committed-loss-anywhere": "the same: the unclean leader replaces the ISR with itself, without the record",
        "hw-log-matching": "the old leader stopped with the committed record below its HW; the unclean leader "
                           "commits a different one at that offset",
    }
