"""Transactions straight from page bodies (bytes): parsed by pyarrow in C++, never as dicts.

:func:`transactions_df_from_pages` gives the frame :func:`~invtools.frames.transactions_df`
gives for the same rows; a block of pages pyarrow refuses is read by that function instead.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

from invtools.errors import ArgumentTypeError, PaginationError
from invtools.frames.columns import as_time, either_ref, string_array, with_categories
from invtools.frames.resources import backdated, transactions_df
from invtools.frames.schemas import SCHEMAS, TIME_DTYPE, TX_REFS, TX_TYPE_DTYPE

__all__ = ["transactions_df_from_pages", "walk_frame", "frame_keys", "BLOCK_BYTES"]

_ARROW_REF = pa.struct([("id", pa.int64()), ("name", pa.string()), ("deleted", pa.bool_())])
#: What a well-formed transaction row looks like on the wire. pyarrow refuses a block whose
#: values do not fit (an id 1.5 or "12", a reference that is not an object): such a block is
#: read again with json.loads and the forgiving dict path, so both paths give the same frame.
_ARROW_TX = pa.struct(
    [
        ("id", pa.int64()),
        ("type", pa.string()),
        ("transaction_time", pa.string()),
        ("created_at", pa.string()),
        ("revision", pa.int64()),
        ("count_of_items", pa.int64()),
        ("total_quantity", pa.float64()),
        ("memo", pa.string()),
        ("url", pa.string()),
        *[(key, _ARROW_REF) for key in TX_REFS],
    ]
)
_ARROW_PAGE = pa.schema([("items", pa.list_(_ARROW_TX))])
#: Page bodies parsed per pyarrow call (the default ``block_bytes``): a call has a fixed cost of
#: about a millisecond, so pages go in blocks; a block's bytes are all that is held besides the
#: Arrow columns.
BLOCK_BYTES = 16 << 20
#: pyarrow parses a call's data in chunks of this many bytes, one per core at a time.
_ARROW_CHUNK = 1 << 20


def transactions_df_from_pages(
    bodies: Iterable[bytes], *, block_bytes: int = BLOCK_BYTES
) -> pd.DataFrame:
    """:func:`transactions_df` of the rows of transaction list pages given as raw JSON bodies.

    The same frame as ``transactions_df(row for b in bodies for row in json.loads(b)["items"])``
    -- same columns, dtypes, missing values and unknown fields -- but the bytes are parsed by
    pyarrow straight into columns (in C++, on every core), so no dict is ever built for a
    well-formed row. A block of pages that holds anything unusual (a value of the wrong type,
    an unknown field) is read with ``json.loads`` and :func:`transactions_df` instead.
    ``client.transactions_df()`` uses this for walks read whole from the cache or the server.

    ``block_bytes`` is how many bytes of pages pyarrow parses per call (:data:`BLOCK_BYTES`,
    16 MiB): the most held besides the columns, and the unit that falls back to the dict path.

    >>> body = (b'{"items": [{"id": 7, "type": "in", "transaction_time": '
    ...         b'"2026-05-02T01:10:00.000Z"}], "cursor": null, "has_more": false}')
    >>> df = transactions_df_from_pages([body])
    >>> int(df.loc[0, "id"]), df.loc[0, "type"], str(df["transaction_time"].dtype)
    (7, 'in', 'datetime64[ms, UTC]')
    """
    parts: list = []  # pa.StructArray (fast path) or a DataFrame (a block read as dicts)
    block: list[bytes] = []
    size = 0
    for body in bodies:
        block.append(body)
        size += len(body)
        if size >= block_bytes:
            parts.append(_parse_block(block))
            block, size = [], 0
    if block or not parts:
        parts.append(_parse_block(block))
    frames_ = []
    arrow: list[pa.Array] = []
    for part in [*parts, None]:  # consecutive Arrow blocks become one frame
        if isinstance(part, pa.Array):
            arrow.append(part)
            continue
        if arrow:
            frames_.append(_tx_frame_from_arrow(pa.chunked_array(arrow, _ARROW_TX)))
            arrow = []
        if part is not None:
            frames_.append(part)
    return frames_[0] if len(frames_) == 1 else _concat(frames_)


def walk_frame(
    pages: Sequence[tuple[bytes, int, int | None]],
    *,
    merged: bool = False,
    types: Sequence[str] | None = None,
) -> pd.DataFrame:
    """The transactions frame of a walk's pages, each ``(body, rows on it, rows that count or
    None for all)`` in walk order: the rows that count, sorted newest first by
    ``(transaction_time, id)`` when ``merged`` (chains of types), each id once (the first),
    only ``types`` when given.

    >>> body = (b'{"items":[{"id":3,"transaction_time":"2026-05-02T00:00:00Z"},'
    ...         b'{"id":2,"transaction_time":"2026-05-01T00:00:00Z"}]}')
    >>> walk_frame([(body, 2, 1)])["id"].tolist()
    [3]
    """
    df = transactions_df_from_pages(body for body, _n, _keep in pages)
    counts = [n for _body, n, _keep in pages]
    if sum(counts) != len(df):
        raise PaginationError(
            f"the pages' counts add up to {sum(counts)} rows but they hold {len(df)}; "
            "walk with chains=1"
        )
    offsets = np.cumsum([0, *counts])
    idx = np.concatenate(
        [np.arange(0)]
        + [
            np.arange(off, off + (n if keep is None else min(keep, n)))
            for (_body, n, keep), off in zip(pages, offsets, strict=False)
        ]
    ).astype(np.int64)
    ms, ids = frame_keys(df)
    if merged:
        idx = idx[np.lexsort((-ids[idx], -ms[idx]))]
    first = ~pd.Series(ids[idx]).duplicated().to_numpy() | (ids[idx] == -1)
    out = df.take(idx[first]).reset_index(drop=True)
    if types is not None:
        out = out[out["type"].isin(list(types)).to_numpy()].reset_index(drop=True)
    return out


def frame_keys(df: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Each row's place in the list as two int64 arrays: its time in epoch ms (``-2**62``
    when missing), its id (-1 when missing)."""
    t = df["transaction_time"].dt.tz_convert(None).to_numpy().astype("datetime64[ms]")
    ms = np.where(np.isnat(t), -(2**62), t.astype(np.int64))
    return ms, df["id"].to_numpy(dtype=np.int64, na_value=-1)


