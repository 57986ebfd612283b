"""The ``isrcheck`` console script: what must hold before any library loads, then the command line.

- Signals: SIGINT and SIGTERM are taken from the script's first line on. Until the command line is
  loaded (numpy, click, the specs: a few hundred milliseconds) a signal ends the run with exit 3 and
  one line; from then on :mod:`checker.engine.stop` handles it as in every command. (Without this, a
  signal in the first half second was a KeyboardInterrupt traceback, exit 130, or a bare kill, 143.)
- Thread pools: numpy's and scipy's OpenBLAS start a thread and a buffer per core as they load, which
  under an address-space limit fails (exit 1 from inside OpenBLAS) or spins for ever. isrcheck does no
  linear algebra: one thread, unless ``OPENBLAS_NUM_THREADS`` says otherwise.
- Address space: under a limit (``ulimit -v``), a native library loads only with room for it
  (:mod:`checker.guards.headroom`); a MemoryError, or a native library failing to load under such a limit,
  is exit 3 with one line, whenever it happens. Under such a limit every thread shares glibc's main
  malloc arena: a thread's own arena reserves 64 MB of address space (the stop watcher's alone took
  74 MB of a 200 MB limit, where numpy then found no room).
- Standard output: a reader that closes it early (``isrcheck list | head -1``) only loses the rest of the
  output; the command runs on and exits with its own code (a BrokenPipeError escaping was exit 1, the code
  of a violation).
- The end: once the command has its exit code, standard output and error are flushed, the ``atexit``
  functions run, and the process ends there (``os._exit``), without Python tearing down every module and
  object one by one first (the system frees a process's memory at once): 17 ms of a 0.3 s check. Where
  anything is left that only that teardown would finish (a thread that is no daemon still running, a flush
  that fails, an exit status that is not a number), Python exits as usual.
"""
from __future__ import annotations

import atexit
import os
import signal
import sys
import threading

EXIT_STOPPED = 3
_caught = []            # the signals caught before checker.engine.stop took over
_ran = []               # the command line ran: checker.engine.stop handed the signals back as the process ends


def _early(signum, frame):
    if _ran:            # the run is over and its exit code decided: a late signal changes nothing
        return
    _caught.append(signal.Signals(signum).name)
    raise KeyboardInterrupt


def _exit(line):
    print(f"isrcheck: {line}", file=sys.stderr, flush=True)
    sys.exit(EXIT_STOPPED)


def _one_arena():
    """Under an address-space limit, malloc's threads share its main arena (glibc's mallopt M_ARENA_MAX)."""
    import resource
    if resource.getrlimit(resource.RLIMIT_AS)[0] == resource.RLIM_INFINITY:
        return
    try:
        import ctypes
        ctypes.CDLL(None).mallopt(-8, 1)        # M_ARENA_MAX = -8
    except (OSError, AttributeError):           # not glibc: its own arenas
        pass


class _StdoutOrNothing:
    """sys.stdout, until its reader goes away: then what is left to print goes to /dev/null."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text):
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._nothing()
            return len(text)

    def flush(self):
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._nothing()

    def _nothing(self):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, self._stream.fileno())
        os.close(devnull)

    def __getattr__(self, name):
        return getattr(self._stream, name)


def main():
    stop = None
    try:
        for s in (signal.SIGINT, signal.SIGTERM):
            signal.signal(s, _early)
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
        if sys.stdout is not None:
            sys.stdout = _StdoutOrNothing(sys.stdout)
        _one_arena()
        from isrcheck.checker.guards import headroom
        from isrcheck.checker.engine import stop
        headroom.install()
        with stop.handling():           # the command line's own handling nests in it and hands back to it
            from isrcheck.checker.command_line import cli
            _ran.append(True)
            cli.main()
    except SystemExit as e:             # the command's end, its exit code decided
        _end(e.code)
        raise
    except KeyboardInterrupt:           # while starting (the command line turns its own into exit 3)
        caught = (stop and stop.reason()) or (_caught[0] if _caught else "SIGINT")
        _exit(f"stopped by {caught} while starting; nothing was checked or written")
    except MemoryError as e:            # while starting (headroom.NoRoom, or an allocation that failed)
        _exit(f"out of memory while starting{f' ({e})' if str(e) else ''}; nothing was checked or written")
    except (ImportError, OSError) as e:
        if stop is None or stop.address_space_room() is None or not _native(e):
            raise
        _exit(f"out of memory: a library cannot load under the address-space limit (ulimit -v): {_cause(e)}")


def _end(code):
    """End the process now with exit status ``code`` (see the module doc), or return where Python's own exit must
    do it."""
    if not (code is None or type(code) is int) or any(t.is_alive() and not t.daemon for t in threading.enumerate()
                                                       if t is not threading.main_thread()):
        return
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except Exception:                   # what Python's exit would say about it
        return
    atexit._run_exitfuncs()
    os._exit((code or 0) & 0xFF)


def _native(e):
    """Whether an exception came out of loading one of the native libraries :mod:`checker.guards.headroom` knows."""
    from isrcheck.checker.guards import headroom
    tops = {name.partition(".")[0] for name in headroom.NEEDS_MB}
    tb = e.__traceback__
    while tb is not None:
        if tb.tb_frame.f_globals.get("__name__", "").partition(".")[0] in tops:
            return True
        tb = tb.tb_next
    return getattr(e, "name", None) in tops


def _cause(e):
    """The first line of the innermost exception ``e`` was raised from (numpy's ImportError is a page of advice
    around the loader's one line)."""
    while (e.__cause__ or e.__context__) is not None:
        e = e.__cause__ or e.__context__
    return (str(e).strip().splitlines() or [type(e).__name__])[0]
