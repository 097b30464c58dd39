"""The tables of the dlt source (pure: frames in, Arrow out; no dlt import): each table's key
and column hints, the frames' dtypes as dlt's data types, the attribute columns' names, rows
as Arrow batches of one schema, the hard-delete rows, and the diff of a table with no
revision against the row hashes of the last load.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import pandas as pd
import pyarrow as pa

from invtools.frames.schemas import SCHEMAS

#: The hard-delete flag (dlt's ``hard_delete`` hint): a row with it set deletes its key.
DELETED = "_deleted"

#: table -> (the frame schema its columns come from, its key, what an update replaces).
#: (In the order a run extracts them.)
TABLES: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "teams": ("", ("team_id",), ("team_id",)),
    "items": ("items", ("team_id", "id"), ("team_id", "id")),
    "locations": ("locations", ("team_id", "id"), ("team_id", "id")),
    # after items and locations: it reads the pages they fetched moments before
    "stock": (
        "stock",
        ("team_id", "item_id", "location_id"),
        ("team_id", "item_id", "location_id"),
    ),
    "partners": ("partners", ("team_id", "id"), ("team_id", "id")),
    "members": ("members", ("team_id", "id"), ("team_id", "id")),
    "attributes": ("attributes", ("team_id", "id"), ("team_id", "id")),
    "transactions": ("transactions", ("team_id", "id"), ("team_id", "id")),
    # an edit replaces the transaction's lines: every line of its id, whatever their number
    "lines": ("lines", ("team_id", "transaction_id", "line_no"), ("team_id", "transaction_id")),
}
#: What every team's API allows; the rest needs Location mode.
EVERY_MODE = ("teams", "members", "partners", "attributes")
#: The lines' stock levels are left out (see the module's docstring).
NO_LEVELS = ("new_stock_level", "from_location_new_stock_level", "to_location_new_stock_level")


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


def hints(schema: str) -> dict[str, dict[str, Any]]:
    """The explicit column hints of a table: its frame schema's columns, typed."""
    columns: dict[str, dict[str, Any]] = {"team_id": {"data_type": "bigint", "nullable": False}}
    for col, dtype in SCHEMAS.get(schema, {}).items():
        if col not in NO_LEVELS:
            columns[col] = {"data_type": data_type(dtype)}
    if schema == "lines":
        columns["line_no"] = {"data_type": "bigint", "nullable": False}
    if schema == "attributes":
        columns["column_name"] = {"data_type": "text"}
    columns[DELETED] = {"data_type": "bool", "hard_delete": True}
    return columns


TEAM_HINTS = {
    "team_id": {"data_type": "bigint", "nullable": False},
    "team_name": {"data_type": "text"},
    "mode": {"data_type": "text"},
    "base_url": {"data_type": "text"},
    "data_as_of": {"data_type": "timestamp"},
    "skipped": {"data_type": "text"},
    DELETED: {"data_type": "bool", "hard_delete": True},
}


def attribute_columns(attributes: pd.DataFrame) -> dict[str, str]:
    """The warehouse name of each item attribute column: ``attr_<name>`` of
    :meth:`~invtools.Client.items_df` -> ``attr_`` and the name in lower snake case (what
    dlt's naming convention keeps as it is), ``_<id>`` added where two names would meet.

    >>> attrs = pd.DataFrame({"id": [7, 8, 9], "attr_name": ["Weight (kg)", "Colour", "colour"]})
    >>> attribute_columns(attrs)
    {'attr_Weight (kg)': 'attr_weight_kg', 'attr_Colour': 'attr_colour_8', 'attr_colour': 'attr_colour_9'}
    """  # noqa: E501 - the doctest shows the mapping whole
    plain = {
        int(i): "attr_" + (re.sub(r"[^0-9a-z]+", "_", str(name).lower()).strip("_") or "x")
        for i, name in zip(attributes["id"], attributes["attr_name"], strict=True)
    }
    taken = pd.Series(plain).value_counts()
    return {
        f"attr_{name}": plain[int(i)] + (f"_{int(i)}" if taken[plain[int(i)]] > 1 else "")
        for i, name in zip(attributes["id"], attributes["attr_name"], strict=True)
    }


