"""Protocol versions: one module each, registered by name."""
from specs.hw_truncation import HwTruncation
from specs.kip_101 import Kip101
from specs.kip_279 import Kip279
from specs.kip_320 import Kip320
from specs.no_isr_fencing import NoIsrFencing
from specs.zombie_controller import ZombieController
from specs.acks_1 import Acks1
from specs.unclean_election import UncleanElection
from specs.kafka_7128 import Kafka7128
from specs.async_isr import AsyncIsr, Kip497
from specs.last_replica_standing import LastReplicaStanding
from specs.kip_966 import Kip966
from specs.tla import TLA_SPECS

SPECS = {cls.name: cls for cls in (HwTruncation, Kip101, Kip279, Kip320,
                                   NoIsrFencing, ZombieController, Acks1, UncleanElection, Kafka7128,
                                   AsyncIsr, Kip497, LastReplicaStanding, Kip966)}
SPECS.update(TLA_SPECS)      # the port of the public TLA+ specs (tla-*), a second spec family

