"""Which rows a picture counts: opening stock counts, and which partners are suppliers.

Both functions are pure (a frame in, a Series aligned with its index out) and work on a
transactions frame and on a lines frame alike, so the explorer's views by type and by item
leave out the same transactions.

**Opening stock counts.** A team's record usually starts with a stocktake entered as ``adjust``
transactions: every unit on the shelves at once (the demo shop's four "Opening stocktake"
adjustments hold 4,551 of its 24,172 units). They are bookkeeping, not activity, and dwarf
everything else in a quantity view. :func:`opening_counts` recognises them, by either of two
rules:

1. **Its memo says so**: an ``adjust`` whose memo contains the word "opening" or "initial"
   and a stock word ("stock", "count", "inventory", "balance"; any case): "Opening
   stocktake", "Initial stock count", "opening balance". A cycle count mid-history ("Cycle
   count", "Found in stocktake") is not an opening count: it corrects a few units, which is
   activity worth seeing.
2. **It opens the record**: an ``adjust`` dated before the frame's first ``in``, ``out`` or
   ``move`` transaction, whatever its memo (in any language, or none). A frame with no
   transaction of those types has nothing to open, so no row is an opening count by this rule.
   A frame that starts mid-history (fetched with ``since=``) may begin with an ordinary count;
   this rule takes it for an opening one. The explorer says what it left out, so check there.

A lines frame has no memo: rule 2 alone applies (the explorer also drops the lines of the
transactions its transactions frame flags).

**Partner types.** A transaction row names its partner but not whether it is a supplier or a
customer. :func:`partner_types` reads a ``partner_type`` column when the frame has one, else
takes it from the transaction's type, as the service's forms do: the partner of an ``in`` is a
supplier (stock came from them), the partner of an ``out`` a customer.

>>> import pandas as pd
>>> tx = pd.DataFrame({
...     "transaction_time": pd.to_datetime(["2026-01-01 06:00", "2026-01-01 09:00",
...                                         "2026-01-02 10:00", "2026-01-05 11:00"], utc=True),
...     "type": ["adjust", "in", "out", "adjust"],
...     "partner_name": [None, "Acme", "J. Smith", None],
...     "memo": ["Opening stocktake", "PO-4101", None, "Cycle count"],
...     "total_quantity": [900.0, 40.0, 2.0, -1.0]})
>>> opening_counts(tx).tolist()
[True, False, False, False]
>>> partner_types(tx).tolist()
[<NA>, 'supplier', 'customer', <NA>]
"""

from __future__ import annotations

import pandas as pd

from invtools._config import check_kind
from invtools.errors import ConfigError
from invtools.frames.reader import check_times

__all__ = ["opening_counts", "partner_types"]

#: Memo words: one of ``_OPENING`` and one of ``_STOCK`` make an adjust an opening count.
_OPENING = r"\b(?:opening|initial)\b"
_STOCK = r"stock|count|inventor|balance"
_ACTIVITY_TYPES = ("in", "out", "move")
PARTNER_TYPES = ("supplier", "customer")


def opening_counts(df: pd.DataFrame) -> pd.Series:
    """Which rows of ``df`` are opening stock counts: a boolean Series on ``df``'s index.

    ``df`` is a transactions frame or a lines frame with ``type`` and ``transaction_time``
    (and ``memo``, for the first rule). An ``adjust`` is an opening count when its memo says
    so ("opening"/"initial" with "stock"/"count"/"inventory"/"balance") or when it is dated
    before the frame's first ``in``, ``out`` or ``move``; see the module's notes for why, and
    for the one case where the second rule errs (a frame that starts mid-history).

    >>> import pandas as pd
    >>> tx = pd.DataFrame({
    ...     "transaction_time": pd.to_datetime(["2026-01-01 06:00", "2026-01-01 09:00",
    ...                                         "2026-03-01 10:00"], utc=True),
    ...     "type": ["adjust", "out", "adjust"],
    ...     "memo": [None, None, "Initial stock of the new line"]})
    >>> opening_counts(tx).tolist()     # the first opens the record, the last says so
    [True, False, True]
    """
    check_kind(df, pd.DataFrame, "opening_counts: df", "a DataFrame")
    for column in ("type", "transaction_time"):
        if column not in df.columns:
            raise ConfigError(
                f"opening stock counts are recognised by a transaction's type and time; this "
                f"frame has no {column!r} column. Pass a frame from invtools.frames "
                "(transactions_df or lines_df) or client.transactions_df()."
            )
    kinds = df["type"].astype("string")
    adjust = (kinds == "adjust").fillna(False)
    times = check_times(df, "transaction_time", who="opening_counts")["transaction_time"]
    memo = df.get("memo", pd.Series(pd.NA, index=df.index)).astype("string")
    said = (
        memo.str.contains(_OPENING, case=False, regex=True)
        & memo.str.contains(_STOCK, case=False, regex=True)
    ).fillna(False)
    # before the first in, out or move (none: nothing opens, every comparison with NaT false)
    opens = times < times[kinds.isin(_ACTIVITY_TYPES).fillna(False)].min()
    return (adjust & (said | opens)).astype(bool)


def partner_types(df: pd.DataFrame) -> pd.Series:
    """Each row's partner as ``"supplier"``, ``"customer"`` or ``<NA>`` (no partner, or one on
    a move or an adjustment): a ``string`` Series on ``df``'s index.

    A ``partner_type`` column is used as it is when the frame has one; otherwise the partner of
    an ``in`` is a supplier and the partner of an ``out`` a customer.

    >>> import pandas as pd
    >>> tx = pd.DataFrame({"type": ["in", "out", "out"],
    ...                    "partner_name": ["Acme", None, "J. Smith"]})
    >>> partner_types(tx).tolist()
    ['supplier', <NA>, 'customer']
    """
    check_kind(df, pd.DataFrame, "partner_types: df", "a DataFrame")
    named = [c for c in ("partner_id", "partner_name") if c in df.columns]
    if not named:
        raise ConfigError(
            "suppliers and customers are told apart by a transaction's partner; this frame "
            "has no 'partner_name' or 'partner_id' column."
        )
    present = df[named].notna().any(axis=1)
    if "partner_type" in df.columns:
        given = df["partner_type"].astype("string").str.lower()
        return given.where(present & given.isin(PARTNER_TYPES)).astype("string")  # else <NA>
    if "type" not in df.columns:
        raise ConfigError(
            "without a 'partner_type' column a partner's type is taken from the transaction's "
            "type (in: supplier, out: customer); this frame has no 'type' column either."
        )
    sides = {"in": "supplier", "out": "customer"}
    return df["type"].astype("string").map(sides).where(present).astype("string").rename(None)
