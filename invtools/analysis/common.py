"""What every analysis shares: checking the frame it was given, reading "as of" times, and
carrying the provenance of its input onto its result.

Public names here are shared inside :mod:`invtools.analysis` only (not in its ``__all__``).

>>> as_of_time("2026-07-01", pd.Series([], dtype="datetime64[ms, UTC]"))
Timestamp('2026-07-01 00:00:00+0000', tz='UTC')
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from invtools.errors import ConfigError
from invtools.frames import PROVENANCE_KEYS, with_provenance

__all__ = ["DAY", "HISTORY_HINT", "LINES_HINT", "need", "as_of_time", "in_window",
           "carry_provenance"]

DAY = pd.Timedelta(days=1)

HISTORY_HINT = ("Pass invtools.frames.stock_history(lines) (by_location=True for each "
                "location) or mirror.stock_history().")
LINES_HINT = "Pass a lines frame: client.lines_df() or mirror.lines_df()."


def need(df: pd.DataFrame, columns: list[str], what: str, hint: str) -> None:
    """Refuse a frame that is not one, or lacks ``columns``, saying what to pass instead."""
    if not isinstance(df, pd.DataFrame):
        raise ConfigError(f"{what} must be a DataFrame, not {type(df).__name__}. {hint}")
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ConfigError(f"{what} lacks the column(s) {missing}. {hint}")


def as_of_time(value: Any, times: pd.Series) -> pd.Timestamp:
    """``value`` as a UTC time (naive means UTC); None: the newest of ``times`` (NaT if none)."""
    if value is None:
        return times.max() if len(times) else pd.NaT
    ts = pd.Timestamp(value)
    return ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")


def in_window(lines: pd.DataFrame, since: Any = None, until: Any = None) -> pd.DataFrame:
    """The rows of ``lines`` whose ``transaction_time`` is within ``since``..``until`` (both
    included; None: open), rows without a time left out."""
    times = lines["transaction_time"]
    keep = times.notna()
    if since is not None:
        keep &= times >= as_of_time(since, times)
    if until is not None:
        keep &= times <= as_of_time(until, times)
    return lines[keep.fillna(False).to_numpy(dtype=bool)]


def carry_provenance(result: pd.DataFrame, source: pd.DataFrame) -> pd.DataFrame:
    """``result`` with the provenance of the frame it was computed from (``source.attrs``, see
    :func:`invtools.frames.with_provenance`), when that frame has one; other ``attrs`` of
    ``result`` (such as ``deleted_items_excluded``) are kept. Returns ``result``."""
    if "source" in source.attrs:
        with_provenance(result, {k: source.attrs[k] for k in PROVENANCE_KEYS
                                 if k in source.attrs})
    return result
