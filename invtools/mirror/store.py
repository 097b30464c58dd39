"""The mirror file itself: where it lives, its SQLite schema and version, how it is opened
and written, one sync at a time (:func:`sync_lock`), and what it holds (the provenance of its
rows, its summary). It never talks to the API: it stores what it is given.

Every write goes through :func:`write_transaction`, so what is atomic is visible at the call.
Connections are in autocommit mode otherwise.

>>> import sqlite3
>>> conn = sqlite3.connect(":memory:", isolation_level=None)
>>> init_schema(conn)
>>> with write_transaction(conn):
...     set_meta(conn, team_name="Shop")
>>> read_meta(conn)
{'schema_version': '1', 'team_name': 'Shop'}
>>> origin_of(conn).source, file_info(Path("m.sqlite"), conn)["syncs"]
('mirror', 0)
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd

from invtools._types import TXS_PATH
from invtools.api.endpoints import require_locations
from invtools.errors import ConfigError, LockedError
from invtools.frames.provenance import Provenance, utc_stamp

__all__ = [
    "default_path",
    "connect",
    "inspect",
    "peek",
    "init_schema",
    "SYNCS_SHOWN",
    "write_transaction",
    "sync_lock",
    "read_meta",
    "set_meta",
    "check_team",
    "origin_of",
    "file_info",
    "stage",
    "store_detail",
]

#: Marks an invtools mirror file (``PRAGMA application_id``), ASCII "invm".
APP_ID = 0x696E766D
SCHEMA_VERSION = 1

#: Columns of ``syncs`` that the package names otherwise (the file keeps its names):
#: ``syncs_df()`` shows them so (its key ``sync_id``, as ``changes_df()`` names it).
SYNCS_SHOWN = {"id": "sync_id", "window_seconds": "look_back_seconds"}

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS transactions (
    id INTEGER PRIMARY KEY,
    revision INTEGER NOT NULL,
    t_ms INTEGER NOT NULL,               -- transaction_time, epoch milliseconds
    removed_at TEXT,                     -- NULL while the list still shows it
    removed_sync INTEGER
);
CREATE INDEX IF NOT EXISTS transactions_by_time ON transactions (t_ms);
CREATE TABLE IF NOT EXISTS revisions (
    id INTEGER NOT NULL,
    revision INTEGER NOT NULL,
    t_ms INTEGER NOT NULL,
    total_quantity REAL,
    row_json TEXT NOT NULL,
    sync_id INTEGER NOT NULL,            -- the sync that first saw this revision
    PRIMARY KEY (id, revision)
);
CREATE TABLE IF NOT EXISTS details (
    id INTEGER NOT NULL,
    revision INTEGER NOT NULL,
    line_count INTEGER NOT NULL,
    detail_json TEXT NOT NULL,
    fetched_at TEXT NOT NULL,
    PRIMARY KEY (id, revision)
);
CREATE TABLE IF NOT EXISTS staging (
    id INTEGER PRIMARY KEY,
    revision INTEGER NOT NULL,
    t_ms INTEGER NOT NULL,
    row_json TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS syncs (
    id INTEGER PRIMARY KEY,
    started_at TEXT NOT NULL,
    finished_at TEXT NOT NULL,
    kind TEXT NOT NULL,
    window_seconds REAL,                 -- the sync's look_back, in seconds (NULL: full)
    anchor_ms INTEGER,
    cutoff_ms INTEGER,
    new INTEGER NOT NULL,
    changed INTEGER NOT NULL,
    removed INTEGER NOT NULL,
    unchanged INTEGER NOT NULL,
    requests INTEGER NOT NULL,
    list_pages INTEGER NOT NULL,
    details_fetched INTEGER NOT NULL,
    details_reused INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS changes (
    sync_id INTEGER NOT NULL,
    transaction_id INTEGER NOT NULL,
    change TEXT NOT NULL,
    old_revision INTEGER,
    new_revision INTEGER,
    old_total_quantity REAL,
    new_total_quantity REAL,
    old_t_ms INTEGER,
    new_t_ms INTEGER,
    backdated INTEGER
);
CREATE INDEX IF NOT EXISTS changes_by_sync ON changes (sync_id);
CREATE TABLE IF NOT EXISTS names (       -- the team's lists as the last sync read them
    kind TEXT NOT NULL,                  -- items, partners, locations, members
    id INTEGER NOT NULL,
    name TEXT,
    sku TEXT,
    barcode TEXT,
    PRIMARY KEY (kind, id)
);
"""


