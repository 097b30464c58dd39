"""The client's ``since``/``until``/``type`` filters applied to a mirror's frames: checked
before any file is read, applied to the rows read, and recorded as the frame's filters. Pure.

>>> import pandas as pd
>>> lo, hi, kinds = window_of("2026-10", "2026-10", ("in", "out"))
>>> str(lo), str(hi)[:19], kinds
('2026-10-01 00:00:00+00:00', '2026-10-31 23:59:59', ('in', 'out'))
>>> asked("90D", None, ["in"])
{'since': '90D', 'type': ['in']}
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from invtools._types import check_tx_type, parse_time
from invtools.errors import ConfigError

__all__ = ["window_of", "within", "asked"]


def window_of(since: Any, until: Any, kind: Any) -> tuple:
    """The client's window and type filter, checked (before any file is read)."""
    lo, hi = parse_time(since, name="since"), parse_time(until, end=True, name="until")
    if lo and hi and lo > hi:
        raise ConfigError(f"since ({lo:%Y-%m-%d %H:%M}) is after until ({hi:%Y-%m-%d %H:%M})")
    kind = check_tx_type(kind)
    return lo, hi, (kind,) if isinstance(kind, str) else kind


def within(df: pd.DataFrame, lo: Any, hi: Any, kinds: Any) -> pd.DataFrame:
    """The rows of ``df`` in the window and of the types asked for (all: None)."""
    keep = pd.Series(True, index=df.index)
    times = df["transaction_time"]
    if lo is not None:
        keep &= (times >= pd.Timestamp(lo)).fillna(False)
    if hi is not None:
        keep &= (times <= pd.Timestamp(hi)).fillna(False)
    if kinds is not None:
        keep &= df["type"].isin(kinds).fillna(False)
    return df if bool(keep.all()) else df[keep.to_numpy()].reset_index(drop=True)


def asked(since: Any, until: Any, kind: Any) -> dict:
    """The filters a frame says it was made with (JSON values)."""
    asked = {
        "since": since,
        "until": until,
        "type": list(kind) if isinstance(kind, (tuple, list)) else kind,
    }
    return {k: (str(v) if k != "type" else v) for k, v in asked.items() if v is not None}
