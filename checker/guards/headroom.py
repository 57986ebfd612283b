"""Room in the address space before a native library loads, under a limit (``ulimit -v``, ``prlimit --as``).

A library that cannot map itself fails in its own way: numpy and scipy's OpenBLAS print "Memory
allocation still failed" and call ``exit(1)`` (exit 1 reads as "a violation"), or spin for ever in
their start-up retrying a buffer; LLVM aborts; others raise ImportError from deep inside. None of it
can be caught once the library's loader runs. So the console script installs a finder
(:func:`install`) that, before each of these modules is first imported, compares the room the limit
leaves with what the module takes, and raises :class:`NoRoom` (a MemoryError: exit 3, or a search's
"out of memory" stop with its partial report) instead of letting it load.

The figures are the address space each import added, measured (Python 3.11, numpy 2.4, scipy 1.17,
numba 0.68, z3 5.4, python-sat 1.9, pyarrow 26; OpenBLAS limited to one thread), plus a quarter.
"""
from __future__ import annotations

import sys

from isrcheck.checker.engine import stop

#: module -> MB of address space its import takes (measured + 25%); its parent packages are counted by their own
NEEDS_MB = {
    "numpy": 112,               # 81 MB: its OpenBLAS and a 32 MB buffer
    "scipy.sparse": 48,         # 28 MB
    "scipy.linalg": 96,         # 69 MB: scipy's own OpenBLAS and its 32 MB buffer (where it spins without them)
    "llvmlite.binding": 200,    # 156 MB: LLVM (numba's compiler)
    "numba": 48,                # 26 MB besides LLVM
    "z3": 48,                   # 29 MB
    "pysat": 24,                # 11 MB: CaDiCaL
    "pyarrow": 288,             # 224 MB at its peak
}


class NoRoom(MemoryError):
    """A native library that the address-space limit leaves no room to load."""


class _Finder:
    """A ``sys.meta_path`` entry that finds nothing: it only says no before a library that would not fit."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        need = NEEDS_MB.get(name)
        if need is not None and name not in sys.modules:
            room = stop.address_space_room()
            if room is not None and room < need << 20:
                raise NoRoom(f"loading {name} takes about {need} MB of address space; the limit (ulimit -v) "
                             f"leaves {max(room, 0) >> 20} MB")
        return None


def install():
    """Check the room before each library of :data:`NEEDS_MB` loads, from now on in this process."""
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