# ------------------------------------------------------------------------------ the file


def default_path(team_id: int, base_url: str) -> Path:
    """The mirror file of one team of one service (``base_url``) under the user data
    directory. Team ids are only unique within a service (the stand-in server's demo teams
    have ids a real team may have), hence the short hash of the base URL in the name.

    >>> default_path(7, "https://rest.boxhero-app.com").name
    'transactions-team-7-1ba8b413.sqlite'
    """
    import platformdirs

    folder = Path(platformdirs.user_data_dir("invtools")) / "mirrors"
    service = hashlib.sha256(base_url.encode()).hexdigest()[:8]
    return folder / f"transactions-team-{int(team_id)}-{service}.sqlite"


@contextlib.contextmanager
def connect(path: Path, *, readonly: bool = False) -> Iterator[sqlite3.Connection]:
    """A connection to the file in autocommit mode (transactions are opened explicitly with
    :func:`write_transaction`). It never creates the file (the mirror makes it private first,
    with :func:`invtools._files.private_file`): a file that is gone is a :class:`ConfigError`,
    and so is a file that is not SQLite or is damaged, each naming the file and what to do.
    ``readonly``: a file (or folder) the user may only read, read as :func:`peek` does."""
    try:
        if readonly:
            conn = peek(path)
        else:
            conn = sqlite3.connect(
                _uri(path, "mode=rw"), uri=True, isolation_level=None, timeout=30
            )
        with contextlib.closing(conn):
            if not readonly:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")  # durable across a killed process
            yield conn
    except (FileNotFoundError, sqlite3.DatabaseError) as exc:
        if not Path(path).exists():
            raise ConfigError(
                f"the mirror file {path} no longer exists (removed or moved?); open it "
                "again with TransactionMirror(path, client) to start a new one"
            ) from exc
        if isinstance(exc, sqlite3.DatabaseError) and (readonly or _DAMAGE.search(str(exc))):
            raise ConfigError(
                f"{path} is not a readable SQLite file ({exc}); it is not an invtools mirror, "
                "or it is damaged: move it away and sync into a new file"
            ) from exc
        if getattr(exc, "sqlite_errorname", "").startswith(("SQLITE_FULL", "SQLITE_IOERR")):
            raise ConfigError(
                f"the mirror file {path} could not be written ({exc}): the disk is full, or "
                "your disk quota or the size a file may have is reached. Nothing was "
                "half-written and the details fetched so far are kept: free some space and "
                "sync again"
            ) from exc
        raise


_DAMAGE = re.compile(r"not a database|malformed|corrupt|file is encrypted")


def inspect(path: Path) -> None:
    """Check an existing file before anything is written to it, reading only: a SQLite file,
    an invtools mirror (or an empty SQLite file), of a schema this version reads. Raises
    :class:`ConfigError` naming the file and what to do."""
    with connect(path, readonly=True) as conn:
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        version = read_meta(conn).get("schema_version") if "meta" in tables else None
    if app_id != APP_ID and (app_id != 0 or tables):
        raise ConfigError(
            f"{path} is a SQLite file but not an invtools transaction mirror; "
            "give the path of a new file or of an existing mirror"
        )
    if version is not None and int(version) > SCHEMA_VERSION:
        raise ConfigError(
            f"{path} was written by a newer invtools (mirror schema {version}, "
            f"this one reads {SCHEMA_VERSION}); upgrade invtools, or sync into a "
            "new file. The file was not changed."
        )


