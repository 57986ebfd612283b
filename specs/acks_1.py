"""KIP-320 with producers on acks=1: a record is acknowledged as soon as the leader appends it."""
from isrcheck.model.kafka import KafkaReplication
from isrcheck.specs.kip_320 import Kip320
from isrcheck.specs.kip_320_lemmas import LEMMAS
from isrcheck.specs.progress import record_lost

#: the acknowledged record that acked-fully-replicated finds lost at the defaults
LOST = record_lost("by design with acks=1: the leader acknowledges a record on its own append and crashes, and the "
                   "follower elected never had it")


class Acks1(Kip320):
    name = "acks-1"
    dropped_invariants = LEMMAS      # kip-320's proof lemmas are about kip-320's protocol
    summary = ("Kafka 2.1 (KIP-320) with acks=1 producers: the leader acknowledges a record on its own "
               "append, before any follower has it; a failover to a follower loses it (by design).")
    missing_fence = ("The acknowledgement does not wait for the ISR; Kafka's acks=all waits until the HW passes "
                     "the record, i.e. every ISR member (at least min.insync.replicas) has it.")
    references = ("Kafka producer config acks (acks=1 documented to lose records on leader failure)",
                  "KIP-679 (acks=all default since 3.0)")
    defaults = {**Kip320.defaults, "acks_all": 0, "max_epochs": 2}
    #: liveness at the defaults (max_epochs=2 leaves no room for kip-320's truncation loop): all four hold
    expected_liveness = {"hw-advances": "holds", "isr-regrows": "holds", **LOST[0]}
    expected_liveness_why = LOST[1]
    expected = {**KafkaReplication.expected,
                "no-committed-loss": "violated", "log-matching": "holds", "consistent-reads": "holds",
                "hw-monotonic": "holds", "single-leader-per-epoch": "holds", "leader-in-isr": "holds",
                "strong-isr": "holds", "no-committed-loss-anywhere": "violated", "hw-log-matching": "holds", "strong-live-isr": "holds"}
    expected_why = {**KafkaReplication.expected_why,
        "no-committed-loss": "by design: the leader acknowledges a record it alone has and the controller elects "
                             "the follower, which truncates nothing but never had it (acks=all, the default since "
                             "3.0 by KIP-679, waits for the ISR: kip-320 holds at these bounds)",
        "no-committed-loss-anywhere": "the same: the leader crashes right after acknowledging, and the ISR member "
                                      "elected never had the record",
    }
