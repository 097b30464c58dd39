"""Private folders and files: what invtools writes (cached responses, mirrors) is a team's
inventory, stored unencrypted, so it is readable by its owner only.

One rule for every file invtools makes: folders it creates are 0700, files 0600; a folder that
already exists is left exactly as it is (it may be the user's own choice, such as
``INVTOOLS_CACHE_DIR=/tmp``, or shared with others). Imports nothing of invtools.

>>> import tempfile, pathlib
>>> with tempfile.TemporaryDirectory() as tmp:
...     f = pathlib.Path(tmp) / "a" / "b" / "data.sqlite"
...     private_file(f)
...     oct(f.stat().st_mode & 0o777), oct(f.parent.stat().st_mode & 0o777)
('0o600', '0o700')
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

__all__ = ["private_dirs", "private_file"]


def private_dirs(folder: Path) -> None:
    """Create ``folder`` and any missing parents, each one created here 0700. Existing
    folders are not touched."""
    folder = Path(folder)
    for part in reversed((folder, *folder.parents)):  # the top one first
        if part.exists():
            continue
        try:
            part.mkdir(mode=0o700)
        except FileExistsError:  # made by another process meanwhile: theirs, leave it
            continue
        with contextlib.suppress(OSError):  # mkdir's mode is masked by the umask
            os.chmod(part, 0o700)


def private_file(path: Path) -> None:
    """Create ``path`` (and its missing folders) readable by the user only, or tighten an
    existing file of ours to 0600. SQLite gives its journal files the database file's mode,
    so this runs before SQLite opens the file. Raises ``OSError`` when the file cannot be
    made (a read-only folder, a path under a regular file)."""
    path = Path(path)
    private_dirs(path.parent)
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
    os.close(fd)
    with contextlib.suppress(PermissionError):  # a file of another user's: not ours to change
        os.chmod(path, 0o600)
