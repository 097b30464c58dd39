"""invtools.dlt.tables on its own: frames in, Arrow and the rows to load out (no dlt, no server).

What a load writes is decided here: each table's key and column types, the fingerprint a later
run compares with (so it must be the same for the same row in any process, and change with
any value), and the difference between the service's rows and what the destination holds.
These run in about a second; ``make mutation`` runs ``dlt tables`` against them.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from invtools.dlt.tables import (
    DELETED,
    FINGERPRINT,
    NO_LEVELS,
    TABLES,
    TEAM_COLUMNS,
    TEAM_KEY,
    Reconciliation,
    arrow_table,
    attribute_columns,
    data_type,
    fingerprints,
    hints,
    key_of,
    plain,
    tombstones,
)
from invtools.frames.schemas import ROLE_DTYPE, SCHEMAS, TIME_DTYPE, TX_TYPE_DTYPE

URL, TEAM = "https://rest.example.com", 48213

#: Each table's own key, after the team's: what a row of it is.
OWN_KEYS = {
    "teams": (),
    "items": ("item_id",),
    "locations": ("location_id",),
    "stock": ("item_id", "location_id"),
    "partners": ("partner_id",),
    "members": ("member_id",),
    "attributes": ("attribute_id",),
    "transactions": ("transaction_id",),
    "lines": ("transaction_id", "line_no"),
}

#: The warehouse type of each kind of frame column (what the tables' docstring promises).
WAREHOUSE_TYPE = {
    "Int64": "bigint",
    "float64": "double",
    "boolean": "bool",
    "string": "text",
    "category": "text",
    "datetime64[ms, UTC]": "timestamp",
}

#: The Arrow type each warehouse type is written as.
ARROW_TYPE = {
    "bigint": pa.int64(),
    "double": pa.float64(),
    "bool": pa.bool_(),
    "text": pa.string(),
    "timestamp": pa.timestamp("us", tz="UTC"),
}


def _times(*texts):
    return pd.Series(pd.to_datetime(list(texts), utc=True)).astype(TIME_DTYPE)


def members(ids, names=None, roles=None) -> pd.DataFrame:
    """A members frame as the client gives it (``roles``: a category)."""
    n = len(ids)
    return pd.DataFrame(
        {
            "member_id": pd.array(ids, dtype="Int64"),
            "name": pd.array(names if names is not None else [f"m{i}" for i in ids], "string"),
            "role": pd.Series(roles if roles is not None else ["admin"] * n, dtype=ROLE_DTYPE),
        }
    )


def an_item() -> pd.DataFrame:
    """:func:`mixed` as rows of the items table (its key: ``item_id``)."""
    return mixed().rename(columns={"id": "item_id"})


def mixed() -> pd.DataFrame:
    """Two rows with a column of each kind, the second row's values missing but its id."""
    return pd.DataFrame(
        {
            "id": pd.array([1, 2], dtype="Int64"),
            "name": pd.array(["Hammer", None], dtype="string"),
            "quantity": pd.array([2.5, float("nan")], dtype="float64"),
            "deleted": pd.array([True, None], dtype="boolean"),
            "at": _times("2024-03-01T12:00:00Z", None),
        }
    )


def empty(table: str) -> pd.DataFrame:
    """No rows, in the columns and dtypes a table's frame has (what a source yields)."""
    if table == "teams":
        dtypes = {"team_name": "string", "mode": "string", "data_as_of": TIME_DTYPE}
        dtypes["skipped"] = "string"
    else:
        dtypes = {c: d for c, d in SCHEMAS[table].items() if c not in NO_LEVELS}
    frame = pd.DataFrame({c: pd.Series([], dtype=d) for c, d in dtypes.items()})
    if table == "lines":
        frame.insert(1, "line_no", pd.array([], dtype="Int64"))
    if table == "attributes":
        frame["column_name"] = pd.array([], dtype="string")
    return frame


