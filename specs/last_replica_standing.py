"""The last ISR member loses its unflushed tail in a hard crash and is re-elected (KIP-966)."""
from isrcheck.model.kafka import KafkaReplication
from isrcheck.specs.kip_320 import Kip320
from isrcheck.specs.kip_320_lemmas import LEMMAS
from isrcheck.specs.progress import record_lost

#: the acknowledged record that acked-fully-replicated finds lost at the defaults
LOST = record_lost("the last ISR member's hard crash loses its unflushed tail, acknowledged record included, and "
                   "it is elected again")


class LastReplicaStanding(Kip320):
    name = "last-replica-standing"
    dropped_invariants = LEMMAS      # kip-320's proof lemmas are about kip-320's protocol
    summary = ("Kafka 2.1+ (KIP-320) with min.insync.replicas=2 and hard crashes that lose the unflushed log "
               "tail: once the ISR has shrunk to the leader alone, a crash of that leader loses records "
               "committed while the ISR was full, and the controller re-elects it as the last ISR member.")
    missing_fence = ("A replica that lost data in an unclean shutdown stays electable as the last ISR member; "
                     "KIP-966 lets the ISR become empty, keeps replicas that left it below min.insync.replicas "
                     "as eligible leader replicas (ELR), and makes an uncleanly shut down replica ineligible.")
    references = ("KIP-966 (Eligible Leader Replicas: the \"last replica standing\" problem)",
                  "KIP-380 (the controller detects a bounced broker)")
    restart_noticed = True      # KIP-380: the scenario needs the bounce noticed (re-election, not a fast bounce)
    # as in 3.x, where KIP-966 found the problem: the HW kept within the log (2.4+), KAFKA-10706 fixed (2.6.1+)
    truncation_clamps_hw = True
    truncation_cleans_epoch_cache = True
    defaults = {**Kip320.defaults, "min_isr": 2, "unflushed_loss": 1, "max_epochs": 3}
    #: liveness at the defaults: all four hold (measured; kip-320's truncation loop does not show at these bounds)
    expected_liveness = {"hw-advances": "holds", "isr-regrows": "holds", **LOST[0]}
    expected_liveness_why = LOST[1]
    expected = {**KafkaReplication.expected,
                "no-committed-loss": "violated", "log-matching": "holds", "consistent-reads": "violated",
                "hw-monotonic": "violated", "single-leader-per-epoch": "holds", "leader-in-isr": "holds",
                "strong-isr": "violated", "no-committed-loss-anywhere": "violated", "hw-log-matching": "holds", "strong-live-isr": "holds"}
    expected_why = {**KafkaReplication.expected_why,
        "no-committed-loss": "KIP-966: a record committed by the full ISR, the ISR shrinks to the leader, a hard "
                             "crash loses its unflushed tail and it is re-elected as the last ISR member",
        "hw-monotonic": "with the ISR below min.insync.replicas the leader's HW still exposes a record, which "
                        "the leader loses in a hard crash before it is re-elected",
        "consistent-reads": "the re-elected leader writes a different record at an offset consumers read",
        "no-committed-loss-anywhere": "the same: the last ISR member's hard crash loses the record everywhere "
                                      "it can be elected from",
        "strong-isr": "a follower's hard crash loses committed records it keeps in the ISR until the "
                      "controller notices (since KIP-380 before it registers again)",
    }
