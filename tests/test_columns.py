"""Typing one column (invtools.frames.columns): every value the wire could send, well-formed or
not, becomes the schema's dtype or a missing value -- never an exception, never a wrong value.

Each conversion has a whole-column path (numpy, pyarrow) and a forgiving one for what the
first refuses; the inputs here take each path, and the ones where the paths could differ
(integers beyond 2**53, lists among the values) are the point.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from invtools.frames.columns import (
    as_boolean,
    as_category,
    as_float,
    as_int,
    as_string,
    as_time,
    int_array,
    text,
    typed,
)
from invtools.frames.schemas import STRING, TIME_DTYPE

TYPES = pd.CategoricalDtype(["in", "out", "move", "adjust"])
PARTNER = pd.CategoricalDtype(["customer", "supplier"])


def values(arr) -> list:
    return [None if pd.isna(v) else v for v in arr]


# ------------------------------------------------------------------------------- numbers


@pytest.mark.parametrize(
    "given, expected",
    [
        ([1, 2.5, None], [1.0, 2.5, None]),
        (["4.20", " 7 ", "1e3"], [4.2, 7.0, 1000.0]),
        (["4.20", "n/a", None, 3, True], [4.2, None, None, 3.0, 1.0]),
        ([10**400, 1], [None, 1.0]),  # beyond a float: missing, not OverflowError
        ([[1, 2], [3, 4]], [None, None]),  # lists of equal length are not numbers
        ([{"a": 1}, "2"], [None, 2.0]),
        ([], []),
    ],
)
def test_floats(given, expected):
    out = as_float(given)
    assert out.dtype == np.float64 and out.shape == (len(given),)
    assert values(out) == expected


@pytest.mark.parametrize(
    "given, expected",
    [
        ([2**60, None, 5], [2**60, None, 5]),  # ids beyond 2**53 survive exactly
        ([-(2**62), 0], [-(2**62), 0]),
        ([None, None], [None, None]),
        ([1.0, 2.5, None], [1, None, None]),  # 2.5 is not an id
        (["3", 1, "x"], [3, 1, None]),
        (["9007199254740991", "9007199254740992"], [2**53 - 1, None]),  # not exact as a float
        ([2**70], [None]),
        ([float("inf"), float("nan"), -4.0], [None, None, -4]),
        ([[1], {"id": 2}, 7], [None, None, 7]),
    ],
)
def test_integers(given, expected):
    out = as_int(given)
    assert out.dtype == pd.Int64Dtype()
    assert values(out) == expected


def test_int_array_masks_what_is_not_an_exact_integer():
    nums = np.array([3.0, 1.5, np.inf, np.nan, 2.0**53, -(2.0**53 - 1)])
    assert values(int_array(nums)) == [3, None, None, None, None, -(2**53 - 1)]


# --------------------------------------------------------------------------------- times


def test_times_with_a_zone_take_the_whole_column_path():
    out = as_time(["2026-05-02T01:10:00.000Z", "2026-05-02T03:10:00+02:00", None])
    assert out.dtype == TIME_DTYPE
    assert values(out) == [pd.Timestamp("2026-05-02T01:10:00Z")] * 2 + [None]


def test_times_that_pyarrow_refuses_are_read_forgivingly_and_numbers_are_not_times():
    out = as_time(
        [
            "2026-05-02T01:10:00",
            1_700_000_000_000,
            "yesterday",
            None,
            3.5,
            "2026-05-02T01:10:00.123+00:00",
        ]
    )
    assert out.dtype == TIME_DTYPE
    assert values(out) == [
        pd.Timestamp("2026-05-02T01:10:00Z"),
        None,
        None,
        None,
        None,
        pd.Timestamp("2026-05-02T01:10:00.123Z"),
    ]


# ------------------------------------------------------------------------- text and flags


@pytest.mark.parametrize(
    "given, expected",
    [
        (["a", None, "ü"], ["a", None, "ü"]),
        ([None, 5, "x", 2.5, {"a": 1}], [None, "5", "x", "2.5", "{'a': 1}"]),
    ],
)
def test_strings(given, expected):
    out = as_string(given)
    assert out.dtype == STRING
    assert values(out) == expected


def test_text_keeps_none_and_strings_and_spells_out_the_rest():
    assert (text(None), text("a"), text(3), text(False)) == (None, "a", "3", "False")


@pytest.mark.parametrize(
    "given, expected",
    [
        ([True, False, None], [True, False, None]),
        ([True, "yes", 1, 0, None, "false"], [True, None, None, None, None, None]),
        ([], []),
    ],
)
def test_booleans_are_only_true_and_false(given, expected):
    out = as_boolean(given)
    assert out.dtype == pd.BooleanDtype()
    assert values(out) == expected


# ----------------------------------------------------------------------------- categories


def test_categories_keep_the_schemas_order_and_add_unknown_texts_after_it():
    out = as_category(["out", "in", None, "count", "", 3, "count"], TYPES)
    assert list(out.categories) == ["in", "out", "move", "adjust", "count"]
    assert values(out) == ["out", "in", None, "count", None, None, "count"]


def test_values_that_cannot_be_categories_are_missing():
    out = as_category(["in", ["in"], {"type": "in"}, ("in",), "move"], TYPES)
    assert list(out.categories) == list(TYPES.categories)
    assert values(out) == ["in", None, None, None, "move"]


def test_wire_codes_are_named_and_stay_named_beside_an_unknown_text():
    names = {0: "customer", 1: "supplier"}
    assert values(as_category([1, 0, None, 2], PARTNER, names)) == [
        "supplier",
        "customer",
        None,
        None,
    ]
    out = as_category([0, "distributor", 1, [0]], PARTNER, names)
    assert list(out.categories) == ["customer", "supplier", "distributor"]
    assert values(out) == ["customer", "distributor", "supplier", None]


def test_typed_picks_the_conversion_from_the_dtype():
    assert values(typed(["3", 1.5], "Int64")) == [3, None]
    assert values(typed(["3", 1.5], "float64")) == [3.0, 1.5]
    assert values(typed([True, 1], "boolean")) == [True, None]
    assert values(typed([1, "a"], STRING)) == ["1", "a"]
    assert typed(["2026-05-02T01:10:00Z"], TIME_DTYPE).dtype == TIME_DTYPE
    assert values(typed(["move"], TYPES)) == ["move"]