# ------------------------------------------------------------------------------ keys and hints


def test_every_tables_key_is_the_teams_then_its_own():
    assert set(TABLES) == set(OWN_KEYS)
    assert TEAM_KEY == ("base_url", "team_id")
    for table, own in OWN_KEYS.items():
        assert key_of(table) == ("base_url", "team_id", *own)


@pytest.mark.parametrize(
    ("dtype", "expected"),
    [
        (TIME_DTYPE, "timestamp"),
        (pd.DatetimeTZDtype(unit="us", tz="Europe/London"), "timestamp"),
        ("Int64", "bigint"),
        (np.dtype("int64"), "bigint"),
        (np.dtype("int32"), "bigint"),
        ("UInt8", "bigint"),
        (np.dtype("uint64"), "bigint"),
        ("Float64", "double"),
        (np.dtype("float64"), "double"),
        (np.dtype("float32"), "double"),
        ("boolean", "bool"),
        (np.dtype("bool"), "bool"),
        (pd.StringDtype(), "text"),
        (pd.Series(["a"]).dtype, "text"),  # pandas' default str
        (np.dtype("object"), "text"),
        (TX_TYPE_DTYPE, "text"),
        (ROLE_DTYPE, "text"),
    ],
    ids=str,
)
def test_each_dtype_has_its_warehouse_type(dtype, expected):
    assert data_type(dtype) == expected


@pytest.mark.parametrize("table", list(TABLES))
def test_every_table_hints_its_key_types_fingerprint_and_deletion_flag(table):
    got = hints(table)
    names = list(got)
    assert names[:2] == ["base_url", "team_id"]
    assert names[-2:] == [FINGERPRINT, DELETED]
    assert got["base_url"] == {"data_type": "text", "nullable": False}
    assert got["team_id"] == {"data_type": "bigint", "nullable": False}
    assert got[FINGERPRINT] == {"data_type": "text"}
    assert got[DELETED] == {"data_type": "bool", "hard_delete": True}
    for col in OWN_KEYS[table]:
        assert got[col] == {"data_type": "bigint", "nullable": False}
    for col, hint in got.items():
        assert hint.get("nullable", True) is (col not in key_of(table)), col
        assert set(hint) <= {"data_type", "nullable", "hard_delete"}, col
    frame = empty(table)
    assert set(names) == {*TEAM_KEY, *frame.columns, FINGERPRINT, DELETED}
    for col in frame.columns:
        assert got[col]["data_type"] == WAREHOUSE_TYPE[str(frame[col].dtype)], col


def test_the_hints_name_the_types_on_purpose():
    """A few columns that loaded wrong before: the categories as text, times with their zone."""
    tx, lines = hints("transactions"), hints("lines")
    assert tx["type"]["data_type"] == "text"
    assert hints("members")["role"]["data_type"] == "text"
    assert hints("partners")["type"]["data_type"] == "text"
    assert tx["transaction_time"]["data_type"] == tx["created_at"]["data_type"] == "timestamp"
    assert tx["backdated"]["data_type"] == "bool"
    assert tx["revision"]["data_type"] == "bigint"
    assert lines["quantity"]["data_type"] == hints("stock")["quantity"]["data_type"] == "double"
    assert not [c for c in lines if "stock_level" in c]  # a batch cannot know them
    assert lines["line_no"] == {"data_type": "bigint", "nullable": False}
    assert hints("attributes")["column_name"] == {"data_type": "text"}
    teams = hints("teams")
    assert {c: teams[c] for c in TEAM_COLUMNS} == {
        "team_name": {"data_type": "text"},
        "mode": {"data_type": "text"},
        "data_as_of": {"data_type": "timestamp"},
        "skipped": {"data_type": "text"},
    }