def _parse_block(bodies: list[bytes]):
    """One block of page bodies -> their rows as a struct array, or as a frame via dicts."""
    # One page per line; a pretty-printed body (newlines between tokens) needs the slower mode.
    multiline = any(b"\n" in body for body in bodies)
    data = b"\n".join(body.strip() for body in bodies)
    try:
        table = pa_json.read_json(
            io.BytesIO(data),
            # A chunk must hold at least one whole page.
            read_options=pa_json.ReadOptions(
                block_size=max(_ARROW_CHUNK, 2 * max(map(len, bodies), default=0))
            ),
            parse_options=pa_json.ParseOptions(
                explicit_schema=_ARROW_PAGE,
                unexpected_field_behavior="infer",
                newlines_in_values=multiline,
            ),
        )
        items = table.column("items")
        if (
            items.type == pa.list_(_ARROW_TX)
            and table.num_rows == len(bodies)
            and items.null_count == 0
        ):
            rows = pc.list_flatten(items)
            if rows.null_count == 0:
                return rows.combine_chunks() if isinstance(rows, pa.ChunkedArray) else rows
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        pass
    # Unknown fields (pyarrow would have guessed their types: they must stay as-is), a value
    # of the wrong type, or a row that is null: the forgiving path decides.
    return transactions_df([row for body in bodies for row in _page_items(body)])


