"""TransactionMirror: a local SQLite copy of one team's transactions, kept in sync by revision.

The API has no change feed and no "updated since" filter: the only way to see edits is to walk
the transaction list and compare each row's ``revision`` with the one stored (spec, part 4).
Lines (the items of a transaction) come only from the detail endpoint, one request each, so the
mirror fetches a detail only when a transaction is new or its revision went up, and keeps it
for good: a transaction's detail at a given revision does not change.

One file per team and service. It records the team's id and name and the API's base URL (never
a token) and refuses to sync a client of another team or another service into it. One sync at
a time: ``sync()`` holds an OS lock on ``<file>.lock`` and refuses to start while another sync
of the same file runs (another notebook, say). Inside (all plain SQLite, readable with any
tool)::

    meta          team id/name/mode, API base URL, schema version
    transactions  one row per transaction ever seen: current revision, removed_at (or NULL)
    revisions     every (id, revision) row ever applied, as the raw JSON the list returned
    details       every (id, revision) detail fetched, raw JSON with its lines
    staging       list rows of the running sync, committed page by page
    changes       the change log: one row per new / edited / removed transaction per sync
    syncs         one row per completed sync (kind, window, counts, requests sent)

``sync()`` is four plain steps, each safe to interrupt:

1. walk the list (fresh pages, ``refresh=True``) into ``staging``, committed per page;
2. fetch the details that are not stored yet (new rows, raised revisions), committed in small
   batches, so a killed or failed sync keeps every detail that arrived;
3. window syncs only: ask the detail endpoint about stored rows inside the window that the
   walk did not see (404 = deleted; otherwise the row was edited out of the window);
4. apply: update current rows, mark the missing ones removed, append history and change log,
   record the run -- all in ONE SQLite transaction, so the file is always consistent.

A sync that died anywhere is simply run again: it re-walks the list (cheap) and skips every
detail already stored.

>>> import tempfile, os
>>> from invtools.client import Client
>>> from invtools.sandbox import serve
>>> with serve(rate_limit=0, size=50) as sb, tempfile.TemporaryDirectory() as tmp:
...     client = Client(sb.tokens["shop"], base_url=sb.base_url, cache=False, rate_limit=0,
...                     progress=False)
...     mirror = TransactionMirror(os.path.join(tmp, "shop.sqlite"), client)
...     first, again = mirror.sync(), mirror.sync()
...     client.close()
>>> first.kind, first.new, again.new, again.unchanged, again.requests   # 1 list page, no detail
('full', 50, 0, 50, 1)
"""

from __future__ import annotations

import contextlib
import hashlib
import html
import json
import os
import sqlite3
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterable, Iterator

import pandas as pd

from invtools import frames
from invtools.client import TXS_PATH
from invtools.errors import ConfigError, NotFoundError

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]
try:  # Windows
    import msvcrt
except ImportError:
    msvcrt = None  # type: ignore[assignment]

__all__ = ["TransactionMirror", "SyncReport", "CHANGE_KINDS"]

#: Marks an invtools mirror file (``PRAGMA application_id``), ASCII "invm".
_APP_ID = 0x696E766D
_SCHEMA_VERSION = 1

#: What a change-log row can say about a transaction.
#: ``backdated-new``: new, with a transaction time before the newest one the mirror held, i.e.
#: it rewrote history already mirrored. ``restored``: seen again after being marked removed
#: (only possible when a removal was inferred from a list that changed during the walk).
CHANGE_KINDS = ["new", "backdated-new", "edited", "removed", "restored"]