@pytest.mark.parametrize("table", list(TABLES))
def test_a_tables_arrow_rows_are_what_its_hints_say(table):
    """dlt refuses a batch whose Arrow schema is not the hinted one: the rows of every table,
    even with no rows at all, are typed and keyed as :func:`hints` says."""
    got = hints(table)
    schema = arrow_table(plain(empty(table), URL, TEAM), table).schema
    assert sorted(schema.names) == sorted(got)
    for field in schema:
        assert field.type == ARROW_TYPE[got[field.name]["data_type"]], field.name
        assert field.nullable is got[field.name].get("nullable", True), field.name


# ------------------------------------------------------------------------------------ plain


def test_plain_puts_the_teams_key_first_and_the_fingerprint_and_flag_last():
    df = members([5, 6, 7], roles=["admin", None, "viewer"])
    df.index = [10, 20, 30]  # what a filtered frame has
    df.attrs = {"provenance": {"endpoint": "/members"}}
    out = plain(df, URL, TEAM)
    assert list(out.columns) == [
        "base_url",
        "team_id",
        "member_id",
        "name",
        "role",
        FINGERPRINT,
        DELETED,
    ]
    assert out.index.equals(pd.RangeIndex(3))
    assert out.attrs == {}
    assert out["base_url"].tolist() == [URL] * 3 and out["base_url"].dtype == "string"
    assert out["team_id"].tolist() == [TEAM] * 3 and out["team_id"].dtype == "Int64"
    assert out["member_id"].tolist() == [5, 6, 7]
    # a category is its text, not an empty cell
    assert out["role"].dtype == "string"
    assert out["role"].tolist()[::2] == ["admin", "viewer"] and out["role"].isna().tolist()[1]
    assert out[DELETED].dtype == "boolean" and out[DELETED].isna().all()
    # the fingerprint kept is the one a later run computes of the same rows
    assert out[FINGERPRINT].dtype == "string"
    assert out[FINGERPRINT].tolist() == fingerprints(out)
    assert out[FINGERPRINT].tolist() == fingerprints(plain(df.reset_index(drop=True), URL, TEAM))
    # and the caller's frame is left as it was
    assert isinstance(df["role"].dtype, pd.CategoricalDtype) and df.attrs


def test_plain_of_no_rows_has_the_columns_and_no_rows():
    out = plain(members([]), URL, TEAM)
    assert list(out.columns) == [
        "base_url",
        "team_id",
        "member_id",
        "name",
        "role",
        FINGERPRINT,
        DELETED,
    ]
    assert len(out) == 0 and out["team_id"].dtype == "Int64" and out[DELETED].dtype == "boolean"


def test_a_category_fingerprints_as_its_text():
    as_category = plain(members([1, 2], roles=["admin", "viewer"]), URL, TEAM)
    as_text = members([1, 2])
    as_text["role"] = pd.array(["admin", "viewer"], dtype="string")
    assert as_category[FINGERPRINT].tolist() == plain(as_text, URL, TEAM)[FINGERPRINT].tolist()


# ----------------------------------------------------------------------------- fingerprints


def test_a_fingerprint_is_pinned_for_rows_already_in_warehouses():
    """Warehouses hold the fingerprints of earlier runs: a fingerprint that changed would
    reload every row of every table once. Change these only on purpose, and say so."""
    assert fingerprints(mixed()) == ["9bc68b126125e1f5", "ad48ea4c2bbece80"]
    assert plain(mixed(), URL, TEAM)[FINGERPRINT].tolist() == [
        "bf0c43aab111bded",
        "d08ea2e47baaaa78",
    ]


def test_a_fingerprint_is_the_same_in_another_process():
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); import tests.test_dlt_tables as t;"
        "print(json.dumps(t.fingerprints(t.mixed())))"
    )
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    done = subprocess.run(
        [sys.executable, "-c", code, root], capture_output=True, text=True, env=env, check=True
    )
    assert json.loads(done.stdout) == fingerprints(mixed())


