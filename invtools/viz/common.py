"""What every plot of :mod:`invtools.viz` shares, pure (pandas in, pandas out): a frame's
times, whether it is a lines frame, the frequencies plots understand, time zones, and the
words errors use for columns and choices. Not part of :mod:`invtools.viz`'s ``__all__``.

>>> period_freq("W"), period_freq("ME")
(('W-SUN', 'week'), ('M', 'month'))
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from invtools._types import check_tz
from invtools.errors import ConfigError
from invtools.frames.reader import check_times

__all__ = ["period_freq", "check_tz", "frame_times", "is_lines", "columns_text", "choices_text"]
__all__ += ["types_text", "span_text"]  # what a title says of the frame

# User-facing frequency -> (pandas Period frequency, singular noun for labels).
# Periods rather than resample bins: a period has an unambiguous start (weeks start on Monday)
# and ``period_range`` gives every period between two dates, so empty ones show as zero.
_FREQS: dict[str, tuple[str, str]] = {
    "D": ("D", "day"),
    "W": ("W-SUN", "week"),
    **dict.fromkeys(("M", "ME", "MS"), ("M", "month")),
    **dict.fromkeys(("Q", "QE", "QS"), ("Q-DEC", "quarter")),
    **dict.fromkeys(("Y", "YE", "YS", "A"), ("Y-DEC", "year")),
}
_WEEKDAYS = ("MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN")


def period_freq(freq: str) -> tuple[str, str]:
    """Map a user frequency to a pandas Period frequency and a noun ("week")."""
    upper = freq.strip().upper() if isinstance(freq, str) else None
    if upper in _FREQS:
        return _FREQS[upper]
    if upper and upper.startswith("W-") and upper[2:] in _WEEKDAYS:
        return upper, "week"
    raise ConfigError(
        f"freq={freq!r} is not a frequency plots understand; use 'D' (days), 'W' (weeks "
        "starting Monday), 'M' (months), 'Q' or 'Y', or a pandas spelling like 'ME' or 'W-SAT'."
    )


def frame_times(
    df: pd.DataFrame, who: str, column: str = "transaction_time", what: str = "df"
) -> pd.Series:
    """The time column as tz-aware UTC datetimes (naive or text: refused, saying the fix)."""
    if not isinstance(df, pd.DataFrame):
        raise ConfigError(f"{who} needs a pandas DataFrame, got {type(df).__name__}.")
    if column not in df.columns:
        raise ConfigError(
            f"{who} needs a {column!r} column; this frame has {columns_text(df)}. Pass a frame "
            "from invtools.frames (transactions_df or lines_df) or client.transactions_df()."
        )
    return check_times(df, column, who=who, what=what)[column].dt.tz_convert("UTC")


def is_lines(df: pd.DataFrame) -> bool:
    """A lines frame (one row per transaction line) rather than one row per transaction."""
    cols = set(df.columns)
    return "total_quantity" not in cols and bool(cols & {"item_id", "item_name", "quantity"})


def columns_text(df: pd.DataFrame) -> str:
    """The frame's columns for a message: ``columns ['a', 'b', ...]`` (at most 12 shown)."""
    names = [str(c) for c in df.columns]
    shown = ", ".join(repr(n) for n in names[:12])
    return f"columns [{shown}{', ...' if len(names) > 12 else ''}]" if names else "no columns"


def choices_text(values: Iterable[str]) -> str:
    """``'a', 'b'``: the allowed values for a message."""
    return ", ".join(repr(v) for v in values)


def types_text(df: pd.DataFrame) -> str | None:
    """The transaction types a frame holds, for a title, when it is not every type: ``"out
    only"``, ``"in and out"``; None for all four, or a frame without a type column.

    >>> types_text(pd.DataFrame({"type": ["out", "out"]})), types_text(pd.DataFrame())
    ('out only', None)
    """
    from invtools._types import TX_TYPES

    if "type" not in df.columns:
        return None
    held = [t for t in TX_TYPES if t in set(df["type"].dropna().astype(str))]
    if not held or len(held) == len(TX_TYPES):
        return None
    if len(held) == 1:
        return f"{held[0]} only"
    return f"{', '.join(held[:-1])} and {held[-1]}"


def span_text(starts: pd.DatetimeIndex, noun: str) -> str | None:
    """The periods a plot covers, for a title, every date with its year: ``"May 2025 to Oct
    2026"`` (months and longer), ``"5 Oct 2026 to 26 Oct 2026"`` (weeks, days: their first
    days); None when empty.

    >>> span_text(pd.DatetimeIndex(["2025-05-01", "2026-10-01"]), "month")
    'May 2025 to Oct 2026'
    >>> span_text(pd.DatetimeIndex(["2026-10-05", "2026-10-26"]), "week")
    '5 Oct 2026 to 26 Oct 2026'
    """
    if not len(starts):
        return None
    first, last = starts[0], starts[-1]
    long = noun in ("month", "quarter", "year")
    head, tail = (f"{t:%b %Y}" if long else f"{t.day} {t:%b %Y}" for t in (first, last))
    return tail if head == tail else f"{head} to {tail}"
