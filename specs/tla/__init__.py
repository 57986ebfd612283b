"""Ports of Jason Gustafson's TLA+ specs of Kafka replication (hachikuji/kafka-specification).

A second spec family beside ``specs/``' own model: the TLA+ variables, initial
state, actions and nondeterminism reproduced exactly, so that the distinct states
and depths of a complete search equal TLC's at the same constants. Its versions are
registered with the others in ``isrcheck.specs.BUILT_IN`` (names ``tla-*``);
``TLA_SPECS`` is this family's part of the registry.
"""
from isrcheck.specs import BUILT_IN, SPECS

TLA_SPECS = {name: SPECS[name] for name in BUILT_IN if name.startswith("tla-")}

__all__ = ["TLA_SPECS"]