def test_a_fingerprint_is_sixteen_hex_digits_per_row():
    prints = fingerprints(mixed())
    assert len(prints) == 2 and all(re.fullmatch("[0-9a-f]{16}", p) for p in prints)
    assert fingerprints(mixed().iloc[:0]) == []


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("id", 3),
        ("name", "Hammer!"),
        ("quantity", 2.25),
        ("deleted", False),
        ("at", pd.Timestamp("2024-03-01T12:00:00.001Z")),
    ],
)
def test_a_changed_value_changes_its_rows_fingerprint_only(column, value):
    before = mixed()
    after = before.copy()
    after.loc[0, column] = value
    old, new = fingerprints(before), fingerprints(after)
    assert old[0] != new[0] and old[1] == new[1]


@pytest.mark.parametrize("column", ["name", "quantity", "deleted", "at"])
def test_a_value_that_appears_or_goes_changes_the_fingerprint(column):
    full, gone = mixed(), mixed()
    gone.loc[0, column] = None
    assert fingerprints(full)[0] != fingerprints(gone)[0]
    assert fingerprints(gone)[0] == fingerprints(gone.drop(columns=column))[0]


def test_a_value_moved_to_another_column_changes_the_fingerprint():
    """An attribute renamed: its values move to the new name's column."""
    df = pd.DataFrame({"id": pd.array([1, 2], dtype="Int64"), "attr_a": [0.5, None]})
    renamed = df.rename(columns={"attr_a": "attr_b"})
    assert [a == b for a, b in zip(fingerprints(df), fingerprints(renamed), strict=True)] == [
        False,
        True,
    ]
    two = pd.DataFrame({"a": pd.array([1], "Int64"), "b": pd.array([2], "Int64")})
    swapped = pd.DataFrame({"a": pd.array([2], "Int64"), "b": pd.array([1], "Int64")})
    assert fingerprints(two) != fingerprints(swapped)


def test_a_column_null_in_every_row_changes_nothing():
    df = mixed()
    prints = fingerprints(df)
    with_nulls = df.assign(
        attr_new=np.nan,
        memo=pd.array([None, None], dtype="string"),
        flag=pd.array([None, None], dtype="boolean"),
        count=pd.array([None, None], dtype="Int64"),
        removed_at=_times(None, None),
    )
    assert fingerprints(with_nulls) == prints
    assert fingerprints(with_nulls.rename(columns={"attr_new": "attr_renamed"})) == prints


def test_nan_and_na_hold_nothing():
    a = pd.DataFrame({"id": pd.array([1, 1, 1], "Int64")})
    b = a.assign(x=[np.nan, 0.0, np.nan], y=pd.array([None, None, "y"], dtype="string"))
    prints = fingerprints(b)
    assert prints[0] == fingerprints(a)[0]
    assert len(set(prints)) == 3  # 0.0 is a value; so is "y"


def test_the_flags_columns_are_not_part_of_a_rows_fingerprint_wherever_they_are():
    df = mixed()
    prints = fingerprints(df)
    flagged = df.assign(**{DELETED: pd.array([True, False], dtype="boolean")})
    flagged[FINGERPRINT] = pd.array(["x", "y"], dtype="string")
    assert fingerprints(flagged) == prints
    assert fingerprints(flagged[[DELETED, FINGERPRINT, *df.columns]]) == prints


def test_the_order_of_the_columns_and_the_index_do_not_count():
    df = mixed()
    assert fingerprints(df[list(reversed(df.columns))]) == fingerprints(df)
    assert fingerprints(df.set_axis([7, 3])) == fingerprints(df)


_cells = st.fixed_dictionaries(
    {
        "n": st.none() | st.integers(-(2**40), 2**40),
        "x": st.none() | st.floats(allow_nan=False, width=32),
        "s": st.none() | st.text(max_size=5),
        "b": st.none() | st.booleans(),
        "t": st.none() | st.integers(0, 2**41),
    }
)


