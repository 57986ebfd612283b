"""One stop request for every engine: SIGINT, SIGTERM, or the process outgrowing ``--max-memory``.

The command line installs the handlers (:func:`handling`); in a command whose
work polls (it calls :func:`polled`) a signal only records the request, it raises
nothing, so no engine is interrupted half-way through an update; elsewhere it
raises KeyboardInterrupt at once. Engines poll :func:`reason` where they check their other budgets (per
chunk, per SAT slice, per fuzz step) and stop like at any budget: a partial
result with ``budget_hit`` set to the reason, and every violation found so far.
Work that blocks in native code (a z3 check, a Spark job) registers a
``wake`` callback with :func:`on_stop`; a watcher thread, woken through
``signal.set_wakeup_fd`` even while the main thread is in C, calls it at once.
A second signal while the partial report is written is ignored.
"""
from __future__ import annotations

import os
import signal
import threading
from contextlib import contextmanager

import click

SIGNALS = (signal.SIGINT, signal.SIGTERM)

_state = {"signal": None, "max_memory": None, "memory_hit": None, "handling": False, "polled": False}
_wakers = []
_lock = threading.Lock()


def reason():
    """Why the work must stop ("SIGTERM", "SIGINT", "memory limit 300 MB"), or None to go on."""
    if _state["signal"] is not None:
        return _state["signal"]
    limit = _state["max_memory"]
    if limit is not None and _state["memory_hit"] is None and resident_bytes() >= limit:
        _state["memory_hit"] = f"memory limit {format_size(limit)}"
    return _state["memory_hit"]


def interrupted():
    """True once a signal asked to stop (the exit code is then 3, whatever was found)."""
    return _state["signal"] is not None


def real_interrupt():
    """Whether a KeyboardInterrupt that was just raised came from Ctrl-C or a signal, not from code raising it:
    inside :func:`handling` when a signal was recorded; outside it (a library caller), always."""
    return interrupted() or not _state["handling"]


def out_of_memory():
    """What a search that caught a MemoryError reports as the reason it stopped: the memory limit, once work that
    saw it had no room under it said so (:func:`memory_limit_reached`), or else a failed allocation."""
    return _state["memory_hit"] or "out of memory (MemoryError)"


def memory_limit_reached():
    """Record that the work cannot go on under ``--max-memory`` (before it is reached: the next step would pass
    it); :func:`reason` says so from now on. Returns that reason."""
    if _state["memory_hit"] is None:
        _state["memory_hit"] = f"memory limit {format_size(_state['max_memory'])}"
    return _state["memory_hit"]


def resident_bytes():
    """The process's resident memory now (Linux /proc; elsewhere its peak, which can only stop earlier)."""
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        import resource
        import sys
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024


def release_free_memory():
    """Give the memory malloc holds free back to the system (glibc's ``malloc_trim``; elsewhere nothing).

    numpy's arrays of a few MB (a chunk's successors, a level's rows) come from glibc's per-thread arenas, which
    keep what is freed in the middle of a heap resident: on the 2-epoch production run 1.3-1.5 GB of free arena
    memory, a third of the peak. A search calls this where a level ends near its memory limit, when the level
    before it was dropped (not always: the pages given back are faulted in again by the next level, which cost
    the 2-epoch run 10 s of system CPU, 11 -> 21 s).
    """
    try:
        import ctypes
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass


def peak_bytes():
    """This process's peak resident memory (Linux VmHWM: this program's own, where getrusage's maxrss also counts
    the memory of the process it was forked from, e.g. a large test runner)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    import resource
    import sys
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


def memory_limit():
    """The ``--max-memory`` limit in bytes, or None."""
    return _state["max_memory"]


def room_for(nbytes):
    """Whether ``nbytes`` more fit under the memory limit and under the process's address-space limit
    (``ulimit -v``, where an allocation fails instead of the limit being polled); always, without either."""
    limit = _state["max_memory"]
    if limit is not None and resident_bytes() + nbytes >= limit:
        return False
    space = _address_space_limit()
    return space is None or _virtual_bytes() + nbytes < space


def address_space_room():
    """The bytes of address space the process's limit (``ulimit -v``) leaves it now, or None without a limit."""
    space = _address_space_limit()
    return None if space is None else space - _virtual_bytes()


def _address_space_limit():
    """The soft RLIMIT_AS in bytes, or None (no limit, or a platform without it)."""
    try:
        import resource
        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, AttributeError, OSError, ValueError):
        return None
    return None if soft == resource.RLIM_INFINITY else soft


