"""Protocol versions: one module each, registered by name."""
from isrcheck.specs.hw_truncation import HwTruncation
from isrcheck.specs.kafka_0_8_2 import Kafka082
from isrcheck.specs.kafka_0_9 import Kafka09
from isrcheck.specs.kafka_0_10_2 import Kafka0102
from isrcheck.specs.kip_101 import Kip101
from isrcheck.specs.kip_279 import Kip279
from isrcheck.specs.kafka_2_0_1 import Kafka201
from isrcheck.specs.kip_320 import Kip320
from isrcheck.specs.kafka_2_6_1 import Kafka261
from isrcheck.specs.no_reassignment_bump import NoReassignmentBump
from isrcheck.specs.no_isr_fencing import NoIsrFencing
from isrcheck.specs.zombie_controller import ZombieController
from isrcheck.specs.acks_1 import Acks1
from isrcheck.specs.unclean_election import UncleanElection
from isrcheck.specs.kafka_7128 import Kafka7128
from isrcheck.specs.kafka_1120 import Kafka1120
from isrcheck.specs.async_isr import AsyncIsr, Kip497
from isrcheck.specs.last_replica_standing import LastReplicaStanding
from isrcheck.specs.kip_966 import Kip966
from isrcheck.specs.kafka_3_5 import Kafka35
from isrcheck.specs.kafka_3_9 import Kafka39, Kafka39KeepPending
from isrcheck.specs.kafka_4_0 import Kafka40, Kafka40KeepPending
from isrcheck.specs.kafka_19522 import Kafka19522
from isrcheck.specs.kafka_13141 import Kafka13141
from isrcheck.specs.kafka_14704 import Kafka14704
from isrcheck.specs.kafka_14617 import Kafka14617
from isrcheck.specs.tla import TLA_SPECS

SPECS = {cls.name: cls for cls in (HwTruncation, Kafka082, Kafka09, Kafka0102, Kip101, Kip279, Kafka201, Kip320, Kafka261,
                                   NoReassignmentBump, NoIsrFencing, ZombieController, Acks1, UncleanElection, Kafka7128, Kafka1120,
                                   AsyncIsr, Kip497, LastReplicaStanding, Kip966,
                                   Kafka35, Kafka39, Kafka39KeepPending, Kafka40, Kafka40KeepPending, Kafka19522,
                                   Kafka13141, Kafka14704, Kafka14617)}
SPECS.update(TLA_SPECS)      # the port of the public TLA+ specs (tla-*), a second spec family