def _page_items(body: bytes) -> list:
    page = json.loads(body)
    items = page.get("items") if isinstance(page, dict) else None
    if not isinstance(items, list):
        raise ArgumentTypeError(
            "transactions_df_from_pages: a body is not a page envelope with an "
            "'items' list; pass the bodies of /v1/location-txs pages"
        )
    return items


def _tx_frame_from_arrow(rows: pa.ChunkedArray) -> pd.DataFrame:
    """The transactions frame from rows parsed by pyarrow (every field of the expected type)."""
    rows = rows.combine_chunks() if rows.num_chunks != 1 else rows.chunk(0)
    field = dict(zip((f.name for f in _ARROW_TX), rows.flatten(), strict=True))
    integer = pd.Int64Dtype().__from_arrow__  # type: ignore[attr-defined]  # pandas-stubs lacks the __from_arrow__ protocol
    business = _time_from_arrow(field["transaction_time"])
    created = _time_from_arrow(field["created_at"])
    # A type the service added after the documented four is one more category, not a gap.
    known = list(TX_TYPE_DTYPE.categories)
    seen = pc.unique(field["type"]).drop_null().to_pylist()
    dtype = with_categories(TX_TYPE_DTYPE, sorted(set(seen) - set(known) - {""}))
    codes = pc.fill_null(
        pc.index_in(field["type"], value_set=pa.array(list(dtype.categories), pa.string())), -1
    )
    data = {
        "id": integer(field["id"]),
        "type": pd.Categorical.from_codes(codes.to_numpy().astype(np.int8), dtype=dtype),
        "transaction_time": business,
        "created_at": created,
        "revision": integer(field["revision"]),
        "count_of_items": integer(field["count_of_items"]),
        "total_quantity": field["total_quantity"].to_numpy(zero_copy_only=False),
    }
    for prefix in TX_REFS:
        ids, names, deleted = field[prefix].flatten()  # null references: all three null
        data[f"{prefix}_id"] = integer(ids)
        data[f"{prefix}_name"] = string_array(names.cast(pa.large_string()))
        data[f"{prefix}_deleted"] = pd.BooleanDtype().__from_arrow__(deleted)  # type: ignore[attr-defined]  # pandas-stubs lacks the __from_arrow__ protocol
    data["location_id"], data["location_name"] = either_ref(
        data["to_location_id"],
        data["to_location_name"],
        data["from_location_id"],
        data["from_location_name"],
    )
    data["memo"] = string_array(field["memo"].cast(pa.large_string()))
    data["url"] = string_array(field["url"].cast(pa.large_string()))
    data["backdated"] = backdated(business, created)
    schema = SCHEMAS["transactions"]
    return pd.DataFrame({col: data[col] for col in schema}, index=pd.RangeIndex(len(rows)))


def _time_from_arrow(values: pa.Array):
    try:
        return pc.cast(values, pa.timestamp("ms", tz="UTC")).to_pandas().array.astype(TIME_DTYPE)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return as_time(values.to_pylist())  # a malformed time: pandas' forgiving parser


def _concat(parts: list[pd.DataFrame]) -> pd.DataFrame:
    """Frames of consecutive blocks as one; an unknown field some blocks lack is None there."""
    columns = list(dict.fromkeys(col for part in parts for col in part.columns))
    filled = []
    for part in parts:
        missing = {
            col: pd.Series(np.full(len(part), None, dtype=object), index=part.index, dtype=object)
            for col in columns
            if col not in part.columns
        }
        filled.append(part.assign(**missing)[columns] if missing else part)
    # Blocks that met different extra types: one set of categories, or concat gives objects.
    for col in columns:
        dtypes = [d for p in filled if isinstance(d := p[col].dtype, pd.CategoricalDtype)]
        if len(dtypes) == len(filled) and len({tuple(d.categories) for d in dtypes}) > 1:
            union = dtypes[0]
            for d in dtypes[1:]:
                union = with_categories(union, d.categories)
            filled = [
                p.assign(**{col: p[col].cat.set_categories(union.categories)}) for p in filled
            ]
    return pd.concat(filled, ignore_index=True)
