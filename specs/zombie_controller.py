"""KIP-320 with a controller failover and brokers that ignore the controller epoch."""
from isrcheck.model.kafka import KafkaReplication
from isrcheck.specs.kip_320 import Kip320
from isrcheck.specs.kip_320_lemmas import LEMMAS


class ZombieController(Kip320):
    name = "zombie-controller"
    dropped_invariants = LEMMAS      # kip-320's proof lemmas are about kip-320's protocol
    summary = ("Kafka 2.1 (KIP-320) with one controller failover: the deposed controller's in-flight "
               "LeaderAndIsr names a leader for the next leader epoch, while the new controller elects "
               "another for the same epoch; brokers do not check the controller epoch, so both apply.")
    missing_fence = ("Brokers do not check the controller epoch a LeaderAndIsr carries; Kafka rejects requests "
                     "from a controller epoch older than the newest it has seen (STALE_CONTROLLER_EPOCH), and "
                     "since KAFKA-6082 also fences a zombie controller's ZooKeeper writes.")
    references = ("KAFKA-1188 (stale LeaderAndIsr from the old controller applied on controller failover)",
                  "KAFKA-6082 (fence a zombie controller's ZooKeeper writes by the controller epoch)")
    defaults = {**Kip320.defaults, "controller_failover": 1, "max_epochs": 2}
    #: liveness not triaged: all four are violated at the defaults, by lassos through the deposed controller's
    #: stale LeaderAndIsr (apply_stale_leader_and_isr), whose reasons are not written down yet
    expected_liveness = dict.fromkeys(("eventually-leader", "hw-advances", "isr-regrows", "truncation-terminates",
                                       "write-resolves", "acked-fully-replicated", "metadata-converges", "reassignment-completes"))
    not_modelled = {"KAFKA-6082": "the deposed controller's ZooKeeper write dies with its session and the model has "
                                  "no other: the zombie ZooKeeper writes KAFKA-6082 fences do not occur "
                                  "(model/kafka.py controller_failover)"}
    expected = {**KafkaReplication.expected,
                "no-committed-loss": "violated", "log-matching": "violated", "consistent-reads": "violated",
                "hw-monotonic": "violated", "single-leader-per-epoch": "violated", "leader-in-isr": "holds",
                "strong-isr": "violated", "no-committed-loss-anywhere": "violated", "hw-log-matching": "violated", "strong-live-isr": "violated"}
    expected_why = {**KafkaReplication.expected_why,
        "single-leader-per-epoch": "KAFKA-1188: one broker applies the new controller's LeaderAndIsr, another the "
                                   "deposed controller's for the same leader epoch; both lead it",
        "log-matching": "the two leaders of one epoch append different records at the same offset",
        "no-committed-loss": "the zombie's leader acknowledges a record with the ISR the zombie sent; the leader in "
                             "ZooKeeper never had it",
        "consistent-reads": "the two leaders expose different records at the same offset",
        "hw-monotonic": "the leader in ZooKeeper does not reach the offset the zombie's leader exposed",
        "no-committed-loss-anywhere": "the zombie's leader acknowledges a record, then applies the new controller's "
                                      "LeaderAndIsr and truncates it: no electable replica holds it",
        "hw-log-matching": "the two leaders of one epoch commit different records at the same offset",
        "strong-live-isr": "as strong-isr: the ISR member is live",
        "strong-isr": "the zombie's leader commits a record that the ISR in ZooKeeper does not hold",
    }

    def controller_epoch_accepted(self, s, r, controller_epoch):
        """The missing fence: any controller epoch is accepted."""
        return True
