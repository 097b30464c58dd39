"""Every frame the package returns survives the files analysts save it to (issue 11, item 1).

Parquet and pickle give back the same values, dtypes and ``df.attrs`` (the provenance);
Feather gives back the same values and dtypes, and ``attrs`` where pyarrow keeps them
(pyarrow 22 and later); CSV gives back the values. Excel cannot hold a time zone, so
:func:`invtools.frames.excel_ready` makes a frame for it. The frames come from a client, a
mirror, :mod:`invtools.frames`, :mod:`invtools.analysis` and :func:`invtools.activity_table`
over real HTTP to the stand-in server.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable

import pandas as pd
import pyarrow
import pytest

import invtools
from invtools import DeletedItemsWarning, analysis, frames
from invtools.frames import SCHEMAS, excel_ready
from invtools.sandbox import serve

pytestmark = pytest.mark.network

#: pyarrow keeps DataFrame.attrs in Feather files (its pandas metadata) from version 22 on.
FEATHER_KEEPS_ATTRS = int(pyarrow.__version__.split(".")[0]) >= 22


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> dict[str, pd.DataFrame]:
    """name -> a frame as the package returns it (built once for the module)."""
    folder = tmp_path_factory.mktemp("export")
    with serve(rate_limit=0, size=200) as sb:
        with invtools.Client(
            sb.tokens["shop"],
            base_url=sb.base_url,
            cache=folder / "c.sqlite",
            rate_limit=0,
            progress=False,
        ) as c:
            mirror = invtools.TransactionMirror(folder / "m.sqlite", c)
            mirror.sync()
            sb.delete_transaction(sb.data("shop").transactions[3]["id"])
            mirror.sync()
            future = "2030-01-01"
            out = {
                "items": c.items_df(),
                "stock": c.stock_df(),
                "transactions": c.transactions_df(),  # page bytes -> pyarrow
                "transactions_out": c.transactions_df(type="out"),  # rows -> dicts
                "transactions_with_lines": c.transactions_df(since="2026-10-01", with_lines=True),
                "lines": c.lines_df(),
                "locations": c.locations_df(),
                "partners": c.partners_df(),
                "members": c.members_df(),
                "attributes": c.attributes_df(),
                "items_empty": c.items_df(item_ids=[999999]),
                "stock_empty": c.stock_df(item_ids=[999999]),
                "transactions_empty": c.transactions_df(since=future),
                "transactions_with_lines_empty": c.transactions_df(since=future, with_lines=True),
                "lines_empty": c.lines_df(since=future),
                "partners_empty": frames.with_provenance(frames.partners_df([]), source="api"),
                "members_empty": frames.with_provenance(frames.members_df([]), source="api"),
                "mirror_transactions": mirror.transactions_df(include_removed=True),
                "mirror_lines": mirror.lines_df(),
                "mirror_changes": mirror.changes_df(),
                "mirror_syncs": mirror.syncs_df(),
                "mirror_history": mirror.stock_history(),
            }
    lines, items = out["lines"], out["items"]
    location = int(out["locations"]["location_id"].iloc[0])
    out["history"] = frames.stock_history(lines)
    out["history_one_location"] = frames.stock_history(lines, location_id=location)
    out["history_empty"] = frames.stock_history(out["lines_empty"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeletedItemsWarning)
        out["stockouts"] = analysis.stockouts(out["history"])
        out["stockout_summary"] = analysis.stockout_summary(out["history"])
        out["stockout_summary_empty"] = analysis.stockout_summary(out["history_empty"])
        out["movement"] = analysis.movement(lines, items)
        out["stock_at"] = analysis.stock_at(
            frames.stock_history(lines, by_location=True), as_of="2026-10-15"
        )
        out["stock_value_by_month"] = analysis.stock_value_by_month(out["history"], items)
        out["month_end_stock"] = analysis.month_end_stock(out["history"], wide=False)
        out["month_end_stock_wide"] = analysis.month_end_stock(out["history"])
        out["supplier_summary"] = analysis.supplier_summary(
            lines, items=items, partners=out["partners"]
        )
        out["shrinkage"] = analysis.shrinkage(lines, items, by="location")
    out["stock_value"] = analysis.stock_value(out["stock"], items)
    out["activity"] = invtools.activity_table(out["transactions"], "W")
    out["activity_by_item"] = invtools.activity_table(lines, "M", by="item")
    return out


NAMES = [
    "items",
    "stock",
    "transactions",
    "transactions_out",
    "transactions_with_lines",
    "lines",
    "locations",
    "partners",
    "members",
    "attributes",
    "items_empty",
    "stock_empty",
    "transactions_empty",
    "transactions_with_lines_empty",
    "lines_empty",
    "partners_empty",
    "members_empty",
    "mirror_transactions",
    "mirror_lines",
    "mirror_changes",
    "mirror_syncs",
    "mirror_history",
    "history",
    "history_one_location",
    "history_empty",
    "stockouts",
    "stockout_summary",
    "stockout_summary_empty",
    "movement",
    "stock_value",
    "stock_at",
    "stock_value_by_month",
    "month_end_stock",
    "month_end_stock_wide",
    "supplier_summary",
    "shrinkage",
    "activity",
    "activity_by_item",
]

#: Frames whose index is part of the answer (a period, a month): Feather and CSV need it as
#: a column.
INDEXED = ("activity", "activity_by_item", "month_end_stock_wide")

#: The frames' own schemas, to put back what an empty file cannot hold (see the README).
SCHEMA_OF = {
    "transactions_empty": "transactions",
    "transactions_with_lines_empty": "transactions",
    "lines_empty": "lines",
    "partners_empty": "partners",
    "members_empty": "members",
}


def test_every_frame_is_listed_and_carries_plain_json_attrs(made):
    assert sorted(made) == sorted(NAMES)
    api = [
        n for n in NAMES if not n.startswith(("history", "stock", "movement", "activity", "month"))
    ]
    for name in api:
        assert made[name].attrs.get("source") in ("api", "mirror"), name
    assert made["items_empty"].columns.tolist() == made["items"].columns.tolist()
    assert len(made["transactions_empty"]) == 0 and len(made["lines"]) > 0


def _round_trip(df: pd.DataFrame, path, write: str, read: Callable) -> pd.DataFrame:
    getattr(df, write)(path)
    return read(path)


def _expected_back(name: str, df: pd.DataFrame, back: pd.DataFrame) -> pd.DataFrame:
    """An empty file has no categories: pyarrow writes a category column's dictionary with its
    rows. The frame's schema puts them back, as the README shows."""
    if name in SCHEMA_OF:
        assert len(back) == 0
        return back.astype(SCHEMAS[SCHEMA_OF[name]])
    return back


