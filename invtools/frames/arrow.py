"""Transactions straight from page bodies (bytes): parsed by pyarrow in C++, never as dicts.

:func:`transactions_df_from_pages` gives the frame :func:`~invtools.frames.transactions_df`
gives for the same rows; a block of pages pyarrow refuses is read by that function instead.
Its arrays come from :data:`~invtools.frames.columns.POOL` (the C library's ``malloc``), and
:func:`give_back` says when what a build freed goes back to the system.
"""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterable, Iterator, Sequence
from itertools import groupby

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json
from pandas.api.types import union_categoricals

from invtools._config import check_whole
from invtools.errors import ArgumentTypeError, PaginationError
from invtools.frames.columns import POOL, ref_columns, string_array, with_categories
from invtools.frames.openings import OPENING_COUNT, decide_openings, opening_flags
from invtools.frames.resources import derived_columns, transactions_df
from invtools.frames.schemas import SCHEMAS, TX_PLAIN, TX_REFS, TX_TYPE_DTYPE, wire_names

__all__ = [
    "transactions_df_from_pages",
    "walk_frame",
    "frame_keys",
    "give_back",
    "BLOCK_BYTES",
]

_WIRE = {"Int64": pa.int64(), "float64": pa.float64()}
_ARROW_REF = pa.struct([("id", pa.int64()), ("name", pa.string()), ("deleted", pa.bool_())])
#: What a well-formed transaction row looks like on the wire: its plain fields as their columns
#: (ids and counts int64, quantities float64, times and text strings), then the references.
#: pyarrow refuses a block whose values do not fit (an id 1.5 or "12", a reference that is not
#: an object): such a block is read again with json.loads and the forgiving dict path, so both
#: paths give the same frame.
_ARROW_TX = pa.struct(
    [
        (key, _WIRE.get(SCHEMAS["transactions"][col], pa.string()))
        for key, col in wire_names("transactions", TX_PLAIN).items()
    ]
    + [(key, _ARROW_REF) for key in TX_REFS]
)
_ARROW_PAGE = pa.schema([("items", pa.list_(_ARROW_TX))])
#: Page bodies parsed per pyarrow call (the default ``block_bytes``): a call has a fixed cost of
#: about a millisecond, so pages go in blocks; a block's bytes and the parser's buffers are all
#: that is held besides the Arrow columns. 2 MiB: 100,000 rows (41 MiB of pages) parse as fast as
#: in 16 MiB blocks (0.12-0.15 s against 0.12-0.29 s), the peak 28 MiB lower (1 MiB: 34 MiB
#: lower, 0.19 s).
BLOCK_BYTES = 2 << 20
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
    2 MiB): the most held besides the columns, and the unit that falls back to the dict path.

    >>> body = (b'{"items": [{"id": 7, "type": "in", "transaction_time": '
    ...         b'"2026-05-02T01:10:00.000Z"}], "cursor": null, "has_more": false}')
    >>> df = transactions_df_from_pages([body])
    >>> int(df.loc[0, "transaction_id"]), df.loc[0, "type"], str(df["transaction_time"].dtype)
    (7, 'in', 'datetime64[ms, UTC]')
    """
    if isinstance(bodies, (str, bytes)) or not isinstance(bodies, Iterable):
        raise ArgumentTypeError(
            f"transactions_df_from_pages: bodies is an iterable of page bodies (bytes), "
            f"not {type(bodies).__name__}"
        )
    check_whole(block_bytes, "transactions_df_from_pages: block_bytes", least=1)
    parsed = (_parse_block(block) for block in _blocks(bodies, block_bytes))
    frames_: list[pd.DataFrame] = []
    # A frame per block read as dicts; consecutive blocks parsed by pyarrow become one frame.
    for read_as_dicts, run in groupby(parsed, key=lambda part: isinstance(part, pd.DataFrame)):
        parts = list(run)
        frames_ += parts if read_as_dicts else [_tx_frame_from_arrow(parts)]
    if len(frames_) > 1:  # each part's flags were its own: decided again on the whole
        return decide_openings(_concat(frames_))
    return frames_[0] if frames_ else transactions_df([])


def walk_frame(
    pages: Iterable[tuple[bytes, int, int | None]],
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
    >>> walk_frame([(body, 2, 1)])["transaction_id"].tolist()
    [3]
    """
    shapes: list[tuple[int, int | None]] = []  # (rows, rows that count) of each page

    def bodies() -> Iterator[bytes]:  # read as they come (a replay's pages as decompressed)
        for body, n, keep in pages:
            shapes.append((n, keep))
            yield body

    df = transactions_df_from_pages(bodies())
    counts = [n for n, _keep in shapes]
    if sum(counts) != len(df):
        raise PaginationError(
            f"the pages' counts add up to {sum(counts)} rows but they hold {len(df)}; "
            "walk with chains=1"
        )
    kept = (np.arange(n) < (n if keep is None else keep) for n, keep in shapes)
    idx = np.flatnonzero(np.concatenate([np.zeros(0, dtype=bool), *kept]))
    ms, ids = frame_keys(df)
    if merged:
        idx = idx[np.lexsort((-ids[idx], -ms[idx]))]
    first = ~pd.Series(ids[idx]).duplicated().to_numpy() | (ids[idx] == -1)
    rows = idx[first]
    # every row, in order (a plain walk): the frame itself, not a copy of it (100,000 rows:
    # 25 MiB less at the peak)
    whole = len(rows) == len(df) and bool((rows == np.arange(len(df))).all())
    out = df if whole else _taken(df, rows)
    if types is not None:
        out = out[out["type"].isin(list(types)).to_numpy()].reset_index(drop=True)
    if not whole or types is not None:  # the opening counts of the rows that count
        decide_openings(out)
    # what the parse and the copies freed, given back: 100,000 rows' frame holds 45 MiB less
    # of this process (what comes next, the lines of lines_df(), is Python's)
    give_back()
    return out