def peek(path: Path) -> sqlite3.Connection:
    """A read-only connection to the file that creates, changes and removes nothing, for
    displays (close it when done).

    With no journal files next to it, no connection has the file open and it is whole: it is
    read as immutable, so SQLite opens no journal file either. With both (another connection
    has it open, or one was killed), it is read through them, read-only. Raises
    ``FileNotFoundError`` when the file is gone and ``sqlite3.Error`` when it cannot be read.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(str(path))
    journals = [Path(f"{path}{suffix}").exists() for suffix in ("-wal", "-shm")]
    if any(journals) and not all(journals):
        raise sqlite3.OperationalError("another connection is opening or closing the file")
    query = "mode=ro" if any(journals) else "mode=ro&immutable=1"
    return sqlite3.connect(_uri(path, query), uri=True, isolation_level=None)


def _uri(path: Path, query: str) -> str:
    """The file's ``file:`` URI (percent-encoded, so any file name works) with ``query``."""
    return f"{Path(path).absolute().as_uri()}?{query}"


def init_schema(conn: sqlite3.Connection) -> None:
    """Create the tables of a new file, or of one :func:`inspect` accepted."""
    with write_transaction(conn):
        for stmt in _SCHEMA.split(";"):
            conn.execute(stmt)
        conn.execute(f"PRAGMA application_id = {APP_ID}")
        conn.execute(
            "INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
        )