@pytest.mark.parametrize("name", NAMES)
def test_parquet_keeps_values_dtypes_and_provenance(made, name, tmp_path):
    df = made[name]
    back = _round_trip(df, tmp_path / "f.parquet", "to_parquet", pd.read_parquet)
    pd.testing.assert_frame_equal(_expected_back(name, df, back), df)
    assert back.attrs == df.attrs


@pytest.mark.parametrize("name", NAMES)
def test_pickle_keeps_everything(made, name, tmp_path):
    df = made[name]
    back = _round_trip(df, tmp_path / "f.pkl", "to_pickle", pd.read_pickle)
    pd.testing.assert_frame_equal(back, df)
    assert back.attrs == df.attrs


@pytest.mark.parametrize("name", NAMES)
def test_feather_keeps_values_and_dtypes_and_attrs_with_a_recent_pyarrow(made, name, tmp_path):
    df = made[name]
    flat = df.reset_index() if name in INDEXED else df  # Feather has no index
    back = _round_trip(flat, tmp_path / "f.feather", "to_feather", pd.read_feather)
    pd.testing.assert_frame_equal(_expected_back(name, flat, back), flat)
    if FEATHER_KEEPS_ATTRS:
        assert back.attrs == df.attrs
    else:  # documented in the README: use Parquet (or pickle) to keep the provenance
        assert back.attrs == {}


