"""Records in, typed DataFrames out: one function per resource, pure (no HTTP, no I/O).

Each function takes any iterable of record dicts exactly as the API sends them (a list from
``json.loads``, or a generator such as ``client.rows(...)``: rows are consumed once) and returns
a DataFrame whose columns, order and dtypes are declared once, in :data:`SCHEMAS`:

=================  ==========================================================================
resource           columns (dtype)
=================  ==========================================================================
``transactions``   id, type (category in/out/move/adjust), transaction_time, created_at (both
                   datetime64[ms, UTC]), revision, count_of_items (Int64), total_quantity
                   (float64), partner_/from_location_/to_location_/created_by_ + id (Int64),
                   name (string), deleted (boolean); memo, url (string); backdated (boolean)
``lines``          transaction_id, transaction_time, type, revision, partner_id, partner_name,
                   from_location_id, from_location_name, to_location_id, to_location_name,
                   item_id, item_name, sku, barcode, quantity, item_deleted, new_stock_level,
                   from_location_new_stock_level, to_location_new_stock_level
``items``          id, name, sku, barcode, photo_url, cost, price, quantity, then
                   ``attr_<name>`` per item attribute (number float64, date datetime64[ms, UTC],
                   text/barcode string)
``stock``          item_id, item_name, sku, location_id, location_name, quantity
``locations``      id, name, quantity, memo
``partners``       id, type (category supplier/customer), name, phone, email, address, memo
``members``        id, name, role (category admin/member/viewer)
``attributes``     id, attr_type, attr_name (string), rank (Int64)
``stock_history``  transaction_time, transaction_id, item_id, item_name, location_id, stock, change
=================  ==========================================================================

Conventions (the contract plots and the mirror rely on):

- ids and counts are ``Int64`` (nullable); times ``datetime64[ms, UTC]`` (the wire has
  millisecond precision, so nothing is lost); quantities and money ``float64``; text is
  ``string`` (``pd.StringDtype()``, missing values ``<NA>``); flags ``boolean`` (nullable).
- An embedded reference ``{id, name, deleted}`` becomes ``<ref>_id``, ``<ref>_name``,
  ``<ref>_deleted``; a null reference gives ``<NA>`` in all three.
- A missing known field is ``<NA>``. A value that does not parse (a money string like
  ``"n/a"``, a malformed time, an id that is not an integer, a ``type`` outside the known
  categories) becomes ``<NA>``/``NaN``/``NaT`` rather than an exception: one bad row must not
  cost the analyst the whole download.
- Fields the server sends that the schema does not know are kept, as-is (``object`` dtype),
  appended after the schema columns in order of first appearance; rows without them hold
  ``None``. If such a field's name clashes with a schema column it is renamed ``extra_<name>``.
- An empty input gives an empty frame with every schema column and its dtype.

Rows are read once, a chunk at a time, into per-column lists (references to the parsed values,
no copies; embedded references straight into pyarrow struct arrays), and each column is then
typed in one vectorised call. Only one chunk of the input is held at a time, so a generator's
rows can be freed as they are read. ``benchmarks/bench_frames.py`` measures this against
``pd.json_normalize``.

:func:`with_provenance` records where a frame came from in ``df.attrs``.

>>> df = transactions_df([{"id": 7, "type": "in", "transaction_time": "2026-05-02T01:10:00.000Z",
...                        "created_at": "2026-05-02T01:10:05.000Z", "partner": None}])
>>> df.loc[0, "partner_id"] is pd.NA, str(df["transaction_time"].dtype), bool(df.loc[0, "backdated"])
(True, 'datetime64[ms, UTC]', False)
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Mapping
from itertools import count, islice, repeat
from operator import itemgetter
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

__all__ = [
    "SCHEMAS",
    "TIME_DTYPE",
    "TX_TYPE_DTYPE",
    "PARTNER_TYPE_DTYPE",
    "ROLE_DTYPE",
    "BACKDATE_THRESHOLD",
    "PROVENANCE_KEYS",
    "transactions_df",
    "transactions_df_from_pages",
    "lines_df",
    "items_df",
    "stock_df",
    "locations_df",
    "partners_df",
    "members_df",
    "attributes_df",
    "stock_history",
    "rebase_levels",
    "with_provenance",
]

# --------------------------------------------------------------------------------------------
# The schemas: the single place that says which columns each frame has, in order, and their dtype.
# --------------------------------------------------------------------------------------------

TIME_DTYPE = pd.DatetimeTZDtype(unit="ms", tz="UTC")
TX_TYPE_DTYPE = pd.CategoricalDtype(["in", "out", "move", "adjust"])
PARTNER_TYPE_DTYPE = pd.CategoricalDtype(["supplier", "customer"])
ROLE_DTYPE = pd.CategoricalDtype(["admin", "member", "viewer"])
STRING = pd.StringDtype()  # pyarrow-backed, missing values are pd.NA

#: The wire encodes a partner's type as an integer.
PARTNER_TYPE_NAMES = {0: "supplier", 1: "customer"}

#: A transaction is ``backdated`` when it was recorded (``created_at``) **more than** this long
#: after its business time (``transaction_time``). Exactly one day later is not backdated; a
#: transaction dated in the future of its recording is not backdated; <NA> if either time is.
BACKDATE_THRESHOLD = pd.Timedelta(days=1)


def _ref(prefix: str, *, deleted: bool = True) -> dict[str, Any]:
    cols: dict[str, Any] = {f"{prefix}_id": "Int64", f"{prefix}_name": STRING}
    if deleted:
        cols[f"{prefix}_deleted"] = "boolean"
    return cols


SCHEMAS: dict[str, dict[str, Any]] = {
    "transactions": {
        "id": "Int64",
        "type": TX_TYPE_DTYPE,
        "transaction_time": TIME_DTYPE,
        "created_at": TIME_DTYPE,
        "revision": "Int64",
        "count_of_items": "Int64",
        "total_quantity": "float64",
        **_ref("partner"),
        **_ref("from_location"),
        **_ref("to_location"),
        **_ref("created_by"),
        "memo": STRING,
        "url": STRING,
        "backdated": "boolean",
    },
    "lines": {
        "transaction_id": "Int64",
        "transaction_time": TIME_DTYPE,
        "type": TX_TYPE_DTYPE,
        "revision": "Int64",
        **_ref("partner", deleted=False),
        **_ref("from_location", deleted=False),
        **_ref("to_location", deleted=False),
        "item_id": "Int64",
        "item_name": STRING,
        "sku": STRING,
        "barcode": STRING,
        "quantity": "float64",
        "item_deleted": "boolean",
        "new_stock_level": "float64",
        "from_location_new_stock_level": "float64",
        "to_location_new_stock_level": "float64",
    },
    # items_df appends one attr_<name> column per item attribute after these.
    "items": {
        "id": "Int64",
        "name": STRING,
        "sku": STRING,
        "barcode": STRING,
        "photo_url": STRING,
        "cost": "float64",
        "price": "float64",
        "quantity": "float64",
    },
    "stock": {
        "item_id": "Int64",
        "item_name": STRING,
        "sku": STRING,
        "location_id": "Int64",
        "location_name": STRING,
        "quantity": "float64",
    },
    "locations": {"id": "Int64", "name": STRING, "quantity": "float64", "memo": STRING},
    "partners": {
        "id": "Int64",
        "type": PARTNER_TYPE_DTYPE,
        "name": STRING,
        "phone": STRING,
        "email": STRING,
        "address": STRING,
        "memo": STRING,
    },
    "members": {"id": "Int64", "name": STRING, "role": ROLE_DTYPE},
    # attr_type stays text (not a category) so a type the server adds later is not lost.
    "attributes": {"id": "Int64", "attr_type": STRING, "attr_name": STRING, "rank": "Int64"},
    "stock_history": {
        "transaction_time": TIME_DTYPE,
        "transaction_id": "Int64",
        "item_id": "Int64",
        "item_name": STRING,
        "location_id": "Int64",
        "stock": "float64",
        "change": "float64",
    },
}

#: item attribute ``type`` -> dtype of its ``attr_<name>`` column (unknown types: string).
ATTR_DTYPES: dict[str, Any] = {"number": "float64", "date": TIME_DTYPE, "text": STRING,
                               "barcode": STRING}

#: Keys :func:`with_provenance` accepts, and what they mean.
PROVENANCE_KEYS: dict[str, str] = {
    "team_id": "id of the team whose data this is",
    "team_name": "that team's name",
    "endpoint": "API path the rows came from, e.g. '/v1/location-txs'",
    "filters": "query filters used (dict), without cursor/limit",
    "fetched_at": "when the rows were fetched (tz-aware UTC Timestamp)",
    "pages": "number of pages walked",
    "requests": "number of HTTP requests actually sent (cache hits excluded)",
    "from_cache": "how many of its responses came from the local cache",
}

# --------------------------------------------------------------------------------------------
# Reading rows: one pass, column-wise lists.
# --------------------------------------------------------------------------------------------

#: Rows are read in chunks of this many: small enough that a chunk's dicts stay in the CPU
#: cache while each field is pulled out of all of them, large enough to amortise the calls.
_CHUNK = 1024
#: An embedded reference, converted by pyarrow in C. ``id`` goes through float64 (exact for
#: every 32-bit id) because pyarrow would silently truncate 1.5 to 1 on the way to int64.
_REF_TYPE = pa.struct([("id", pa.float64()), ("name", pa.large_string()), ("deleted", pa.bool_())])


class _Reader:
    """Columns filled from records in one pass, plus the unknown fields seen.

    ``plain`` maps wire key -> column name; ``refs`` maps the wire key of an embedded reference
    -> column prefix (giving ``<prefix>_id``, ``_name``, ``_deleted``); ``ignore`` names wire
    keys that are known but not read here. With ``extras=False`` unknown keys are not kept.

    Rows are consumed once, a chunk at a time, and each reference column of a chunk becomes
    one pyarrow struct array. A chunk whose rows all have the same keys (what a server sends)
    is turned into columns by :meth:`_read_uniform`; any other chunk has each known field
    pulled out of every row by ``map(dict.get, ...)`` (in C) and its unknown keys noted; a
    chunk that holds rows that are not dicts is re-read row by row with the forgiving rules.
    All three give the same columns.
    """

    def __init__(self, plain: Mapping[str, str], refs: Mapping[str, str] = MappingProxyType({}),
                 ignore: Iterable[str] = (), *, extras: bool = True):
        self.lists: dict[str, list] = {col: [] for col in plain.values()}
        self._plain = [(key, self.lists[col]) for key, col in plain.items()]
        self._refs: list[tuple[str, str, list[pa.StructArray]]] = [
            (key, prefix, []) for key, prefix in refs.items()]
        self._known = frozenset(plain) | frozenset(refs) | frozenset(ignore)
        self._plain_at = dict(self._plain)  # wire key -> its column's list
        self._ref_at = {key: parts for key, _, parts in self._refs}
        self._wanted = frozenset(self._plain_at) | frozenset(self._ref_at)
        self._keep_extras = extras
        self.extras: dict[str, dict[int, Any]] = {}  # key -> {row number: value}, sparse
        self.n = 0

    def read(self, rows: Iterable[Mapping[str, Any]], what: str) -> None:
        rows = iter(rows)
        while chunk := list(islice(rows, _CHUNK)):
            if not self._read_uniform(chunk):
                self._read_mixed(chunk, what)
            self.n += len(chunk)

    def _read_uniform(self, chunk: list) -> bool:
        """The usual case, and the fastest: every row a dict with exactly the first row's keys.

        One ``itemgetter`` call per row pulls all of its fields in C and ``zip`` turns the rows
        into columns: for 200,000 transaction rows, 0.19 s against 0.36 s for one
        ``dict.get`` pass per field plus 0.08 s to look for unknown keys. A row has exactly the
        first row's keys when it has as many keys and the getter finds every one of them.
        Returns False, having kept nothing, when the chunk is not like that.
        """
        first = chunk[0]
        if type(first) is not dict or len(first) < 2:  # one key: itemgetter returns no tuple
            return False
        layout = tuple(first)
        if not all(map(len(layout).__eq__, map(len, chunk))):
            return False
        try:
            columns = list(zip(*map(itemgetter(*layout), chunk)))
        except (KeyError, TypeError):  # a key missing from a row, or a row that is no mapping
            return False
        for key, values in zip(layout, columns):
            if key in self._plain_at:
                self._plain_at[key].extend(values)
            elif key in self._ref_at:
                self._ref_at[key].append(_ref_array(values))
            elif key not in self._known and self._keep_extras:
                self.extras.setdefault(key, {}).update(zip(count(self.n), values))
        for key in self._wanted.difference(layout):  # a known field no row of the chunk has
            if key in self._plain_at:
                self._plain_at[key].extend(repeat(None, len(chunk)))
            else:
                self._ref_at[key].append(pa.nulls(len(chunk), _REF_TYPE))
        return True

    def _read_mixed(self, chunk: list, what: str) -> None:
        done = len(self._refs[0][2]) if self._refs else 0
        try:
            self._read_dicts(chunk)
        except TypeError:  # dict.get met a row that is not a dict: undo, go row by row
            for values in self.lists.values():
                del values[self.n:]
            for _, _, parts in self._refs:
                del parts[done:]
            self._read_mappings(chunk, what)
        if self._keep_extras and not self._known.issuperset(set().union(*chunk)):
            self._note_extras(chunk)

    def _read_dicts(self, chunk: list) -> None:
        get = dict.get
        for key, values in self._plain:
            values.extend(map(get, chunk, repeat(key)))
        for key, _, parts in self._refs:
            parts.append(_ref_array(list(map(get, chunk, repeat(key)))))

    def _read_mappings(self, chunk: list, what: str) -> None:
        for row, rec in enumerate(chunk, self.n):
            if not isinstance(rec, Mapping):
                raise TypeError(f"{what}: row {row} is a {type(rec).__name__}, not a record "
                                "dict; pass the rows themselves, e.g. page['items'] or "
                                "client.rows(...)")
        for key, values in self._plain:
            values.extend(rec.get(key) for rec in chunk)
        for key, _, parts in self._refs:
            parts.append(_ref_array([rec.get(key) for rec in chunk]))

    def _note_extras(self, chunk: list) -> None:
        known = self._known
        for row, rec in enumerate(chunk, self.n):
            for key, value in rec.items():  # in the record's order: columns by first appearance
                if key not in known:
                    self.extras.setdefault(key, {})[row] = value

    def ref_columns(self) -> dict[str, Any]:
        """The typed ``<prefix>_id`` (Int64), ``_name`` (string), ``_deleted`` (boolean)."""
        out: dict[str, Any] = {}
        for _, prefix, parts in self._refs:
            refs = pa.chunked_array(parts, type=_REF_TYPE).combine_chunks()
            ids, names, deleted = refs.flatten()  # with the null references' validity applied
            out[f"{prefix}_id"] = _int_array(ids.to_numpy(zero_copy_only=False))
            out[f"{prefix}_name"] = _string_array(names)
            out[f"{prefix}_deleted"] = pd.BooleanDtype().__from_arrow__(deleted)
        return out

    def extra_columns(self, taken: Iterable[str]) -> dict[str, pd.Series]:
        """The unknown fields as object columns, renamed ``extra_<key>`` if a name is taken."""
        taken = set(taken)
        out = {}
        for key, sparse in self.extras.items():
            values = np.full(self.n, None, dtype=object)
            for row, value in sparse.items():
                values[row] = value
            # An explicit object Series: pandas would otherwise infer (e.g. str) from a bare array.
            out[key if key not in taken else f"extra_{key}"] = pd.Series(values, dtype=object,
                                                                         copy=False)
        return out


def _ref_array(refs: list) -> pa.StructArray:
    """References (dicts or None) as one struct array; odd values become nulls, never errors."""
    try:
        return pa.array(refs, type=_REF_TYPE)
    except (TypeError, ValueError):  # pyarrow's errors subclass these
        refs = [ref if isinstance(ref, Mapping) else None for ref in refs]  # 501: no reference
        present = [ref or {} for ref in refs]
        return pa.StructArray.from_arrays(
            [pa.array(_as_float([ref.get("id") for ref in present])),
             pa.array([_text(ref.get("name")) for ref in present], pa.large_string()),
             pa.array([_bool_or_none(ref.get("deleted")) for ref in present], pa.bool_())],
            fields=list(_REF_TYPE), mask=pa.array([ref is None for ref in refs], pa.bool_()))


def _check_iterable(records: Any, what: str) -> None:
    if isinstance(records, (Mapping, str, bytes, pd.DataFrame)):
        raise TypeError(f"{what} expects an iterable of record dicts, got a "
                        f"{type(records).__name__}; for a response envelope pass its 'items'")


# --------------------------------------------------------------------------------------------
# Typing columns: one vectorised conversion per column; bad values become missing, never raise.
# Fast paths go through pyarrow; anything it refuses takes the slower, forgiving path.
# --------------------------------------------------------------------------------------------

_NONE_OR_STR = {str, type(None)}
_EXACT_FLOAT_INT = 2.0**53  # integers beyond this do not survive a trip through float64


def _float_or_nan(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return np.nan


def _text(value: Any) -> str | None:
    return value if value is None or isinstance(value, str) else str(value)


def _bool_or_none(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _as_float(values: list) -> np.ndarray:
    try:
        # numpy parses decimal strings ("4.20") and turns None into NaN in one C loop.
        out = np.array(values, dtype="float64")
        if out.ndim == 1:
            return out
    except (TypeError, ValueError):
        pass
    return np.array([_float_or_nan(v) for v in values], dtype="float64")


def _int_array(nums: np.ndarray):
    """Int64 from float64; NaN, inf and fractions (1.5 is not an id) become <NA>."""
    ok = np.isfinite(nums) & (nums == np.trunc(nums)) & (np.abs(nums) < _EXACT_FLOAT_INT)
    return pd.arrays.IntegerArray(np.where(ok, nums, 0).astype("int64"), ~ok)


def _as_int(values: list):
    try:  # ints and nulls: pyarrow converts them exactly, in C
        # Inferred, not pa.int64(): a typed conversion would silently truncate 1.5 to 1.
        inferred = pa.array(values)
        if pa.types.is_integer(inferred.type) or pa.types.is_null(inferred.type):
            return pd.Int64Dtype().__from_arrow__(inferred.cast(pa.int64()))
    except (TypeError, ValueError, OverflowError):
        pass
    return _int_array(_as_float(values))  # numeric strings count


def _as_time(values: list):
    try:
        parsed = pc.cast(pa.array(values, pa.string()), pa.timestamp("ms", tz="UTC"))
        out = parsed.to_pandas().array
    except (TypeError, ValueError):  # not all strings with a zone offset: let pandas try
        if not set(map(type, values)) <= _NONE_OR_STR:
            # Numbers would be read as epochs (and pandas warns): only strings are times here.
            values = [v if isinstance(v, str) else None for v in values]
        out = pd.to_datetime(values, utc=True, format="ISO8601", errors="coerce").array
    return out if out.dtype == TIME_DTYPE else out.astype(TIME_DTYPE)


def _string_array(arrow: pa.Array):
    out = pd.arrays.ArrowStringArray(arrow)
    return out if out.dtype == STRING else out.astype(STRING)  # pandas < 3: python storage


def _as_string(values: list):
    try:
        arrow = pa.array(values, pa.large_string())
    except (TypeError, ValueError):  # a number or an object where text belongs: its str()
        arrow = pa.array([_text(v) for v in values], pa.large_string())
    return _string_array(arrow)


def _as_boolean(values: list):
    try:
        arrow = pa.array(values, pa.bool_())
    except (TypeError, ValueError):
        arrow = pa.array([_bool_or_none(v) for v in values], pa.bool_())
    return pd.BooleanDtype().__from_arrow__(arrow)


def _code_or_missing(code: Mapping, value: Any) -> int:
    try:
        return code.get(value, -1)
    except TypeError:
        return -1


def _as_category(values: list, dtype: pd.CategoricalDtype, names: Mapping | None = None):
    code = {c: i for i, c in enumerate(dtype.categories)}
    if names:
        code.update({wire: code[name] for wire, name in names.items()})
    try:
        codes = np.fromiter(map(code.get, values, repeat(-1)), dtype=np.int8, count=len(values))
    except TypeError:  # an unhashable value (a list or dict) is not a category either
        codes = np.array([_code_or_missing(code, v) for v in values], dtype=np.int8)
    return pd.Categorical.from_codes(codes, dtype=dtype)


def _typed(values: list, dtype: Any, names: Mapping | None = None):
    if isinstance(dtype, pd.CategoricalDtype):
        return _as_category(values, dtype, names)
    if isinstance(dtype, pd.DatetimeTZDtype):
        return _as_time(values)
    if isinstance(dtype, pd.StringDtype):
        return _as_string(values)
    return {"Int64": _as_int, "float64": _as_float, "boolean": _as_boolean}[dtype](values)


def _frame(schema: Mapping[str, Any], reader: _Reader,
           computed: Mapping[str, Any] = MappingProxyType({}),
           names: Mapping[str, Mapping] = MappingProxyType({})) -> pd.DataFrame:
    """Type every schema column from ``reader`` (or ``computed``), then append unknown fields."""
    computed = {**reader.ref_columns(), **computed}
    data = {}
    for col, dtype in schema.items():
        data[col] = computed[col] if col in computed else _typed(reader.lists[col], dtype,
                                                                 names.get(col))
    data.update(reader.extra_columns(schema))
    return pd.DataFrame(data, index=pd.RangeIndex(reader.n))


def _identity(schema: Mapping[str, Any]) -> dict[str, str]:
    return {col: col for col in schema}


# --------------------------------------------------------------------------------------------
# One function per resource.
# --------------------------------------------------------------------------------------------

_TX_PLAIN = ("id", "type", "transaction_time", "created_at", "revision", "count_of_items",
             "total_quantity", "memo", "url")
_TX_REFS = ("partner", "from_location", "to_location", "created_by")


def transactions_df(records: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """Transaction rows (``/v1/location-txs``) as a typed frame, one row per transaction.

    Columns: id, type (category in/out/move/adjust), transaction_time, created_at
    (datetime64[ms, UTC]), revision, count_of_items (Int64), total_quantity (float64),
    partner_id, partner_name, partner_deleted, from_location_id, from_location_name,
    from_location_deleted, to_location_id, to_location_name, to_location_deleted,
    created_by_id, created_by_name, created_by_deleted, memo, url, backdated (boolean), then
    any unknown fields. ``backdated`` is ``created_at - transaction_time >``
    :data:`BACKDATE_THRESHOLD` (one day). Transaction details are accepted too; their lines
    (``items``) are ignored here, see :func:`lines_df`.

    >>> df = transactions_df([{"id": 1, "type": "out", "transaction_time": "2026-05-01T09:00:00.000Z",
    ...     "created_at": "2026-05-03T09:00:00.000Z", "total_quantity": 3,
    ...     "to_location": {"id": 2, "name": "Shop", "deleted": False}}])
    >>> df[["type", "to_location_name", "total_quantity", "backdated"]]
      type to_location_name  total_quantity  backdated
    0  out             Shop             3.0       True
    """
    _check_iterable(records, "transactions_df")
    reader = _Reader({k: k for k in _TX_PLAIN}, {k: k for k in _TX_REFS}, ignore=("items",))
    reader.read(records, "transactions_df")
    business = _as_time(reader.lists["transaction_time"])
    created = _as_time(reader.lists["created_at"])
    lag = created - business
    backdated = pd.arrays.BooleanArray(np.asarray(lag > BACKDATE_THRESHOLD),
                                       np.asarray(pd.isna(lag)))
    return _frame(SCHEMAS["transactions"], reader, computed={
        "transaction_time": business, "created_at": created, "backdated": backdated})


# --------------------------------------------------------------------------------------------
# Transactions straight from page bodies (bytes): parsed by pyarrow in C++, never as dicts.
# --------------------------------------------------------------------------------------------

_ARROW_REF = pa.struct([("id", pa.int64()), ("name", pa.string()), ("deleted", pa.bool_())])
#: What a well-formed transaction row looks like on the wire. pyarrow refuses a block whose
#: values do not fit (an id 1.5 or "12", a reference that is not an object): such a block is
#: read again with json.loads and the forgiving dict path, so both paths give the same frame.
_ARROW_TX = pa.struct([
    ("id", pa.int64()), ("type", pa.string()), ("transaction_time", pa.string()),
    ("created_at", pa.string()), ("revision", pa.int64()), ("count_of_items", pa.int64()),
    ("total_quantity", pa.float64()), ("memo", pa.string()), ("url", pa.string()),
    *[(key, _ARROW_REF) for key in _TX_REFS]])
_ARROW_PAGE = pa.schema([("items", pa.list_(_ARROW_TX))])
#: Page bodies parsed per pyarrow call: a call has a fixed cost of about a millisecond, so
#: pages go in blocks; a block's bytes are all that is held besides the Arrow columns. pyarrow
#: parses a call's data in chunks of ``_ARROW_CHUNK`` bytes, one per core at a time.
_BLOCK_BYTES = 16 << 20
_ARROW_CHUNK = 1 << 20


def transactions_df_from_pages(bodies: Iterable[bytes]) -> pd.DataFrame:
    """:func:`transactions_df` of the rows of transaction list pages given as raw JSON bodies.

    The same frame as ``transactions_df(row for b in bodies for row in json.loads(b)["items"])``
    -- same columns, dtypes, missing values and unknown fields -- but the bytes are parsed by
    pyarrow straight into columns (in C++, on every core), so no dict is ever built for a
    well-formed row. A block of pages that holds anything unusual (a value of the wrong type,
    an unknown field) is read with ``json.loads`` and :func:`transactions_df` instead.
    ``client.transactions_df()`` uses this for walks read whole from the cache or the server.

    >>> body = b'{"items": [{"id": 7, "type": "in", "transaction_time": "2026-05-02T01:10:00.000Z"}], "cursor": null, "has_more": false}'
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
        if size >= _BLOCK_BYTES:
            parts.append(_parse_block(block))
            block, size = [], 0
    if block or not parts:
        parts.append(_parse_block(block))
    frames_ = []
    arrow: list[pa.Array] = []
    for part in parts + [None]:  # consecutive Arrow blocks become one frame
        if isinstance(part, pa.Array):
            arrow.append(part)
            continue
        if arrow:
            frames_.append(_tx_frame_from_arrow(pa.chunked_array(arrow, _ARROW_TX)))
            arrow = []
        if part is not None:
            frames_.append(part)
    return frames_[0] if len(frames_) == 1 else _concat(frames_)


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
                block_size=max(_ARROW_CHUNK, 2 * max(map(len, bodies), default=0))),
            parse_options=pa_json.ParseOptions(explicit_schema=_ARROW_PAGE,
                                               unexpected_field_behavior="infer",
                                               newlines_in_values=multiline))
        items = table.column("items")
        if items.type == pa.list_(_ARROW_TX) and table.num_rows == len(bodies) \
                and items.null_count == 0:
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
        raise TypeError("transactions_df_from_pages: a body is not a page envelope with an "
                        "'items' list; pass the bodies of /v1/location-txs pages")
    return items


