"""Output paths checked before any work starts, so a search's result is never lost to a bad ``--out``.

A directory for traces must be (or be creatable as) a directory we can write,
outside the kernel's pseudo file systems, with names the file system accepts; a
report file must be a regular file (or a new one) in such a directory.
"""
from __future__ import annotations

import os
import stat

PSEUDO = ("/proc", "/sys", "/dev")      # kernel interfaces, not places for files


class OutputPathError(ValueError):
    """An output path that cannot be written (one line, exit code 2)."""


def _nearest_existing(path):
    """(the deepest existing ancestor of ``path``, or ``path`` itself; the names below it)."""
    below = []
    while not os.path.lexists(path):
        parent, name = os.path.split(path)
        below.insert(0, name)
        if parent == path:
            break
        path = parent
    return path, below


def usable_dir(path, option, files=(), shown=None):
    """Raise OutputPathError unless ``path`` can hold ``files`` (paths relative to it) once created.

    Messages name ``shown`` (default ``path``): the path as the user gave it.
    """
    if not path:
        raise OutputPathError(f"{option}: an empty path")
    shown = path if shown is None else shown
    full = os.path.abspath(path)
    real = os.path.realpath(full)
    for top in PSEUDO:
        if real == top or real.startswith(top + "/"):
            raise OutputPathError(f"{option} {shown}: under {top}, not a place to write files")
    base, below = _nearest_existing(full)
    try:
        mode = os.stat(base).st_mode
    except OSError as e:                     # e.g. a dangling symlink
        raise OutputPathError(f"{option} {shown}: cannot use {base} ({e.strerror})") from None
    if not stat.S_ISDIR(mode):
        raise OutputPathError(f"{option} {shown}: {base} exists and is not a directory")
    if not os.access(base, os.W_OK | os.X_OK):
        raise OutputPathError(f"{option} {shown}: {base} is not writable")
    try:
        name_max, path_max = os.pathconf(base, "PC_NAME_MAX"), os.pathconf(base, "PC_PATH_MAX")
    except (OSError, ValueError):
        name_max, path_max = 255, 4096
    for rel in files or ("",):
        target = os.path.join(full, rel)
        names = below + [n for n in rel.split(os.sep) if n]
        if names:
            names[-1] += ".tmp-0000000"          # the temporary name a trace is first written under
        if any(len(os.fsencode(n)) > name_max for n in names):
            raise OutputPathError(f"{option} {shown}: a file name there would be longer than {name_max} bytes")
        if len(os.fsencode(target)) + 12 >= path_max:
            raise OutputPathError(f"{option} {shown}: a path there would be longer than {path_max} bytes")


def usable_file(path, option):
    """Raise OutputPathError unless ``path`` is a regular file, or a new one, that can be written."""
    if not path:
        raise OutputPathError(f"{option}: an empty path")
    full = os.path.abspath(path)
    if os.path.lexists(full):
        try:
            mode = os.stat(full).st_mode
        except OSError as e:
            raise OutputPathError(f"{option} {path}: cannot use it ({e.strerror})") from None
        if not stat.S_ISREG(mode):
            kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
            raise OutputPathError(f"{option} {path}: {kind}")
        usable_dir(os.path.dirname(os.path.realpath(full)), option, shown=path)
        if not os.access(full, os.W_OK):
            raise OutputPathError(f"{option} {path}: not writable")
        return
    head, name = os.path.split(full)
    usable_dir(head, option, files=(name,), shown=path)
