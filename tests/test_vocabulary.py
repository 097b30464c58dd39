"""One vocabulary (issue 32, item 7): an analysis's look-back is spelled ``look_back`` and takes
a duration with its unit, counted back from its ``as_of``; ``window`` is only ever the window of
transaction times a frame holds (``df.attrs["window"]``); a bare number is refused everywhere
with the form that works; the analyses take their frames by position and their options by
keyword, and ``strict=`` wherever a :class:`~invtools.errors.WindowWarning` can be said."""

from __future__ import annotations

import inspect
import warnings
from datetime import timedelta

import pandas as pd
import pytest

from invtools import ArgumentTypeError, ConfigError, WindowWarning, analysis

#: The names of the frames an analysis reads (what ``need()`` checks): taken by position.
FRAMES = {"history", "lines", "items", "stock", "partners", "transactions"}
#: ... and ``df``: a frame of any kind (analysis.top ranks the groups of any table).
FRAMES |= {"df"}
#: The analyses with a look-back, and its default.
LOOK_BACKS = {"movement": "90D", "reorder": "8W", "dead_stock": "90D", "abc_classes": "90D"}
#: The analyses that can say a WindowWarning (their question reaches outside the frame's window).
STRICT = {
    "movement",
    "reorder",
    "dead_stock",
    "month_end_stock",
    "period_end_stock",
    "stock_value_by_month",
    "supplier_summary",
    "shrinkage",
    "audit",
    "transfer_flows",
    "abc_classes",
    "crosstab",
}
PENDING: set[tuple[str, str]] = set()  # (analysis, option) still positional: none


def _parameters(name: str) -> dict[str, inspect.Parameter]:
    return dict(inspect.signature(getattr(analysis, name)).parameters)


def test_every_analysis_takes_its_frames_by_position_and_its_options_by_keyword():
    wrong = []
    for name in analysis.__all__:
        for p in _parameters(name).values():
            positional = p.kind is p.POSITIONAL_OR_KEYWORD
            if (name, p.name) not in PENDING and positional != (p.name in FRAMES):
                wrong.append(f"{name}({p.name})")
    assert wrong == []


def test_a_look_back_is_spelled_look_back_everywhere_with_a_duration_default():
    spelled = {}
    for name in analysis.__all__:
        params = _parameters(name)
        assert not {"window", "days", "dead_after_days"} & set(params), name
        if "look_back" in params:
            spelled[name] = params["look_back"].default
    assert spelled == LOOK_BACKS


def test_strict_is_on_every_analysis_that_can_say_a_window_warning_and_off_by_default():
    have = {n for n in analysis.__all__ if "strict" in _parameters(n)}
    assert have == STRICT
    assert {_parameters(n)["strict"].default for n in have} == {False}


# ------------------------------------------------------------------------ frames of our own


def _t(*stamps: str) -> pd.arrays.DatetimeArray:
    return pd.to_datetime(list(stamps), utc=True).as_unit("ms").array


NOW = pd.Timestamp("2026-02-10T12:00:00Z")  # the moment the frames below are as of


def _lines(*, window: bool = False) -> pd.DataFrame:
    """Sales of three items, one delivery and one adjustment, as of ``NOW``: item 1 sold 30
    hours before, item 2 ten days before, item 3 never (it was delivered and counted)."""
    rows = [  # tx, time, type, item, qty, partner
        (1, "2026-01-28T12:00Z", "in", 3, 6.0, 50),
        (2, "2026-01-31T12:00Z", "out", 2, -2.0, 60),
        (3, "2026-02-09T06:00Z", "out", 1, -1.0, 60),
        (4, "2026-02-05T12:00Z", "adjust", 3, -1.0, None),
    ]
    tx, time, kind, item, qty, partner = map(list, zip(*rows, strict=True))
    df = pd.DataFrame(
        {
            "transaction_id": pd.array(tx, dtype="Int64"),
            "transaction_time": _t(*time),
            "type": pd.Categorical(kind, categories=["in", "out", "move", "adjust"]),
            "partner_id": pd.array(partner, dtype="Int64"),
            "partner_name": pd.array([p and f"P{p}" for p in partner], dtype="string"),
            "location_id": pd.array([1] * len(rows), dtype="Int64"),
            "location_name": pd.array(["Shop"] * len(rows), dtype="string"),
            "item_id": pd.array(item, dtype="Int64"),
            "item_name": pd.array([f"I{i}" for i in item], dtype="string"),
            "quantity": qty,
        }
    )
    df.attrs.update(source="api", team_id=7, team_name="Shop", as_of=NOW.isoformat())
    if window:  # fetched with since="14D": it holds 27 Jan to 10 Feb
        since = (NOW - pd.Timedelta("14D")).isoformat()
        df.attrs["window"] = {"since": since, "until": NOW.isoformat()}
    return df