ARROW = {
    "bigint": pa.int64(),
    "double": pa.float64(),
    "bool": pa.bool_(),
    "text": pa.string(),
    "timestamp": pa.timestamp(
        "us", tz="UTC"
    ),  # dlt's default precision: every destination keeps it
}


def plain(df: pd.DataFrame, team_id: int) -> pd.DataFrame:
    """``df`` as a table's rows: ``team_id`` first, categories as text, the hard-delete flag
    (unset), no index, no attrs."""
    out = df.copy()
    out.attrs = {}
    for col in out.columns:
        if isinstance(out[col].dtype, pd.CategoricalDtype):
            out[col] = out[col].astype("string")
    out.insert(0, "team_id", pd.Series([team_id] * len(out), dtype="Int64", index=out.index))
    out[DELETED] = pd.array([None] * len(out), dtype="boolean")
    return out.reset_index(drop=True)


def arrow_table(df: pd.DataFrame, table: str) -> pa.Table:
    """``df`` as Arrow, each column of the type its dtype says (:func:`data_type`), the key
    never null: every batch of a table has one schema, whatever its values (dlt refuses to
    buffer two), and the one the hints say."""
    key = TABLES[table][1]
    schema = pa.schema(
        [pa.field(c, ARROW[data_type(df[c].dtype)], nullable=c not in key) for c in df.columns]
    )
    return pa.Table.from_pandas(df, schema=schema, preserve_index=False)


def tombstones(like: pd.DataFrame, keys: list[tuple], table: str) -> pa.Table:
    """One row per key of ``table`` to delete, in the columns of ``like``: the key and the
    hard-delete flag set, the rest null."""
    key = list(TABLES[table][1])
    df = pd.DataFrame(keys, columns=key, dtype="Int64").reindex(columns=like.columns)
    df = df.astype(like.dtypes.to_dict())
    df[DELETED] = pd.array([True] * len(df), dtype="boolean")
    return arrow_table(df, table)


class Tally:
    """What a run loaded, per table: new, changed, removed rows (kept in the source's state)."""

    def __init__(self, state: dict, tables: list[str]) -> None:
        self.state = state
        state["last_run"] = {table: [0, 0, 0] for table in ["requests", *tables]}
        state["last_run_at"] = time.time()  # wall clock: which teams a run loaded

    def add(self, table: str, new: int = 0, changed: int = 0, removed: int = 0) -> None:
        counts = self.state["last_run"].setdefault(table, [0, 0, 0])
        for i, n in enumerate((new, changed, removed)):
            counts[i] += int(n)


def diffed(df: pd.DataFrame, table: str, seen: dict[str, str], tally: Tally) -> Iterator[pa.Table]:
    """The rows of a table with no revision that changed since ``seen`` (key -> row hash,
    updated in place): new and changed rows, and a deletion per key gone."""
    key = TABLES[table][1]
    keys = df[list(key)].astype("string").agg(":".join, axis=1).tolist() if len(df) else []
    content = df.drop(columns=[DELETED])
    hashes = [format(int(h), "x") for h in pd.util.hash_pandas_object(content, index=False)]
    now = dict(zip(keys, hashes, strict=True))
    fresh = [k not in seen or seen[k] != h for k, h in now.items()]
    gone = [k for k in seen if k not in now]
    tally.add(
        table,
        new=sum(k not in seen for k in now),
        changed=sum(k in seen and seen[k] != h for k, h in now.items()),
        removed=len(gone),
    )
    if any(fresh):
        yield arrow_table(df[fresh].reset_index(drop=True), table)
    if gone:
        yield tombstones(df, [tuple(int(p) for p in k.split(":")) for k in gone], table)
    seen.clear()
    seen.update(now)
