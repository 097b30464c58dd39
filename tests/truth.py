"""The stand-in's truth with plain pandas: the oracle the analyses' tests compare with.

Built from the server's own JSON (``sb.data(team)``), never from invtools' frames, so a test
that compares a frame with it fails when invtools reads the wire wrong.
"""

from __future__ import annotations

import pandas as pd


def raw_lines(view) -> pd.DataFrame:
    """Every line of the server's own details, one row each: ``tx``, ``time``, ``type``,
    ``partner`` (its name) and ``partner_id``, ``from`` / ``to`` (location ids) and
    ``location`` (where the stock changed: ``to``, else ``from``), ``member`` (its id) and
    ``member_name``, ``memo``, ``item``,
    ``item_name``, ``qty`` (signed as the wire has it), ``units`` (its size), ``deleted`` (the
    item) and ``level`` (the stored new stock level)."""
    rows = []
    for row in view.transactions:
        d = view.transaction(row["id"])
        source, dest = d["from_location"] or {}, d["to_location"] or {}
        for line in d["items"]:
            qty = float(line["quantity"])
            rows.append(
                {
                    "tx": d["id"],
                    "time": pd.Timestamp(d["transaction_time"]),
                    "type": d["type"],
                    "partner": (d["partner"] or {}).get("name"),
                    "partner_id": (d["partner"] or {}).get("id"),
                    "from": source.get("id"),
                    "to": dest.get("id"),
                    "location": (dest or source).get("id"),
                    "member": d["created_by"]["id"],
                    "member_name": d["created_by"]["name"],
                    "memo": d.get("memo"),
                    "item": line["id"],
                    "item_name": line["name"],
                    "qty": qty,
                    "units": abs(qty),
                    "deleted": line["deleted"],
                    "level": line["new_stock_level"],
                }
            )
    return pd.DataFrame(rows)