def _frame(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "n": pd.array([r["n"] for r in rows], dtype="Int64"),
            "x": pd.array([np.nan if r["x"] is None else r["x"] for r in rows], dtype="float64"),
            "s": pd.array([r["s"] for r in rows], dtype="string"),
            "b": pd.array([r["b"] for r in rows], dtype="boolean"),
            "t": pd.Series(
                pd.to_datetime([r["t"] for r in rows], unit="ms", utc=True), dtype=TIME_DTYPE
            ),
        }
    )


@settings(max_examples=60, deadline=None, database=None)
@given(rows=st.lists(_cells, min_size=1, max_size=8), data=st.data())
def test_a_rows_fingerprint_depends_on_the_row_alone(rows, data):
    """Not on where the row is, nor on which other rows share its batch."""
    prints = fingerprints(_frame(rows))
    order = data.draw(st.permutations(range(len(rows))))
    assert fingerprints(_frame([rows[i] for i in order])) == [prints[i] for i in order]
    for i, row in enumerate(rows):
        assert fingerprints(_frame([row])) == [prints[i]]
    # equal rows, equal fingerprints; rows that differ (nulls aside), different ones
    by_row = {json.dumps(r, sort_keys=True): p for r, p in zip(rows, prints, strict=True)}
    assert len(set(by_row.values())) == len(by_row)


# ------------------------------------------------------------------------------------ Arrow


def test_arrow_types_each_column_by_its_dtype_and_keeps_the_key_not_null():
    rows = plain(an_item().assign(location_id=3), URL, TEAM)
    rows["location_id"] = rows["location_id"].astype("Int64")
    schema = arrow_table(rows, "stock").schema
    assert schema.names == list(rows.columns)
    assert {f.name: str(f.type) for f in schema} == {
        "base_url": "string",
        "team_id": "int64",
        "item_id": "int64",
        "name": "string",
        "quantity": "double",
        "deleted": "bool",
        "at": "timestamp[us, tz=UTC]",
        "location_id": "int64",
        FINGERPRINT: "string",
        DELETED: "bool",
    }
    assert [f.name for f in schema if not f.nullable] == [
        "base_url",
        "team_id",
        "item_id",
        "location_id",
    ]


def test_arrow_has_one_schema_whatever_the_values():
    """dlt refuses to buffer two schemas of one table: all-null columns and no rows give the
    schema full rows give."""
    full = plain(an_item(), URL, TEAM)
    nulls = full.copy()
    for col in ("name", "quantity", "deleted", "at"):
        nulls[col] = pd.Series([None, None], dtype=full[col].dtype)
    schema = arrow_table(full, "items").schema
    assert arrow_table(nulls, "items").schema.equals(schema)
    assert arrow_table(full.iloc[:0], "items").schema.equals(schema)


def test_arrow_keeps_the_values_and_leaves_the_index_out():
    rows = plain(an_item(), URL, TEAM).set_axis([4, 9])
    table = arrow_table(rows, "items")
    assert table.column_names == list(rows.columns)
    got = table.to_pylist()
    assert [r["item_id"] for r in got] == [1, 2]
    assert [r["name"] for r in got] == ["Hammer", None]
    assert got[0]["quantity"] == 2.5 and got[1]["quantity"] is None
    assert got[0]["at"] == pd.Timestamp("2024-03-01T12:00:00Z").to_pydatetime()
    assert [r[FINGERPRINT] for r in got] == rows[FINGERPRINT].tolist()


def test_a_row_without_its_key_is_refused():
    rows = plain(an_item(), URL, TEAM)
    rows.loc[1, "item_id"] = None
    with pytest.raises((ValueError, pa.ArrowInvalid), match="item_id"):
        arrow_table(rows, "items")


# ------------------------------------------------------------------------------- tombstones


