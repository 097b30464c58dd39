"""The tables of the dlt source (pure: frames in, Arrow out; no dlt import): each table's key
and column hints, the frames' dtypes as dlt's data types, the attribute columns' names, a
fingerprint of each row, and the difference between the rows the service holds now and the
fingerprints the destination holds (:class:`Reconciliation`): the rows to load and the keys
to delete.

Every table's key starts with the team's: ``base_url`` and ``team_id`` (a team is its service
and its id, so two services' teams never meet in one dataset).
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from invtools.frames.schemas import KEYS, SCHEMAS

#: The hard-delete flag (dlt's ``hard_delete`` hint): a row with it set deletes its key.
DELETED = "_deleted"
#: Each row's fingerprint (:func:`fingerprints`): what a later run compares with the service's.
FINGERPRINT = "_fingerprint"
#: The columns that say whose a row is, first in every table's key.
TEAM_KEY = ("base_url", "team_id")

#: table -> (the frame schema its columns come from, its key after :data:`TEAM_KEY`: the
#: frame's, :data:`~invtools.frames.schemas.KEYS`).
#: (In the order a run extracts them.)
TABLES: dict[str, tuple[str, tuple[str, ...]]] = {
    "teams": ("teams", ()),
    "items": ("items", (KEYS["items"],)),
    "locations": ("locations", (KEYS["locations"],)),
    "stock": ("stock", ("item_id", "location_id")),
    "partners": ("partners", (KEYS["partners"],)),
    "members": ("members", (KEYS["members"],)),
    "attributes": ("attributes", (KEYS["attributes"],)),
    "transactions": ("transactions", (KEYS["transactions"],)),
    "lines": ("lines", ("transaction_id", "line_no")),
}
#: What every team's API allows; the rest needs Location mode.
EVERY_MODE = ("teams", "members", "partners", "attributes")
#: The lines' stock levels are left out (see :mod:`invtools.dlt`).
NO_LEVELS = ("new_stock_level", "from_location_new_stock_level", "to_location_new_stock_level")
#: The ``teams`` table's own columns (after the team's key).
TEAM_COLUMNS = {"team_name": "text", "mode": "text", "data_as_of": "timestamp", "skipped": "text"}


def key_of(table: str) -> tuple[str, ...]:
    """The whole key of ``table``: the team's (:data:`TEAM_KEY`), then the table's own.

    >>> key_of("lines")
    ('base_url', 'team_id', 'transaction_id', 'line_no')
    """
    return TEAM_KEY + TABLES[table][1]


def data_type(dtype: Any) -> str:
    """The dlt data type of a frame column's dtype."""
    if isinstance(dtype, pd.DatetimeTZDtype):
        return "timestamp"
    kind = str(dtype).lower()
    if kind.startswith("int") or kind.startswith("uint"):
        return "bigint"
    if kind.startswith("float"):
        return "double"
    if kind == "boolean" or kind == "bool":
        return "bool"
    return "text"  # string, category


def hints(table: str) -> dict[str, dict[str, Any]]:
    """The explicit column hints of a table: the team's key, its frame schema's columns typed
    (``teams``: :data:`TEAM_COLUMNS`), the fingerprint and the hard-delete flag."""
    columns: dict[str, dict[str, Any]] = {
        "base_url": {"data_type": "text", "nullable": False},
        "team_id": {"data_type": "bigint", "nullable": False},
    }
    if table == "teams":
        columns.update({c: {"data_type": t} for c, t in TEAM_COLUMNS.items()})
    for col, dtype in SCHEMAS.get(TABLES[table][0], {}).items():
        if col not in NO_LEVELS:
            columns[col] = {"data_type": data_type(dtype)}
    if table == "lines":
        columns["line_no"] = {"data_type": "bigint", "nullable": False}
    if table == "attributes":
        columns["column_name"] = {"data_type": "text"}
    columns[FINGERPRINT] = {"data_type": "text"}
    columns[DELETED] = {"data_type": "bool", "hard_delete": True}
    for col in key_of(table):
        columns[col]["nullable"] = False
    return columns


def attribute_columns(attributes: pd.DataFrame) -> dict[str, str]:
    """The warehouse name of each item attribute column: ``attr_<name>`` of
    :meth:`~invtools.Client.items_df` -> ``attr_`` and the name in lower snake case (what
    dlt's naming convention keeps as it is), ``_<id>`` added where two names would meet.

    >>> attrs = pd.DataFrame({"attribute_id": [7, 8, 9], "attr_name": ["Weight (kg)", "Colour", "colour"]})
    >>> attribute_columns(attrs)
    {'attr_Weight (kg)': 'attr_weight_kg', 'attr_Colour': 'attr_colour_8', 'attr_colour': 'attr_colour_9'}
    """  # noqa: E501 - the doctest shows the mapping whole
    plain = {
        int(i): "attr_" + (re.sub(r"[^0-9a-z]+", "_", str(name).lower()).strip("_") or "x")
        for i, name in zip(attributes["attribute_id"], attributes["attr_name"], strict=True)
    }
    # again until no two meet: "a", "A" and "a 1" (ids 1, 2, 3) are attr_a_1_1, attr_a_2, attr_a_1_3
    while taken := {n for n, count in Counter(plain.values()).items() if count > 1}:
        plain = {i: f"{n}_{i}" if n in taken else n for i, n in plain.items()}
    return {
        f"attr_{name}": plain[int(i)]
        for i, name in zip(attributes["attribute_id"], attributes["attr_name"], strict=True)
    }