@contextlib.contextmanager
def write_transaction(conn: sqlite3.Connection) -> Iterator[None]:
    """One SQLite write transaction: committed on success, rolled back on any exception
    (KeyboardInterrupt included)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


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
    unlinked file.

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
    with contextlib.ExitStack() as held:  # on the way out: unlocked, then closed
        fd = os.open(path.with_name(path.name + ".lock"), os.O_CREAT | os.O_RDWR, 0o600)
        held.callback(os.close, fd)
        try:
            _lock(fd, take=True)
        except (BlockingIOError, PermissionError):  # held: EWOULDBLOCK (POSIX), EACCES (Windows)
            raise LockedError(
                f"another sync of this mirror is running ({path}); wait for it to finish, "
                "then sync again"
            ) from None
        held.callback(_lock, fd, take=False)
        yield


def read_meta(conn: sqlite3.Connection) -> dict[str, str]:
    """The ``meta`` table as a dict."""
    return dict(conn.execute("SELECT key, value FROM meta").fetchall())


def set_meta(conn: sqlite3.Connection, **values: str) -> None:
    """Set ``meta`` values; call inside :func:`write_transaction`."""
    conn.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", list(values.items()))


def check_team(
    conn: sqlite3.Connection, path: Path, client: Any, team: Any, *, claim: bool = True
) -> None:
    """Refuse a client of another service or team; then claim the file for this one
    (a Location-mode team only: nothing is written for a team that cannot sync, nor with
    ``claim=False``)."""
    stored = read_meta(conn)
    meta = {"team_id": str(team.id), "team_name": str(team.name), "base_url": str(client.base_url)}
    whose = f"{path} mirrors team {stored.get('team_name')!r}"
    if stored.get("base_url", meta["base_url"]) != meta["base_url"]:
        raise ConfigError(
            f"{whose} of the API at {stored['base_url']}, but this client talks to "
            f"{meta['base_url']}. Use another file for that service, e.g. "
            "TransactionMirror(None, client) for its default file."
        )
    if stored.get("team_id", meta["team_id"]) != meta["team_id"]:
        raise ConfigError(
            f"{whose} (id {stored['team_id']}), but this client's token belongs to team "
            f"{team.name!r} (id {team.id}). Use another file for that team, e.g. "
            "TransactionMirror(None, client) for its default file."
        )
    # The client's own TeamModeError, naming the team, its mode and what works.
    require_locations(team, TXS_PATH)
    # Claim a new file; note a renamed team (the id is what counts), and the base URL of a
    # file claimed before it was recorded.
    if "team_id" not in stored:
        meta["team_mode"] = str(getattr(team, "mode", ""))
    changed = {k: v for k, v in meta.items() if stored.get(k) != v}
    if claim and changed:
        with write_transaction(conn):
            set_meta(conn, **changed)


# ------------------------------------------------------------------------------ what it holds


def origin_of(conn: sqlite3.Connection) -> Provenance:
    """Whose rows these are and how fresh: the file's team and service, when its last sync
    finished, and the moment its rows are as of (the service's clock when that sync began)."""
    meta = read_meta(conn)
    finished, started = conn.execute(
        "SELECT finished_at, started_at FROM syncs ORDER BY id DESC LIMIT 1"
    ).fetchone() or (None, None)
    # on the service's clock: its clock when the last sync began (a file from before it was
    # kept: that sync's start on this machine's clock)
    as_of = meta.get("as_of") or (None if started is None else pd.Timestamp(started))
    return Provenance(
        source="mirror",
        team_id=int(meta["team_id"]) if "team_id" in meta else None,
        team_name=meta.get("team_name"),
        base_url=meta.get("base_url"),
        endpoint=TXS_PATH,
        as_of=None if as_of is None else pd.Timestamp(as_of).to_pydatetime(),
        fetched_at=finished,
        data_as_of=None if as_of is None else pd.Timestamp(as_of).to_pydatetime(),
    )


def file_info(path: Path, conn: sqlite3.Connection) -> dict:
    """What :meth:`TransactionMirror.info` says, read from ``conn``."""
    one = lambda sql: conn.execute(sql).fetchone()[0]  # noqa: E731
    last = conn.execute("SELECT finished_at, kind FROM syncs ORDER BY id DESC LIMIT 1").fetchone()
    last_full = one("SELECT max(finished_at) FROM syncs WHERE kind = 'full'")
    origin = origin_of(conn)
    return {
        "path": str(path),
        "team_id": origin.team_id,
        "team_name": origin.team_name,
        "base_url": origin.base_url,
        "transactions": one("SELECT count(*) FROM transactions WHERE removed_at IS NULL"),
        "removed": one("SELECT count(*) FROM transactions WHERE removed_at IS NOT NULL"),
        "lines": one(
            "SELECT coalesce(sum(d.line_count), 0) FROM transactions t "
            "JOIN details d ON d.id = t.id AND d.revision = t.revision "
            "WHERE t.removed_at IS NULL"
        ),
        "revisions": one("SELECT count(*) FROM revisions"),
        "syncs": one("SELECT count(*) FROM syncs"),
        "last_sync": None if last is None else pd.Timestamp(last[0]),
        "last_sync_kind": None if last is None else last[1],
        "last_full_sync": None if last_full is None else pd.Timestamp(last_full),
        "interrupted_sync_pending": one("SELECT count(*) FROM staging") > 0,
    }


# ------------------------------------------------------------------------------ what a sync writes


def stage(conn: sqlite3.Connection, stamped: list[tuple[int, dict]]) -> None:
    """Stage list rows ``(t_ms, row)`` in one committed transaction; a row met twice (the
    list moved under the walk) keeps its highest revision."""
    with write_transaction(conn):
        conn.executemany(
            """INSERT INTO staging VALUES (?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET
               revision = excluded.revision, t_ms = excluded.t_ms, row_json = excluded.row_json
               WHERE excluded.revision > staging.revision""",
            [(int(row["id"]), int(row["revision"]), ms, json.dumps(row)) for ms, row in stamped],
        )


def store_detail(conn: sqlite3.Connection, detail: dict) -> None:
    """Store one fetched detail (with its lines), committed at once, so a killed or failed
    sync keeps every detail that arrived and a re-run does not fetch it again. A commit costs
    some 0.1 ms; a detail request 200 ms at the service's pace.

    >>> conn = sqlite3.connect(":memory:", isolation_level=None)
    >>> init_schema(conn)
    >>> store_detail(conn, {"id": 1, "revision": 2, "items": [{"id": 9}]})
    >>> conn.execute("SELECT id, revision, line_count FROM details").fetchall()
    [(1, 2, 1)]
    """
    lines = len(detail.get("items") or [])
    row = (int(detail["id"]), int(detail["revision"]), lines, json.dumps(detail), utc_stamp())
    with write_transaction(conn):
        conn.execute("INSERT OR IGNORE INTO details VALUES (?, ?, ?, ?, ?)", row)
