"""isrcheck: a model checker and property fuzzer for the Apache Kafka partition replication protocol.

The repository's folders install as one namespace: ``isrcheck.model`` (the modelling layer and the
Kafka replication model), ``isrcheck.specs`` (protocol versions) and ``isrcheck.checker`` (engines,
traces, the command line). This package is the public API.
"""
from isrcheck.checker import __version__
from isrcheck.model import (BoundsError, DeclarationError, Field, FuzzTarget, Presentation, Spec, action, all_of,
                            any_of, count_of, invariant, max_of, min_of, where)
from isrcheck.specs import SPECS

__all__ = ["__version__", "SPECS", "Spec", "Field", "action", "invariant", "FuzzTarget", "Presentation", "where",
           "any_of", "all_of", "count_of", "min_of", "max_of", "BoundsError", "DeclarationError"]
