"""Protocol versions: one module each, registered by name.

``SPECS`` maps each name to its class and imports a version's module only when that name is first looked
up: a check of one version loads that version's family alone (every family at once is about 35 ms of a
command's start). The command line's bound flags (``--max-epochs``) are listed in ``BOUND_FLAGS`` for the
same reason, so that ``isrcheck check --help`` and the parsing of a command need no family loaded;
tests/test_spec_registry.py checks that both tables say what the classes declare.
"""
from __future__ import annotations

import importlib
from collections.abc import MutableMapping

#: name -> "module:Class" under isrcheck.specs, in the order ``isrcheck list`` shows them
BUILT_IN = {
    "hw-truncation": "hw_truncation:HwTruncation",
    "kafka-0.8.2": "kafka_0_8_2:Kafka082",
    "kafka-0.9": "kafka_0_9:Kafka09",
    "kafka-0.10.2": "kafka_0_10_2:Kafka0102",
    "kip-101": "kip_101:Kip101",
    "kip-279": "kip_279:Kip279",
    "kafka-2.0.1": "kafka_2_0_1:Kafka201",
    "kip-320": "kip_320:Kip320",
    "kafka-2.6.1": "kafka_2_6_1:Kafka261",
    "no-reassignment-bump": "no_reassignment_bump:NoReassignmentBump",
    "no-isr-fencing": "no_isr_fencing:NoIsrFencing",
    "zombie-controller": "zombie_controller:ZombieController",
    "acks-1": "acks_1:Acks1",
    "unclean-election": "unclean_election:UncleanElection",
    "kafka-7128": "kafka_7128:Kafka7128",
    "kafka-1120": "kafka_1120:Kafka1120",
    "async-isr": "async_isr:AsyncIsr",
    "kip-497": "async_isr:Kip497",
    "last-replica-standing": "last_replica_standing:LastReplicaStanding",
    "kip-966": "kip_966:Kip966",
    "kafka-3.5": "kafka_3_5:Kafka35",
    "kafka-3.9": "kafka_3_9:Kafka39",
    "kafka-3.9-keep-pending": "kafka_3_9:Kafka39KeepPending",
    "kafka-4.0": "kafka_4_0:Kafka40",
    "kafka-4.0-keep-pending": "kafka_4_0:Kafka40KeepPending",
    "kafka-19522": "kafka_19522:Kafka19522",
    "kafka-13141": "kafka_13141:Kafka13141",
    "kafka-14704": "kafka_14704:Kafka14704",
    "kafka-14617": "kafka_14617:Kafka14617",
    # the port of the public TLA+ specs (tla-*), a second spec family
    "tla-truncate-to-hw": "tla.truncate_to_hw:TlaTruncateToHighWatermark",
    "tla-kip101": "tla.kip101:TlaKip101",
    "tla-kip279": "tla.kip279:TlaKip279",
    "tla-kip320-first-try": "tla.kip320_first_try:TlaKip320FirstTry",
    "tla-kip320": "tla.kip320:TlaKip320",
}

#: the bounds with a flag of their own on the command line (``--max-epochs``; every other bound or option is
#: given with ``--set``), with their help: each ``kind="bound"`` declaration of the families above, in the
#: order they declare them, with the doc of the first family declaring it
BOUND_FLAGS = {
    "replicas": "replicas of the partition (brokers)",
    "log_size": "offsets each replica's log can hold",
    "max_records": "records the producers may append, in all",
    "max_epochs": "leader epochs the controller may start",
    "max_crashes": "broker crashes and clean shutdowns, in all",
    "reassignments": "partition reassignments the admin starts, one after the other (AlterPartitionReassignments, "
                     "KIP-455; 0: the replica set never changes)",
    "metadata_lag": "partition records a live broker's metadata image may be behind the controller's (the "
                    "controller waits for the slowest live broker beyond that)",
}
#: the first switch the families declare (an option from 0, off by default), as ``--set``'s example
SWITCH_EXAMPLE = ("unclean", 1)


class Registry(MutableMapping):
    """name -> Spec class; a built-in version's module is imported when its name is first looked up. Names
    set here (a test's own class) come after the built-in ones."""

    def __init__(self, where):
        self._where = dict(where)       # name -> "module:Class", or None for a class set here
        self._classes = {}

    def __getitem__(self, name):
        cls = self._classes.get(name)
        if cls is None:
            module, _, attr = self._where[name].partition(":")
            cls = self._classes[name] = getattr(importlib.import_module(f"{__name__}.{module}"), attr)
        return cls

    def __setitem__(self, name, cls):
        self._where.setdefault(name, None)
        self._classes[name] = cls

    def __delitem__(self, name):
        del self._where[name]
        self._classes.pop(name, None)

    def __iter__(self):
        return iter(self._where)

    def __len__(self):
        return len(self._where)

    def __contains__(self, name):
        return name in self._where

    def __repr__(self):
        return f"Registry({list(self._where)})"


SPECS = Registry(BUILT_IN)
