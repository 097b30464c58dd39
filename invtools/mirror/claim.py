"""Whose file a mirror is, and what it holds: the check of a client's team and service
against the file (and the claim of a new file), the provenance its frames carry, its summary.

>>> import sqlite3
>>> from invtools.mirror.store import init_schema
>>> conn = sqlite3.connect(":memory:", isolation_level=None)
>>> init_schema(conn)
>>> origin_of(conn).source, file_info(Path("m.sqlite"), conn)["syncs"]
('mirror', 0)
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from invtools import frames
from invtools._types import TXS_PATH
from invtools.api.endpoints import require_locations
from invtools.errors import ConfigError
from invtools.frames.provenance import Provenance
from invtools.mirror import store

__all__ = ["check_team", "origin_of", "file_info", "stamped"]


def check_team(
    conn: sqlite3.Connection, path: Path, client: Any, team: Any, *, claim: bool = True
) -> None:
    """Refuse a client of another service or team; then claim the file for this one
    (a Location-mode team only: nothing is written for a team that cannot sync, nor with
    ``claim=False``)."""
    stored = store.read_meta(conn)
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
        with store.write_transaction(conn):
            store.set_meta(conn, **changed)


def origin_of(conn: sqlite3.Connection) -> Provenance:
    """Whose rows these are and how fresh: the file's team and service, and when its
    last sync finished."""
    meta = store.read_meta(conn)
    finished, started = conn.execute(
        "SELECT finished_at, started_at FROM syncs ORDER BY id DESC LIMIT 1"
    ).fetchone() or (None, None)
    return Provenance(
        source="mirror",
        team_id=int(meta["team_id"]) if "team_id" in meta else None,
        team_name=meta.get("team_name"),
        base_url=meta.get("base_url"),
        endpoint=TXS_PATH,
        fetched_at=finished,
        data_as_of=None if started is None else pd.Timestamp(started).to_pydatetime(),
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


def stamped(df: pd.DataFrame, origin: Provenance | Mapping, **filters: Any) -> pd.DataFrame:
    """``df`` with its provenance in ``attrs``: ``origin`` (or a frame's ``attrs``) with what
    was asked (``filters``, None values left out) and the rows returned."""
    return frames.with_provenance(df, origin, filters=filters, rows=len(df))
