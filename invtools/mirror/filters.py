"""The client's ``since``/``until``/``type`` filters applied to a mirror's frames: checked
before any file is read, then applied to the rows read. Pure.

>>> import pandas as pd
>>> lo, hi, kind = window_of("2026-10", "2026-10", ["out", "in"])
>>> str(lo), str(hi)[:19], kind                  # the type as the client's frames record it
('2026-10-01 00:00:00+00:00', '2026-10-31 23:59:59', ('in', 'out'))
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from invtools._types import check_tx_type, parse_window

__all__ = ["window_of", "within"]


def window_of(since: Any, until: Any, kind: Any) -> tuple:
    """The client's window and type filter, checked (before any file is read): ``(lo, hi,
    kind)``, the type one, several (a tuple) or None (all)."""
    return *parse_window(since, until), check_tx_type(kind)


def within(df: pd.DataFrame, lo: Any, hi: Any, kind: Any) -> pd.DataFrame:
    """The rows of ``df`` in the window and of the type(s) asked for (all: None)."""
    keep = pd.Series(True, index=df.index)
    times = df["transaction_time"]
    if lo is not None:
        keep &= (times >= pd.Timestamp(lo)).fillna(False)
    if hi is not None:
        keep &= (times <= pd.Timestamp(hi)).fillna(False)
    if kind is not None:
        keep &= df["type"].isin([kind] if isinstance(kind, str) else kind).fillna(False)
    return df if bool(keep.all()) else df[keep.to_numpy()].reset_index(drop=True)
