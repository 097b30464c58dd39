"""One sync of a mirror file at a time: an exclusive, non-blocking OS lock on
``<file>.lock`` beside it, dropped by the OS when its holder dies.

>>> import tempfile
>>> with tempfile.TemporaryDirectory() as tmp:
...     path = Path(tmp) / "shop.sqlite"
...     with sync_lock(path):
...         try:
...             with sync_lock(path):
...                 pass
...         except LockedError as err:
...             print(type(err).__name__)
LockedError
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from invtools.errors import LockedError

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]
try:  # Windows
    import msvcrt
except ImportError:
    msvcrt = None  # type: ignore[assignment]

__all__ = ["lock_path", "sync_lock"]


def lock_path(path: Path) -> Path:
    """The lock file of a mirror file: ``<file>.lock`` next to it.

    >>> lock_path(Path("m/shop.sqlite")).name
    'shop.sqlite.lock'
    """
    return path.with_name(path.name + ".lock")


@contextlib.contextmanager
def sync_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive, non-blocking OS lock on ``<path>.lock`` for the block, or raise
    :class:`~invtools.errors.LockedError` if another sync (any process or thread) holds it.
    The OS drops the lock when its holder dies, so a killed sync never leaves the file
    locked. The lock file is left in place: removing it would let a waiting opener lock an
    unlinked file."""
    fd = os.open(lock_path(path), os.O_CREAT | os.O_RDWR, 0o600)
    try:
        if not _try_lock(fd):
            raise LockedError(
                f"another sync of this mirror is running ({path}); wait for it to finish, "
                "then sync again"
            )
        try:
            yield
        finally:
            _unlock(fd)
    finally:
        os.close(fd)


def _try_lock(fd: int) -> bool:
    if fcntl is not None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True
    if msvcrt is not None:  # pragma: no cover - Windows: lock the first byte
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True
    return True  # pragma: no cover - no OS locking here: concurrent syncs are not prevented


def _unlock(fd: int) -> None:
    if fcntl is not None:
        fcntl.flock(fd, fcntl.LOCK_UN)
    elif msvcrt is not None:  # pragma: no cover - Windows
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
