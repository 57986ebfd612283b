"""isrcheck: a model checker and property fuzzer for the Apache Kafka partition replication protocol.

The repository's folders install as one namespace: ``isrcheck.model`` (the modelling layer and the
Kafka replication model), ``isrcheck.specs`` (protocol versions) and ``isrcheck.checker`` (engines,
traces, the command line). This package is the public API: :func:`check` runs an exhaustive check (invariants
and liveness properties) and returns a :class:`CheckResult`; :func:`fuzz`, :func:`prove` and :func:`gate` run
the other commands and return a :class:`FuzzResult`, :class:`ProofResult` and :class:`GateResult`;
:mod:`isrcheck.testing` has ``assert_holds`` / ``assert_violated`` for pytest.
"""
from isrcheck.checker import __version__
from isrcheck.model import (BoundsError, DeclarationError, Field, FuzzTarget, Presentation, Spec, action, all_of,
                            any_of, count_of, invariant, max_of, min_of, where)
from isrcheck.specs import SPECS
from isrcheck.checking import CheckResult, check
from isrcheck.commands import FuzzResult, GateResult, GateRow, ProofResult, fuzz, gate, prove

__all__ = ["__version__", "SPECS", "check", "CheckResult", "fuzz", "FuzzResult", "prove", "ProofResult", "gate",
           "GateResult", "GateRow", "Spec", "Field", "action", "invariant", "FuzzTarget", "Presentation", "where",
           "any_of", "all_of", "count_of", "min_of", "max_of", "BoundsError", "DeclarationError"]
