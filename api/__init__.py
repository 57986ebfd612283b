"""isrcheck: a model checker and property fuzzer for the Apache Kafka partition replication protocol.

The repository's folders install as one namespace: ``isrcheck.model`` (the modelling layer and the
Kafka replication model), ``isrcheck.specs`` (protocol versions) and ``isrcheck.checker`` (engines,
traces, the command line). This package is the public API: :func:`check` runs an exhaustive check (invariants
and liveness properties) and returns a :class:`CheckResult`; :func:`fuzz`, :func:`prove` and :func:`gate` run
the other commands and return a :class:`FuzzResult`, :class:`ProofResult` and :class:`GateResult`;
:mod:`isrcheck.testing` has ``assert_holds`` / ``assert_violated`` for pytest.

Each name below is imported from its module when it is first used, so ``import isrcheck`` loads no
numpy: the ``isrcheck`` command sets up its thread pools and signal handling before any library loads.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from isrcheck.checker import __version__

_MODEL = ("BoundsError", "DeclarationError", "Field", "FuzzTarget", "Presentation", "Spec", "action", "all_of",
          "any_of", "count_of", "invariant", "max_of", "min_of", "where")
#: public name -> the module it comes from
_API = {"SPECS": "isrcheck.specs", "check": "isrcheck.checking", "CheckResult": "isrcheck.checking",
        **{name: "isrcheck.commands" for name in ("fuzz", "FuzzResult", "prove", "ProofResult", "gate", "GateResult",
                                                  "GateRow")},
        **{name: "isrcheck.model" for name in _MODEL}}
_SUBPACKAGES = ("model", "specs", "checker", "checking", "commands", "testing")

__all__ = ["__version__", "SPECS", "check", "CheckResult", "fuzz", "FuzzResult", "prove", "ProofResult", "gate",
           "GateResult", "GateRow", "Spec", "Field", "action", "invariant", "FuzzTarget", "Presentation", "where",
           "any_of", "all_of", "count_of", "min_of", "max_of", "BoundsError", "DeclarationError"]


def __getattr__(name):
    if name in _API:
        value = getattr(importlib.import_module(_API[name]), name)
    elif name in _SUBPACKAGES:
        value = importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_API) | set(_SUBPACKAGES))


if TYPE_CHECKING:                   # what the names are, for type checkers and editors
    from isrcheck.checking import CheckResult, check
    from isrcheck.commands import FuzzResult, GateResult, GateRow, ProofResult, fuzz, gate, prove
    from isrcheck.model import (BoundsError, DeclarationError, Field, FuzzTarget, Presentation, Spec, action,
                                all_of, any_of, count_of, invariant, max_of, min_of, where)
    from isrcheck.specs import SPECS