def give_back() -> None:
    """Give back to the system what the C library holds free (``malloc_trim``, on glibc: the
    builders' Arrow arrays, :data:`~invtools.frames.columns.POOL`, and the holes Python's and
    numpy's temporaries left) and what pyarrow's default pool holds free."""
    POOL.release_unused()
    pa.default_memory_pool().release_unused()


def _taken(df: pd.DataFrame, rows: np.ndarray) -> pd.DataFrame:
    """The ``rows`` of ``df`` (this module's own frame, emptied) a column at a time, each
    column's old values freed as its new ones are made (the whole frame taken at once held
    both: 100,000 rows, +25 MiB)."""
    taken = {col: df.pop(col).array.take(rows) for col in list(df.columns)}
    return pd.DataFrame(taken, index=pd.RangeIndex(len(rows)), copy=False)


def frame_keys(df: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Each row's place in the list as two int64 arrays: its time in epoch ms (``-2**62``
    when missing), its id (-1 when missing)."""
    t = df["transaction_time"].dt.tz_convert(None).to_numpy().astype("datetime64[ms]")
    ms = np.where(np.isnat(t), -(2**62), t.astype(np.int64))
    return ms, df["transaction_id"].to_numpy(dtype=np.int64, na_value=-1)


def _blocks(bodies: Iterable[bytes], block_bytes: int) -> Iterator[list[bytes]]:
    """The bodies in blocks of at least ``block_bytes`` bytes (the last one: what is left)."""
    block: list[bytes] = []
    size = 0
    for body in bodies:
        if not isinstance(body, bytes):
            raise ArgumentTypeError(
                f"transactions_df_from_pages: each body is bytes (a page as the server sent "
                f"it), not {type(body).__name__}"
            )
        block.append(body)
        size += len(body)
        if size >= block_bytes:
            yield block
            block, size = [], 0
    if block:
        yield block


def _parse_block(bodies: list[bytes]):
    """One block of page bodies -> their rows as a struct array, or as a frame via dicts."""
    # One page per line; a pretty-printed body (newlines between tokens) needs the slower mode.
    multiline = any(b"\n" in body for body in bodies)
    data = b"\n".join(body.strip() for body in bodies)
    with contextlib.suppress(pa.ArrowInvalid, pa.ArrowTypeError):
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
            memory_pool=POOL,
        )
        items = table.column("items")
        if (
            items.type == pa.list_(_ARROW_TX)
            and table.num_rows == len(bodies)
            and items.null_count == 0
        ):
            rows = pc.list_flatten(items, memory_pool=POOL)
            if rows.null_count == 0:
                return rows.combine_chunks(POOL)  # a table's column: chunked
    # Unknown fields (pyarrow would have guessed their types: they must stay as-is), a value
    # of the wrong type, or a row that is null: the forgiving path decides.
    return transactions_df([row for body in bodies for row in _page_items(body)])


def _page_items(body: bytes) -> list:
    try:
        page = json.loads(body)
    except ValueError:
        page = None
    items = page.get("items") if isinstance(page, dict) else None
    if not isinstance(items, list):
        raise ArgumentTypeError(
            "transactions_df_from_pages: a body is not a page envelope with an "
            "'items' list; pass the bodies of /v1/location-txs pages"
        )
    return items


def _tx_frame_from_arrow(blocks: list[pa.StructArray]) -> pd.DataFrame:
    """The transactions frame from rows parsed by pyarrow (every field of the expected type)."""
    rows = blocks[0] if len(blocks) == 1 else pa.concat_arrays(blocks, POOL)
    field = dict(zip((f.name for f in _ARROW_TX), rows.flatten(POOL), strict=True))
    integer = pd.Int64Dtype().__from_arrow__  # type: ignore[attr-defined]  # pandas-stubs lacks the __from_arrow__ protocol
    # A type the service added after the documented four is one more category, not a gap.
    seen = pc.unique(field["type"], memory_pool=POOL).drop_null().to_pylist()
    dtype = with_categories(TX_TYPE_DTYPE, sorted(set(seen) - {""}))
    categories = pa.array(dtype.categories, pa.string(), memory_pool=POOL)
    codes = pc.fill_null(pc.index_in(field["type"], categories, memory_pool=POOL), -1)
    refs = {col: v for key in TX_REFS for col, v in ref_columns(key, field[key]).items()}
    data = {
        "transaction_id": integer(field["id"]),
        "type": pd.Categorical.from_codes(codes.to_numpy().astype(np.int8), dtype=dtype),
        "revision": integer(field["revision"]),
        "count_of_items": integer(field["count_of_items"]),
        # its own, writable: the frame holds it (a view of Arrow's buffer is read-only)
        "total_quantity": field["total_quantity"].to_numpy(zero_copy_only=False, writable=True),
        # before the text columns: a lower peak while the location pair is made
        **derived_columns(field["transaction_time"], field["created_at"], refs),
    }
    data.update(memo=string_array(field["memo"]), url=string_array(field["url"]))
    data[OPENING_COUNT] = opening_flags(data["type"], data["transaction_time"], data["memo"])
    schema = SCHEMAS["transactions"]
    # the columns are made here, for this frame: held, not copied (pandas copies by default)
    return pd.DataFrame(
        {col: data[col] for col in schema}, index=pd.RangeIndex(len(rows)), copy=False
    )


def _concat(parts: list[pd.DataFrame]) -> pd.DataFrame:
    """Frames of consecutive blocks as one; an unknown field some blocks lack is None there."""
    columns = dict.fromkeys(col for part in parts for col in part.columns)
    out = pd.concat(
        [part.assign(**{col: None for col in columns if col not in part}) for part in parts],
        ignore_index=True,
    )
    if not isinstance(out["type"].dtype, pd.CategoricalDtype):  # blocks met different extra types
        out["type"] = union_categoricals([part["type"].array for part in parts])
    return out