ARROW = {
    "bigint": pa.int64(),
    "double": pa.float64(),
    "bool": pa.bool_(),
    "text": pa.string(),
    "timestamp": pa.timestamp("us", tz="UTC"),  # dlt's default precision: every destination's
}


def plain(df: pd.DataFrame, base_url: str, team_id: int) -> pd.DataFrame:
    """``df`` as a table's rows: the team's key first, categories as text, no index, no
    attrs, and each row's :data:`FINGERPRINT` and hard-delete flag (unset) last."""
    out = df.copy()
    out.attrs = {}
    for col in out.columns:
        if isinstance(out[col].dtype, pd.CategoricalDtype):
            out[col] = out[col].astype("string")
    out = out.reset_index(drop=True)
    out.insert(0, "base_url", pd.Series([base_url] * len(out), dtype="string"))
    out.insert(1, "team_id", pd.Series([team_id] * len(out), dtype="Int64"))
    out[FINGERPRINT] = pd.array(fingerprints(out), dtype="string")
    out[DELETED] = pd.array([None] * len(out), dtype="boolean")
    return out


def _name_hash(name: str) -> np.uint64:
    return np.uint64(int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "big"))


def fingerprints(df: pd.DataFrame) -> list[str]:
    """A fingerprint of each row: its values and the names of the columns that hold them
    (a null holds nothing), so a changed value, a value that moved to another column (a
    renamed attribute) and a value that appeared or went all change it, and a column that
    is null in every row changes nothing. The same for the same row in any process.

    >>> df = pd.DataFrame({"id": [1, 2], "attr_a": [0.5, None]})
    >>> same = df.rename(columns={"attr_a": "attr_b"})
    >>> [a == b for a, b in zip(fingerprints(df), fingerprints(same))]
    [False, True]
    """
    total = np.zeros(len(df), dtype=np.uint64)
    for col in df.columns:
        if col in (DELETED, FINGERPRINT):
            continue
        values = df[col]
        hashed = pd.util.hash_pandas_object(values, index=False).to_numpy(dtype=np.uint64)
        named = pd.util.hash_array(hashed ^ _name_hash(str(col)))
        total += np.where(values.notna().to_numpy(dtype=bool), named, np.uint64(0))
    return [format(int(v), "016x") for v in total]


def arrow_table(df: pd.DataFrame, table: str) -> pa.Table:
    """``df`` as Arrow, each column of the type its dtype says (:func:`data_type`), the key
    never null: every batch of a table has one schema, whatever its values (dlt refuses to
    buffer two), and the one the hints say."""
    key = key_of(table)
    schema = pa.schema(
        [pa.field(c, ARROW[data_type(df[c].dtype)], nullable=c not in key) for c in df.columns]
    )
    return pa.Table.from_pandas(df, schema=schema, preserve_index=False)


def tombstones(like: pd.DataFrame, keys: Iterable[tuple], table: str) -> pa.Table:
    """One row per key of ``table`` to delete (whole keys, :func:`key_of`), in the columns of
    ``like``: the key and the hard-delete flag set, the rest null."""
    key = list(key_of(table))
    rows = pd.DataFrame(list(keys), columns=key).reindex(columns=like.columns)
    df = rows.astype(like.dtypes.to_dict())
    df[DELETED] = pd.array([True] * len(df), dtype="boolean")
    return arrow_table(df, table)


def _keys(df: pd.DataFrame, table: str) -> list[tuple]:
    own = TABLES[table][1]
    if not own:
        return [()] * len(df)
    columns = [df[c].astype("int64").tolist() for c in own]
    return list(zip(*columns, strict=True))


class Reconciliation:
    """One table of one team (``team``: its :data:`TEAM_KEY` values), reconciled: the rows
    the service holds now, given in batches (:meth:`fresh`), against the fingerprints the
    destination holds (``held``: the table's own key, after the team's -> fingerprint). What
    is loaded is the difference: rows whose key the destination lacks (new) or holds with
    another fingerprint (changed); after the last batch, :meth:`gone` is every key the
    destination holds that the service does not (removed). A key given twice counts once
    (its first row).

    >>> r = Reconciliation("members", ("https://x", 9), {(1,): "a", (2,): "b"})
    >>> rows = plain(pd.DataFrame({"member_id": pd.array([2, 3], dtype="Int64")}), "https://x", 9)
    >>> r.fresh(rows)["member_id"].tolist(), r.gone(), r.counts
    ([2, 3], [('https://x', 9, 1)], {'new': 1, 'changed': 1, 'removed': 1})
    """

    def __init__(self, table: str, team: tuple[str, int], held: dict[tuple, str]) -> None:
        self.table, self.team = table, team
        self.held = dict(held)
        self.seen: set[tuple] = set()
        self.counts = {"new": 0, "changed": 0, "removed": 0}

    def fresh(self, rows: pd.DataFrame) -> pd.DataFrame:
        """The rows of ``rows`` (:func:`plain` rows of this team) to load."""
        keep = []
        for key, print_ in zip(_keys(rows, self.table), rows[FINGERPRINT], strict=True):
            if key in self.seen:
                keep.append(False)
                continue
            self.seen.add(key)
            was = self.held.pop(key, None)
            if was is None:
                self.counts["new"] += 1
            elif was != print_:
                self.counts["changed"] += 1
            keep.append(was != print_)
        return rows[keep].reset_index(drop=True)

    def gone(self) -> list[tuple]:
        """Whole keys (:func:`key_of`) the destination holds that the service no longer does:
        what :meth:`fresh` has not been given (call it after the last batch)."""
        self.counts["removed"] = len(self.held)
        return [(*self.team, *key) for key in self.held]
