"""Opening stock counts: the one rule for which transactions open a team's record, decided
where a transactions or lines frame is built (its ``opening_count`` column), so that any
filter or slice of it keeps the answer.

A team's record usually starts with a stocktake entered as ``adjust`` transactions: every unit
on the shelves at once (the demo shop's four "Opening stocktake" adjustments hold 4,551 of its
24,172 units). They are bookkeeping, not activity, and dwarf everything else in a quantity
view; they are not shrinkage either. An ``adjust`` is an opening count by either of two rules:

1. **Its memo says so**: it contains the word "opening" or "initial" and a stock word
   ("stock", "count", "inventory", "balance"; any case): "Opening stocktake", "Initial stock
   count", "opening balance". A cycle count mid-history ("Cycle count", "Found in stocktake")
   is not an opening count: it corrects a few units, which is activity worth seeing.
2. **It opens the record**: it is dated before the first ``in``, ``out`` or ``move`` of the
   whole history, whatever its memo (in any language, or none). Only a frame that holds the
   history's start can tell: the client's frame of the whole list, the mirror's frames
   (decided on the whole file, then cut to ``since``/``until``/``type``), a builder's frame
   of the rows given. The client's frame of a part of the list (``since=``, ``until=``,
   ``max_rows=``) goes by the memo alone: its first rows may be an ordinary count
   mid-history, not an opening one. A frame fetched with only adjustments
   (``type="adjust"``) has nothing to open either: fetch every type and slice the frame.

The builders (:func:`~invtools.frames.transactions_df`, :func:`~invtools.frames.lines_df`,
the page-bytes path, the client's and the mirror's frames) set the column on the whole frame:
a line has the flag of its transaction, decided with the transaction's memo. :func:`opening_counts`
reads that column when the frame has it, and works the rule out on the frame it is given when
not (a frame built by hand). Whatever leaves them out says so in ``attrs``
(:data:`OPENING_NOTE`: the ids of the transactions left out).

>>> tx = pd.DataFrame({
...     "transaction_time": pd.to_datetime(["2026-01-01 06:00", "2026-01-01 09:00",
...                                         "2026-03-01 10:00"], utc=True),
...     "type": ["adjust", "out", "adjust"],
...     "memo": [None, None, "Initial stock of the new line"]})
>>> opening_counts(tx).tolist()     # the first opens the record, the last says so
[True, False, True]
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from invtools._config import check_kind
from invtools.errors import ConfigError
from invtools.frames.reader import check_times

__all__ = [
    "OPENING_COUNT",
    "OPENING_NOTE",
    "opening_counts",
    "opening_flags",
    "first_activity",
    "decide_openings",
    "transaction_ids",
    "with_openings",
    "without_openings",
]

#: The column of a transactions or lines frame that says which rows are opening counts.
OPENING_COUNT = "opening_count"
#: The ``attrs`` key of a result that left opening counts out: their transaction ids.
OPENING_NOTE = "opening_counts_excluded"

#: Memo words: one of ``_OPENING`` and one of ``_STOCK`` make an adjust an opening count.
_OPENING = r"\b(?:opening|initial)\b"
_STOCK = r"stock|count|inventor|balance"
_ACTIVITY_TYPES = ["in", "out", "move"]


def first_activity(types: Any, times: Any) -> pd.Timestamp:
    """The time of the first ``in``, ``out`` or ``move`` among ``types`` and ``times`` (arrays
    of one length); NaT when there is none.

    >>> first_activity(["adjust", "out"], pd.to_datetime(["2026-01-01", "2026-01-02"], utc=True))
    Timestamp('2026-01-02 00:00:00+0000', tz='UTC')
    """
    active = pd.Series(types, copy=False).isin(_ACTIVITY_TYPES).to_numpy(bool)
    return pd.Series(times, copy=False)[active].min()


def opening_flags(types: Any, times: Any, memo: Any, *, opened: Any = None) -> Any:
    """Which of these transactions (or lines; ``types``, ``times`` and ``memo`` arrays of one
    length, ``memo`` None when there is none) are opening counts, as a ``boolean`` array: the
    rule of this module. ``opened``: the first in/out/move of the whole history when these
    are a part of it (:func:`first_activity`; None: of these rows).

    >>> times = pd.to_datetime(["2026-01-01 06:00", "2026-01-02 09:00"], utc=True)
    >>> opening_flags(["adjust", "adjust"], times, None).tolist()   # nothing opens
    [False, False]
    >>> opening_flags(["adjust", "adjust"], times, None, opened=times[1]).tolist()
    [True, False]
    """
    kinds = pd.Series(types, copy=False)
    adjust = kinds.isin(["adjust"]).to_numpy(bool)
    when = pd.Series(times, copy=False)
    opened = first_activity(kinds, when) if opened is None else opened
    # every comparison with NaT is false: with nothing that opens, no row opens the record
    flags = adjust & (when < opened).to_numpy(bool)
    if memo is not None and adjust.any():  # the memo of the adjustments only: few, read fast
        said = pd.Series(memo, copy=False).astype("string")[adjust]
        words = said.str.contains(_OPENING, case=False) & said.str.contains(_STOCK, case=False)
        flags[np.flatnonzero(adjust)] |= words.fillna(False).to_numpy(bool)
    return pd.array(flags, dtype="boolean")


def decide_openings(df: pd.DataFrame, *, opened: Any = None) -> pd.DataFrame:
    """``df`` (a transactions frame of the builders', whole) with its ``opening_count`` column
    set anew from its rows (``opened``: as in :func:`opening_flags`), in place; returns it."""
    memo = df["memo"].array if "memo" in df.columns else None
    flags = opening_flags(df["type"].array, df["transaction_time"].array, memo, opened=opened)
    df[OPENING_COUNT] = pd.Series(flags, index=df.index)
    return df


def transaction_ids(df: pd.DataFrame, rows: Any) -> list[Any]:
    """The ids of the transactions of ``df``'s ``rows`` (a boolean mask), each once, in order:
    what :data:`OPENING_NOTE` holds (``transaction_id``; a frame without it: the rows'
    labels), as JSON values.

    >>> lines = pd.DataFrame({"transaction_id": [7, 7, 3]})
    >>> transaction_ids(lines, [True, True, True])
    [3, 7]
    """
    chosen = df[np.asarray(rows, dtype=bool)]
    ids = chosen["transaction_id"].dropna() if "transaction_id" in chosen else chosen.index
    return sorted({v.item() if isinstance(v, np.generic) else v for v in ids.tolist()})


def opening_counts(df: pd.DataFrame) -> pd.Series:
    """Which rows of ``df`` are opening stock counts: a boolean Series on ``df``'s index.

    ``df`` is a transactions frame or a lines frame. Its ``opening_count`` column is read as it
    is (the builders decide it on the whole frame, so a slice keeps it); a frame without one
    (built by hand) needs ``type`` and ``transaction_time`` (and ``memo``, for the first rule),
    and the rule is worked out on ``df`` itself. See the module's notes for the two rules, and
    for when the second one errs.

    >>> tx = pd.DataFrame({"transaction_time": pd.to_datetime(["2026-01-01"], utc=True),
    ...                    "type": ["adjust"], "opening_count": [True]})
    >>> opening_counts(tx).tolist()
    [True]
    """
    check_kind(df, pd.DataFrame, "opening_counts: df", "a DataFrame")
    check_times(df, "transaction_time", who="opening_counts")  # refused alike, column or not
    if OPENING_COUNT in df.columns:
        return df[OPENING_COUNT].fillna(False).astype(bool)
    for column in ("type", "transaction_time"):
        if column not in df.columns:
            raise ConfigError(
                f"opening stock counts are recognised by a transaction's type and time; this "
                f"frame has no {column!r} column. Pass a frame from invtools.frames "
                "(transactions_df or lines_df) or client.transactions_df()."
            )
    flags = opening_flags(df["type"].array, df["transaction_time"].array, df.get("memo"))
    return pd.Series(flags, index=df.index, dtype="boolean").astype(bool)


def with_openings(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with its ``opening_count`` column: as it is when it has one, else decided on
    ``df`` whole (a frame built by hand), before any cut of it can change the answer."""
    return df if OPENING_COUNT in df.columns else df.assign(**{OPENING_COUNT: opening_counts(df)})


def without_openings(df: pd.DataFrame) -> tuple[pd.DataFrame, list[Any]]:
    """``df`` without its opening counts, and the ids of the transactions left out (what
    :data:`OPENING_NOTE` says).

    >>> tx = pd.DataFrame({"transaction_id": [5, 6], "type": ["adjust", "out"],
    ...     "opening_count": [True, False],
    ...     "transaction_time": pd.to_datetime(["2026-01-01", "2026-01-02"], utc=True)})
    >>> rest, left_out = without_openings(tx)
    >>> rest["transaction_id"].tolist(), left_out
    ([6], [5])
    """
    openings = opening_counts(df).to_numpy(bool)
    return df[~openings], transaction_ids(df, openings)
