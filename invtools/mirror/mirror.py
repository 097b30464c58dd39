"""The :class:`TransactionMirror` class: opening a file for a team, the ``sync()`` entry point
(the steps themselves are in :mod:`invtools.mirror.sync`), and reading the file offline.

Every frame it returns carries a :class:`~invtools.frames.provenance.Provenance` in ``df.attrs``:
``source="mirror"``, the team and service the file belongs to, ``fetched_at``, when the last
sync finished, and ``data_as_of``, when it started walking the list -- how fresh the rows are.

>>> import os, tempfile
>>> with tempfile.TemporaryDirectory() as tmp:         # a new file, read offline: no client
...     empty = TransactionMirror(os.path.join(tmp, "shop.sqlite"))
...     df, info = empty.transactions_df(), empty.info()
>>> len(df), df.attrs["source"], df.attrs["endpoint"], info["syncs"]
(0, 'mirror', '/v1/location-txs', 0)
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from invtools import frames
from invtools._config import check_flag, check_path
from invtools._durations import parse_duration
from invtools._files import private_file
from invtools._types import TXS_PATH, check_ids, check_tx_type, parse_window
from invtools.api.endpoints import require_locations
from invtools.errors import ArgumentTypeError, ConfigError
from invtools.frames.columns import as_time
from invtools.frames.openings import decide_openings, first_activity
from invtools.frames.provenance import Provenance
from invtools.mirror import names, store
from invtools.mirror.background import BackgroundSync
from invtools.mirror.report import SyncReport, fmt_time, read_changes
from invtools.mirror.sync import run_sync

if TYPE_CHECKING:
    from invtools.api import Client

__all__ = ["TransactionMirror"]


class TransactionMirror:
    """A local SQLite copy of one team's transactions and their lines, synced by revision.

    ``path=None`` uses a file per team and service (base URL) in the user data directory
    (needs ``client``). ``client`` may be ``None`` to read an existing file offline.
    Making one sends nothing: its first use (a sync, a read, ``path``) asks for the team once
    and checks the file against it (a new file is made only for a team that can sync).
    The file is created readable by its owner only (0600, in folders it makes 0700) and never
    holds a token. Its repr reads the file without creating or changing any file, and says
    "file missing" rather than raising when the file is gone; the other methods raise a
    :class:`~invtools.errors.ConfigError` then, and never make a new file behind your back.

    >>> mirror = TransactionMirror(None, client)    # the team's file in the user data folder
    >>> mirror.sync().new > 0                       # first sync: full
    True
    >>> mirror.sync(look_back="90D").new            # recent part only: nothing new since
    0
    >>> mirror.lines_df().shape                     # no network   # doctest: +ELLIPSIS
    (..., 24)
    """

    def __init__(self, path: str | os.PathLike | None, client: Client | None = None) -> None:
        if client is not None and not callable(getattr(client, "team", None)):
            raise ArgumentTypeError(
                f"TransactionMirror(path, client): client must be an invtools.Client (or None "
                f"to read offline), not {type(client).__name__}; make one with "
                "invtools.Client(token)"
            )
        if path is None and client is None:
            raise ConfigError(
                "TransactionMirror(None, client=None): give a path to read a mirror offline, "
                "or a client so the per-team default file can be found"
            )
        self.client = client
        self._path = None if path is None else check_path(path, "TransactionMirror(path)")
        #: The file may only be read (read-only file or folder): reading works, sync() not.
        self.read_only = False
        # Nothing is sent here (first use does it); without a client the file opens now.
        self._ready = client is None
        if client is None:
            self._open(None)

    @property
    def path(self) -> Path:
        """The mirror's file (a default one is named after the team: known on first use)."""
        if not self._ready:  # first use: the team is asked for, and the file checked against it
            client = self.client
            assert client is not None
            team = client.team()
            if self._path is None:
                if team.id is None:
                    raise ConfigError(f"the team of {client!r} has no id: give the mirror a path")
                self._path = store.default_path(team.id, client.base_url)
            self._open(team)
            self._ready = True
        assert self._path is not None
        return self._path

    def _open(self, team: Any) -> None:
        """Accept an existing file (read only) or make a new one; with the client's ``team``,
        check the file against it and claim it (a new file only for a team that can sync)."""
        path = self._path
        assert path is not None
        if path.is_dir():
            raise ConfigError(
                f"{path} is a folder; give the path of a file in it, e.g. "
                f"{path / 'transactions.sqlite'}"
            )
        if path.exists():
            store.inspect(path)  # reading only: nothing is changed before it is accepted
            self.read_only = not (
                os.access(path, os.W_OK) and os.access(path.parent, os.W_OK | os.X_OK)
            )
        elif team is not None:
            require_locations(team, TXS_PATH)  # a team that cannot sync gets no file
        if not self.read_only:
            try:  # private before SQLite opens it: SQLite gives its -wal/-shm files its mode
                private_file(path)
            except OSError as exc:
                raise ConfigError(
                    f"cannot make the mirror file {path}: {exc.strerror or exc}; give a path "
                    "in a folder you may write to"
                ) from exc
        with store.connect(path, readonly=self.read_only) as conn:
            if not self.read_only:
                store.init_schema(conn)
            if team is not None:
                store.check_team(conn, path, self.client, team, claim=not self.read_only)

    # ---- sync

    def sync(
        self, *, look_back: Any = None, progress: bool | None = None, chains: int | None = None
    ) -> SyncReport:
        """Bring the mirror up to date; return a :class:`SyncReport`.

        ``look_back=None`` walks the whole list (a *full* sync). ``look_back="90D"`` (a
        duration with its unit, such as ``"12h"``, or a ``timedelta``, as the analyses'
        ``look_back=`` takes) walks only rows whose transaction time is at most that far
        before the service's clock when the walk starts (``client.now()``, the anchor: the
        same "now" the client's ``since="90D"`` counts from; a row dated in the future moves
        nothing): a *window* sync, of the window of transaction times from that cutoff on. A
        bare number (``look_back=90``) is refused: write ``look_back="90D"``.
        A window sync does not see edits to older transactions, nor their removal, until the
        next full sync; its report says so. A look-back that reaches the end of the list is a
        full sync.

        A full sync walks the list in several chains at once (at most ``chains``; default the
        client's ``concurrency``; ``chains=1`` for one), from the seams the client's last whole
        walk of the list recorded beside its cache, and stages exactly the rows of one plain
        walk (:mod:`invtools.api.walk`).

        Requests: one per list page, one detail per new transaction or raised revision (kept
        for good), for a window sync one per stored transaction in the window the list no
        longer shows (404: deleted), and the team's lists (items, partners, locations,
        members), which name the rows: a rename raises no revision (the report says it).
        ``progress`` shows bars (default: the client's setting). If it is interrupted
        (exception, Ctrl-C, killed process), nothing applied is lost and the file stays
        consistent; run it again: details already stored are not re-fetched.

        One sync of a file at a time (another meanwhile: :class:`~invtools.errors.LockedError`);
        a team not in Location mode: :class:`~invtools.errors.TeamModeError` before anything is
        sent or written. :meth:`sync_in_background` runs it in a background thread. A mirror
        synced before reads the list again and fetches no detail:

        >>> report = mirror.sync()
        >>> report.new, report.changed, report.removed, report.details_fetched
        (0, 0, 0, 0)
        >>> print(report)                                                # doctest: +ELLIPSIS
        Full sync of team 'Greenfield Hardware & Garden' (id ...):
          0 new, 0 changed, 0 removed, ... unchanged
          ... requests sent (... list pages, 0 details), 0 from cache, ... s
        """
        client = self.client
        if client is None:
            raise ConfigError(
                "this mirror was opened without a client (read-only); open it as "
                "TransactionMirror(path, client) to sync"
            )
        span = parse_duration(look_back, name="sync: look_back")
        back = None if span is None else pd.Timedelta(span)
        path = self.path  # first use: the file checked against the client's team
        if self.read_only:
            raise ConfigError(
                f"{path} can only be read (a read-only file or folder): reading it works offline, "
                "but a sync must write. Copy it to a folder you may write to, or sync into a new "
                "file."
            )
        team = client.team()
        with store.connect(path) as conn:  # a file removed since: a ConfigError
            # before the lock file or anything is written
            store.check_team(conn, path, client, team)
            # Two syncs of one file would share the staging table: the second one's re-walk
            # empties it under the first, whose apply step would then mark every row removed.
            with store.sync_lock(path):
                return run_sync(
                    conn, client, team=team, look_back=back, progress=progress, chains=chains
                )

    def sync_in_background(self, **options: Any) -> BackgroundSync:
        """:meth:`sync` in a background thread, with honest frames (:class:`BackgroundSync`)."""
        return BackgroundSync(self, **options)

    # ---- reading (no network)

    def changes_df(self) -> pd.DataFrame:
        """The change log of every sync: sync_id, synced_at, transaction_id, change (new /
        backdated-new / edited / removed / restored), old/new revision, total quantity and
        transaction time, backdated (the frames rule, on the version described).

        >>> kinds = mirror.changes_df().groupby("change", observed=False).size()
        >>> kinds.to_dict()          # all new: nothing changed since    # doctest: +ELLIPSIS
        {'new': ..., 'backdated-new': 0, 'edited': 0, 'removed': 0, 'restored': 0}
        """
        with store.connect(self.path, readonly=self.read_only) as conn:
            return _stamped(read_changes(conn), store.origin_of(conn))

    def transactions_df(
        self,
        *,
        since: Any = None,
        until: Any = None,
        type: Any = None,  # noqa: A002
        include_removed: bool = False,
    ) -> pd.DataFrame:
        """The mirrored transaction rows, newest first, with the schema of
        :func:`invtools.frames.transactions_df`. ``since``/``until``/``type`` as for the
        client's (a date, a month, ``"90D"`` back from the client's clock, ``client.now()``,
        or without a client the wall clock; one type or several).
        ``include_removed=True`` adds the rows the list no longer shows and a ``removed_at``
        column (NaT for current rows).

        >>> mirror.transactions_df().dtypes["transaction_time"]
        datetime64[ms, UTC]
        >>> set(mirror.transactions_df(type=("in", "out"))["type"]) <= {"in", "out"}
        True
        """
        window = _filters(since, until, type, now=self._now)
        include_removed = check_flag(include_removed, "include_removed")
        fetched, origin, named = self._current("revisions", include_removed)
        df = frames.current_names(frames.transactions_df([row for row, _ in fetched]), named)
        if include_removed:
            df["removed_at"] = removed = as_time([removed for _, removed in fetched])
            current = df[pd.isna(removed)]  # the history opened with the current rows
            decide_openings(df, opened=first_activity(current["type"], current["transaction_time"]))
        return _cut(
            df,
            origin,
            window,
            "transactions",
            since=since,
            until=until,
            include_removed=include_removed,
        )

    def lines_df(
        self,
        *,
        since: Any = None,
        until: Any = None,
        type: Any = None,  # noqa: A002
        include_removed: bool = False,
    ) -> pd.DataFrame:
        """One row per line of the mirrored transactions (current revisions), newest first,
        with the schema of :func:`invtools.frames.lines_df`; ``since``/``until``/``type`` as
        for :meth:`transactions_df`.

        The three stock-level columns are rebuilt from the line quantities of the whole
        mirrored history, then cut (see :func:`invtools.frames.rebase_levels`): the service
        recomputes later stock levels when an earlier transaction is edited, backdated or
        deleted, without raising their revisions, so the levels stored with a detail are
        those of the moment it was fetched. A ``since=``/``until=``/``type=`` frame thus has
        the levels of the whole history, right as of the last full sync; a window sync does
        not see an edit before its look-back (its report says so), nor do the levels.

        >>> lines = mirror.lines_df()
        >>> cols = ["transaction_id", "type", "item_name", "quantity", "new_stock_level"]
        >>> lines[cols].dtypes.astype(str).tolist()
        ['Int64', 'category', 'string', 'float64', 'float64']
        >>> len(lines) == mirror.info()["lines"]
        True
        """
        window = _filters(since, until, type, now=self._now)
        include_removed = check_flag(include_removed, "include_removed")
        fetched, origin, named = self._current("details", include_removed)
        df = frames.current_names(frames.lines_df([detail for detail, _ in fetched]), named)
        if not include_removed:  # the levels from the whole history, then cut
            df = frames.rebase_levels(df)
        return _cut(
            df, origin, window, "lines", since=since, until=until, include_removed=include_removed
        )

    def _now(self) -> Any:
        """What durations count back from: the moment the file is as of (the service's clock
        when its last sync began), with or without a client; a file never synced: the
        client's clock (None: the wall clock)."""
        with store.connect(self.path, readonly=self.read_only) as conn:
            as_of = store.origin_of(conn).as_of
        if as_of is not None:
            return pd.Timestamp(str(as_of)).to_pydatetime()
        return None if self.client is None else self.client.now()

    def _current(self, table: str, include_removed: bool) -> tuple[list, Provenance, dict]:
        """``(JSON, removed_at)`` of each transaction's current revision in ``table``
        (``revisions``: list rows; ``details``), newest first; the file's provenance; and the
        lists its last sync read (:func:`~invtools.mirror.names.lists`), which name the rows."""
        where = "" if include_removed else "WHERE t.removed_at IS NULL"
        column = "row_json" if table == "revisions" else "detail_json"
        with store.connect(self.path, readonly=self.read_only) as conn:
            fetched = conn.execute(
                f"""SELECT x.{column}, t.removed_at FROM transactions t
                    JOIN {table} x ON x.id = t.id AND x.revision = t.revision {where}
                    ORDER BY t.t_ms DESC, t.id DESC"""
            ).fetchall()
            rows = [(json.loads(j), removed) for j, removed in fetched]
            return rows, store.origin_of(conn), names.lists(conn)

    def stock_history(
        self, item_ids: Iterable[int] | int | None = None, location_id: int | None = None
    ) -> pd.DataFrame:
        """Stock over time per item (all locations, or one ``location_id``), from the new
        stock levels of the mirrored lines; see :func:`invtools.frames.stock_history`.

        >>> shop_floor = mirror.stock_history(location_id=3102)   # all items, one location
        >>> shop_floor.columns.tolist()                         # doctest: +NORMALIZE_WHITESPACE
        ['transaction_time', 'transaction_id', 'item_id', 'item_name', 'location_id',
         'location_name', 'stock', 'change', 'item_deleted']
        >>> per_item = shop_floor.groupby("item_id")["change"].cumsum()
        >>> bool((shop_floor["stock"] == per_item).all())    # stock: the running sum of change
        True
        """
        item_ids = check_ids(item_ids, name="stock_history: item_ids")  # one id: a list of one
        history = frames.stock_history(self.lines_df(), item_ids=item_ids, location_id=location_id)
        return _stamped(history, history.attrs, item_ids=item_ids, location_id=location_id)

    def syncs_df(self) -> pd.DataFrame:
        """One row per completed sync: its ``sync_id`` (``changes_df()``'s), when, kind,
        look-back (``look_back_seconds``), counts
        and requests sent. The dtypes are the same whatever the rows hold (a look-back and a
        cutoff only for window syncs: NaN / <NA> otherwise).

        >>> dtypes = mirror.syncs_df().dtypes
        >>> dtypes[["kind", "look_back_seconds", "cutoff_ms"]].astype(str).tolist()
        ['string', 'float64', 'Int64']
        """
        with store.connect(self.path, readonly=self.read_only) as conn:
            df = pd.read_sql_query("SELECT * FROM syncs ORDER BY id", conn)
            origin = store.origin_of(conn)
        df = df.rename(columns=store.SYNCS_SHOWN)  # the file's names, as the package says them
        df = df.assign(**{col: as_time(df[col].tolist()) for col in ("started_at", "finished_at")})
        kinds = {"kind": "string", "look_back_seconds": "float64"}
        df = df.astype({**kinds, "anchor_ms": "Int64", "cutoff_ms": "Int64"})
        return _stamped(df, origin)

    def info(self) -> dict:
        """Team, counts and the last sync, read from the file.

        >>> info = mirror.info()
        >>> info["team_name"], info["transactions"] == len(mirror.transactions_df())
        ('Greenfield Hardware & Garden', True)
        >>> list(info)                                          # doctest: +NORMALIZE_WHITESPACE
        ['path', 'team_id', 'team_name', 'base_url', 'transactions', 'removed', 'lines',
         'revisions', 'syncs', 'last_sync', 'last_sync_kind', 'last_full_sync',
         'interrupted_sync_pending']
        """
        with store.connect(self.path, readonly=self.read_only) as conn:
            return store.file_info(self.path, conn)

    def _peek(self) -> tuple[dict | None, str | None]:
        """:meth:`info` for a display, never creating or changing a file: (info, None), or
        (None, why not)."""
        if self._path is None:  # a display never sends a request (the team names the file)
            return None, "the team's default file, found on first use"
        try:
            with contextlib.closing(store.peek(self._path)) as conn:
                return store.file_info(self._path, conn), None
        except FileNotFoundError:
            return None, "file missing"
        except Exception as exc:  # noqa: BLE001 - a display must not raise
            return None, f"cannot read the file: {exc}"

    def __repr__(self) -> str:
        i, state = self._peek()  # the path as given: a repr never opens the file for a team
        if i is not None:
            last = f"last sync {fmt_time(i['last_sync'])} ({i['last_sync_kind']})"
            state = (
                f"team {i['team_name']!r} (id {i['team_id']}), {i['transactions']} transactions, "
                f"{i['lines']} lines, {last if i['syncs'] else 'never synced'}"
            )
        return f"TransactionMirror({str(self._path or '<default>')!r}, {state})"

    def _repr_html_(self) -> str:
        i, problem = self._peek()
        shown = i if i is not None else {"path": str(self._path or "<default>"), "problem": problem}
        table = pd.Series(shown, dtype=object).to_frame().to_html(header=False)  # escaped
        return f"<b>TransactionMirror</b>{table}"


