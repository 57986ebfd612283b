"""KIP-320's fetch fencing with kip-279's ISR-join rule: KAFKA-7128."""
from isrcheck.model.kafka import KafkaReplication
from isrcheck.specs.kip_279 import KAFKA_7128_BOUNDS
from isrcheck.specs.kip_320 import Kip320
from isrcheck.specs.kip_320_lemmas import LEMMAS


class Kafka7128(Kip320):
    name = "kafka-7128"
    dropped_invariants = LEMMAS      # kip-320's proof lemmas are about kip-320's protocol
    summary = ("Kafka 2.1's fenced fetches (KIP-320) with the ISR-join rule of 2.0 and before: a follower "
               "rejoins the ISR once its fetch offset reaches the leader's HW, which lags after a leader "
               "change, so it can join before it holds every committed record.")
    missing_fence = ("A follower rejoins the ISR once its LEO reaches the leader's (lagging) HW; since KAFKA-7128 "
                     "Kafka also requires it to reach the start offset of the leader's current epoch, past every "
                     "record committed in earlier epochs.")
    references = ("KAFKA-7128 (lagging high watermark can lead to committed data loss after ISR expansion)",
                  "KIP-320")
    defaults = {**Kip320.defaults, **KAFKA_7128_BOUNDS}
    #: liveness not part of the gate: all four hold at the defaults, but the check takes 2 minutes (3.9M states)
    expected_liveness = dict.fromkeys(("eventually-leader", "hw-advances", "isr-regrows", "truncation-terminates",
                                       "write-resolves", "acked-fully-replicated", "metadata-converges", "reassignment-completes"))
    expected = {**KafkaReplication.expected,
                "no-committed-loss": "violated", "log-matching": "holds", "consistent-reads": "holds",
                "hw-monotonic": "violated", "single-leader-per-epoch": "holds", "leader-in-isr": "holds",
                "strong-isr": "violated", "no-committed-loss-anywhere": "violated", "hw-log-matching": "holds", "strong-live-isr": "violated"}
    expected_why = {**KafkaReplication.expected_why,
        "no-committed-loss": "KAFKA-7128: a new leader with a lagging HW adds a follower whose fetch offset "
                             "reached that HW; the response is lost, the follower is elected without the "
                             "committed record (kip-320 holds at these bounds)",
        "hw-monotonic": "the same election leaves the leader's log below the committed HW",
        "strong-isr": "the follower joins the ISR without the committed record",
        "strong-live-isr": "the same: the follower is live",
        "no-committed-loss-anywhere": "the same election; the new leader then shrinks the ISR to itself, without "
                                      "the record",
    }

    def may_join_isr(self, s, l, f):
        """2.0 and before: caught up to the leader's HW is enough."""
        return KafkaReplication.may_join_isr(self, s, l, f)
