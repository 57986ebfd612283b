"""What the ZooKeeper-era versions expect of the progress properties (model/kafka.py: write-resolves,
acked-fully-replicated, metadata-converges, reassignment-completes), and the words their reasons share."""

#: the fairness they assume, as their reasons state it
FAIRNESS = ("Fairness: weak fetch, apply_leader_and_isr, truncate_by_epoch, alter_isr, controller_shrink_isr, "
            "apply_stop_replica (each instance)")

#: a version that loses no acknowledged record and leaves no request to its timeout
HOLDS = {"write-resolves": "holds", "acked-fully-replicated": "holds", "metadata-converges": "holds",
         "reassignment-completes": "holds"}


def record_lost(how):
    """(expected_liveness, expected_liveness_why) of a version that loses an acknowledged record at its defaults:
    ``how`` it is lost (the version's no-committed-loss-anywhere case)."""
    return ({**HOLDS, "acked-fully-replicated": "violated"},
            {"acked-fully-replicated": f"{how}; the record is on no live ISR member and none can fetch it any more. "
                                       f"{FAIRNESS}"})