def _from_csv(path, like: pd.DataFrame, index: bool) -> pd.DataFrame:
    """Read a CSV back as text (``dtype=str``, the README's advice: a barcode of digits stays
    text) and type each column as ``like`` has it: the values are all there."""
    back = pd.read_csv(path, index_col=0 if index else None, dtype=str)
    for col, dtype in like.dtypes.items():
        values = back[str(col)]
        if isinstance(dtype, pd.DatetimeTZDtype):
            values = pd.to_datetime(values, utc=True, format="ISO8601").dt.as_unit(dtype.unit)
        elif pd.api.types.is_bool_dtype(dtype):
            values = values.map({"True": True, "False": False})
        elif pd.api.types.is_numeric_dtype(dtype):
            values = pd.to_numeric(values)
        back[str(col)] = values.astype(dtype)
    if index and isinstance(like.index, pd.DatetimeIndex):
        back.index = (
            pd.to_datetime(back.index, utc=True).as_unit(like.index.unit).tz_convert(like.index.tz)
        )
    if index:
        back.index = back.index.astype(like.index.dtype)
        back.index.name = like.index.name
    back.columns = like.columns
    return back


@pytest.mark.parametrize("name", NAMES)
def test_csv_values_read_back(made, name, tmp_path):
    df = made[name]
    index = name in INDEXED
    df.to_csv(tmp_path / "f.csv", index=index)
    back = _from_csv(tmp_path / "f.csv", df, index)
    pd.testing.assert_frame_equal(back, df, check_flags=False, check_freq=False)


# -- Excel ----------------------------------------------------------------------------------


def test_excel_ready_gives_local_wall_clock_times_and_text_for_nested_values(made):
    tx = made["transactions"]
    ready = excel_ready(tx, tz="Asia/Seoul")
    for col in ("transaction_time", "created_at"):
        assert ready[col].dt.tz is None
        want = tx[col].dt.tz_convert("Asia/Seoul").dt.tz_localize(None)
        pd.testing.assert_series_equal(ready[col], want)
    assert ready.attrs == tx.attrs and tx["transaction_time"].dt.tz is not None  # a copy
    nested = pd.DataFrame({"extra": [{"a": 1}, None, [1, 2]]})
    assert excel_ready(nested)["extra"].tolist() == ['{"a": 1}', None, "[1, 2]"]
    table = excel_ready(made["activity"], tz="Europe/Paris")
    assert table.index.tz is None and table.index.name == "period"


@pytest.mark.parametrize(
    "name",
    [
        "items",
        "transactions",
        "lines",
        "activity",
        "movement",
        "stockout_summary",
        "mirror_changes",
        "transactions_empty",
    ],
)
def test_excel_ready_frames_are_written_by_openpyxl(made, name, tmp_path):
    pytest.importorskip("openpyxl")
    df = made[name]
    if len(df) and any(isinstance(t, pd.DatetimeTZDtype) for t in df.dtypes):
        with pytest.raises(ValueError, match="timezone"):  # the pandas limit excel_ready solves
            df.to_excel(tmp_path / "raw.xlsx")
    ready = excel_ready(df, tz="Europe/Paris")
    index = name == "activity"
    ready.to_excel(tmp_path / "f.xlsx", index=index)
    back = pd.read_excel(tmp_path / "f.xlsx", index_col=0 if index else None)
    assert back.shape == ready.shape
    for col in ready.columns:
        if pd.api.types.is_datetime64_any_dtype(ready[col]):
            pd.testing.assert_series_equal(
                back[str(col)].astype(ready[col].dtype), ready[col], check_names=False
            )


