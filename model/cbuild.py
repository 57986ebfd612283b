"""C source compiled by the system's C compiler into a shared library, kept across processes, loaded with ctypes.

The compiled kernels (model/c_kernels.py) and the visited table's loops (checker/exhaustive/table.c) are C: a library
loads in about a millisecond, where importing numba and loading a spec's cached numba kernels costs half a
second of CPU in every process, more than a whole search of a million states. Each library is written once
to the kernels' cache directory (model/native.py ``cache_dir``) under its name (a digest of what its source
depends on) and a digest of the compiler and its flags, and compiled there (a lock beside it makes a second process wait for the first's compile,
then load it). ctypes releases the GIL while a C function runs, so chunks expand on several threads at once.

The compiler is ``$CC``, else ``cc``, ``gcc`` or ``clang`` on the PATH. Without one (or when it fails)
``CompileError`` says why, and the search keeps its numpy and numba kernels.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import shlex
import shutil
import time

from isrcheck.model.native import _compiling, cache_dir

# -O1: the kernels run as fast as with -O2 (tla-kip320 3/2/2/2, 10 searches: 1.77-1.79 s against 1.76-1.77 s of
# CPU) and a spec's compile takes 40% less (kip-320 at 3 replicas, 13,893 lines: 2.9 s against 5.8 s)
FLAGS = ["-O1", "-std=c99", "-fPIC", "-shared"]
COMPILE_SECONDS = 600           # a compile that takes longer is stuck
_loaded = {}                    # path -> CDLL: a library is loaded once per process


class CompileError(Exception):
    """No C compiler, or it failed on a library's source."""


_found = {}                     # $CC -> the compiler found for it; the cache directory, once chosen


def compiler():
    """The C compiler's command (a list), or None."""
    cc = os.environ.get("CC")
    if cc not in _found:
        _found[cc] = shlex.split(cc) if cc else next(([p] for p in map(shutil.which, ("cc", "gcc", "clang")) if p),
                                                       None)
    return _found[cc]


def library_path(name):
    """Where the library called ``name`` (a digest of what its source depends on) is kept, compiled or not; None
    without a compiler."""
    cc = compiler()
    if cc is None:
        return None
    if "dir" not in _found:         # chosen once: the last resort is a new temporary directory each time
        _found["dir"] = cache_dir()
    digest = hashlib.sha256(repr((cc, FLAGS)).encode()).hexdigest()[:12]
    return os.path.join(_found["dir"], f"{name}-{digest}.so")


def compiled(name):
    """Whether the library called ``name`` is compiled already (in this process or in the cache)."""
    path = library_path(name)
    return path is not None and (path in _loaded or os.path.exists(path))


def load(name, source):
    """The ctypes library called ``name``, compiled from ``source`` (C text, or a function giving it: called only
    when the cache lacks the library) unless the cache has it."""
    path = library_path(name)
    if path is None:
        raise CompileError("no C compiler (set CC, or install cc, gcc or clang)")
    lib = _loaded.get(path)
    if lib is not None:
        return lib
    if not os.path.exists(path):
        with _compiling(path):
            if not os.path.exists(path):        # another process compiled it while this one waited
                _compile(source() if callable(source) else source, path)
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise CompileError(f"cannot load {path}: {e}") from e
    _loaded[path] = lib
    return lib


def asked_before(name):
    """Whether another process asked for the library called ``name`` before (a marker beside it says which); marks
    this one's ask. A search compiles ahead only for a configuration searched again: a one-off run (the gate on
    a fresh CI machine) never pays for it."""
    path = library_path(name)
    if path is None:
        return False
    marker, me = path + ".asked", str(os.getpid())
    try:
        with open(marker) as fh:
            if fh.read(32).strip() not in ("", me):
                return True
    except OSError:
        pass
    try:
        with open(f"{marker}.{me}", "w") as fh:
            fh.write(me)
        os.replace(f"{marker}.{me}", marker)
    except OSError:
        pass
    return False


def start(name, source):
    """Compile the library called ``name`` in the background: a compiler process, in a session of its own and at a
    lower priority, that puts the library in place when it is done, whether or not this process is still there
    (a later one loads it). Returns the process, or None when the library is compiled already or being compiled
    (a marker beside it, younger than COMPILE_SECONDS), there is no compiler, or this is no POSIX system
    (``load`` compiles then)."""
    path = library_path(name)
    if path is None or os.path.exists(path) or os.name != "posix" or not os.path.exists("/bin/sh"):
        return None
    building = path + ".building"               # one compile at a time, whichever process started it
    try:
        os.close(os.open(building, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        try:
            if time.time() - os.path.getmtime(building) < COMPILE_SECONDS:
                return None
            os.unlink(building)                 # left by a compile that died: start again
            return start(name, source)
        except OSError:
            return None
    except OSError:
        return None
    tag = f"{path}.{os.getpid()}"
    src, tmp = tag + ".c", tag + ".tmp"
    try:
        with open(src, "w") as fh:
            fh.write(source() if callable(source) else source)
    except OSError:
        os.unlink(building)
        return None
    import subprocess
    nice = ["nice", "-n", "10"] if shutil.which("nice") else []
    q = shlex.quote
    script = (f"{' '.join(q(x) for x in [*nice, *compiler(), *FLAGS, '-o', tmp, src])} >/dev/null 2>&1 "
              f"&& mv -f {q(tmp)} {q(path)}; rm -f {q(src)} {q(tmp)} {q(building)}")
    try:
        return subprocess.Popen(["/bin/sh", "-c", script], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
    except OSError:
        for f in (src, building):
            os.unlink(f)
        return None


def _compile(source, path):
    import subprocess
    src, tmp = f"{path}.{os.getpid()}.c", f"{path}.{os.getpid()}.tmp"
    try:
        with open(src, "w") as fh:
            fh.write(source)
        proc = subprocess.run([*compiler(), *FLAGS, "-o", tmp, src], capture_output=True, text=True,
                              timeout=COMPILE_SECONDS)
        if proc.returncode != 0:
            raise CompileError(f"the C compiler failed on {os.path.basename(path)}: "
                               f"{(proc.stderr or proc.stdout).strip()[:2000]}")
        os.replace(tmp, path)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise CompileError(f"the C compiler could not run: {e}") from e
    finally:
        for f in (src, tmp):
            if os.path.exists(f):
                os.unlink(f)
