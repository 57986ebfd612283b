"""AlterIsr (Kafka 2.7): ISR changes go to the controller asynchronously; and KIP-497's maximal ISR."""
from isrcheck.model.configuration import Configuration
from isrcheck.model.kafka import KafkaReplication
from isrcheck.specs.kip_320 import Kip320
from isrcheck.specs.kip_320_lemmas import LEMMAS
from isrcheck.specs.progress import FAIRNESS, HOLDS, record_lost

#: one reassignment moves the partition to the other broker, with the leader epochs its three steps take (start,
#: the leader's move, the removed replica leaving the ISR) after an election
ONE_MOVE = {"reassignments": 1, "max_epochs": 4}

#: the acknowledged record that acked-fully-replicated finds lost at the defaults
LOST = record_lost("KAFKA-10432: the leader acknowledges a record on its old ISR while an expansion is pending, the "
                   "follower that never had it joins the ISR and is elected, and the leader crashes")


class AsyncIsr(Kip320):
    name = "async-isr"
    dropped_invariants = LEMMAS      # kip-320's proof lemmas are about kip-320's protocol
    summary = ("Kafka 2.1 (KIP-320) with ISR changes sent to the controller as AlterIsr requests (2.7): "
               "while an expansion is in flight the leader keeps raising its HW over its old ISR, so the "
               "controller can commit an ISR member that lacks records acknowledged meanwhile.")
    missing_fence = ("The leader raises its HW over its committed ISR while an expansion is pending; KIP-497 "
                     "computes it over the maximal ISR (current ISR plus pending additions), so nothing is "
                     "acknowledged that a replica about to join the ISR lacks.")
    references = ("KIP-497 (AlterIsr; maximal ISR for the HW while a change is pending)",
                  "KAFKA-8836 (AlterIsr in the broker)", "KAFKA-10432 (leader HW with pending ISR expansion)")
    restart_noticed = True      # 2.7 has KIP-380 (2.2): the controller notices every bounce
    truncation_clamps_hw = True     # 2.7 keeps the HW in Log (2.4+): truncation brings it down to the new LEO
    truncation_cleans_epoch_cache = True    # 2.7.0 has KAFKA-10706's fix (Log.truncateTo, apache/kafka#9633)
    stop_replica_completes_produce = True   # ReplicaManager.stopReplicas (2.4+, KAFKA-9198)
    defaults = {**Kip320.defaults, "async_isr": 1, "max_epochs": 2}
    #: liveness at the defaults (max_epochs=2 leaves no room for kip-320's truncation loop): all four hold
    expected_liveness = {"hw-advances": "holds", "isr-regrows": "holds", **LOST[0]}
    expected_liveness_why = LOST[1]
    expected = {**KafkaReplication.expected,
                "no-committed-loss": "violated", "log-matching": "holds", "consistent-reads": "violated",
                "hw-monotonic": "violated", "single-leader-per-epoch": "holds", "leader-in-isr": "holds",
                "strong-isr": "violated", "no-committed-loss-anywhere": "violated", "hw-log-matching": "violated", "strong-live-isr": "violated"}
    expected_why = {**KafkaReplication.expected_why,
        "no-committed-loss": "the leader, alone in its ISR, proposes adding a caught-up follower, acknowledges a "
                             "new record on its old ISR, then the controller commits the follower, which is "
                             "elected without the record (KAFKA-10432; kip-497, KIP-497's AlterIsr as built in "
                             "KAFKA-8836, holds)",
        "consistent-reads": "the elected follower writes a different record at the exposed offset",
        "hw-monotonic": "the elected follower's log ends below the committed HW",
        "strong-isr": "the controller commits an ISR member that lacks a record below the leader's HW",
        "strong-live-isr": "the same: that member is live",
        "no-committed-loss-anywhere": "the same: the leader crashes and the elected follower, which never had the "
                                      "record, takes the ISR alone",
        "hw-log-matching": "the leader stops with the record below its HW; the elected follower commits a different "
                           "one at that offset",
    }


class Kip497(AsyncIsr):
    name = "kip-497"
    summary = ("Kafka 2.7 (KIP-497): ISR changes are AlterIsr requests the controller commits "
               "asynchronously, and while one is pending the leader computes its HW over the maximal ISR "
               "(its ISR plus any replica it proposed to add).")
    missing_fence = None
    references = ("KIP-497", "KAFKA-8836")
    expected = {**AsyncIsr.expected, "no-committed-loss": "holds", "consistent-reads": "holds",
                "hw-monotonic": "holds", "strong-isr": "holds", "no-committed-loss-anywhere": "holds",
                "hw-log-matching": "holds", "strong-live-isr": "holds"}
    expected_why = {"single-acting-leader": AsyncIsr.expected_why["single-acting-leader"],
                    "no-committed-loss": "KAFKA-8836 computes the HW over the maximal ISR while an AlterIsr is "
                                         "pending (async-isr loses a committed record at these bounds)"}
    configurations = {
        "reassignment": Configuration(
            bounds=ONE_MOVE,
            expected={name: "holds" for name in ("no-committed-loss", "no-committed-loss-anywhere", "log-matching",
                                                 "hw-log-matching", "consistent-reads", "strong-isr")},
            liveness={name: "holds" for name in ("eventually-leader", "hw-advances", "isr-regrows", "write-resolves",
                                                 "acked-fully-replicated", "reassignment-completes")},
            why={"reassignment-completes": "the new replica joins the ISR through AlterIsr and the controller "
                                           "completes the reassignment from AlterIsr's answer "
                                           "(maybeCompleteReassignment, 2.7); the removed replica is out of the ISR "
                                           "before its log is deleted. " + FAIRNESS + ", strong "
                                           "complete_reassignment"}),
        "kafka-1120": Configuration(
            bounds={"unflushed_loss": 1, "max_crashes": 2, "max_epochs": 2}, expected={"log-matching": "holds"},
            why={"log-matching": "KAFKA-1120 fixed by KIP-380 (2.2): a bounced broker has a new broker epoch and the "
                                 "controller handles the bounce, so a leader never re-applies its own epoch after "
                                 "losing records (kip-320 diverges at these bounds)"}),
    }
    expected_liveness = {"eventually-leader": "holds", "hw-advances": "holds", "isr-regrows": "holds",
                         "truncation-terminates": "holds", **HOLDS}
    expected_liveness_why = {"acked-fully-replicated": "KAFKA-8836's maximal ISR: no acknowledged record is lost "
                                                       "(async-isr loses one at these bounds)"}

    def hw_isr_member(self, s, l, i):
        """KIP-497: the maximal ISR: the current ISR plus replicas a pending AlterIsr adds."""
        return s.isr[l][i] | (s.alter_pending[l] & s.pending_isr[l][i])