def _tx_frame_from_arrow(rows: pa.ChunkedArray) -> pd.DataFrame:
    """The transactions frame from rows parsed by pyarrow (every field of the expected type)."""
    rows = rows.combine_chunks() if rows.num_chunks != 1 else rows.chunk(0)
    field = dict(zip((f.name for f in _ARROW_TX), rows.flatten()))
    integer = pd.Int64Dtype().__from_arrow__
    business = _time_from_arrow(field["transaction_time"])
    created = _time_from_arrow(field["created_at"])
    lag = created - business
    codes = pc.fill_null(pc.index_in(field["type"], value_set=pa.array(
        list(TX_TYPE_DTYPE.categories), pa.string())), -1)
    data = {
        "id": integer(field["id"]),
        "type": pd.Categorical.from_codes(codes.to_numpy().astype(np.int8), dtype=TX_TYPE_DTYPE),
        "transaction_time": business,
        "created_at": created,
        "revision": integer(field["revision"]),
        "count_of_items": integer(field["count_of_items"]),
        "total_quantity": field["total_quantity"].to_numpy(zero_copy_only=False),
    }
    for prefix in _TX_REFS:
        ids, names, deleted = field[prefix].flatten()  # null references: all three null
        data[f"{prefix}_id"] = integer(ids)
        data[f"{prefix}_name"] = _string_array(names.cast(pa.large_string()))
        data[f"{prefix}_deleted"] = pd.BooleanDtype().__from_arrow__(deleted)
    data["memo"] = _string_array(field["memo"].cast(pa.large_string()))
    data["url"] = _string_array(field["url"].cast(pa.large_string()))
    data["backdated"] = pd.arrays.BooleanArray(np.asarray(lag > BACKDATE_THRESHOLD),
                                               np.asarray(pd.isna(lag)))
    schema = SCHEMAS["transactions"]
    return pd.DataFrame({col: data[col] for col in schema}, index=pd.RangeIndex(len(rows)))


