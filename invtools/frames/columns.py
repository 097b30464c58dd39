"""Typing one column: a list of wire values -> a pandas array of the schema's dtype.

One vectorised conversion per column; a value that does not parse becomes missing
(``<NA>``/``NaN``/``NaT``), never an exception: one bad row must not cost the analyst the whole
download. Fast paths go through pyarrow; anything it refuses takes the slower, forgiving path.

:func:`typed` picks the conversion from the dtype; the others are the conversions themselves,
also used where a column is built outside the schema loop (the times that ``backdated`` is
computed from); :func:`ref_columns` and :func:`location_of` give the columns of embedded
references, on both the dict and the Arrow path.

>>> typed(["3", 1.5, None, 7], "Int64").tolist()
[3, <NA>, <NA>, 7]
>>> typed(["4.20", "n/a"], "float64").tolist()
[4.2, nan]
>>> times = typed(["2026-05-02T01:10:00.000Z", "yesterday"], TIME_DTYPE)
>>> str(times.dtype), times[0].isoformat(), times[1] is pd.NaT
('datetime64[ms, UTC]', '2026-05-02T01:10:00+00:00', True)
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from invtools.frames.schemas import STRING, TIME_DTYPE

#: Where the frame builders' own Arrow arrays are allocated: the C library's ``malloc``, where
#: Python's and numpy's large objects come from, so that what one step of a build frees the
#: next one uses (pyarrow's own allocator keeps what it frees apart). Passed to each call,
#: never set as pyarrow's process-wide default: a pool the user chose is left as it is.
POOL = pa.system_memory_pool()

__all__ = [
    "POOL",
    "typed",
    "as_float",
    "as_int",
    "int_array",
    "as_time",
    "as_string",
    "string_array",
    "as_boolean",
    "as_category",
    "with_categories",
    "text",
    "bool_or_none",
    "ref_columns",
    "location_of",
]

_EXACT_FLOAT_INT = 2.0**53  # integers beyond this do not survive a trip through float64


def _float_or_nan(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return np.nan


def text(value: Any) -> str | None:
    """``value`` as text: None stays None, anything else its ``str``."""
    return value if value is None or isinstance(value, str) else str(value)


def bool_or_none(value: Any) -> bool | None:
    """``value`` if it is a bool, else None (``"yes"`` and ``1`` are not flags)."""
    return value if isinstance(value, bool) else None


def as_float(values: list) -> np.ndarray:
    """float64; numeric strings count, anything else is NaN."""
    # OverflowError: an int beyond float's range
    with contextlib.suppress(TypeError, ValueError, OverflowError):
        # numpy parses decimal strings ("4.20") and turns None into NaN in one C loop.
        out = np.array(values, dtype="float64")
        if out.ndim == 1:
            return out
    return np.array([_float_or_nan(v) for v in values], dtype="float64")


def int_array(nums: np.ndarray):
    """Int64 from float64; NaN, inf and fractions (1.5 is not an id) become <NA>."""
    ok = np.isfinite(nums) & (nums == np.trunc(nums)) & (np.abs(nums) < _EXACT_FLOAT_INT)
    return pd.arrays.IntegerArray(np.where(ok, nums, 0).astype("int64"), ~ok)


# pandas-stubs lacks the __from_arrow__ protocol of the extension dtypes.
_INT64_FROM_ARROW = pd.Int64Dtype().__from_arrow__  # type: ignore[attr-defined]
_BOOLEAN_FROM_ARROW = pd.BooleanDtype().__from_arrow__  # type: ignore[attr-defined]


def as_int(values: list):
    """Int64; integral numbers and numeric strings count, anything else is <NA>."""
    # ints and nulls: pyarrow converts them exactly, in C
    with contextlib.suppress(TypeError, ValueError, OverflowError):
        # Inferred, not pa.int64(): a typed conversion would silently truncate 1.5 to 1.
        inferred = pa.array(values, memory_pool=POOL)
        if pa.types.is_integer(inferred.type) or pa.types.is_null(inferred.type):
            return _INT64_FROM_ARROW(inferred.cast(pa.int64(), memory_pool=POOL))
    return int_array(as_float(values))  # numeric strings count


def as_time(values: list | pa.Array):
    """datetime64[ms, UTC] from ISO 8601 strings (a list, or an Arrow string array); anything
    else (numbers too) is NaT.

    The column-wise, forgiving reading of the wire's times; an analyst's single time (a
    ``since=`` argument) is read by :func:`invtools._types.parse_time`, which refuses bad input.
    """
    try:
        arrow = (
            values
            if isinstance(values, pa.Array)
            else pa.array(values, pa.string(), memory_pool=POOL)
        )
        stamps = pc.cast(arrow, pa.timestamp("ms", tz="UTC"), memory_pool=POOL)
        out = stamps.to_pandas(memory_pool=POOL).array
    except (TypeError, ValueError):  # not all strings with a zone offset: let pandas try
        if isinstance(values, pa.Array):
            values = values.to_pylist()
        # Numbers would be read as epochs (and pandas warns): only strings are times here.
        values = [v if isinstance(v, str) else None for v in values]
        out = pd.to_datetime(values, utc=True, format="ISO8601", errors="coerce").array
    return out if out.dtype == TIME_DTYPE else out.astype(TIME_DTYPE)


def string_array(arrow: pa.Array):
    """The ``string`` column of an Arrow string array."""
    # pandas < 3: python storage
    return pd.arrays.ArrowStringArray(arrow.cast(pa.large_string(), memory_pool=POOL)).astype(
        STRING
    )


def as_string(values: list):
    """string; a number or an object where text belongs becomes its ``str``."""
    try:
        arrow = pa.array(values, pa.large_string(), memory_pool=POOL)
    except (TypeError, ValueError):
        arrow = pa.array([text(v) for v in values], pa.large_string(), memory_pool=POOL)
    return string_array(arrow)


def as_boolean(values: list):
    """boolean; anything but True/False is <NA>. (Row by row: flags are few, and a
    whole-column attempt first would only hide its own faults behind this path.)"""
    return _BOOLEAN_FROM_ARROW(
        pa.array([bool_or_none(v) for v in values], pa.bool_(), memory_pool=POOL)
    )


def as_category(values: list, dtype: pd.CategoricalDtype, names: Mapping | None = None):
    """``dtype``'s categorical; ``names`` maps wire codes to categories (partner type 0/1).
    A text the categories lack (a transaction type the service added) becomes one more
    category, after the known ones, instead of a missing value.

    >>> as_category(["in", "count", None], pd.CategoricalDtype(["in", "out"])).categories.tolist()
    ['in', 'out', 'count']
    """
    code = {c: i for i, c in enumerate(dtype.categories)}
    if names:
        code.update({wire: code[name] for wire, name in names.items()})
    get = code.get
    # A list or a dict (JSON's unhashable values) is not a category either.
    codes = np.array(
        [get(v, -1) if type(v).__hash__ is not None else -1 for v in values], dtype=np.int8
    )
    if (codes == -1).any():
        extra = sorted(
            {v for v, c in zip(values, codes, strict=True) if c == -1 and isinstance(v, str) and v}
            - set(dtype.categories)
        )
        if extra:
            return as_category(values, with_categories(dtype, extra), names)
    return pd.Categorical.from_codes(codes, dtype=dtype)


def with_categories(dtype: pd.CategoricalDtype, extra) -> pd.CategoricalDtype:
    """``dtype`` with the ``extra`` categories after its own (unordered, like the schemas').

    >>> with_categories(pd.CategoricalDtype(["in"]), ["count"]).categories.tolist()
    ['in', 'count']
    """
    return pd.CategoricalDtype(
        list(dtype.categories) + [c for c in extra if c not in dtype.categories]
    )


def ref_columns(prefix: str, refs: pa.StructArray) -> dict[str, Any]:
    """``<prefix>_id`` (Int64), ``_name`` (string) and ``_deleted`` (boolean) of a struct array of
    references ``{id, name, deleted}``; a null reference is missing in all three. An ``id`` read
    as float64 (the dict path's) counts only where it is an exact integer.

    >>> refs = pa.array([{"id": 2, "name": "Shop", "deleted": False}, None])
    >>> {col: values.tolist() for col, values in ref_columns("to", refs).items()}
    {'to_id': [2, <NA>], 'to_name': ['Shop', <NA>], 'to_deleted': [False, <NA>]}
    """
    # by name (pyarrow may order the fields otherwise), with the null references' validity
    field = dict(zip((f.name for f in refs.type), refs.flatten(memory_pool=POOL), strict=True))
    ids, names, deleted = field["id"], field["name"], field["deleted"]
    return {
        f"{prefix}_id": int_array(ids.to_numpy(zero_copy_only=False))
        if pa.types.is_floating(ids.type)
        else _INT64_FROM_ARROW(ids),
        f"{prefix}_name": string_array(names),
        f"{prefix}_deleted": _BOOLEAN_FROM_ARROW(deleted),
    }


def location_of(refs: Mapping[str, Any]) -> dict[str, Any]:
    """``location_id`` (Int64) and ``location_name`` (string): the ``to_location_*`` columns of
    ``refs`` where there is one (its id is not missing), else the ``from_location_*`` ones.

    >>> refs = {"to_location_id": pd.array([1, None], "Int64"),
    ...         "to_location_name": pd.array(["WH", None], "string"),
    ...         "from_location_id": pd.array([None, 2], "Int64"),
    ...         "from_location_name": pd.array([None, "Shop"], "string")}
    >>> {col: values.tolist() for col, values in location_of(refs).items()}
    {'location_id': [1, 2], 'location_name': ['WH', 'Shop']}
    """
    here = np.asarray(pd.notna(refs["to_location_id"]), dtype=bool)
    return {
        f"location_{part}": pd.Series(refs[f"to_location_{part}"], copy=False)
        .where(here, pd.Series(refs[f"from_location_{part}"], copy=False))
        .array.astype(dtype)
        for part, dtype in (("id", pd.Int64Dtype()), ("name", STRING))
    }


def typed(values: list, dtype: Any, names: Mapping | None = None):
    """``values`` converted to ``dtype`` (one of the schemas' dtypes), forgivingly."""
    if isinstance(dtype, pd.CategoricalDtype):
        return as_category(values, dtype, names)
    if isinstance(dtype, pd.DatetimeTZDtype):
        return as_time(values)
    if isinstance(dtype, pd.StringDtype):
        return as_string(values)
    return {"Int64": as_int, "float64": as_float, "boolean": as_boolean}[dtype](values)