def _items() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "item_id": pd.array([1, 2, 3], dtype="Int64"),
            "name": pd.array(["I1", "I2", "I3"], dtype="string"),
            "sku": pd.array(["S1", "S2", "S3"], dtype="string"),
            "quantity": [4.0, 5.0, 5.0],
            "cost": [1.0, 2.0, 3.0],
        }
    )


def _stock() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "item_id": pd.array([1, 2, 3], dtype="Int64"),
            "item_name": pd.array(["I1", "I2", "I3"], dtype="string"),
            "location_id": pd.array([1, 1, 1], dtype="Int64"),
            "location_name": pd.array(["Shop"] * 3, dtype="string"),
            "quantity": [4.0, 5.0, 5.0],
        }
    )


def _tx() -> pd.DataFrame:
    tx = pd.DataFrame(
        {
            "transaction_id": pd.array([1, 2], dtype="Int64"),
            "type": pd.array(["in", "out"], dtype="string"),
            "transaction_time": _t("2026-02-01T00:00Z", "2026-02-05T00:00Z"),
            "created_at": _t("2026-02-01T20:00Z", "2026-02-05T01:00Z"),  # 20 hours late, 1
            "revision": pd.array([0, 0], dtype="Int64"),
            "created_by_id": pd.array([70, 71], dtype="Int64"),
            "created_by_name": pd.array(["M70", "M71"], dtype="string"),
        }
    )
    tx.attrs.update(source="api", team_id=7, as_of=NOW.isoformat())
    return tx


def _dead(result: pd.DataFrame) -> set[int]:
    return set(result.loc[result["dead"].to_numpy(dtype=bool), "item_id"])


LOOKED_BACK = {
    "movement": lambda **kw: analysis.movement(_lines(), _items(), **kw),
    "reorder": lambda **kw: analysis.reorder(_lines(), _items(), **kw),
    "dead_stock": lambda **kw: analysis.dead_stock(_lines(), _items(), _stock(), **kw),
    "abc_classes": lambda **kw: analysis.abc_classes(_lines(), _items().assign(price=1.0), **kw),
}


def test_the_look_back_is_a_duration_counted_back_from_the_frames_moment():
    # item 1 sold 30 hours before the frame's moment, item 2 ten days before, item 3 never
    assert _dead(LOOKED_BACK["movement"](look_back="1D")) == {1, 2, 3}
    assert _dead(LOOKED_BACK["movement"](look_back="36h")) == {2, 3}  # not rounded to days
    assert _dead(LOOKED_BACK["movement"](look_back="2W")) == {3}
    held = LOOKED_BACK["dead_stock"](look_back="1D", by="item")
    assert held["item_id"].tolist() == [3, 2, 1]  # every holding, largest value first
    assert LOOKED_BACK["dead_stock"](look_back="36h", by="item")["item_id"].tolist() == [3, 2]
    order = LOOKED_BACK["reorder"](look_back="36h", top=None)
    assert order["item_id"].tolist() == [1] and order["daily_out"].tolist() == [1 / 1.5]
    assert LOOKED_BACK["reorder"](look_back="2W", top=None)["item_id"].tolist() == [2, 1]


def test_the_look_back_counts_back_from_an_as_of_given():
    # as of 1 February, item 2 sold the day before: not dead after a week
    assert 2 not in _dead(LOOKED_BACK["movement"](look_back="7D", as_of="2026-02-01"))
    held = LOOKED_BACK["dead_stock"](look_back="7D", as_of="2026-02-01", by="item")
    assert held["item_id"].tolist() == [3, 1]  # item 1 had not sold yet by then
    order = LOOKED_BACK["reorder"](look_back="7D", as_of="2026-02-01", top=None)
    assert order["item_id"].tolist() == [2] and order["daily_out"].tolist() == [2 / 7]


def test_movement_counts_no_sale_after_its_as_of():
    # item 1's only sale (9 Feb) comes after 1 February: then it had never sold, and was dead
    # (it was counted as sold 8 days in the future: not dead, last_sale in the future)
    got = LOOKED_BACK["movement"](look_back="7D", as_of="2026-02-01").set_index("item_id")
    assert _dead(got.reset_index()) == {1, 3}
    assert pd.isna(got.loc[1, "last_sale"]) and pd.isna(got.loc[1, "days_since_last_sale"])
    assert got.loc[2, "days_since_last_sale"] == 0.5


@pytest.mark.parametrize("name", sorted(LOOKED_BACK))
def test_every_spelling_of_a_duration_gives_the_same_answer(name):
    call = LOOKED_BACK[name]
    want = call(look_back="10D")
    for same in ("240h", timedelta(days=10), pd.Timedelta(days=10), "10 days"):
        pd.testing.assert_frame_equal(call(look_back=same), want)


