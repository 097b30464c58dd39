"""Which rows a picture counts: opening stock counts, and which partners are suppliers.

Both functions are pure (a frame in, a Series aligned with its index out) and work on a
transactions frame and on a lines frame alike, so the explorer's views by type and by item
leave out the same transactions.

**Opening stock counts** (the stocktake a team's record starts with: bookkeeping, not
activity) are :func:`invtools.frames.opening_counts`, the one rule, shown here as it is: a
frame's ``opening_count`` column, decided where the frame was built, so a slice keeps it; a
frame built by hand has the rule worked out on it (see :mod:`invtools.frames.openings`).

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
from invtools.frames import opening_counts

__all__ = ["opening_counts", "partner_types"]

PARTNER_TYPES = ("supplier", "customer")


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
