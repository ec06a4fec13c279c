"""Atomic, durable file writes: a file appears under its name complete, or not at all.

:func:`atomic_write` has ``write(tmp_path)`` fill a temporary file in the target's folder
(``.<name>.twinsweep-tmp-<random>``), flushes it to the disk (``fsync``), gives it the mode the
umask allows (``0o666 & ~umask``, as a plain ``open`` would), renames it over the target
(``os.replace``, atomic on POSIX filesystems) and flushes the folder, so that after a crash or a
power cut the target holds either its old or its new content, never a mix or a truncated file.

A full disk (``ENOSPC``) or an exhausted quota (``EDQUOT``) anywhere in the write becomes
:class:`core.errors.DiskFullError` naming the file; the temporary file is removed whatever
happens. Every writer of run outputs and of a sweep's result store goes through here.
"""

from __future__ import annotations

import errno
import os
import uuid
from pathlib import Path
from typing import Callable

from .errors import DiskFullError

#: Marks the temporary files of :func:`atomic_write` (a results folder's cleaner removes only these).
TMP_MARK = ".twinsweep-tmp-"

#: errno values of a full disk / an exhausted quota.
DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
_DISK_FULL_TEXT = ("no space left on device", "disk quota exceeded")

_UMASK = os.umask(0)
os.umask(_UMASK)


def is_disk_full(exc: BaseException | None) -> bool:
    """True when ``exc`` (or an exception it was raised from) is a full disk or an exhausted quota:
    an ``OSError`` with errno ENOSPC/EDQUOT, or an error whose text says so (pyarrow reports
    write failures as ``OSError`` with the errno only in its message)."""
    seen = 0
    while exc is not None and seen < 8:
        if isinstance(exc, DiskFullError):
            return True
        if isinstance(exc, OSError) and exc.errno in DISK_FULL_ERRNOS:
            return True
        if isinstance(exc, OSError) and any(t in str(exc).lower() for t in _DISK_FULL_TEXT):
            return True
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return False


def disk_full_error(path: str | os.PathLike, exc: BaseException) -> DiskFullError:
    """The one-line :class:`DiskFullError` for a failed write of ``path``."""
    if isinstance(exc, DiskFullError):
        return exc
    why = getattr(exc, "strerror", None) or "no space left on device"
    return DiskFullError(f"disk full: cannot write {path} ({why}); free some space and run the command again")


def fsync_path(path: str | os.PathLike) -> None:
    """Flush a file's or a folder's data and metadata to the disk (folders: their entries, so that
    a rename in them survives a crash). Filesystems that cannot fsync a folder are ignored."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):
            raise
    finally:
        os.close(fd)


def tmp_name(path: Path) -> Path:
    """A fresh temporary name beside ``path`` (marked with :data:`TMP_MARK`)."""
    return path.with_name(f".{path.name}{TMP_MARK}{uuid.uuid4().hex[:12]}")


def atomic_write(path: str | os.PathLike, write: Callable[[str], None], sync: bool = True) -> Path:
    """Write ``path`` atomically: ``write(tmp)`` fills the temporary file ``tmp`` (a str path),
    which is fsynced (``sync``), chmod'ed to ``0o666 & ~umask`` and renamed to ``path``; then the
    folder is fsynced. Returns ``path`` as a Path.

    Raises DiskFullError (disk full / quota, naming ``path``) or the OSError / exception ``write``
    raised; the temporary file never stays behind.
    """
    path = Path(path)
    tmp = tmp_name(path)
    try:
        write(str(tmp))
        if sync:
            fsync_path(tmp)
        os.chmod(tmp, 0o666 & ~_UMASK)
        os.replace(tmp, path)
        if sync:
            fsync_path(path.parent)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if is_disk_full(exc):
            raise disk_full_error(path, exc) from exc
        raise
    return path


def atomic_move(src: str | os.PathLike, path: str | os.PathLike, sync: bool = True) -> Path:
    """Give an already written file ``src`` the name ``path`` durably: ``src`` is fsynced, renamed
    over ``path`` (``os.replace``: both must be on one filesystem, e.g. in one folder) and the
    folder is fsynced, so that after a crash ``path`` holds its old or its new content. For a file
    that was filled elsewhere (a resumable download's ``.part`` file); :func:`atomic_write` is the
    call for content written here. Returns ``path`` as a Path; a full disk raises DiskFullError
    naming ``path``. ``src`` keeps its mode.
    """
    path = Path(path)
    try:
        if sync:
            fsync_path(src)
        os.replace(src, path)
        if sync:
            fsync_path(path.parent)
    except OSError as exc:
        if is_disk_full(exc):
            raise disk_full_error(path, exc) from exc
        raise
    return path


def atomic_write_bytes(path: str | os.PathLike, data: bytes, sync: bool = True) -> Path:
    """:func:`atomic_write` of ``data``."""
    def write(p: str) -> None:
        with open(p, "wb") as fh:
            fh.write(data)

    return atomic_write(path, write, sync)


def atomic_write_text(path: str | os.PathLike, text: str, sync: bool = True) -> Path:
    """:func:`atomic_write` of ``text`` (UTF-8)."""
    return atomic_write_bytes(path, text.encode("utf-8"), sync)