@pytest.mark.parametrize("name", sorted(LOOKED_BACK))
@pytest.mark.parametrize("bare", [90, 90.0, "90"])
def test_a_bare_number_is_refused_with_the_form_that_works(name, bare):
    with pytest.raises(ConfigError) as said:
        LOOKED_BACK[name](look_back=bare)
    message = str(said.value)
    assert message.startswith(f"{name}: look_back={bare!r} has no unit")
    assert 'write look_back="90D" for days' in message


@pytest.mark.parametrize("name", sorted(LOOKED_BACK))
def test_what_is_no_look_back_is_the_packages_own_error(name):
    call = LOOKED_BACK[name]
    for bad, kind in [
        ("0D", ConfigError),
        ("-3D", ConfigError),
        ("soon", ConfigError),
        (float("inf"), ConfigError),
        ("2026-01-01", ConfigError),  # a time, not a length
        (True, ConfigError),
        ([], ArgumentTypeError),
        (None, ArgumentTypeError),
    ]:
        with pytest.raises(kind, match=f"{name}: look_back"):
            call(look_back=bad)


@pytest.mark.parametrize("name", sorted(LOOKED_BACK))
def test_a_look_back_longer_than_pandas_times_reach_is_said_not_a_bare_overflow(name):
    with pytest.raises(ConfigError, match=f"{name}: look_back=.*reaches before 1678"):
        LOOKED_BACK[name](look_back=timedelta(days=250_000))
    with pytest.raises(ConfigError, match=f"{name}: look_back='250000D'"):
        LOOKED_BACK[name](look_back="250000D")  # more than pandas reads as one length
    LOOKED_BACK[name](look_back="36500D")  # a century back is fine


def test_audits_late_takes_the_same_durations_and_refuses_a_bare_number():
    want = analysis.audit(_tx(), late="12h")
    assert want["transaction_id"].tolist() == [1]  # 20 hours late; the other 1 hour
    for same in (timedelta(hours=12), pd.Timedelta(hours=12), "720min"):
        pd.testing.assert_frame_equal(analysis.audit(_tx(), late=same), want)
    assert analysis.audit(_tx(), late="0s")["transaction_id"].tolist() == [1, 2]  # any lag
    with pytest.raises(ConfigError, match='audit: late=1 has no unit: write late="1D" for days'):
        analysis.audit(_tx(), late=1)


# ------------------------------------------------------------- strict on the two audits too


AUDITS = {
    "supplier_summary": lambda lines, **kw: analysis.supplier_summary(lines, _items(), **kw),
    "shrinkage": lambda lines, **kw: analysis.shrinkage(lines, _items(), **kw),
}


@pytest.mark.parametrize("name", sorted(AUDITS))
def test_a_since_before_the_lines_window_is_said_and_strict_refuses_it(name):
    call, lines = AUDITS[name], _lines(window=True)  # it holds 27 Jan to 10 Feb
    with pytest.warns(WindowWarning) as said:
        got = call(lines, since="2026-01-15")
    message = str(said[0].message)
    assert said[0].filename == __file__  # it points at the call (of AUDITS' lambda)
    assert message.startswith(f"{name}: the lines start 27 Jan 2026")
    assert 'client.lines_df(since="2026-01-15")' in message
    with pytest.raises(ConfigError, match=f"{name}: the lines start 27 Jan 2026"):
        call(lines, since="2026-01-15", strict=True)
    with pytest.warns(WindowWarning, match="the lines start"):  # a duration: the same rule
        call(lines, since="30D")
    with pytest.warns(WindowWarning, match="the lines end 10 Feb 2026 12:00"):
        call(lines, until="2026-03-01")
    with warnings.catch_warnings():
        warnings.simplefilter("error", WindowWarning)
        pd.testing.assert_frame_equal(call(lines, since="2026-01-27T12:00Z"), got)  # inside
        call(lines, since="14D", strict=True)  # exactly the window: nothing to say
        call(lines, strict=True)  # no since: what the frame holds
        call(_lines(), since="2026-01-15", strict=True)  # no window recorded: nothing known


def test_the_frames_of_supplier_summary_go_by_position_like_every_analysis():
    lines = _lines()
    partners = pd.DataFrame(
        {
            "partner_id": pd.array([50, 60], dtype="Int64"),
            "name": pd.array(["P50", "P60"], dtype="string"),
            "type": pd.array(["supplier", "customer"], dtype="string"),
        }
    )
    pd.testing.assert_frame_equal(
        analysis.supplier_summary(lines, _items(), partners),
        analysis.supplier_summary(lines, items=_items(), partners=partners),
    )
    with pytest.raises(TypeError):
        analysis.supplier_summary(lines, _items(), partners, "2026-01-01")  # type: ignore[misc]
