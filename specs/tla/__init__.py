"""Ports of Jason Gustafson's TLA+ specs of Kafka replication (hachikuji/kafka-specification).

A second spec family beside ``specs/``' own model: the TLA+ variables, initial
state, actions and nondeterminism reproduced exactly, so that the distinct states
and depths of a complete search equal TLC's at the same constants.
"""
from isrcheck.specs.tla.kip101 import TlaKip101
from isrcheck.specs.tla.kip279 import TlaKip279
from isrcheck.specs.tla.kip320 import TlaKip320
from isrcheck.specs.tla.kip320_first_try import TlaKip320FirstTry
from isrcheck.specs.tla.truncate_to_hw import TlaTruncateToHighWatermark

TLA_SPECS = {cls.name: cls for cls in (TlaTruncateToHighWatermark, TlaKip101, TlaKip279,
                                       TlaKip320FirstTry, TlaKip320)}

__all__ = ["TLA_SPECS", "TlaTruncateToHighWatermark", "TlaKip101", "TlaKip279", "TlaKip320FirstTry",
           "TlaKip320"]
