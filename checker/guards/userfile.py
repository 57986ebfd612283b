"""Reading a file isrcheck did not write in this run (a trace, a settings file, a snapshot) without trusting it.

A path can name a FIFO (opening it for reading waits for a writer, for ever), a device (``/dev/zero``
reads without end), a directory, or a sparse file of terabytes. Every such file is opened non-blocking and
checked with ``fstat`` before a byte is read: only a regular file is read, and only up to a size cap.
"""
from __future__ import annotations

import os
import stat


class UserFileError(ValueError):
    """A file that cannot be read as the kind of file it should be (one line naming it, exit code 2)."""


def _size(n):
    return f"{n >> 20} MB" if n >= 1 << 20 else f"{n >> 10} KB"


def open_regular(path, what, limit=None):
    """A read-only file descriptor of the regular file at ``path`` (symlinks followed), at most ``limit`` bytes
    long when given; UserFileError ``PATH: ...`` naming ``what`` (e.g. "trace file") otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as e:
        raise UserFileError(f"{path}: cannot read {what} ({e.strerror})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = ("a directory" if stat.S_ISDIR(st.st_mode) else "a FIFO" if stat.S_ISFIFO(st.st_mode)
                    else "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) else "a socket")
            raise UserFileError(f"{path}: not a regular file (it is {kind})")
        if limit is not None and st.st_size > limit:
            raise UserFileError(f"{path}: larger than {_size(limit)}, not a {what}")
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_bytes(path, what, limit):
    """The bytes of the regular file at ``path``, at most ``limit`` of them (a file that grows past it while it
    is read is refused too); UserFileError otherwise."""
    fd = open_regular(path, what, limit)
    chunks, size = [], 0
    try:
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as e:
        raise UserFileError(f"{path}: cannot read {what} ({e.strerror})") from None
    finally:
        os.close(fd)
    if size > limit:
        raise UserFileError(f"{path}: larger than {_size(limit)}, not a {what}")
    return b"".join(chunks)


def read_text(path, what, limit):
    """:func:`read_bytes` decoded as UTF-8 (UserFileError naming the first byte that is not)."""
    data = read_bytes(path, what, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise UserFileError(f"{path}: not UTF-8 text (byte {e.start})") from None


def no_json_constant(name):
    """``json.loads(..., parse_constant=no_json_constant)``: NaN and Infinity, which JSON does not have, are
    refused as a damaged file (ValueError) rather than read as numbers."""
    raise ValueError(f"{name} is not a JSON number")
