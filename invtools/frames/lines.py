"""Transaction details -> one row per line, with the transaction's fields alongside; and
the items frame's columns joined onto lines (:func:`with_item_columns`).

The lines of all details are read as one stream (:class:`~invtools.frames.reader.Reader`);
each transaction's own fields are typed once and repeated for its lines.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from invtools.errors import ArgumentTypeError, ConfigError
from invtools.frames.columns import as_string, location_of, typed
from invtools.frames.openings import OPENING_COUNT, opening_flags
from invtools.frames.provenance import merge_provenance
from invtools.frames.reader import CHUNK_ROWS, Reader, build_frame, check_columns, check_iterable
from invtools.frames.schemas import SCHEMAS, TX_REFS

__all__ = ["lines_df", "lines_of", "with_item_columns"]

#: The columns every line holds already, as the transaction's detail gives them (a deleted
#: item's line keeps them): naming them in ``item_columns`` adds nothing.
_ON_EVERY_LINE = ("sku", "barcode")

_LINE_TX_PLAIN = {
    "id": "transaction_id",
    "transaction_time": "transaction_time",
    "type": "type",
    "revision": "revision",
}
#: A line's wire fields -> the lines schema's columns from ``item_id`` on (the item's own id,
#: name and deleted flag are ``item_``-prefixed there).
_LINE_COLUMNS = list(SCHEMAS["lines"])[list(SCHEMAS["lines"]).index("item_id") :]
_LINE_PLAIN = {col.removeprefix("item_"): col for col in _LINE_COLUMNS}


def lines_df(details: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """Transaction details (``/v1/location-txs/{id}``, unwrapped) as one row per line.

    Columns: transaction_id, transaction_time (datetime64[ms, UTC]), type (category), revision,
    partner_id, partner_name, from_location_id, from_location_name, to_location_id,
    to_location_name, location_id, location_name, created_by_id, created_by_name, opening_count
    (from the transaction: an opening stock count, decided with its memo on all the details
    given; :mod:`~invtools.frames.openings`), item_id, item_name, sku, barcode, quantity
    (float64; signed for adjust), item_deleted (boolean), new_stock_level,
    from_location_new_stock_level, to_location_new_stock_level (float64, NaN when null), then
    unknown fields of the lines.
    A transaction without lines contributes no row.

    ``location_id``/``location_name`` say where the stock changed, as in
    :func:`transactions_df`: the ``to_location`` (the location of an in, out or adjust; for a
    **move its destination**, the source staying in ``from_location_*``), or the
    ``from_location`` of a transaction without one. ``created_by_*`` is the member who
    recorded the transaction.

    >>> d = {"id": 5, "type": "move", "transaction_time": "2026-05-02T01:10:00.000Z", "revision": 0,
    ...      "created_by": {"id": 3, "name": "Ana", "deleted": False},
    ...      "from_location": {"id": 1, "name": "WH", "deleted": False},
    ...      "to_location": {"id": 2, "name": "Shop", "deleted": False},
    ...      "items": [{"id": 9, "name": "Mug", "quantity": 4, "new_stock_level": 10,
    ...                 "from_location_new_stock_level": 6, "to_location_new_stock_level": 4}]}
    >>> lines_df([d])[["item_name", "from_location_name", "location_name", "created_by_name"]]
      item_name from_location_name location_name created_by_name
    0       Mug                 WH          Shop             Ana
    """
    check_iterable(details, "lines_df")
    heads = Reader({**_LINE_TX_PLAIN, "memo": "memo"}, TX_REFS, extras=False)
    pending: list[Mapping[str, Any]] = []

    def head(detail: Any, number: int) -> None:  # read a chunk of heads at a time
        if not isinstance(detail, Mapping) or ("items" not in detail and "item" in detail):
            raise ArgumentTypeError(
                f"lines_df: detail {number} is not an unwrapped transaction detail; pass "
                "response['item'] (or client.transaction(id)), with its 'items' lines"
            )
        pending.append(detail)
        if len(pending) == CHUNK_ROWS:
            heads.read(pending, "lines_df")
            pending.clear()

    lines, per_detail = _read_lines(details, head)
    heads.read(pending, "lines_df")
    schema = SCHEMAS["lines"]
    refs = heads.ref_columns()
    memo = as_string(heads.lists.pop("memo"))  # read for the opening counts only
    per_tx = {col: typed(values, schema[col]) for col, values in heads.lists.items()}
    per_tx.update(refs, **location_of(refs))
    per_tx[OPENING_COUNT] = opening_flags(per_tx["type"], per_tx["transaction_time"], memo)
    return _frame(lines, per_detail, per_tx)


def lines_of(
    transactions: pd.DataFrame, details: Iterable[Mapping[str, Any] | None]
) -> pd.DataFrame:
    """:func:`lines_df` of the details of the rows of ``transactions`` (a
    :func:`~invtools.frames.transactions_df` frame), the i-th detail the i-th row's (None:
    deleted since, no lines), each line's transaction columns (time, type, revision, partner,
    locations, member, opening count) the row's: the list as it shows them now, where a detail
    is cached per revision and a rename raises none. Only the details' lines are read from them,
    a detail at a time, so what is held is the typed rows and the lines, never the details.

    >>> from invtools.frames import transactions_df
    >>> tx = transactions_df([{"id": 5, "type": "out", "revision": 1,
    ...     "transaction_time": "2026-05-02T01:10:00Z", "partner": {"id": 6, "name": "Ann Lee"}}])
    >>> d = {"id": 5, "partner": {"id": 6, "name": "Ann"}, "items": [{"id": 9, "quantity": 2}]}
    >>> lines_of(tx, [d])[["transaction_id", "partner_name", "item_id", "quantity"]]
       transaction_id partner_name  item_id  quantity
    0               5      Ann Lee        9       2.0
    """
    if not isinstance(transactions, pd.DataFrame):
        raise ArgumentTypeError(
            f"lines_of: transactions must be a DataFrame, not {type(transactions).__name__}"
        )
    check_columns(transactions, " ".join(_LINE_TX_COLUMNS), "lines_of: transactions")

    def check(detail: Any, number: int) -> None:
        if number >= len(transactions):
            raise ConfigError(f"lines_of: more details than the {len(transactions)} rows")
        if detail is not None and not isinstance(detail, Mapping):
            raise ArgumentTypeError(
                f"lines_of: detail {number} is a {type(detail).__name__}, not a detail dict"
            )

    lines, per_detail = _read_lines(details, check)
    if len(per_detail) != len(transactions):
        raise ConfigError(f"lines_of: {len(per_detail)} details for {len(transactions)} rows")
    per_tx = {col: transactions[col].array for col in _LINE_TX_COLUMNS}
    return _frame(lines, per_detail, per_tx)


#: The lines schema's transaction columns: the transactions frame's, of the same names.
_LINE_TX_COLUMNS = list(SCHEMAS["lines"])[: list(SCHEMAS["lines"]).index("item_id")]


def _read_lines(
    details: Iterable[Mapping[str, Any] | None], each: Callable[[Any, int], None]
) -> tuple[_Lines, list[int]]:
    """The lines of all ``details`` read as one stream, and how many each has (a None one:
    none); ``each(detail, number)`` sees every detail before its lines are read."""
    lines = _Lines()
    per_detail: list[int] = []
    pending: list[Any] = []
    for detail in details:
        each(detail, len(per_detail))
        items = (detail.get("items") if detail is not None else None) or ()
        per_detail.append(len(items))
        pending.extend(items)
        if len(pending) >= _PART_LINES:
            lines.read(pending)
            pending.clear()
    lines.read(pending)
    return lines, per_detail


#: Lines read, then typed, at a time: their values are Python objects only until then (all
#: 170,000 lines of a 100,000-transaction team held so: +97 MiB, typed: 25 MiB).
_PART_LINES = 16384


class _Lines:
    """The lines' own columns read a part at a time (one :class:`Reader`, so that row numbers
    in its messages and its unknown fields run on), each part typed at once."""

    def __init__(self) -> None:
        self.reader = Reader(_LINE_PLAIN)
        self.parts: dict[str, list[Any]] = {col: [] for col in self.reader.lists}

    def read(self, items: list[Any]) -> None:
        self.reader.read(items, "lines_df (lines)")
        schema = SCHEMAS["lines"]
        for col, values in self.reader.lists.items():
            if values:
                self.parts[col].append(typed(values, schema[col]))
                values.clear()

    def columns(self) -> dict[str, Any]:
        """Every part of each column as one array (one column's parts at a time)."""
        schema = SCHEMAS["lines"]
        return {
            col: _joined(parts) if (parts := self.parts.pop(col)) else typed([], schema[col])
            for col in list(self.parts)
        }


def _joined(parts: list[Any]) -> Any:
    """Typed parts of a column as one array."""
    if len(parts) == 1:
        return parts[0]
    if isinstance(parts[0], np.ndarray):
        return np.concatenate(parts)
    return type(parts[0])._concat_same_type(parts)  # the ExtensionArray interface's concat


def _frame(lines: _Lines, per_detail: list[int], per_tx: Mapping[str, Any]) -> pd.DataFrame:
    """The lines frame: each transaction's columns (typed, one value per detail) repeated for
    its lines, then the lines' own."""
    schema = SCHEMAS["lines"]
    repeat_rows = np.repeat(np.arange(len(per_detail)), per_detail)
    computed = {col: per_tx[col].take(repeat_rows) for col in schema if col in per_tx}
    computed.update(lines.columns())
    return build_frame(schema, lines.reader, computed=computed)


def with_item_columns(
    lines: pd.DataFrame, items: pd.DataFrame, columns: str | Iterable[str]
) -> pd.DataFrame:
    """``lines`` with the named ``columns`` of ``items`` (:func:`items_df`: ``attr_Category``,
    ``cost``, ...) joined onto each line by ``item_id``, placed after ``item_name`` and typed as
    in ``items``. A left join: a line of an item the items frame does not hold (a deleted item)
    gets <NA> there. ``sku`` and ``barcode`` are on every line already (the detail's own,
    which a deleted item's line keeps): naming them adds nothing. The result's provenance is
    both frames' (:func:`merge_provenance`). What ``client.lines_df(item_columns=[...])`` does;
    for a mirror's lines, pass ``mirror.lines_df()`` and ``client.items_df()``.

    An unknown name is a ConfigError that lists the items frame's columns; a name the lines
    hold with another meaning (``quantity``: the line's) too -- rename it in ``items`` first.

    >>> lines = lines_df([{"id": 5, "type": "out", "transaction_time": "2026-05-02T01:10:00Z",
    ...     "items": [{"id": 9, "name": "Mug", "sku": "M-9", "quantity": 2},
    ...               {"id": 4, "name": "Old jug", "sku": "J-4", "quantity": 1}]}])
    >>> items = pd.DataFrame({"item_id": pd.array([9], "Int64"),
    ...                       "attr_Category": pd.array(["Kitchen"], "string")})
    >>> with_item_columns(lines, items, ["sku", "attr_Category"])[
    ...     ["item_id", "item_name", "attr_Category", "sku"]]
       item_id item_name attr_Category  sku
    0        9       Mug       Kitchen  M-9
    1        4   Old jug          <NA>  J-4
    """
    where = "with_item_columns"
    for name, df in (("lines", lines), ("items", items)):
        if not isinstance(df, pd.DataFrame):
            raise ArgumentTypeError(f"{where}: {name} must be a DataFrame, not {type(df).__name__}")
    check_columns(lines, "item_id item_name", f"{where}: lines (lines_df())")
    check_columns(items, "item_id", f"{where}: items (items_df())")
    wanted = _item_column_names(columns, where)
    unknown = [
        c for c in wanted if c not in _ON_EVERY_LINE and (c not in items.columns or c == "item_id")
    ]
    if unknown:
        known = [str(c) for c in items.columns if c != "item_id"]
        raise ConfigError(
            f"{where}: item_columns {unknown} are not columns of the items frame; it has {known}"
        )
    clashing = [c for c in wanted if c in lines.columns and c not in _ON_EVERY_LINE]
    if clashing:
        raise ConfigError(
            f"{where}: item_columns {clashing} are columns of the lines already, with the "
            "line's own values; rename them in the items frame first "
            "(items.rename(columns={...})) and pass the new names"
        )
    new = [c for c in dict.fromkeys(wanted) if c not in lines.columns]
    by_id = items.drop_duplicates("item_id").set_index("item_id")[new]  # each id's first row
    joined = by_id.reindex(pd.Index(lines["item_id"])).set_axis(lines.index)
    at = list(lines.columns).index("item_name") + 1
    out = pd.concat([lines.iloc[:, :at], joined, lines.iloc[:, at:]], axis=1)
    out.attrs = dict(lines.attrs)
    out.attrs.update(merge_provenance([lines, items]))
    if "grain" in lines.attrs:  # still one row per line
        out.attrs["grain"] = lines.attrs["grain"]
    return out


def _item_column_names(columns: Any, where: str) -> list[str]:
    """``columns`` as a list of names (one name: a list of one)."""
    if isinstance(columns, str):
        return [columns]
    if isinstance(columns, Mapping) or not isinstance(columns, Iterable):
        raise ArgumentTypeError(
            f"{where}: item_columns must be a list of column names, not {type(columns).__name__}"
        )
    names = list(columns)
    bad = [c for c in names if not isinstance(c, str)]
    if bad:
        raise ArgumentTypeError(f"{where}: item_columns must be column names (text), not {bad}")
    return names