def test_to_excel_writes_every_frame_and_a_sheet_of_their_provenance(made, tmp_path):
    pytest.importorskip("openpyxl")
    chosen = {
        name: made[name]
        for name in (
            "items",
            "transactions",
            "lines",
            "activity",
            "month_end_stock_wide",
            "supplier_summary",
            "shrinkage",
            "history_empty",
        )
    }
    chosen["plain"] = pd.DataFrame({"x": [1, 2]})  # a frame without provenance
    path = frames.to_excel(tmp_path / "audit.xlsx", chosen, tz="Europe/Paris")
    book = pd.read_excel(path, sheet_name=None)
    assert list(book) == [*chosen, "provenance"]
    for name, df in chosen.items():
        indexed = name in INDEXED
        assert book[name].shape == (len(df), df.shape[1] + indexed), name
    tx = chosen["transactions"]
    want = tx["transaction_time"].dt.tz_convert("Europe/Paris").dt.tz_localize(None)
    assert book["transactions"]["transaction_time"].tolist() == want.tolist()
    said = book["provenance"].set_index("sheet")
    assert said.index.tolist() == list(chosen)
    assert said.loc["transactions", "endpoint"] == tx.attrs["endpoint"]
    assert said.loc["lines", "fetched_at"] == chosen["lines"].attrs["fetched_at"]
    assert said.loc["supplier_summary", "team_name"] == made["lines"].attrs["team_name"]
    assert said.loc["items", "frame_rows"] == len(chosen["items"])
    assert set(said["times_in"]) == {"Europe/Paris"}
    assert said.loc["history_empty", "source"] == "api"  # stock_history carries it on
    assert pd.isna(said.loc["plain", "source"])
    assert said.loc["shrinkage", "deleted_items_excluded"] == json.dumps(
        chosen["shrinkage"].attrs["deleted_items_excluded"]
    )


def test_to_excel_writes_text_that_looks_like_a_formula_as_text(tmp_path):
    openpyxl = pytest.importorskip("openpyxl")
    memo = '=HYPERLINK("https://example.com/x", "click")'  # a memo as a service may hold it
    tx = frames.transactions_df([{"id": 1, "type": "in", "memo": memo}])
    tx.attrs.update(source="api", team_name="=1+1")
    path = frames.to_excel(tmp_path / "x.xlsx", {"tx": tx, "=sheet": pd.DataFrame({"=a": [1]})})
    book = openpyxl.load_workbook(path)
    cells = [c for ws in book.worksheets for row in ws.iter_rows() for c in row]
    assert [c.value for c in cells if c.data_type == "f"] == []
    assert memo in [c.value for c in cells] and "=1+1" in [c.value for c in cells]


@pytest.mark.parametrize(
    "sheets, words",
    [
        ({"provenance": pd.DataFrame()}, "provenance sheet"),
        ({"a" * 32: pd.DataFrame()}, "31 characters"),
        ({"Q3/Q4": pd.DataFrame()}, "may not hold"),
        ({"Items": pd.DataFrame(), "items": pd.DataFrame()}, "twice"),
        ({}, "empty"),
    ],
)
def test_to_excel_refuses_a_sheet_name_excel_would_refuse(sheets, words, tmp_path):
    with pytest.raises(invtools.ConfigError, match=f"to_excel: .*{words}"):
        frames.to_excel(tmp_path / "x.xlsx", sheets)
    assert not (tmp_path / "x.xlsx").exists()


@pytest.mark.parametrize(
    "sheets, tz, error, words",
    [
        ({"x": [1, 2]}, "UTC", TypeError, "not a DataFrame"),
        ({3: pd.DataFrame()}, "UTC", TypeError, "must be text"),
        ([pd.DataFrame()], "UTC", TypeError, "must be a mapping"),
        ({"x": pd.DataFrame()}, 1, TypeError, "tz must be"),
        ({"x": pd.DataFrame()}, "Mars/Olympus", invtools.ConfigError, "tz='Mars/Olympus'"),
    ],
)
def test_to_excel_a_wrong_kind_is_a_type_error_a_bad_value_a_config_error(
    sheets, tz, error, words, tmp_path
):
    with pytest.raises(error, match=f"to_excel: .*{words}"):
        frames.to_excel(tmp_path / "x.xlsx", sheets, tz=tz)
    assert not (tmp_path / "x.xlsx").exists()