@pytest.mark.parametrize("batch", ["rows", "no rows"])
def test_tombstones_set_the_key_and_the_flag_and_leave_the_rest_null(batch):
    lines = empty("lines")
    if batch == "rows":  # the last batch a source saw: any rows, or none
        lines = pd.concat([lines, lines.iloc[:0]])
        lines.loc[0, ["transaction_id", "line_no", "quantity", "item_name"]] = [8, 0, 2.0, "x"]
        lines = lines.astype(empty("lines").dtypes.to_dict())
    like = plain(lines, URL, TEAM)
    keys = [(URL, TEAM, 5, 0), (URL, TEAM, 5, 1), (URL, TEAM, 11, 0)]
    table = tombstones(like, keys, "lines")
    assert table.schema.equals(arrow_table(like, "lines").schema)
    assert table.num_rows == 3
    got = table.to_pylist()
    assert [tuple(r[c] for c in key_of("lines")) for r in got] == keys
    assert [r[DELETED] for r in got] == [True] * 3
    rest = set(like.columns) - set(key_of("lines")) - {DELETED}
    assert rest and all(r[c] is None for r in got for c in rest)


def test_no_tombstones_is_no_rows_of_the_same_schema():
    like = plain(members([1]), URL, TEAM)
    table = tombstones(like, [], "members")
    assert table.num_rows == 0
    assert table.schema.equals(arrow_table(like, "members").schema)


def test_a_teams_tombstone_is_its_team():
    like = plain(empty("teams"), URL, TEAM)
    (row,) = tombstones(like, [(URL, TEAM)], "teams").to_pylist()
    assert (row["base_url"], row["team_id"], row[DELETED]) == (URL, TEAM, True)
    assert row["team_name"] is None and row[FINGERPRINT] is None


# --------------------------------------------------------------------------- Reconciliation


def _fp(rows: pd.DataFrame, key: int) -> str:
    return rows.loc[rows["member_id"] == key, FINGERPRINT].iloc[0]


def test_reconciliation_loads_the_new_and_changed_and_deletes_the_gone():
    now = plain(members([1, 2, 3, 4]), URL, TEAM)
    held = {(1,): _fp(now, 1), (2,): "0" * 16, (5,): "1" * 16, (6,): "2" * 16}
    given = dict(held)
    r = Reconciliation("members", (URL, TEAM), held)
    fresh = r.fresh(now)
    assert fresh["member_id"].tolist() == [2, 3, 4]
    assert list(fresh.columns) == list(now.columns)
    assert fresh.index.equals(pd.RangeIndex(3))
    assert r.counts == {"new": 2, "changed": 1, "removed": 0}
    assert sorted(r.gone()) == [(URL, TEAM, 5), (URL, TEAM, 6)]
    assert r.counts == {"new": 2, "changed": 1, "removed": 2}
    assert held == given  # what the destination holds, as it was read


def test_reconciliation_of_rows_the_destination_holds_loads_nothing():
    now = plain(members([1, 2]), URL, TEAM)
    r = Reconciliation("members", (URL, TEAM), {(1,): _fp(now, 1), (2,): _fp(now, 2)})
    assert len(r.fresh(now)) == 0
    assert r.gone() == []
    assert r.counts == {"new": 0, "changed": 0, "removed": 0}


def test_a_key_given_twice_counts_once_its_first_row():
    now = plain(members([1, 1, 2], names=["first", "second", "b"]), URL, TEAM)
    r = Reconciliation("members", (URL, TEAM), {(2,): "0" * 16})
    fresh = r.fresh(now)
    assert fresh["name"].tolist() == ["first", "b"]
    assert r.counts == {"new": 1, "changed": 1, "removed": 0}


