"""Current names: the references of a frame of transactions or lines named as their lists say now.

A transaction embeds its partner, locations and member as ``{id, name, deleted}``, and a
detail's lines embed each item's name, SKU and barcode, as they were when the row or the
detail was fetched. A rename on the service raises no ``revision``, so a copy kept by revision
(the mirror) keeps the old name. The lists (``items_df()``, ``partners_df()``,
``locations_df()``, ``members_df()``) always hold the current names: :func:`current_names`
takes each reference's name from its list, and a reference its list no longer holds is a
deleted one (its ``_deleted`` flag set, its last known name kept).

>>> import pandas as pd
>>> tx = pd.DataFrame({"partner_id": pd.array([3, 4, None], dtype="Int64"),
...                    "partner_name": pd.array(["Old", "Gone", None], dtype="string"),
...                    "partner_deleted": pd.array([False, False, None], dtype="boolean")})
>>> partners = pd.DataFrame({"partner_id": pd.array([3], dtype="Int64"), "name": ["New"]})
>>> out = current_names(tx, {"partners": partners})
>>> out["partner_name"].tolist(), out["partner_deleted"].tolist()
(['New', 'Gone', <NA>], [False, True, <NA>])
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from invtools._config import check_kind
from invtools.errors import ConfigError
from invtools.frames.schemas import KEYS

__all__ = ["REFERENCES", "current_names"]

#: A reference's column prefix in a frame -> the list that names it, and the list's columns
#: that the frame's reference columns copy (list column -> frame column).
REFERENCES: dict[str, tuple[str, dict[str, str]]] = {
    "partner": ("partners", {"name": "partner_name"}),
    "from_location": ("locations", {"name": "from_location_name"}),
    "to_location": ("locations", {"name": "to_location_name"}),
    "location": ("locations", {"name": "location_name"}),
    "created_by": ("members", {"name": "created_by_name"}),
    "item": ("items", {"name": "item_name", "sku": "sku", "barcode": "barcode"}),
}


def current_names(df: pd.DataFrame, lists: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """A copy of ``df`` (transactions or lines) whose references are named as ``lists`` say
    now (``{"items": items_df(), "partners": ..., "locations": ..., "members": ...}``, each
    whole, with its key (``item_id``, ``partner_id``, ...) and the columns :data:`REFERENCES`
    names). A reference whose list is given but does not hold its id is deleted there: its
    ``<ref>_deleted`` (``item_deleted``) is set where the frame has one, and its names stay as
    ``df`` had them. References whose list is not given are left as they are. ``df.attrs`` is
    kept.
    """
    check_kind(df, pd.DataFrame, "current_names(df)", "a DataFrame")
    check_kind(lists, Mapping, "current_names(lists)", "a mapping of list name -> DataFrame")
    kinds = {kind for kind, _ in REFERENCES.values()}
    for kind, given in lists.items():
        if kind not in kinds:
            raise ConfigError(
                f"current_names(lists): no list {kind!r}; the lists are {', '.join(sorted(kinds))}"
            )
        check_kind(given, pd.DataFrame, f"current_names(lists[{kind!r}])", "a DataFrame")
        if KEYS[kind] not in given.columns:
            raise ConfigError(f"current_names(lists[{kind!r}]) has no {KEYS[kind]} column")
    out = df.copy()
    for ref, (kind, copied) in REFERENCES.items():
        if kind not in lists or f"{ref}_id" not in out.columns:
            continue
        ids = out[f"{ref}_id"]
        key = KEYS[kind]
        table = lists[kind].drop_duplicates(key).set_index(key)
        listed = ids.isin(table.index).to_numpy(dtype=bool, na_value=False)
        for source, target in copied.items():
            if target in out.columns and source in table.columns:
                now = ids[listed].map(table[source]).astype(out[target].dtype)
                out.loc[listed, target] = now
        flag = f"{ref}_deleted"
        if flag in out.columns:
            known = ids.notna().to_numpy(dtype=bool)
            out.loc[known, flag] = ~listed[known]
    return out
