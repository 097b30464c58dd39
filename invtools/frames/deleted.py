"""Deleted items: which items a frame says are deleted, and leaving them out of a result.

An item deleted in the service is gone from ``items_df()`` and ``stock_df()``, but its past
transaction lines remain, flagged ``item_deleted`` (and :func:`~invtools.frames.stock_history`
carries the flag on). Analyses and plots about items (:mod:`invtools.analysis`,
``plot_stock_history``) leave deleted items out by default -- a deleted item that ran out and
was never restocked would otherwise rank as the worst item of all -- keep them with
``include_deleted=True``, and say when they left some out, always the same way:

- a :class:`~invtools.errors.DeletedItemsWarning` naming them (ids and names), and
- ``result.attrs["deleted_items_excluded"]``: their ids (``[]`` when none), JSON values, so
  the note survives ``to_parquet``.

>>> h = pd.DataFrame({"item_id": pd.array([1, 2], dtype="Int64"),
...                   "item_name": ["Mug", "Vase"], "item_deleted": [False, True]})
>>> deleted_items(h)
{2: 'Vase'}
>>> import warnings
>>> with warnings.catch_warnings(record=True) as said:
...     warnings.simplefilter("always")
...     kept = leave_out_deleted(h, deleted_items(h), include=False, who="example")
>>> kept["item_id"].tolist(), kept.attrs[DELETED_NOTE], str(said[0].message)
([1], [2], "example: left out 1 deleted item (2 'Vase'); include_deleted=True keeps it")
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import pandas as pd

from invtools._config import check_flag, check_kind
from invtools.errors import DeletedItemsWarning

__all__ = ["DELETED_NOTE", "deleted_items", "leave_out_deleted"]

#: The ``attrs`` key of a result that lists the ids of the deleted items it left out.
DELETED_NOTE = "deleted_items_excluded"

_NAMED = 5  # the warning names this many items, then says how many more


def deleted_items(df: pd.DataFrame) -> dict[int, Any]:
    """``{item id: name}`` of the items that any row of ``df`` flags ``item_deleted`` (a lines
    or ``stock_history`` frame); ``{}`` when the frame has no such column."""
    check_kind(df, pd.DataFrame, "deleted_items(df)", "a DataFrame")
    if "item_deleted" not in df.columns or "item_id" not in df.columns:
        return {}
    rows = df[df["item_deleted"].fillna(False).to_numpy(dtype=bool) & df["item_id"].notna()]
    rows = rows.drop_duplicates("item_id")  # each item once, named by its first row
    names = rows["item_name"] if "item_name" in rows.columns else [None] * len(rows)
    pairs = zip(rows["item_id"], names, strict=True)
    return {int(i): None if pd.isna(n) else str(n) for i, n in pairs}


def leave_out_deleted(
    result: pd.DataFrame,
    deleted: Mapping[int, Any],
    *,
    include: bool,
    who: str,
    stacklevel: int = 3,
) -> pd.DataFrame:
    """``result`` without the rows of ``deleted`` items (unless ``include``), with the note
    ``attrs["deleted_items_excluded"]`` and, when any were left out, a
    :class:`~invtools.errors.DeletedItemsWarning` from ``who`` (the public function's name)."""
    check_kind(result, pd.DataFrame, f"{who}: result", "a DataFrame")
    check_kind(deleted, Mapping, f"{who}: deleted", "a mapping of item id -> name")
    left_out: list[int] = []
    if not check_flag(include, f"{who}: include_deleted") and deleted and len(result):
        ids = result["item_id"]
        gone = ids.isin(list(deleted)).fillna(False).to_numpy(dtype=bool)
        if gone.any():
            left_out = sorted({int(i) for i in ids[gone].tolist()})
            result = result[~gone].reset_index(drop=True)
    result.attrs[DELETED_NOTE] = left_out
    if left_out:
        warnings.warn(_message(who, left_out, deleted), DeletedItemsWarning, stacklevel=stacklevel)
    return result


def _message(who: str, ids: list[int], names: Mapping[int, Any]) -> str:
    shown = ", ".join(str(i) if names.get(i) is None else f"{i} {names[i]!r}" for i in ids[:_NAMED])
    more = f" and {len(ids) - _NAMED} more" if len(ids) > _NAMED else ""
    noun, them = ("item", "it") if len(ids) == 1 else ("items", "them")
    return (
        f"{who}: left out {len(ids)} deleted {noun} ({shown}{more}); "
        f"include_deleted=True keeps {them}"
    )