def test_keys_are_reconciled_across_batches_and_gone_is_what_no_batch_had():
    first = plain(members([1, 2]), URL, TEAM)
    second = plain(members([2, 3], names=["again", "m3"]), URL, TEAM)
    held = {(1,): _fp(first, 1), (3,): _fp(second, 3), (4,): "f" * 16}
    r = Reconciliation("members", (URL, TEAM), held)
    assert r.fresh(first)["member_id"].tolist() == [2]
    assert r.fresh(second)["member_id"].tolist() == []  # 2 was seen in the first batch
    assert r.fresh(plain(members([]), URL, TEAM)).empty
    assert r.gone() == [(URL, TEAM, 4)]
    assert r.counts == {"new": 1, "changed": 0, "removed": 1}


def test_a_two_column_key_is_reconciled_whole():
    lines = empty("lines")
    lines = pd.DataFrame(
        {
            "transaction_id": pd.array([7, 7, 8], dtype="Int64"),
            "line_no": pd.array([0, 1, 0], dtype="Int64"),
            "quantity": [1.0, 2.0, 3.0],
        }
    )
    now = plain(lines, URL, TEAM)
    prints = now[FINGERPRINT].tolist()
    held = {(7, 0): prints[0], (7, 1): prints[0], (8, 1): prints[2]}
    r = Reconciliation("lines", (URL, TEAM), held)
    fresh = r.fresh(now)
    assert list(zip(fresh["transaction_id"], fresh["line_no"], strict=True)) == [(7, 1), (8, 0)]
    assert r.gone() == [(URL, TEAM, 8, 1)]
    assert r.counts == {"new": 1, "changed": 1, "removed": 1}


def test_the_teams_table_has_one_row_its_team():
    row = plain(
        pd.DataFrame({"team_name": pd.array(["Shop"], "string")}).reindex(
            columns=list(TEAM_COLUMNS)
        ),
        URL,
        TEAM,
    )
    same = Reconciliation("teams", (URL, TEAM), {(): row[FINGERPRINT].iloc[0]})
    assert same.fresh(row).empty and same.gone() == [] and same.counts["changed"] == 0
    renamed = Reconciliation("teams", (URL, TEAM), {(): "0" * 16})
    assert len(renamed.fresh(row)) == 1 and renamed.counts == {
        "new": 0,
        "changed": 1,
        "removed": 0,
    }
    first = Reconciliation("teams", (URL, TEAM), {})
    assert len(first.fresh(row)) == 1 and first.counts["new"] == 1
    gone = Reconciliation("teams", (URL, TEAM), {(): "0" * 16})
    gone.fresh(row.iloc[:0])
    assert gone.gone() == [(URL, TEAM)] and gone.counts["removed"] == 1


@settings(max_examples=50, deadline=None, database=None)
@given(
    now=st.dictionaries(st.integers(1, 30), st.sampled_from("abc"), max_size=20),
    held_names=st.dictionaries(st.integers(1, 30), st.sampled_from("abcz"), max_size=20),
    data=st.data(),
)
def test_reconciliation_is_the_set_difference_of_the_service_and_the_destination(
    now, held_names, data
):
    ids = data.draw(st.permutations(sorted(now)))
    rows = plain(members(ids, names=[now[i] for i in ids]), URL, TEAM)
    prints = dict(zip(ids, rows[FINGERPRINT], strict=True))
    # the destination holds a fingerprint of what it loaded: the same name, the same one
    same = {
        i: prints[i] if i in now and now[i] == name else format(i, "016x")
        for i, name in held_names.items()
    }
    held = {(i,): p for i, p in same.items()}
    cuts = sorted(data.draw(st.lists(st.integers(0, len(ids)), max_size=3)))
    r = Reconciliation("members", (URL, TEAM), held)
    loaded = []
    for start, end in zip([0, *cuts], [*cuts, len(ids)], strict=True):
        fresh = r.fresh(rows.iloc[start:end])
        loaded += fresh["member_id"].tolist() if len(fresh) else []
    gone = r.gone()
    unchanged = {i for i in now.keys() & held_names.keys() if now[i] == held_names[i]}
    assert Counter(loaded) == Counter(now.keys() - unchanged)
    assert sorted(gone) == sorted((URL, TEAM, i) for i in held_names.keys() - now.keys())
    assert r.counts == {
        "new": len(now.keys() - held_names.keys()),
        "changed": len(now.keys() & held_names.keys()) - len(unchanged),
        "removed": len(held_names.keys() - now.keys()),
    }


