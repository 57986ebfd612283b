"""C libraries built by the system's compiler (model/cbuild.py): compiled once into the cache, in the background
or at once, a broken source or a missing compiler one clear error, the compile ahead only for what another
process asked for before."""
import ctypes
import os

import pytest

from isrcheck.model import cbuild

SOURCE = "long twice(long x) { return 2 * x; }\n"

pytestmark = pytest.mark.skipif(cbuild.compiler() is None, reason="no C compiler")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setitem(cbuild._found, "dir", str(tmp_path))
    return tmp_path


def test_a_library_compiles_once_and_loads_from_the_cache(cache):
    calls = []
    lib = cbuild.load("twice", lambda: calls.append(1) or SOURCE)
    lib.twice.restype, lib.twice.argtypes = ctypes.c_long, [ctypes.c_long]
    assert lib.twice(21) == 42 and calls == [1] and cbuild.compiled("twice")
    assert cbuild.load("twice", lambda: calls.append(1) or SOURCE) is lib and calls == [1]
    assert [f for f in os.listdir(cache) if not f.endswith((".so", ".lock"))] == []     # no source or tmp left


def test_a_background_compile_puts_the_library_in_place(cache):
    process = cbuild.start("later", SOURCE)
    assert process is not None and cbuild.start("later", SOURCE) is None       # one compile at a time
    process.wait()
    assert cbuild.compiled("later") and cbuild.start("later", SOURCE) is None      # nothing to do any more
    assert [f for f in os.listdir(cache) if not f.endswith(".so")] == []


def test_a_broken_source_or_no_compiler_is_one_error(cache, monkeypatch):
    with pytest.raises(cbuild.CompileError, match="the C compiler failed on broken"):
        cbuild.load("broken", "this is not C")
    monkeypatch.setenv("CC", str(cache / "no-such-compiler"))
    with pytest.raises(cbuild.CompileError, match="could not run"):
        cbuild.load("twice-again", SOURCE)


def test_compiling_ahead_is_for_what_another_process_asked_for(cache):
    assert not cbuild.asked_before("spec")              # the first ask, marked
    assert not cbuild.asked_before("spec")              # this process again: still not
    marker = cbuild.library_path("spec") + ".asked"
    with open(marker, "w") as fh:
        fh.write("1")                                   # as another process would have left it
    assert cbuild.asked_before("spec")
