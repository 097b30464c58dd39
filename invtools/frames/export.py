"""Frames ready for a spreadsheet: :func:`excel_ready`, and :func:`to_excel` for a workbook.

Parquet, Feather, pickle and CSV take invtools' frames as they are (see the README, "Saving
frames"). Excel does not: it has no time zones, and pandas refuses to write a time that has
one (``ValueError: Excel does not support datetimes with timezones``). Every time in
invtools is UTC, so a frame needs one step before ``to_excel``. Nor does a sheet keep
``df.attrs``: :func:`to_excel` writes each frame's provenance on a sheet of its own.
:func:`to_excel` is the one function of :mod:`invtools.frames` that writes a file (the one it
is given); it needs openpyxl (``pip install 'invtools[demo]'``).

>>> df = pd.DataFrame({"when": pd.to_datetime(["2026-05-02T01:10:00Z"]).as_unit("ms"),
...                    "extra": [{"unit": "pcs"}]})
>>> ready = excel_ready(df, tz="Asia/Seoul")
>>> ready.loc[0, "when"], ready.loc[0, "extra"]
(Timestamp('2026-05-02 10:10:00'), '{"unit": "pcs"}')
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import pandas as pd

from invtools._config import check_kind, check_path
from invtools._types import check_tz
from invtools.errors import ArgumentTypeError, ConfigError
from invtools.frames.provenance import PROVENANCE_KEYS, Provenance, json_safe

__all__ = ["excel_ready", "to_excel", "PROVENANCE_SHEET"]

#: The sheet :func:`to_excel` adds, with each frame's provenance.
PROVENANCE_SHEET = "provenance"
_SHEET_BAD = re.compile(r"[\[\]:*?/\\]")  # Excel refuses these in a sheet's name


def excel_ready(df: pd.DataFrame, tz: str = "UTC") -> pd.DataFrame:
    """A copy of ``df`` that ``df.to_excel(...)`` writes: every time-zone-aware time column
    (and a time index, as in :func:`~invtools.viz.activity_table`) becomes the wall-clock time
    in ``tz`` without a zone -- ``tz="Europe/Paris"`` for a shop in Paris, default UTC -- and
    values Excel has no cell for (dicts and lists in fields the server added) become JSON
    text. Other columns and ``df.attrs`` are kept. Text that starts with ``=`` is left as it
    is, and ``df.to_excel`` writes it as a formula: :func:`to_excel` writes it as text.

    >>> from invtools.frames import transactions_df
    >>> tx = transactions_df([{"id": 1, "type": "in",
    ...                        "transaction_time": "2026-07-01T12:00:00.000Z"}])
    >>> excel_ready(tx, tz="Europe/Paris").loc[0, "transaction_time"]   # summer time: +2 h
    Timestamp('2026-07-01 14:00:00')
    """
    check_kind(df, pd.DataFrame, "excel_ready: df", "a DataFrame")
    tz = check_tz(tz, "excel_ready")
    out = df.copy()
    for col in out.columns:
        values = out[col]
        if isinstance(values.dtype, pd.DatetimeTZDtype):
            out[col] = values.dt.tz_convert(tz).dt.tz_localize(None)
        elif values.dtype == object:
            nested = values.map(lambda v: isinstance(v, (dict, list, tuple)))
            if nested.any():
                as_json = values.map(lambda v: json.dumps(v, ensure_ascii=False, default=str))
                out[col] = values.where(~nested, as_json)
    if isinstance(out.index, pd.DatetimeIndex) and out.index.tz is not None:
        out.index = out.index.tz_convert(tz).tz_localize(None)
    return out


def to_excel(
    path: str | os.PathLike, frames: Mapping[str, pd.DataFrame] | pd.DataFrame, *, tz: str = "UTC"
) -> Path:
    """Write ``frames`` (sheet name -> DataFrame; one frame alone goes on sheet ``"data"``) to
    the Excel workbook at ``path``, one sheet each, in order, plus a sheet
    ``"provenance"``: one row per sheet saying where its frame came from.

    Each frame goes through :func:`excel_ready` first (times as wall-clock times in ``tz``,
    default UTC; nested values as JSON text). A named index (``activity_table``'s ``period``,
    ``month_end_stock``'s ``month``) is written as the first column(s); a plain row number is
    not. The provenance sheet has: sheet, frame_rows, frame_columns, times_in (``tz``), then
    the fields of ``df.attrs`` (:data:`~invtools.frames.PROVENANCE_KEYS`: source, team_id,
    team_name, base_url, endpoint, filters, window, fetched_at, data_as_of, pages, rows,
    requests, ...; blank for a frame without provenance; lists and dicts as JSON text, such as
    the ``["Shop", "York"]`` of a result merged from two teams) and ``deleted_items_excluded``
    (ids, as JSON text). Every analysis result of :mod:`invtools.analysis`,
    :func:`~invtools.viz.activity_table` and ``TeamResults.frame()`` carries its inputs'
    provenance (:func:`~invtools.frames.merge_provenance`), so its sheet says whose data it is,
    from where and how old. Text that
    starts with ``=`` (a memo, a name from the service) is written as text, never as a formula
    Excel would run (``df.to_excel`` alone would write it as one). Sheet
    names are Excel's: at most 31 characters, none of ``[]:*?/`` nor a backslash, unique
    whatever their case, and not ``"provenance"``. Returns the path written. Needs openpyxl.

    >>> import tempfile
    >>> from pathlib import Path
    >>> items = pd.DataFrame({"item_id": [1, 2], "name": ["Mug", "Hose"]})
    >>> items.attrs.update(source="api", team_name="Shop", endpoint="/v1/items")
    >>> path = to_excel(Path(tempfile.mkdtemp()) / "audit.xlsx", {"items": items})
    >>> book = pd.read_excel(path, sheet_name=None)      # every sheet, by name
    >>> list(book), len(book["items"])
    (['items', 'provenance'], 2)
    >>> book["provenance"].loc[0, ["sheet", "team_name", "endpoint"]].tolist()
    ['items', 'Shop', '/v1/items']
    """
    if isinstance(frames, pd.DataFrame):
        frames = {"data": frames}
    if not isinstance(frames, Mapping):
        raise ArgumentTypeError(
            "to_excel: frames must be a mapping of sheet name -> DataFrame, e.g. "
            "{'suppliers': suppliers, 'shrinkage': loss}, or one DataFrame; not "
            f"{type(frames).__name__}"
        )
    if not frames:
        raise ConfigError("to_excel: frames is empty; give at least one sheet name -> DataFrame")
    tz = check_tz(tz, "to_excel")
    _check_sheets(frames)
    if importlib.util.find_spec("openpyxl") is None:
        raise ImportError(
            "to_excel needs openpyxl to write .xlsx files: pip install openpyxl "
            "(or pip install 'invtools[demo]')"
        )
    target = check_path(path, "to_excel: path")
    rows = []
    try:
        writer = pd.ExcelWriter(target, engine="openpyxl")
    except OSError as exc:  # no such folder, a folder given, no permission
        raise ConfigError(f"to_excel: cannot write {str(target)!r}: {exc}") from None
    with writer:
        for sheet, df in frames.items():
            named = isinstance(df.index, pd.MultiIndex) or df.index.name is not None
            excel_ready(df, tz=tz).to_excel(writer, sheet_name=sheet, index=named)
        rows = [_provenance_row(sheet, df, tz) for sheet, df in frames.items()]
        pd.DataFrame(rows).to_excel(writer, sheet_name=PROVENANCE_SHEET, index=False)
        # Text that starts with "=" (a memo, a name) stays text: never a formula Excel would run.
        for cell in (c for ws in writer.sheets.values() for row in ws.iter_rows() for c in row):
            if cell.data_type == "f":
                cell.data_type = "s"
    return target


def _check_sheets(frames: Mapping) -> None:
    seen: set[str] = set()
    for sheet, df in frames.items():
        if not isinstance(df, pd.DataFrame):
            raise ArgumentTypeError(
                f"to_excel: sheet {sheet!r} holds a {type(df).__name__}, not a DataFrame"
            )
        if not isinstance(sheet, str):
            raise ArgumentTypeError(
                f"to_excel: a sheet name must be text, not {type(sheet).__name__} ({sheet!r})"
            )
        problem = None
        if not 0 < len(sheet) <= 31:
            problem = "must be text of 1 to 31 characters"
        elif _SHEET_BAD.search(sheet):
            problem = "may not hold any of [ ] : * ? / \\"
        elif sheet.lower() == PROVENANCE_SHEET:
            problem = "is the provenance sheet's name"
        elif sheet.lower() in seen:
            problem = "is given twice (Excel ignores case)"
        if problem:
            raise ConfigError(f"to_excel: the sheet name {sheet!r} {problem}; choose another")
        seen.add(sheet.lower())


def _provenance_row(sheet: str, df: pd.DataFrame, tz: str) -> dict:
    row: dict = {
        "sheet": sheet,
        "frame_rows": len(df),
        "frame_columns": df.shape[1],
        "times_in": tz,
    }
    record = Provenance.from_attrs(cast("dict[str, Any]", df.attrs))  # attrs: text keys
    fields = record.as_attrs() if record else {}
    for key in PROVENANCE_KEYS:  # every column, blank for a frame without provenance
        value = fields.get(key)
        row[key] = json.dumps(value) if isinstance(value, (dict, list)) else value
    if "deleted_items_excluded" in df.attrs:
        row["deleted_items_excluded"] = json.dumps(json_safe(df.attrs["deleted_items_excluded"]))
    return row