# ------------------------------------------------------------------------ attribute columns


def _attrs(names: dict[int, str]) -> pd.DataFrame:
    return pd.DataFrame({"attribute_id": list(names), "attr_name": list(names.values())})


def test_attribute_columns_are_lower_snake_case_and_keep_digits():
    got = attribute_columns(
        _attrs({1: "Weight (kg)", 2: "  Size / EU 42 ", 3: "ISBN-13", 4: "a__b", 5: "Größe"})
    )
    assert got == {
        "attr_Weight (kg)": "attr_weight_kg",
        "attr_  Size / EU 42 ": "attr_size_eu_42",
        "attr_ISBN-13": "attr_isbn_13",
        "attr_a__b": "attr_a_b",
        "attr_Größe": "attr_gr_e",
    }


def test_a_name_with_no_letter_or_digit_still_has_a_column():
    assert attribute_columns(_attrs({3: "%"})) == {"attr_%": "attr_x"}
    assert attribute_columns(_attrs({3: ""})) == {"attr_": "attr_x"}


def test_names_that_would_meet_get_their_id_and_the_others_do_not():
    got = attribute_columns(_attrs({7: "Colour", 8: "colour", 9: "COLOUR!", 10: "Size"}))
    assert got == {
        "attr_Colour": "attr_colour_7",
        "attr_colour": "attr_colour_8",
        "attr_COLOUR!": "attr_colour_9",
        "attr_Size": "attr_size",
    }


def test_no_attributes_no_columns():
    assert attribute_columns(_attrs({})) == {}


def test_an_id_suffix_never_meets_another_attributes_name():
    """ "a" and "A" would both be attr_a, and attr_a_1 is already "a 1"'s (a bug: two
    attributes' values in one column, or a frame with the column twice)."""
    got = attribute_columns(_attrs({1: "a", 2: "A", 3: "a 1", 4: "b"}))
    assert got == {
        "attr_a": "attr_a_1_1",
        "attr_A": "attr_a_2",
        "attr_a 1": "attr_a_1_3",
        "attr_b": "attr_b",
    }


@settings(max_examples=150, deadline=None, database=None)
@given(
    names=st.lists(
        st.text(alphabet="aA _-1(é", max_size=6) | st.sampled_from(["a", "A", "a 1", "a_2"]),
        max_size=8,
        unique=True,
    ),
    data=st.data(),
)
def test_each_attribute_has_a_column_of_its_own_that_dlt_keeps_as_named(names, data):
    """Whatever the names (each attribute's its own), two never share a column, and
    dlt's naming convention keeps each column as named (so ``column_name`` says it)."""
    naming = pytest.importorskip("dlt.common.normalizers.naming.snake_case").NamingConvention()
    ids = data.draw(
        st.lists(st.integers(1, 12), min_size=len(names), max_size=len(names), unique=True)
    )
    names = dict(zip(ids, names, strict=True))
    got = attribute_columns(_attrs(names))
    assert list(got) == [f"attr_{n}" for n in names.values()]
    assert len(set(got.values())) == len(got)
    for column in got.values():
        assert column.startswith("attr_")
        assert naming.normalize_identifier(column) == column


def test_ids_are_compared_exactly_beyond_a_doubles_precision():
    big = 2**53 + 1  # a bigint a double cannot hold: 2**53 as a float
    now = plain(members([big]), URL, TEAM)
    r = Reconciliation("members", (URL, TEAM), {(big,): _fp(now, big), (big - 1,): "0" * 16})
    assert r.fresh(now).empty
    assert r.gone() == [(URL, TEAM, big - 1)]
