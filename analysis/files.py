"""Bounded reads of user files: a regular file, at most ``limit_bytes``, never a device or a FIFO.

``read_bounded`` opens without blocking (a FIFO with no writer would otherwise block the open
itself), checks that the opened file is a regular file, and reads at most ``limit_bytes + 1`` bytes,
so ``/dev/zero``, a FIFO or a file that grows while it is read can neither hang nor exhaust memory.
Standard library only.
"""

from __future__ import annotations

import os
import stat

from .errors import ConfigError, PlannerError

_CHUNK_BYTES = 1 << 20


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def open_regular(path: str | os.PathLike, *, what: str = "file", error: type[PlannerError] = ConfigError):
    """A binary file object for the regular file ``path``, opened without blocking on a FIFO;
    ``error`` for a FIFO, device or socket; ``OSError`` propagates."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(21, "Is a directory", str(path))
        if not stat.S_ISREG(mode):
            raise error(f"{path}: {_kind(mode)}, not a {what}", f"pass a regular {what}")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bounded(path: str | os.PathLike, limit_bytes: int, *, what: str = "file",
                 error: type[PlannerError] = ConfigError) -> bytes:
    """The bytes of the regular file ``path``; ``error`` if it is special or larger than ``limit_bytes``.

    ``OSError`` (missing file, permissions, a folder) propagates for the caller to word.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(21, "Is a directory", str(path))
        if not stat.S_ISREG(st.st_mode):
            raise error(f"{path}: {_kind(st.st_mode)}, not a {what}", f"pass a regular {what}")
        if st.st_size > limit_bytes:
            raise error(f"{path}: {st.st_size} bytes is too large for a {what} (at most {limit_bytes})")
        chunks: list[bytes] = []
        total = 0
        while True:
            chunk = os.read(fd, min(_CHUNK_BYTES, limit_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit_bytes:
                raise error(f"{path}: more than {limit_bytes} bytes is too large for a {what}")
        return b"".join(chunks)
    finally:
        os.close(fd)


def regular_file_or_error(path: str | os.PathLike, *, what: str = "file",
                          error: type[PlannerError] = ConfigError) -> None:
    """Refuse a FIFO, device or socket before a library opens it (a stat never blocks)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return  # the opener words a missing or unreadable file
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise error(f"{path}: {_kind(mode)}, not a {what}", f"pass a regular {what}")