def _virtual_bytes():
    """The process's address space in use (Linux /proc; elsewhere 0: the limit is then the allocation's to meet)."""
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def set_max_memory(limit):
    _state["max_memory"], _state["memory_hit"] = limit, None


def format_size(n):
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n} B"


def parse_size(text):
    """``500M``, ``8G``, ``1.5G``, ``300MB``, or bytes; raises ValueError on anything else."""
    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    t = text.strip().upper().removesuffix("B").removesuffix("I")
    unit = t[-1:] if t[-1:] in units else ""
    number = float(t[:-1] if unit else t)        # ValueError on junk
    if not number > 0 or number == float("inf"):
        raise ValueError(text)
    return int(number * units[unit])


def _max_memory(ctx, param, value):
    try:
        limit = default_max_memory() if value is None else parse_size(value)
    except ValueError:
        raise click.BadParameter(f"{value!r}: expected a size, e.g. 500M or 8G") from None
    if limit is not None and limit <= resident_bytes():
        raise click.BadParameter(f"{value}: isrcheck itself already takes {format_size(resident_bytes())}")
    set_max_memory(limit)
    ctx.call_on_close(lambda: set_max_memory(None))      # the limit is this command's (CliRunner runs several)
    return limit


def memory_option(fn):
    """``--max-memory SIZE`` for the commands that search: parsed and set when the command line is read."""
    return click.option("--max-memory", "max_memory", metavar="SIZE", default=None, callback=_max_memory,
                        expose_value=False,
                        help="budget: stop (exit 3, partial report) when the process's memory reaches SIZE, "
                             "e.g. 500M or 8G (default: half the machine's physical memory)")(fn)


def default_max_memory():
    """Half the machine's physical memory: the rest stays for the OS and other processes, and the
    search's level merges (which briefly hold a level twice) still fit below the physical size."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2
    except (ValueError, OSError):
        return None


@contextmanager
def on_stop(wake):
    """Call ``wake()`` (from another thread) when a stop is requested while the block runs."""
    with _lock:
        _wakers.append(wake)
        already = _state["signal"] is not None
    try:
        if already:
            wake()
        yield
    finally:
        with _lock:
            _wakers.remove(wake)


def _request(signum):
    with _lock:
        if _state["signal"] is None:
            _state["signal"] = signal.Signals(signum).name
        wakers = list(_wakers)
    for wake in wakers:
        try:
            wake()
        except Exception:  # noqa: BLE001 — a waker of finished work (a closed solver) has nothing to stop
            pass


def caught(signum):
    """Record a signal that native code took in the handlers' place (pysat's CaDiCaL takes SIGINT while it solves
    and raises its own error): a stop request like any other."""
    _request(signum)


def polled():
    """Say that this command's work polls :func:`reason`; until then a signal interrupts at once."""
    _state["polled"] = True


@contextmanager
def immediate():
    """In the block a signal raises KeyboardInterrupt at once, even in a command whose work polls: for code that
    never polls (a user's module being imported)."""
    polled, _state["polled"] = _state["polled"], False
    try:
        yield
    finally:
        _state["polled"] = polled


def _handler(signum, frame):
    _request(signum)
    if not _state["polled"]:        # show, replay, list...: nothing polls, so stop right here
        raise KeyboardInterrupt


def reinstall():
    """Take the signals back inside :func:`handling` (pyspark's SparkContext installs its own SIGINT handler)."""
    if _state["handling"] and threading.current_thread() is threading.main_thread():
        for s in SIGNALS:
            signal.signal(s, _handler)


@contextmanager
def handling():
    """Run the block with SIGINT and SIGTERM turned into stop requests (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _state["signal"], _state["polled"] = None, False
    previous = {s: signal.getsignal(s) for s in SIGNALS}
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    old_fd = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    watcher = threading.Thread(target=_watch, args=(read_fd,), daemon=True, name="isrcheck-stop")
    watcher.start()
    for s in SIGNALS:
        signal.signal(s, _handler)
    _state["handling"] = True
    try:
        yield
    finally:
        _state["handling"] = False
        for s, h in previous.items():
            signal.signal(s, h)
        signal.set_wakeup_fd(old_fd)
        os.close(write_fd)          # ends the watcher
        watcher.join(timeout=1)
        os.close(read_fd)


def _watch(fd):
    """Wake blocked native work as soon as a signal arrives, even while the main thread is in C."""
    while True:
        try:
            data = os.read(fd, 64)
        except OSError:
            return
        if not data:
            return
        for signum in data:
            if signum in SIGNALS:
                _request(signum)