def _time_from_arrow(values: pa.Array):
    try:
        return pc.cast(values, pa.timestamp("ms", tz="UTC")).to_pandas().array.astype(TIME_DTYPE)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return _as_time(values.to_pylist())  # a malformed time: pandas' forgiving parser


def _concat(parts: list[pd.DataFrame]) -> pd.DataFrame:
    """Frames of consecutive blocks as one; an unknown field some blocks lack is None there."""
    columns = list(dict.fromkeys(col for part in parts for col in part.columns))
    filled = []
    for part in parts:
        missing = {col: pd.Series(np.full(len(part), None, dtype=object), index=part.index,
                                  dtype=object) for col in columns if col not in part.columns}
        filled.append(part.assign(**missing)[columns] if missing else part)
    return pd.concat(filled, ignore_index=True)


_LINE_TX_PLAIN = {"id": "transaction_id", "transaction_time": "transaction_time", "type": "type",
                  "revision": "revision"}
_LINE_TX_REFS = {"partner": "partner", "from_location": "from_location",
                 "to_location": "to_location"}
_LINE_PLAIN = {"id": "item_id", "name": "item_name", "sku": "sku", "barcode": "barcode",
               "quantity": "quantity", "deleted": "item_deleted",
               "new_stock_level": "new_stock_level",
               "from_location_new_stock_level": "from_location_new_stock_level",
               "to_location_new_stock_level": "to_location_new_stock_level"}


