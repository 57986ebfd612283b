"""Files written whole or not at all: traces, pages, reports.

A file is written to a temporary name beside its place (``NAME.tmp-PID``), flushed to the disk
(``fsync``) and only then renamed into place, so a crash or ``kill -9`` never leaves half a file
under its name, and a power loss after the rename never leaves an empty one. When the write fails
(a full disk, a quota), the temporary file and any folder made for it are removed, and
:class:`WriteFailed` says which file and why: the caller reports what it found and exits 3.
"""
from __future__ import annotations

import os


class WriteFailed(OSError):
    """A file that could not be written: an OSError of ``path`` whose text is one line, its path and the system's
    reason."""

    def __init__(self, path, error):
        super().__init__(error.errno, error.strerror or str(error), path)
        self.path, self.reason = path, self.strerror

    def __str__(self):
        return f"cannot write {self.path} ({self.reason})"


def _make_folders(folder):
    """Make ``folder`` and its missing parents: the ones made, deepest first."""
    made = []
    while folder and not os.path.isdir(folder):
        made.append(folder)
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    for f in reversed(made):
        os.mkdir(f)
    return made


def write_text(path, text):
    """Write ``text`` (UTF-8) to ``path`` atomically and durably; WriteFailed, leaving nothing behind, if it
    cannot be."""
    folder = os.path.dirname(os.path.abspath(path))
    tmp = f"{path}.tmp-{os.getpid()}"
    made = []
    try:
        made = _make_folders(folder)
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as e:
        _remove(tmp, made)
        raise WriteFailed(path, e) from None
    except BaseException:
        _remove(tmp, made)
        raise
    try:                            # the rename itself, on the disk
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError:
        pass                        # a file system without directory fsync: the file is written all the same
    return path


def _remove(tmp, made):
    try:
        os.remove(tmp)
    except OSError:
        pass
    for folder in made:             # deepest first; a folder something else wrote into meanwhile stays
        try:
            os.rmdir(folder)
        except OSError:
            break
