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
...             print(type(err).__name__, sorted(p.name for p in Path(tmp).iterdir()))
LockedError ['shop.sqlite.lock']
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from invtools.errors import LockedError

__all__ = ["sync_lock"]

if sys.platform == "win32":  # pragma: no cover - the file's first byte
    import msvcrt

    def _lock(fd: int, *, take: bool) -> None:
        msvcrt.locking(fd, msvcrt.LK_NBLCK if take else msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def _lock(fd: int, *, take: bool) -> None:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB if take else fcntl.LOCK_UN)


@contextlib.contextmanager
def sync_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive, non-blocking OS lock on ``<path>.lock`` for the block, or raise
    :class:`~invtools.errors.LockedError` if another sync (any process or thread) holds it.
    The OS drops the lock when its holder dies, so a killed sync never leaves the file
    locked. The lock file is left in place: removing it would let a waiting opener lock an
    unlinked file."""
    fd = os.open(path.with_name(path.name + ".lock"), os.O_CREAT | os.O_RDWR, 0o600)
    try:
        try:
            _lock(fd, take=True)
        except (BlockingIOError, PermissionError):  # held: EWOULDBLOCK (POSIX), EACCES (Windows)
            raise LockedError(
                f"another sync of this mirror is running ({path}); wait for it to finish, "
                "then sync again"
            ) from None
        try:
            yield
        finally:
            _lock(fd, take=False)
    finally:
        os.close(fd)