def lines_df(details: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """Transaction details (``/v1/location-txs/{id}``, unwrapped) as one row per line.

    Columns: transaction_id, transaction_time (datetime64[ms, UTC]), type (category), revision,
    partner_id, partner_name, from_location_id, from_location_name, to_location_id,
    to_location_name (from the transaction), item_id, item_name, sku, barcode, quantity
    (float64; signed for adjust), item_deleted (boolean), new_stock_level,
    from_location_new_stock_level, to_location_new_stock_level (float64, NaN when null),
    then unknown fields of the lines. A transaction without lines contributes no row.

    >>> d = {"id": 5, "type": "move", "transaction_time": "2026-05-02T01:10:00.000Z", "revision": 0,
    ...      "from_location": {"id": 1, "name": "WH", "deleted": False},
    ...      "to_location": {"id": 2, "name": "Shop", "deleted": False},
    ...      "items": [{"id": 9, "name": "Mug", "quantity": 4, "new_stock_level": 10,
    ...                 "from_location_new_stock_level": 6, "to_location_new_stock_level": 4}]}
    >>> lines_df([d])[["transaction_id", "item_name", "from_location_name", "quantity"]]
       transaction_id item_name from_location_name  quantity
    0               5       Mug                 WH       4.0
    """
    _check_iterable(details, "lines_df")
    schema = SCHEMAS["lines"]
    heads = _Reader(_LINE_TX_PLAIN, _LINE_TX_REFS, extras=False)
    lines = _Reader(_LINE_PLAIN)
    per_detail: list[int] = []

    def all_lines():  # the details' lines as one stream; their heads read a chunk at a time
        pending = []
        for detail in details:
            if not isinstance(detail, Mapping) or ("items" not in detail and "item" in detail):
                raise TypeError(f"lines_df: detail {len(per_detail)} is not an unwrapped "
                                "transaction detail; pass response['item'] (or "
                                "client.transaction(id)), with its 'items' lines")
            items = detail.get("items") or ()
            per_detail.append(len(items))
            pending.append(detail)
            if len(pending) == _CHUNK:
                heads.read(pending, "lines_df")
                pending.clear()
            yield from items
        heads.read(pending, "lines_df")

    lines.read(all_lines(), "lines_df (lines)")
    # Transaction-level values are typed once per transaction, then repeated for its lines.
    repeat_rows = np.repeat(np.arange(heads.n), per_detail)
    typed = {**{col: _typed(values, schema[col]) for col, values in heads.lists.items()},
             **heads.ref_columns()}
    computed = {col: typed[col].take(repeat_rows) for col in schema if col in typed}
    return _frame(schema, lines, computed=computed)


def items_df(records: Iterable[Mapping[str, Any]],
             attributes: Iterable[Mapping[str, Any]] | pd.DataFrame | None = None) -> pd.DataFrame:
    """Items (``/v1/items``) as a typed frame, with one column per item attribute.

    Columns: id (Int64), name, sku, barcode, photo_url (string), cost, price (float64 from the
    decimal strings; unparsable -> NaN), quantity (float64), then ``attr_<attribute name>`` for
    each attribute (number -> float64, date -> datetime64[ms, UTC], text/barcode -> string),
    then unknown fields. Per-location ``quantities`` are not a column: see :func:`stock_df`.

    ``attributes`` (the ``/v1/item-attrs`` records, or :func:`attributes_df`) is optional: with
    it, every attribute gets its column, in ``rank`` order and typed by ``attr_type``, even if
    no item has a value; without it, columns follow first appearance, typed by each value's
    ``type``.

    >>> df = items_df([{"id": 3, "name": "Mug", "cost": "4.20", "price": "n/a",
    ...     "attrs": [{"id": 1, "type": "number", "name": "Weight", "value": 0.3}]}])
    >>> df.loc[0, ["cost", "attr_Weight"]].tolist(), bool(pd.isna(df.loc[0, "price"]))
    ([4.2, 0.3], True)
    """
    _check_iterable(records, "items_df")
    schema = SCHEMAS["items"]
    attr_types: dict[str, str | None] = {}
    if attributes is not None:
        specs = attributes if isinstance(attributes, pd.DataFrame) else attributes_df(attributes)
        specs = specs.sort_values(["rank", "id"], kind="stable", na_position="last")
        for name, kind in zip(specs["attr_name"], specs["attr_type"]):
            if not pd.isna(name):
                attr_types.setdefault(name, None if pd.isna(kind) else kind)
    attr_values: dict[str, dict[int, Any]] = {name: {} for name in attr_types}

    def rows_noting_attrs():  # attrs are collected on the way through the one pass
        for row, rec in enumerate(records):
            for attr in (rec.get("attrs") if isinstance(rec, Mapping) else None) or ():
                name = attr.get("name")
                if name is None:
                    continue
                attr_values.setdefault(name, {})[row] = attr.get("value")
                if attr_types.get(name) is None:
                    attr_types[name] = attr.get("type")
            yield rec

    reader = _Reader(_identity(schema), ignore=("attrs", "quantities"))
    reader.read(rows_noting_attrs(), "items_df")
    attr_cols = {}
    for name, sparse in attr_values.items():
        values = [None] * reader.n
        for row, value in sparse.items():
            values[row] = value
        attr_cols[f"attr_{name}"] = _typed(values, ATTR_DTYPES.get(attr_types.get(name), STRING))
    # Attribute columns go right after the schema columns, before any unknown fields.
    return _frame({**schema, **dict.fromkeys(attr_cols)}, reader, computed=attr_cols)


def stock_df(items: Iterable[Mapping[str, Any]],
             locations: Iterable[Mapping[str, Any]] | pd.DataFrame | None = None) -> pd.DataFrame:
    """Stock per item and location, one row per entry of each item's ``quantities``.

    Columns: item_id (Int64), item_name, sku (string), location_id (Int64), location_name
    (string; <NA> unless ``locations`` - records or :func:`locations_df` - names that id),
    quantity (float64). Rows keep the items' order, then the order of their ``quantities``.

    >>> stock_df([{"id": 3, "name": "Mug", "sku": "M-1",
    ...            "quantities": [{"location_id": 1, "quantity": 5}]}],
    ...          [{"id": 1, "name": "Warehouse"}])
       item_id item_name  sku  location_id location_name  quantity
    0        3       Mug  M-1            1     Warehouse       5.0
    """
    _check_iterable(items, "stock_df")
    schema = SCHEMAS["stock"]
    heads: dict[str, list] = {"item_id": [], "item_name": [], "sku": []}

    def entries():  # one per item and location; the item's fields are noted alongside
        for item in items:
            head = (item.get("id"), item.get("name"), item.get("sku"))
            for entry in item.get("quantities") or ():
                for values, value in zip(heads.values(), head):
                    values.append(value)
                yield entry

    reader = _Reader({"location_id": "location_id", "quantity": "quantity"})
    reader.read(entries(), "stock_df")
    computed = {col: _typed(values, schema[col]) for col, values in heads.items()}
    computed["location_id"] = location_ids = _as_int(reader.lists["location_id"])
    names = pd.array([pd.NA] * reader.n, dtype=STRING)
    if locations is not None:
        locs = locations if isinstance(locations, pd.DataFrame) else locations_df(locations)
        lookup = pd.Series(locs["name"].array, index=locs["id"].array)
        lookup = lookup[~lookup.index.duplicated()]
        names = pd.array(lookup.reindex(location_ids).array, dtype=STRING)
    computed["location_name"] = names
    return _frame(schema, reader, computed=computed)


def locations_df(records: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """Locations (``/v1/locations``): id (Int64), name (string), quantity (float64), memo (string).

    >>> locations_df([{"id": 1, "name": "Warehouse", "quantity": 120, "memo": None}]).dtypes.astype(str).tolist()
    ['Int64', 'string', 'float64', 'string']
    """
    return _simple("locations", records)


def partners_df(records: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """Partners (``/v1/partners``): id (Int64), type (category supplier/customer, from the wire's
    0/1), name, phone, email, address, memo (string).

    >>> partners_df([{"id": 4, "type": 1, "name": "Cafe Rosa"}]).loc[0, ["type", "email"]].tolist()
    ['customer', <NA>]
    """
    return _simple("partners", records, names={"type": PARTNER_TYPE_NAMES})


def members_df(records: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """Team members (``/v1/members``): id (Int64), name (string), role (category admin/member/viewer).

    >>> members_df([{"id": 2, "name": "Ana", "role": "admin"}])["role"].cat.categories.tolist()
    ['admin', 'member', 'viewer']
    """
    return _simple("members", records)


def attributes_df(records: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """Item attribute specs (``/v1/item-attrs``): id (Int64), attr_type, attr_name (string),
    rank (Int64).

    >>> attributes_df([{"id": 1, "attr_type": "date", "attr_name": "Expiry", "rank": 0}])
       id attr_type attr_name  rank
    0   1      date    Expiry     0
    """
    return _simple("attributes", records)


def _simple(resource: str, records, names: Mapping[str, Mapping] = MappingProxyType({})):
    what = f"{resource}_df"
    _check_iterable(records, what)
    schema = SCHEMAS[resource]
    reader = _Reader(_identity(schema))
    reader.read(records, what)
    return _frame(schema, reader, names=names)


# --------------------------------------------------------------------------------------------
# Stock over time.
# --------------------------------------------------------------------------------------------

def _line_effects(lines: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(quantities, types, signed effect on the stock a line goes *to*) of a lines frame:
    in ``+q``, out ``-q``, adjust the signed ``q``, move ``+q`` (into its destination)."""
    qty = lines["quantity"].to_numpy(dtype="float64", na_value=np.nan)
    kind = lines["type"].astype(object).to_numpy()
    inward = np.where(kind == "out", -np.abs(qty), np.where(kind == "adjust", qty, np.abs(qty)))
    return qty, kind, inward


def stock_history(lines: pd.DataFrame | Iterable[Mapping[str, Any]],
                  item_ids: Iterable[int] | None = None,
                  location_id: int | None = None) -> pd.DataFrame:
    """Stock level of each item after every transaction line that touched it.

    ``lines`` is a :func:`lines_df` frame (transaction details are accepted and converted).
    Columns: transaction_time (datetime64[ms, UTC]), transaction_id, item_id (Int64), item_name
    (string), location_id (Int64; <NA> means all locations), stock, change (float64).

    - All locations (``location_id=None``): ``stock`` is each line's ``new_stock_level``.
    - One location: lines whose ``to_location`` is it give ``to_location_new_stock_level``,
      lines whose ``from_location`` is it give ``from_location_new_stock_level``; other lines
      are left out. A move between two locations thus appears in both locations' histories.
    - Lines without a level for that stock are left out.
    - ``change`` is the step in ``stock`` from the item's previous point. The first point of
      each item has no previous level in the data, so its change is the line's own signed
      effect: in ``+quantity``, out ``-quantity``, adjust the signed quantity, move ``-quantity``
      out of the source, ``+quantity`` into the destination and ``0`` for all locations.
    - Sorted by item_id, then transaction_time, then transaction_id ascending (so transactions
      at the same instant are ordered by id, the API's tiebreaker), then original line order.

    >>> lines = lines_df([{"id": 1, "type": "in", "transaction_time": "2026-05-01T00:00:00.000Z",
    ...     "to_location": {"id": 1, "name": "WH", "deleted": False},
    ...     "items": [{"id": 9, "name": "Mug", "quantity": 5, "new_stock_level": 5,
    ...                "to_location_new_stock_level": 5}]},
    ...    {"id": 2, "type": "out", "transaction_time": "2026-05-02T00:00:00.000Z",
    ...     "to_location": {"id": 1, "name": "WH", "deleted": False},
    ...     "items": [{"id": 9, "name": "Mug", "quantity": 2, "new_stock_level": 3,
    ...                "to_location_new_stock_level": 3}]}])
    >>> stock_history(lines)[["stock", "change"]].values.tolist()
    [[5.0, 5.0], [3.0, -2.0]]
    """
    if not isinstance(lines, pd.DataFrame):
        lines = lines_df(lines)
    schema = SCHEMAS["stock_history"]
    if item_ids is not None:
        lines = lines[lines["item_id"].isin(list(item_ids)).fillna(False).to_numpy(dtype=bool)]
    qty, kind, inward = _line_effects(lines)
    if location_id is None:
        parts = [(lines, lines["new_stock_level"], np.where(kind == "move", 0.0, inward))]
    else:
        to_here = (lines["to_location_id"] == location_id).fillna(False).to_numpy(dtype=bool)
        from_here = (lines["from_location_id"] == location_id).fillna(False).to_numpy(dtype=bool)
        from_here &= ~to_here
        parts = [(lines[to_here], lines["to_location_new_stock_level"][to_here], inward[to_here]),
                 (lines[from_here], lines["from_location_new_stock_level"][from_here],
                  -np.abs(qty[from_here]))]
    frames = []
    for part, stock, effect in parts:
        frames.append(pd.DataFrame({
            "transaction_time": part["transaction_time"].array,
            "transaction_id": part["transaction_id"].array,
            "item_id": part["item_id"].array,
            "item_name": part["item_name"].array,
            "stock": stock.to_numpy(dtype="float64", na_value=np.nan),
            "effect": effect,
            "_line": part.index.to_numpy(),
        }))
    out = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    out = out[out["stock"].notna()]
    out = out.sort_values(["item_id", "transaction_time", "transaction_id", "_line"],
                          kind="stable", na_position="last", ignore_index=True)
    step = out.groupby("item_id", sort=False, dropna=False)["stock"].diff()
    out["change"] = step.fillna(out["effect"]).to_numpy(dtype="float64")
    out["location_id"] = pd.array([location_id] * len(out), dtype="Int64")
    return pd.DataFrame({col: out[col].astype(dtype) for col, dtype in schema.items()})


# --------------------------------------------------------------------------------------------
# Provenance.
# --------------------------------------------------------------------------------------------

def with_provenance(df: pd.DataFrame, **info: Any) -> pd.DataFrame:
    """Record where ``df`` came from in ``df.attrs`` and return ``df`` (the same object).

    Accepted keys (see :data:`PROVENANCE_KEYS`): team_id, team_name, endpoint, filters,
    fetched_at, pages, requests, from_cache. An unknown key raises ``TypeError`` so a typo
    does not silently drop information. pandas carries ``attrs`` through most operations.

    >>> df = with_provenance(members_df([]), team_name="Shop", endpoint="/v1/members", pages=1)
    >>> df.attrs["endpoint"], df.attrs["pages"]
    ('/v1/members', 1)
    """
    unknown = sorted(set(info) - set(PROVENANCE_KEYS))
    if unknown:
        raise TypeError(f"with_provenance() got unknown key(s) {unknown}; "
                        f"known keys: {', '.join(PROVENANCE_KEYS)}")
    df.attrs.update(info)
    return df


def rebase_levels(lines: pd.DataFrame) -> pd.DataFrame:
    """Recompute the stock-level columns of a :func:`invtools.frames.lines_df` frame from the
    line quantities, so they agree with the history the frame holds.

    Stock after a line = the stock before the item's first line in the frame + the signed
    effects of its lines since, in (transaction_time, transaction_id) order -- the service's
    own replay order. The opening stock of each item (all locations) and of each item at each
    location is read off the *earliest* line's stored level (level minus its own effect).

    Why: editing a transaction makes the service recompute every later level without raising
    the later transactions' revisions, so details stored before the edit keep the old levels.
    Recomputing repairs every line after the earliest one. It cannot repair the opening stock
    itself: when the frame starts mid-history (a ``since=`` window), an edit of a transaction
    before the window shifts it, and only re-fetching the details helps. Every type of
    transaction must be in the frame (a ``type``-filtered frame lacks the other types'
    effects). Effects: in ``+q``, out ``-q``, adjust the signed ``q``, move ``0`` overall and
    ``-q``/``+q`` at its from/to location. A returned level is null where the stored one was.

    >>> lines = lines_df([
    ...   {"id": 2, "type": "out", "transaction_time": "2026-05-02T00:00:00.000Z",
    ...    "items": [{"id": 9, "quantity": 2, "new_stock_level": 1}]},     # stale: was 3
    ...   {"id": 1, "type": "in", "transaction_time": "2026-05-01T00:00:00.000Z",
    ...    "items": [{"id": 9, "quantity": 5, "new_stock_level": 5}]}])
    >>> rebase_levels(lines)["new_stock_level"].tolist()
    [3.0, 5.0]
    """
    if lines.empty:
        return lines
    out = lines.copy()
    qty, kind, to_effect = _line_effects(out)
    is_move = kind == "move"
    has_to = out["to_location_id"].notna().to_numpy(dtype=bool)
    has_from = out["from_location_id"].notna().to_numpy(dtype=bool) & is_move
    parts = [  # (rows, level column, location key, effect)
        (np.ones(len(out), dtype=bool), "new_stock_level", None, np.where(is_move, 0.0, to_effect)),
        (has_to, "to_location_new_stock_level", "to_location_id", to_effect),
        (has_from, "from_location_new_stock_level", "from_location_id", -np.abs(qty)),
    ]
    steps = pd.concat([pd.DataFrame({
        "row": np.flatnonzero(rows),
        "col": col,
        "item": out["item_id"].to_numpy(dtype="float64", na_value=np.nan)[rows],
        # -1 stands for "all locations"; a location's from- and to-lines share one stock.
        "loc": -1.0 if loc is None else out[loc].to_numpy(dtype="float64", na_value=np.nan)[rows],
        "time": out["transaction_time"].to_numpy()[rows],
        "tx": out["transaction_id"].to_numpy(dtype="float64", na_value=np.nan)[rows],
        "effect": effect[rows],
        "level": out[col].to_numpy(dtype="float64", na_value=np.nan)[rows],
    }) for rows, col, loc, effect in parts], ignore_index=True)
    steps = steps.sort_values(["time", "tx", "row"], kind="stable")
    groups = steps.groupby(["item", "loc"], sort=False, dropna=False)
    running = groups["effect"].cumsum()
    opening = (steps["level"] - running).groupby([steps["item"], steps["loc"]], sort=False,
                                                 dropna=False).transform("first")
    steps["rebased"] = np.where(steps["level"].isna(), np.nan,
                                np.round(opening + running, 9))
    for col in ("new_stock_level", "to_location_new_stock_level",
                "from_location_new_stock_level"):
        mine = steps[steps["col"] == col]
        values = out[col].to_numpy(dtype="float64", na_value=np.nan, copy=True)
        values[mine["row"].to_numpy()] = mine["rebased"].to_numpy()
        out[col] = pd.array(values, dtype=out[col].dtype)
    return out