def _stamped(df: pd.DataFrame, origin: Provenance | Mapping, **filters: Any) -> pd.DataFrame:
    """``df`` with its provenance in ``attrs``: ``origin`` (or a frame's ``attrs``) with what
    was asked (``filters``, None values left out) and the rows returned."""
    return frames.with_provenance(df, origin, filters=filters, rows=len(df))


def _filters(since: Any, until: Any, kind: Any, *, now: Any = None) -> tuple:
    """The client's ``since``/``until``/``type`` filters, checked (before any file is read):
    ``(lo, hi, kind)``, the type one, several (a tuple) or None (all); durations back from
    ``now`` (:func:`invtools._types.parse_window`).

    >>> lo, hi, kind = _filters("2026-10", "2026-10", ["out", "in"])
    >>> str(lo), str(hi)[:19], kind                  # the type as the client's frames record it
    ('2026-10-01 00:00:00+00:00', '2026-10-31 23:59:59', ('in', 'out'))
    """
    return *parse_window(since, until, now=now), check_tx_type(kind)


def _cut(
    df: pd.DataFrame, origin: Provenance, window: tuple, grain: str, **asked: Any
) -> pd.DataFrame:
    """The rows of ``df`` in the client's ``window`` (:func:`_filters`; what the frame then
    holds: :func:`invtools.frames.fit_window`, as for the client's frames), stamped with
    ``origin``, the ``grain``, the window and the moment it is as of, and what was asked for
    (``since``, ``until``, ``include_removed``) and the type, as the client's frames record
    them."""
    lo, hi, kind = window
    if kind is not None:
        df = df[df["type"].isin([kind] if isinstance(kind, str) else kind).to_numpy()]
        df = df.reset_index(drop=True)
    held = as_of = None
    if origin.as_of is None:  # never synced: no moment to end a window at, so none is claimed
        df = frames.fit_window(df, lo, hi, moment=pd.Timestamp.now(tz="UTC"))[0]
    else:
        df, held, as_of = frames.fit_window(df, lo, hi, moment=pd.Timestamp(str(origin.as_of)))
    asked["include_removed"] = asked["include_removed"] or None
    return frames.with_provenance(
        df,
        origin,
        filters={"type": kind, **asked},
        rows=len(df),
        grain=grain,
        window=held,
        as_of=as_of,
    )
