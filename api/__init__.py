"""isrcheck: a model checker and property fuzzer for the Apache Kafka partition replication protocol.

The repository's folders install as one namespace: ``isrcheck.model`` (the modelling layer and the
Kafka replication model), ``isrcheck.specs`` (protocol versions) and ``isrcheck.checker`` (engines,
traces, the command line). This package is the public API: :func:`check` runs an exhaustive check and
returns a :class:`CheckResult`; :mod:`isrcheck.testing` has ``assert_holds`` / ``assert_violated`` for pytest.
"""
import os

# numpy's OpenBLAS starts a thread per core at import, which isrcheck never uses (no linear algebra): one thread
# saves about 25 ms of CPU in every process (a tenth of a small check's)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from isrcheck.checker import __version__  # noqa: E402  (after the setting above)
from isrcheck.model import (  # noqa: E402
    BoundsError, DeclarationError, Field, FuzzTarget, Presentation, Spec, action, all_of, any_of, count_of, invariant,
    max_of, min_of, where)
from isrcheck.specs import SPECS  # noqa: E402
from isrcheck.checking import CheckResult, check  # noqa: E402

__all__ = ["__version__", "SPECS", "check", "CheckResult", "Spec", "Field", "action", "invariant", "FuzzTarget", "Presentation", "where",
           "any_of", "all_of", "count_of", "min_of", "max_of", "BoundsError", "DeclarationError"]
