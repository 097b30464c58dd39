"""Frames ready for a spreadsheet: :func:`excel_ready`.

Parquet, Feather, pickle and CSV take invtools' frames as they are (see the README, "Saving
frames"). Excel does not: it has no time zones, and pandas refuses to write a time that has
one (``ValueError: Excel does not support datetimes with timezones``). Every time in
invtools is UTC, so a frame needs one step before ``to_excel``.

>>> df = pd.DataFrame({"when": pd.to_datetime(["2026-05-02T01:10:00Z"]).as_unit("ms"),
...                    "extra": [{"unit": "pcs"}]})
>>> ready = excel_ready(df, tz="Asia/Seoul")
>>> ready.loc[0, "when"], ready.loc[0, "extra"]
(Timestamp('2026-05-02 10:10:00'), '{"unit": "pcs"}')
"""

from __future__ import annotations

import json

import pandas as pd

__all__ = ["excel_ready"]


def excel_ready(df: pd.DataFrame, tz: str = "UTC") -> pd.DataFrame:
    """A copy of ``df`` that ``df.to_excel(...)`` writes: every time-zone-aware time column
    (and a time index, as in :func:`~invtools.viz.activity_table`) becomes the wall-clock time
    in ``tz`` without a zone -- ``tz="Europe/Paris"`` for a shop in Paris, default UTC -- and
    values Excel has no cell for (dicts and lists in fields the server added) become JSON
    text. Other columns and ``df.attrs`` are kept.

    >>> from invtools.frames import transactions_df
    >>> tx = transactions_df([{"id": 1, "type": "in",
    ...                        "transaction_time": "2026-07-01T12:00:00.000Z"}])
    >>> excel_ready(tx, tz="Europe/Paris").loc[0, "transaction_time"]   # summer time: +2 h
    Timestamp('2026-07-01 14:00:00')
    """
    out = df.copy()
    for col in out.columns:
        values = out[col]
        if isinstance(values.dtype, pd.DatetimeTZDtype):
            out[col] = values.dt.tz_convert(tz).dt.tz_localize(None)
        elif values.dtype == object:
            nested = values.map(lambda v: isinstance(v, (dict, list, tuple)))
            if nested.any():
                out[col] = values.where(~nested, values.map(_json_text))
    if isinstance(out.index, pd.DatetimeIndex) and out.index.tz is not None:
        out.index = out.index.tz_convert(tz).tz_localize(None)
    return out


def _json_text(value) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)
