"""The names a mirror's frames give each reference: the team's lists (items, partners,
locations, members) as its last sync read them, kept in the file's ``names`` table, and what
a sync found renamed.

A rename on the service raises no revision, so the rows and details the mirror keeps by
revision keep the names they had. Each sync reads the four lists afresh (their pages: a few
requests), and the mirror's frames name every reference as they say
(:func:`invtools.frames.current_names`, the one place names are made current).

>>> import sqlite3
>>> from invtools.mirror.store import init_schema
>>> conn = sqlite3.connect(":memory:", isolation_level=None)
>>> init_schema(conn)
>>> lists(conn)                       # never synced with its lists: names as stored
{}
>>> store_names(conn, {"partners": [{"id": 3, "name": "Old"}]})
[]
>>> store_names(conn, {"partners": [{"id": 3, "name": "New"}], "items": []})
["partner 3 renamed 'Old' → 'New'"]
>>> lists(conn)["partners"][["partner_id", "name"]]
   partner_id name
0           3  New
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any

import pandas as pd

from invtools.frames.schemas import KEYS

__all__ = ["fetch_names", "lists", "store_names"]

#: The lists a reference is named from, and what each is called in a report.
_ONE = {"items": "item", "partners": "partner", "locations": "location", "members": "member"}
#: What a row of ``names`` holds of a list's row.
_FIELDS = ("name", "sku", "barcode")


def fetch_names(client: Any, progress: bool | None) -> dict[str, list[dict]]:
    """The team's four lists now, fresh (not from the client's cache): the items' and the
    partners' pages, the locations and the members (one request each)."""
    with client.items(refresh=True, progress=progress) as items:
        found = {"items": list(items)}
    with client.partners(refresh=True, progress=progress) as partners:
        found["partners"] = list(partners)
    found["locations"] = client.locations(refresh=True)
    found["members"] = client.members(refresh=True)
    return found


def store_names(conn: sqlite3.Connection, found: Mapping[str, list[dict]]) -> list[str]:
    """Replace the stored names of each list in ``found`` with its rows (in the caller's
    write transaction); what each renamed since the names stored before, one line per
    record ("partner 3 renamed 'Old' → 'New'", "item 9 sku 'A-1' → 'A-2'"). A list stored
    for the first time renames nothing."""
    said: list[str] = []
    for kind, rows in found.items():
        before = {
            row[0]: row[1:]
            for row in conn.execute(
                "SELECT id, name, sku, barcode FROM names WHERE kind = ?", (kind,)
            )
        }
        now = [(kind, int(r["id"]), *(r.get(f) for f in _FIELDS)) for r in rows]
        for _, rid, *fields in now:
            old = before.get(rid)
            moved = [] if old is None else _moved(old, fields)
            if moved:
                said.append(f"{_ONE[kind]} {rid} " + "; ".join(moved))
        conn.execute("DELETE FROM names WHERE kind = ?", (kind,))
        conn.executemany("INSERT OR REPLACE INTO names VALUES (?, ?, ?, ?, ?)", now)
    return said


def _moved(old: tuple, new: list) -> list[str]:
    return [
        f"{'renamed' if field == 'name' else field} {a!r} → {b!r}"
        for field, a, b in zip(_FIELDS, old, new, strict=True)
        if a != b
    ]


def lists(conn: sqlite3.Connection) -> dict[str, pd.DataFrame]:
    """The lists the file's last sync stored, per list (its key, name, sku, barcode), for
    :func:`invtools.frames.current_names`; none for a file no sync stored them in."""
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "names" not in tables:  # a file of an older invtools, opened read-only
        return {}
    stored = pd.read_sql_query("SELECT * FROM names ORDER BY kind, id", conn)
    return {  # each list's id named as its frame names it
        str(kind): rows.drop(columns="kind")
        .rename(columns={"id": KEYS[str(kind)]})
        .reset_index(drop=True)
        for kind, rows in stored.groupby("kind", sort=False)
    }