# Details are committed at least this often, so a killed sync loses at most this much work.
_COMMIT_EVERY_ROWS = 50
_COMMIT_EVERY_SECONDS = 1.0

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
    window_seconds REAL,
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
"""


# --------------------------------------------------------------------------- small pure helpers

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _to_ms(wire_time: str) -> int:
    """``"2026-05-02T01:10:00.000Z"`` -> epoch milliseconds (exact, no float rounding).

    >>> _to_ms("1970-01-01T00:00:01.500Z")
    1500
    """
    dt = datetime.fromisoformat(wire_time.replace("Z", "+00:00"))
    if dt.tzinfo is None:  # the wire always says Z; be lenient with a naive time
        dt = dt.replace(tzinfo=timezone.utc)
    return (dt - _EPOCH) // timedelta(milliseconds=1)


def _ms_to_ts(ms: int | None) -> pd.Timestamp | None:
    return None if ms is None else pd.Timestamp(ms, unit="ms", tz="UTC")


def _now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _parse_window(window: Any) -> pd.Timedelta | None:
    """A window as a pandas Timedelta: ``"90D"``, ``"12h"``, a ``timedelta`` or ``None``.

    >>> _parse_window("90D")
    Timedelta('90 days 00:00:00')
    """
    if window is None:
        return None
    try:
        td = pd.Timedelta(window)
    except (ValueError, TypeError) as exc:
        raise ConfigError(
            f"window={window!r} is not a duration; give a pandas Timedelta string such as "
            "'90D' or '12h', or a datetime.timedelta"
        ) from exc
    if pd.isna(td) or td <= pd.Timedelta(0):
        raise ConfigError(f"window={window!r} must be a positive duration, e.g. '90D'")
    return td


def _fmt_time(ts: pd.Timestamp | None) -> str:
    return "-" if ts is None else ts.strftime("%Y-%m-%d %H:%M UTC")


def _fmt_window(td: pd.Timedelta | None) -> str:
    if td is None:
        return "-"
    if td % pd.Timedelta(days=1) == pd.Timedelta(0):
        return f"{td.days} days"
    return str(td)


# --------------------------------------------------------------------------------- the report

_CHANGE_COLUMNS = [
    "transaction_id", "change", "old_revision", "new_revision", "old_total_quantity",
    "new_total_quantity", "old_transaction_time", "new_transaction_time", "backdated",
]


def _changes_frame(records: list[tuple]) -> pd.DataFrame:
    """Change-log tuples (sync_id, synced_at, id, change, old_rev, new_rev, old_q, new_q,
    old_ms, new_ms, backdated) -> the typed change-log frame (with sync_id and synced_at)."""
    cols = list(zip(*records)) if records else [[] for _ in range(11)]
    t = "datetime64[ms, UTC]"
    return pd.DataFrame({
        "sync_id": pd.array(cols[0], dtype="Int64"),
        "synced_at": pd.to_datetime(pd.Series(cols[1], dtype="string"), utc=True).astype(t),
        "transaction_id": pd.array(cols[2], dtype="Int64"),
        "change": pd.Categorical(cols[3], categories=CHANGE_KINDS),
        "old_revision": pd.array(cols[4], dtype="Int64"),
        "new_revision": pd.array(cols[5], dtype="Int64"),
        "old_total_quantity": pd.array(cols[6], dtype="Float64").astype("float64"),
        "new_total_quantity": pd.array(cols[7], dtype="Float64").astype("float64"),
        "old_transaction_time": pd.to_datetime(pd.array(cols[8], dtype="Int64"),
                                               unit="ms", utc=True).astype(t),
        "new_transaction_time": pd.to_datetime(pd.array(cols[9], dtype="Int64"),
                                               unit="ms", utc=True).astype(t),
        "backdated": pd.array([None if b is None else bool(b) for b in cols[10]],
                              dtype="boolean"),
    })


@dataclass(frozen=True, eq=False)
class SyncReport:
    """What one :meth:`TransactionMirror.sync` did. Displays itself in a notebook.

    ``new`` counts backdated-new too; ``changed`` counts edited and restored rows;
    ``requests`` is what was actually sent over the network during the sync (cache hits are in
    ``from_cache``); ``kind`` is ``"full"`` (the whole list was walked) or ``"window"`` (only
    rows from ``cutoff`` = ``anchor`` - ``window`` on, ``anchor`` being the newest transaction
    time in the list). ``changes`` is the change log of this sync as a DataFrame.
    """

    team_id: int
    team_name: str
    kind: str
    window: pd.Timedelta | None
    anchor: pd.Timestamp | None
    cutoff: pd.Timestamp | None
    new: int
    changed: int
    removed: int
    unchanged: int
    requests: int
    from_cache: int
    list_pages: int
    details_fetched: int
    details_reused: int
    started_at: pd.Timestamp
    finished_at: pd.Timestamp
    changes: pd.DataFrame = field(repr=False)

    @property
    def backdated_new(self) -> int:
        """How many of the new transactions were backdated into already-mirrored history."""
        return int((self.changes["change"] == "backdated-new").sum())

    @property
    def seconds(self) -> float:
        return (self.finished_at - self.started_at).total_seconds()

    def _lines(self) -> list[str]:
        what = "Full sync" if self.kind == "full" else "Window sync"
        head = f"{what} of team {self.team_name!r} (id {self.team_id})"
        if self.window is not None:
            head += (f", window {_fmt_window(self.window)} back from {_fmt_time(self.anchor)}"
                     " (the newest transaction time in the list)")
        lines = [head + ":"]
        bd = self.backdated_new
        lines.append(
            f"  {self.new} new" + (f" ({bd} backdated)" if bd else "")
            + f", {self.changed} changed, {self.removed} removed, {self.unchanged} unchanged"
        )
        lines.append(
            f"  {self.requests} requests sent ({self.list_pages} list pages, "
            f"{self.details_fetched} details), {self.from_cache} from cache, "
            f"{self.seconds:.1f} s"
            + (f"; {self.details_reused} details reused from an interrupted sync"
               if self.details_reused else "")
        )
        if self.kind == "window":
            lines.append(
                f"  Only transactions from {_fmt_time(self.cutoff)} on were compared: edits to "
                "older transactions are not seen until the next full sync (sync() without "
                "window), and removals were only inferred inside the window."
            )
        elif self.window is not None:
            lines.append("  The window reached the end of the list, so this was a full sync.")
        return lines

    def __str__(self) -> str:
        text = "\n".join(self._lines())
        if len(self.changes):
            shown = self.changes.drop(columns=["sync_id", "synced_at"]).head(10)
            text += "\n" + shown.to_string(index=False)
            if len(self.changes) > 10:
                text += f"\n  ... {len(self.changes) - 10} more in report.changes"
        return text

    def __repr__(self) -> str:
        return (f"SyncReport(kind={self.kind!r}, new={self.new}, changed={self.changed}, "
                f"removed={self.removed}, unchanged={self.unchanged}, "
                f"requests={self.requests}, window={_fmt_window(self.window)!r})")

    def _repr_html_(self) -> str:
        lines = self._lines()
        out = [f"<b>{html.escape(lines[0])}</b>", "<ul>"]
        out += [f"<li>{html.escape(line.strip())}</li>" for line in lines[1:]]
        out.append("</ul>")
        if len(self.changes):
            shown = self.changes.drop(columns=["sync_id", "synced_at"]).head(10)
            out.append(shown.to_html(index=False))
            if len(self.changes) > 10:
                out.append(f"<p>... {len(self.changes) - 10} more rows in "
                           "<code>report.changes</code></p>")
        else:
            out.append("<p>No changes.</p>")
        return "\n".join(out)


# --------------------------------------------------------------------------------- the mirror

@dataclass
class _Walk:
    """Where step 1 got to: the anchor/cutoff it used, pages read, whether it saw the end."""

    anchor_ms: int | None = None
    cutoff_ms: int | None = None
    pages: int = 0
    complete: bool = False


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


class TransactionMirror:
    """A local SQLite copy of one team's transactions and their lines, synced by revision.

    ``path=None`` uses a file per team and service (base URL) in the user data directory
    (needs ``client``).
    ``client`` may be ``None`` to read an existing file offline; :meth:`sync` needs one.
    The file is created readable by its owner only (0600) and never holds a token.

    >>> mirror = TransactionMirror(None, client)                    # doctest: +SKIP
    >>> report = mirror.sync()            # first sync: full        # doctest: +SKIP
    >>> report = mirror.sync(window="90D")  # recent part only      # doctest: +SKIP
    >>> mirror.lines_df().shape           # no network              # doctest: +SKIP
    """

    def __init__(self, path: str | os.PathLike | None, client: Any = None) -> None:
        self.client = client
        team = client.team() if client is not None else None
        if path is None:
            if team is None:
                raise ConfigError(
                    "TransactionMirror(None, client=None): give a path to read a mirror "
                    "offline, or a client so the per-team default file can be found"
                )
            path = default_path(team.id, client.base_url)
        self.path = Path(path).expanduser()
        if client is not None and not self.path.exists():
            _require_locations(client)  # a team that cannot sync gets no file
        self._create_private_file()
        with self._connect() as conn:
            self._init_schema(conn)
            if team is not None:
                self._check_team(conn, client, team)

    # ---- file and connection

    def _create_private_file(self) -> None:
        # Created 0600 before SQLite opens it: SQLite gives its -wal/-shm files the same mode.
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o600)
        os.close(fd)
        with contextlib.suppress(OSError):  # tighten a file made by someone else, if we own it
            os.chmod(self.path, 0o600)

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        """A connection in autocommit mode; transactions are opened explicitly with
        :func:`_transaction`, so what is atomic is visible in the code."""
        conn = sqlite3.connect(self.path, isolation_level=None, timeout=30)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")  # durable across a killed process
            yield conn
        except sqlite3.DatabaseError as exc:
            if "not a database" in str(exc):
                raise ConfigError(
                    f"{self.path} is not a SQLite file; give the path of a new file or of an "
                    "invtools mirror"
                ) from exc
            raise
        finally:
            conn.close()

    def _init_schema(self, conn: sqlite3.Connection) -> None:
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        has_tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        if app_id != _APP_ID and (app_id != 0 or has_tables):
            raise ConfigError(
                f"{self.path} is a SQLite file but not an invtools transaction mirror; "
                "give the path of a new file or of an existing mirror"
            )
        with _transaction(conn):
            for stmt in _SCHEMA.split(";"):
                if stmt.strip():
                    conn.execute(stmt)
            conn.execute(f"PRAGMA application_id = {_APP_ID}")
            conn.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)",
                         (str(_SCHEMA_VERSION),))
        version = int(_meta(conn, "schema_version"))
        if version != _SCHEMA_VERSION:
            raise ConfigError(
                f"{self.path} was written by another invtools version (mirror schema "
                f"{version}, this one reads {_SCHEMA_VERSION}); sync into a new file"
            )

    def _check_team(self, conn: sqlite3.Connection, client: Any, team: Any) -> None:
        """Refuse a client of another service or team; then claim the file for this one
        (a Location-mode team only: nothing is written for a team that cannot sync)."""
        base_url = str(client.base_url)
        stored_url = _meta(conn, "base_url")
        if stored_url is not None and stored_url != base_url:
            raise ConfigError(
                f"{self.path} mirrors team {_meta(conn, 'team_name')!r} of the API at "
                f"{stored_url}, but this client talks to {base_url}. Use another file for that "
                "service, e.g. TransactionMirror(None, client) for its default file."
            )
        stored = _meta(conn, "team_id")
        if stored is not None and int(stored) != int(team.id):
            raise ConfigError(
                f"{self.path} mirrors team {_meta(conn, 'team_name')!r} (id {stored}), but "
                f"this client's token belongs to team {team.name!r} (id {team.id}). Use "
                "another file for that team, e.g. TransactionMirror(None, client) for its "
                "default file."
            )
        _require_locations(client)
        if stored is None:
            with _transaction(conn):
                _set_meta(conn, team_id=str(team.id), team_name=str(team.name),
                          team_mode=str(getattr(team, "mode", "")), base_url=base_url)
            return
        if stored_url is None:  # a file claimed before the base URL was recorded
            with _transaction(conn):
                _set_meta(conn, base_url=base_url)
        if _meta(conn, "team_name") != str(team.name):  # teams get renamed; the id is what counts
            with _transaction(conn):
                _set_meta(conn, team_name=str(team.name))

    def _require_client(self) -> Any:
        if self.client is None:
            raise ConfigError(
                "this mirror was opened without a client (read-only); open it as "
                "TransactionMirror(path, client) to sync"
            )
        return self.client

    # ---- sync

    def sync(self, window: Any = None, *, progress: bool | None = None) -> SyncReport:
        """Bring the mirror up to date; return a :class:`SyncReport`.

        ``window=None`` walks the whole list (a *full* sync). ``window="90D"`` (a pandas
        Timedelta string or a ``timedelta``) walks only rows whose transaction time is at most
        that far before the newest transaction time in the list -- the anchor, taken from the
        data rather than the clock so the result does not depend on when you run it. A window
        sync does not see edits to older transactions, nor their removal, until the next full
        sync; its report says so. A window that reaches the end of the list is a full sync.

        Requests: one per list page, plus one detail per new transaction or raised revision
        (details are kept for good), plus, for a window sync, one per stored transaction inside
        the window the list no longer shows (404 means it was deleted). ``progress`` shows
        progress bars (default: the client's setting).

        If it is interrupted (exception, Ctrl-C, killed process), nothing applied is lost and
        the file stays consistent; run it again: details already stored are not re-fetched.

        Only one sync of a file runs at a time: while one runs (in another notebook, say),
        another raises :class:`~invtools.errors.ConfigError`. A team not in Location mode
        raises :class:`~invtools.errors.TeamModeError` before anything is sent or written.

        >>> report = mirror.sync()                                          # doctest: +SKIP
        >>> report.new, report.changed, report.removed, report.requests     # doctest: +SKIP
        """
        client = self._require_client()
        win = _parse_window(window)
        started = pd.Timestamp.now(tz="UTC")
        team = client.team()
        _require_locations(client)  # before the lock file or anything else is written
        # Two syncs of one file would share the staging table: the second one's re-walk
        # empties it under the first, whose apply step would then mark every row removed.
        with _sync_lock(self.path), self._connect() as conn:
            self._check_team(conn, client, team)
            with client.measure() as m:
                walk = self._walk_list(conn, client, win, progress)               # step 1
                fetched, reused = self._fetch_new_details(conn, client, progress)  # step 2
                if not walk.complete:
                    fetched += self._check_unseen(conn, client, walk.cutoff_ms)    # step 3
            return self._apply(                                                     # step 4
                conn, team, walk, win, started,
                requests=int(m.sent), from_cache=int(m.from_cache),
                details_fetched=fetched, details_reused=reused,
            )

    def _walk_list(self, conn: sqlite3.Connection, client: Any, win: pd.Timedelta | None,
                   progress: bool | None) -> _Walk:
        """Step 1: stage the list rows (fresh, not from cache), committed page by page."""
        walk = _Walk()
        with _transaction(conn):
            conn.execute("DELETE FROM staging")  # leftovers of an interrupted sync: re-walk
        pages = client.pages(TXS_PATH, refresh=True, progress=progress)
        try:
            for page in pages:
                walk.pages += 1
                stamped = [(_to_ms(row["transaction_time"]), row) for row in page.rows]
                if walk.anchor_ms is None and stamped:
                    walk.anchor_ms = max(ms for ms, _ in stamped)
                    if win is not None:
                        walk.cutoff_ms = walk.anchor_ms - int(win / pd.Timedelta(milliseconds=1))
                keep = [(ms, row) for ms, row in stamped
                        if walk.cutoff_ms is None or ms >= walk.cutoff_ms]
                _stage(conn, keep)
                if len(keep) < len(stamped):
                    return walk  # the list is newest first: everything in the window is staged
            walk.complete = True
            return walk
        finally:
            close = getattr(pages, "close", None)
            if close is not None:
                close()

    def _fetch_new_details(self, conn: sqlite3.Connection, client: Any,
                           progress: bool | None) -> tuple[int, int]:
        """Step 2: details of staged rows that are new or whose revision changed, unless a
        previous (interrupted) sync stored them already. Returns (fetched, reused)."""
        needed = conn.execute(
            """SELECT s.id, s.revision, d.id IS NOT NULL FROM staging s
               LEFT JOIN transactions t ON t.id = s.id
               LEFT JOIN details d ON d.id = s.id AND d.revision = s.revision
               WHERE t.id IS NULL OR t.revision != s.revision OR t.removed_at IS NOT NULL
               ORDER BY s.t_ms DESC, s.id DESC"""
        ).fetchall()
        todo = [(tid, rev) for tid, rev, stored in needed if not stored]
        gone: list[int] = []
        bar = _progress_bar(len(todo), progress, client)
        try:
            with _DetailBatch(conn) as batch:
                for tid, rev in todo:
                    try:
                        # An explicit revision never changes, so the client may cache it forever.
                        batch.add(client.transaction(tid, revision=rev))
                    except NotFoundError:
                        gone.append(tid)  # deleted since the walk: step 4 treats it as unseen
                    bar.update(1)
        finally:
            bar.close()
        if gone:
            with _transaction(conn):
                conn.executemany("DELETE FROM staging WHERE id = ?", [(i,) for i in gone])
        return len(todo), len(needed) - len(todo)

    def _check_unseen(self, conn: sqlite3.Connection, client: Any, cutoff_ms: int | None) -> int:
        """Step 3 (window syncs): a stored row inside the window that the walk did not see was
        deleted (404) -- or edited to a time before the window, which the detail shows."""
        unseen = [tid for (tid,) in conn.execute(
            "SELECT id FROM transactions WHERE removed_at IS NULL AND t_ms >= ? "
            "AND id NOT IN (SELECT id FROM staging)", (cutoff_ms or 0,))]
        with _DetailBatch(conn) as batch:
            for tid in unseen:
                try:
                    detail = client.transaction(tid, refresh=True)
                except NotFoundError:
                    continue  # deleted: step 4 marks it removed
                batch.add(detail)
                row = {k: v for k, v in detail.items() if k != "items"}
                _stage(conn, [(_to_ms(row["transaction_time"]), row)])
        return len(unseen)

    def _apply(self, conn: sqlite3.Connection, team: Any, walk: _Walk,
               win: pd.Timedelta | None, started: pd.Timestamp, **counts: int) -> SyncReport:
        """Step 4, ONE transaction: current rows, removals, history, change log, the run."""
        kind = "full" if walk.complete else "window"
        with _transaction(conn):
            finished = _now_iso()
            prev_newest = conn.execute(
                "SELECT max(t_ms) FROM transactions WHERE removed_at IS NULL").fetchone()[0]
            sync_id = conn.execute(
                "INSERT INTO syncs VALUES (NULL, ?, ?, ?, ?, ?, ?, 0, 0, 0, 0, ?, ?, ?, ?)",
                (started.isoformat(), finished, kind,
                 None if win is None else win.total_seconds(), walk.anchor_ms, walk.cutoff_ms,
                 counts["requests"], walk.pages, counts["details_fetched"],
                 counts["details_reused"]),
            ).lastrowid
            differ = conn.execute(
                """SELECT s.id, s.revision, s.t_ms, s.row_json,
                          t.revision, t.t_ms, t.removed_at, r.total_quantity
                   FROM staging s LEFT JOIN transactions t ON t.id = s.id
                   LEFT JOIN revisions r ON r.id = t.id AND r.revision = t.revision
                   WHERE t.id IS NULL OR t.revision != s.revision OR t.removed_at IS NOT NULL"""
            ).fetchall()
            unchanged = conn.execute(
                """SELECT count(*) FROM staging s JOIN transactions t ON t.id = s.id
                   WHERE t.revision = s.revision AND t.removed_at IS NULL""").fetchone()[0]
            # Unseen = removed; a window sync only judges rows inside its window (step 3
            # already staged those that merely moved out of it).
            unseen = conn.execute(
                """SELECT t.id, t.revision, t.t_ms, r.total_quantity, r.row_json
                   FROM transactions t JOIN revisions r ON r.id = t.id AND r.revision = t.revision
                   WHERE t.removed_at IS NULL AND t.id NOT IN (SELECT id FROM staging)
                   AND t.t_ms >= ?""",
                (walk.cutoff_ms if kind == "window" else -(2**62),),
            ).fetchall()

            changes: list[list] = []
            shown_rows: list[dict] = []  # the version each change-log row describes
            revisions, current = [], []
            for tid, rev, ms, row_json, old_rev, old_ms, removed_at, old_q in differ:
                row = json.loads(row_json)
                if old_rev is None:
                    change = ("backdated-new" if prev_newest is not None and ms < prev_newest
                              else "new")
                else:
                    change = "restored" if removed_at is not None else "edited"
                revisions.append((tid, rev, ms, row.get("total_quantity"), row_json, sync_id))
                current.append((tid, rev, ms))
                changes.append([sync_id, tid, change, old_rev, rev, old_q,
                                row.get("total_quantity"), old_ms, ms])
                shown_rows.append(row)
            for tid, rev, ms, qty, row_json in unseen:
                changes.append([sync_id, tid, "removed", rev, None, qty, None, ms, None])
                shown_rows.append(json.loads(row_json))

            conn.executemany("INSERT OR IGNORE INTO revisions VALUES (?, ?, ?, ?, ?, ?)",
                             revisions)
            conn.executemany(
                """INSERT INTO transactions VALUES (?, ?, ?, NULL, NULL)
                   ON CONFLICT (id) DO UPDATE SET revision = excluded.revision,
                   t_ms = excluded.t_ms, removed_at = NULL, removed_sync = NULL""", current)
            conn.executemany(
                "UPDATE transactions SET removed_at = ?, removed_sync = ? WHERE id = ?",
                [(finished, sync_id, row[0]) for row in unseen])
            backdated = _backdated_flags(shown_rows)
            conn.executemany("INSERT INTO changes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                             [c + [b] for c, b in zip(changes, backdated)])
            n = {k: sum(c[2] in ks for c in changes) for k, ks in
                 {"new": ("new", "backdated-new"), "changed": ("edited", "restored"),
                  "removed": ("removed",)}.items()}
            conn.execute(
                "UPDATE syncs SET new = ?, changed = ?, removed = ?, unchanged = ? WHERE id = ?",
                (n["new"], n["changed"], n["removed"], unchanged, sync_id))
            conn.execute("DELETE FROM staging")
        return SyncReport(
            team_id=int(team.id), team_name=str(team.name), kind=kind, window=win,
            anchor=_ms_to_ts(walk.anchor_ms), cutoff=_ms_to_ts(walk.cutoff_ms),
            new=n["new"], changed=n["changed"], removed=n["removed"], unchanged=unchanged,
            requests=counts["requests"], from_cache=counts["from_cache"],
            list_pages=walk.pages, details_fetched=counts["details_fetched"],
            details_reused=counts["details_reused"],
            started_at=started, finished_at=pd.Timestamp(finished),
            changes=self._changes(conn, sync_id),
        )

    # ---- reading (no network)

    def _changes(self, conn: sqlite3.Connection, sync_id: int | None = None) -> pd.DataFrame:
        where, args = ("WHERE c.sync_id = ?", (sync_id,)) if sync_id is not None else ("", ())
        records = conn.execute(
            f"""SELECT c.sync_id, s.finished_at, c.transaction_id, c.change, c.old_revision,
                       c.new_revision, c.old_total_quantity, c.new_total_quantity,
                       c.old_t_ms, c.new_t_ms, c.backdated
                FROM changes c JOIN syncs s ON s.id = c.sync_id {where}
                ORDER BY c.sync_id, coalesce(c.new_t_ms, c.old_t_ms) DESC, c.transaction_id DESC""",
            args,
        ).fetchall()
        return _changes_frame(records)

    def changes_df(self) -> pd.DataFrame:
        """The change log of every sync: sync_id, synced_at, transaction_id, change (new /
        backdated-new / edited / removed / restored), old/new revision, total quantity and
        transaction time, backdated (the frames rule, on the version described).

        >>> mirror.changes_df().groupby("change").size()        # doctest: +SKIP
        """
        with self._connect() as conn:
            return self._changes(conn)

    def transactions_df(self, *, include_removed: bool = False) -> pd.DataFrame:
        """The mirrored transaction rows, newest first, with the schema of
        :func:`invtools.frames.transactions_df`. ``include_removed=True`` adds the rows the
        list no longer shows and a ``removed_at`` column (NaT for current rows).

        >>> mirror.transactions_df().dtypes["transaction_time"]          # doctest: +SKIP
        datetime64[ms, UTC]
        """
        where = "" if include_removed else "WHERE t.removed_at IS NULL"
        with self._connect() as conn:
            fetched = conn.execute(
                f"""SELECT r.row_json, t.removed_at FROM transactions t
                    JOIN revisions r ON r.id = t.id AND r.revision = t.revision {where}
                    ORDER BY t.t_ms DESC, t.id DESC""").fetchall()
        df = frames.transactions_df([json.loads(row) for row, _ in fetched])
        if include_removed:
            df["removed_at"] = pd.to_datetime(
                pd.Series([r for _, r in fetched], dtype="string"), utc=True
            ).astype("datetime64[ms, UTC]").to_numpy()
        return df

    def lines_df(self, *, include_removed: bool = False) -> pd.DataFrame:
        """One row per line of the mirrored transactions (current revisions), newest first,
        with the schema of :func:`invtools.frames.lines_df`.

        The three stock-level columns are rebuilt from the line quantities (see
        :func:`invtools.frames.rebase_levels`): the service recomputes later stock levels when an earlier
        transaction is edited, backdated or deleted, without raising their revisions, so the
        levels stored with a detail are those of the moment it was fetched.

        >>> mirror.lines_df().groupby("item_name")["quantity"].sum()     # doctest: +SKIP
        """
        lines = frames.lines_df(self._details(include_removed))
        return lines if include_removed else frames.rebase_levels(lines)

    def _details(self, include_removed: bool) -> list[dict]:
        where = "" if include_removed else "WHERE t.removed_at IS NULL"
        with self._connect() as conn:
            return [json.loads(d) for (d,) in conn.execute(
                f"""SELECT d.detail_json FROM transactions t
                    JOIN details d ON d.id = t.id AND d.revision = t.revision {where}
                    ORDER BY t.t_ms DESC, t.id DESC""")]

    def stock_history(self, item_ids: Iterable[int] | int | None = None,
                      location_id: int | None = None) -> pd.DataFrame:
        """Stock over time per item (all locations, or one ``location_id``), from the new
        stock levels of the mirrored lines; see :func:`invtools.frames.stock_history`.

        >>> mirror.stock_history([3, 5], location_id=1).tail()          # doctest: +SKIP
        """
        if isinstance(item_ids, int):
            item_ids = [item_ids]
        return frames.stock_history(self.lines_df(), item_ids=item_ids,
                                    location_id=location_id)

    def syncs_df(self) -> pd.DataFrame:
        """One row per completed sync: when, kind, window, counts and requests sent."""
        with self._connect() as conn:
            df = pd.read_sql_query("SELECT * FROM syncs ORDER BY id", conn)
        for col in ("started_at", "finished_at"):
            df[col] = pd.to_datetime(df[col], utc=True, format="ISO8601").astype(
                "datetime64[ms, UTC]")
        return df

    def info(self) -> dict:
        """Team, counts and the last sync, read from the file.

        >>> mirror.info()["transactions"]                                # doctest: +SKIP
        600
        """
        with self._connect() as conn:
            one = lambda sql: conn.execute(sql).fetchone()  # noqa: E731
            last = one("SELECT finished_at, kind FROM syncs ORDER BY id DESC LIMIT 1")
            last_full = one("SELECT max(finished_at) FROM syncs WHERE kind = 'full'")[0]
            team_id = _meta(conn, "team_id")
            return {
                "path": str(self.path),
                "team_id": None if team_id is None else int(team_id),
                "team_name": _meta(conn, "team_name"),
                "base_url": _meta(conn, "base_url"),
                "transactions": one("SELECT count(*) FROM transactions "
                                    "WHERE removed_at IS NULL")[0],
                "removed": one("SELECT count(*) FROM transactions "
                               "WHERE removed_at IS NOT NULL")[0],
                "lines": one("SELECT coalesce(sum(d.line_count), 0) FROM transactions t "
                             "JOIN details d ON d.id = t.id AND d.revision = t.revision "
                             "WHERE t.removed_at IS NULL")[0],
                "revisions": one("SELECT count(*) FROM revisions")[0],
                "syncs": one("SELECT count(*) FROM syncs")[0],
                "last_sync": None if last is None else pd.Timestamp(last[0]),
                "last_sync_kind": None if last is None else last[1],
                "last_full_sync": None if last_full is None else pd.Timestamp(last_full),
                "interrupted_sync_pending": one("SELECT count(*) FROM staging")[0] > 0,
            }

    def __repr__(self) -> str:
        i = self.info()
        last = ("never synced" if i["last_sync"] is None
                else f"last sync {_fmt_time(i['last_sync'])} ({i['last_sync_kind']})")
        return (f"TransactionMirror({str(self.path)!r}, team {i['team_name']!r} "
                f"(id {i['team_id']}), {i['transactions']} transactions, {i['lines']} lines, "
                f"{last})")

    def _repr_html_(self) -> str:
        i = self.info()
        rows = "".join(
            f"<tr><th style='text-align:left'>{html.escape(k)}</th>"
            f"<td style='text-align:left'>{html.escape(str(v))}</td></tr>"
            for k, v in i.items())
        return f"<b>TransactionMirror</b><table>{rows}</table>"


# --------------------------------------------------------------------------- storage helpers

def _require_locations(client: Any) -> None:
    """The client's own TeamModeError (naming the team, its mode and what works) for a team
    whose transactions cannot be listed, before anything is sent or written."""
    client.require_locations(TXS_PATH)


def _lock_path(path: Path) -> Path:
    return path.with_name(path.name + ".lock")


@contextlib.contextmanager
def _sync_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive, non-blocking OS lock on ``<path>.lock`` for the block, or raise
    ConfigError if another sync (any process or thread) holds it. The OS drops the lock when
    its holder dies, so a killed sync never leaves the file locked. The lock file is left in
    place: removing it would let a waiting opener lock an unlinked file."""
    fd = os.open(_lock_path(path), os.O_CREAT | os.O_RDWR, 0o600)
    try:
        if not _try_lock(fd):
            raise ConfigError(
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


@contextlib.contextmanager
def _transaction(conn: sqlite3.Connection) -> Iterator[None]:
    """One SQLite write transaction: committed on success, rolled back on any exception
    (KeyboardInterrupt included)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _meta(conn: sqlite3.Connection, key: str) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else row[0]


def _set_meta(conn: sqlite3.Connection, **values: str) -> None:
    conn.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", list(values.items()))


def _stage(conn: sqlite3.Connection, stamped: list[tuple[int, dict]]) -> None:
    """Stage list rows; a row met twice (the list moved under the walk) keeps its highest
    revision."""
    with _transaction(conn):
        conn.executemany(
            """INSERT INTO staging VALUES (?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET
               revision = excluded.revision, t_ms = excluded.t_ms, row_json = excluded.row_json
               WHERE excluded.revision > staging.revision""",
            [(int(row["id"]), int(row["revision"]), ms, json.dumps(row)) for ms, row in stamped],
        )


class _DetailBatch:
    """Stores fetched details in small committed batches; whatever arrived is committed on
    the way out, even on an exception or Ctrl-C, so a re-run does not fetch it again."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.pending: list[tuple] = []
        self.last_commit = time.monotonic()

    def add(self, detail: dict) -> None:
        lines = detail.get("items") or []
        self.pending.append((int(detail["id"]), int(detail["revision"]), len(lines),
                             json.dumps(detail), _now_iso()))
        if (len(self.pending) >= _COMMIT_EVERY_ROWS
                or time.monotonic() - self.last_commit >= _COMMIT_EVERY_SECONDS):
            self.flush()

    def flush(self) -> None:
        if self.pending:
            with _transaction(self.conn):
                self.conn.executemany(
                    "INSERT OR IGNORE INTO details VALUES (?, ?, ?, ?, ?)", self.pending)
            self.pending.clear()
        self.last_commit = time.monotonic()

    def __enter__(self) -> _DetailBatch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.flush()


def _backdated_flags(rows: list[dict]) -> list[bool | None]:
    """The ``backdated`` flag of :func:`invtools.frames.transactions_df`, one per row, so the
    change log and the frames agree on what backdated means."""
    if not rows:
        return []
    flags = frames.transactions_df(rows)["backdated"]
    return [None if pd.isna(b) else bool(b) for b in flags]


def _progress_bar(total: int, progress: bool | None, client: Any):
    """A tqdm.auto bar over the detail requests (total known, so it shows the time left)."""
    from tqdm.auto import tqdm

    if progress is None:
        progress = bool(getattr(client, "progress", True))
    return tqdm(total=total, desc="transaction details", unit="req",
                disable=not progress or total == 0, leave=False)
