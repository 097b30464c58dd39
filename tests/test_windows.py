"""The windows and types an analyst asks for first (issue 19): durations back from now (the
service's clock: ``since="90D"``, ``"12W"``, a Timedelta) and several types at once
(``type=("in", "out")``), on the client's walks and frames and on the mirror's frames.
Checked against the stand-in's truth (``sb.data()``); real HTTP on 127.0.0.1."""

from __future__ import annotations

import pandas as pd
import pytest

from invtools import TransactionMirror
from invtools.errors import ConfigError, LevelsWarning

pytestmark = pytest.mark.network


def truth(sb, *, kinds=None, since=None):
    """(id, revision) of the live rows, newest first, of those types, from that time."""
    return [
        (t["id"], t["revision"])
        for t in sb.data().transactions
        if (kinds is None or t["type"] in kinds)
        and (since is None or pd.Timestamp(t["transaction_time"]) >= since)
    ]


def pairs(rows):
    if isinstance(rows, pd.DataFrame):
        return list(zip(rows["transaction_id"].tolist(), rows["revision"].tolist(), strict=True))
    return [(r["id"], r["revision"]) for r in rows]


def service_now(sb) -> pd.Timestamp:
    """The stand-in's clock, which durations count back from (docs/explanation/now.md)."""
    return pd.Timestamp(sb.store("shop").now_ms(), unit="ms", tz="UTC")


def a_window_of(sb, rows_back: int) -> tuple[str, pd.Timestamp]:
    """A duration that reaches back about ``rows_back`` rows, and the moment it stands for."""
    rows = sb.data().transactions
    age = service_now(sb) - pd.Timestamp(rows[rows_back]["transaction_time"])
    days = max(1, int(age.total_seconds() // 86_400) + 1)
    return f"{days}D", service_now(sb) - pd.Timedelta(days=days)


@pytest.mark.parametrize("spell", ["text", "timedelta", "weeks"])
def test_since_a_duration_is_the_window_back_from_now(sb, make_client, spell):
    c = make_client(sb)
    text, moment = a_window_of(sb, 150)
    days = int(text[:-1])
    since = {"text": text, "timedelta": pd.Timedelta(days=days), "weeks": f"{-(-days // 7)}W"}[
        spell
    ]
    if spell == "weeks":
        moment = service_now(sb) - pd.Timedelta(weeks=-(-days // 7))
    expected = truth(sb, since=moment)
    assert expected and len(expected) < len(truth(sb))
    explicit = c.transactions_df(since=moment.isoformat())
    assert pairs(c.transactions_df(since=since)) == pairs(explicit) == expected
    assert pairs(c.transactions(since=since)) == expected
    lines = c.lines_df(since=since)
    assert set(lines["transaction_id"]) == {i for i, _r in expected}


def test_until_a_duration_and_a_window_between_two(sb, make_client):
    c = make_client(sb)
    newer, _ = a_window_of(sb, 50)
    older, moment = a_window_of(sb, 300)
    rows = c.transactions_df(since=older, until=newer)
    upto = service_now(sb) - pd.Timedelta(days=int(newer[:-1]))
    assert (rows["transaction_time"] >= moment - pd.Timedelta(seconds=5)).all()
    assert (rows["transaction_time"] <= upto + pd.Timedelta(seconds=5)).all() and len(rows)
    with pytest.raises(ConfigError, match="after until"):
        c.transactions_df(since=newer, until=older)


@pytest.mark.parametrize("kinds", [("in", "out"), ("move", "adjust", "in"), ["adjust", "out"]])
def test_several_types_are_the_union_of_each_type_newest_first(sb, make_client, kinds):
    c = make_client(sb)
    expected = truth(sb, kinds=set(kinds))
    frame = c.transactions_df(type=kinds)
    assert pairs(frame) == expected and set(frame["type"]) == set(kinds)
    assert frame.attrs["walk"]["plan"] == "merge" and frame.attrs["filters"]["type"] == [
        t for t in ("in", "out", "move", "adjust") if t in kinds
    ]
    union = pd.concat([c.transactions_df(type=k) for k in kinds]).sort_values(
        ["transaction_time", "transaction_id"], ascending=False
    )
    assert pairs(union) == expected
    assert pairs(c.transactions(type=kinds)) == expected
    text, moment = a_window_of(sb, 200)
    assert pairs(c.transactions(type=kinds, since=text)) == truth(
        sb, kinds=set(kinds), since=moment
    )


def test_several_types_when_the_server_ignores_the_type_filter(sb, make_client):
    original = sb.handle

    def no_type_filter(method, target, headers, fault=None):
        return original(
            method, target.replace("type=in&", "").replace("type=adjust&", ""), headers, fault=fault
        )

    sb.handle = no_type_filter
    c = make_client(sb, cache=False)
    expected = truth(sb, kinds={"in", "adjust"})
    assert pairs(c.transactions(type=("in", "adjust"))) == expected
    assert pairs(c.transactions_df(type=("in", "adjust"))) == expected


def test_lines_of_several_types(sb, make_client):
    c = make_client(sb)
    text, moment = a_window_of(sb, 120)
    with pytest.warns(LevelsWarning, match="not checked against the current stock"):
        lines = c.lines_df(type=("in", "adjust"), since=text)
    wanted = {i for i, _r in truth(sb, kinds={"in", "adjust"}, since=moment)}
    assert set(lines["transaction_id"]) == wanted and set(lines["type"]) <= {"in", "adjust"}


@pytest.mark.parametrize("bad", ["bogus", ("in", "bogus"), (), 7])
def test_a_type_that_is_not_one_is_refused_before_anything_is_sent(sb, make_client, bad):
    c = make_client(sb)
    sb.clear_log()
    with pytest.raises(ConfigError, match="in, out, move, adjust"):
        c.transactions_df(type=bad)
    assert sb.requests == []


def test_the_mirror_takes_the_same_windows_and_types(sb, make_client, tmp_path):
    c = make_client(sb)
    mirror = TransactionMirror(tmp_path / "m.sqlite", c)
    mirror.sync()
    text, moment = a_window_of(sb, 150)
    kinds = ("in", "out")
    got = mirror.transactions_df(since=text, type=kinds)
    assert pairs(got) == truth(sb, kinds=set(kinds), since=moment)
    assert got.attrs["filters"] == {"since": text, "type": ["in", "out"]}
    lines = mirror.lines_df(since=text, type="out")
    assert set(lines["transaction_id"]) == {i for i, _r in truth(sb, kinds={"out"}, since=moment)}
    whole = mirror.lines_df()
    cut = whole[whole["transaction_id"].isin(lines["transaction_id"])]
    # levels are those of the whole history, cut to the window afterwards
    pd.testing.assert_frame_equal(
        lines.reset_index(drop=True), cut.reset_index(drop=True), check_like=False
    )
    with pytest.raises(ConfigError, match="type"):
        mirror.transactions_df(type="teleport")


# ---- calendar months and years back (issue 35, item 4)


def months_before(moment: pd.Timestamp, months: int) -> pd.Timestamp:
    """The same day ``months`` calendar months earlier (the month's last day if it has none),
    the plain pandas way."""
    return moment - pd.DateOffset(months=months)


@pytest.mark.parametrize(("since", "months"), [("6M", 6), ("1Y", 12), ("2 M", 2)])
def test_since_in_calendar_months_counts_back_months_from_the_service_clock(
    sb, make_client, tmp_path, since, months
):
    c = make_client(sb)
    moment = months_before(service_now(sb), months)
    expected = truth(sb, since=moment)
    assert expected and len(expected) < len(truth(sb))
    df = c.transactions_df(since=since)
    assert pairs(df) == expected
    start = pd.Timestamp(df.attrs["window"]["since"])
    assert abs(start - moment) < pd.Timedelta(minutes=5)  # the data's moment, not the wall's
    mirror = TransactionMirror(tmp_path / "m.sqlite", c)
    mirror.sync()
    assert pairs(mirror.transactions_df(since=since)) == expected


def test_a_look_back_in_months_is_refused_with_the_forms_that_work():
    from invtools._durations import parse_duration

    with pytest.raises(ConfigError, match=r'calendar months.*"180D".*since="6M"'):
        parse_duration("6M", name="reorder: look_back")
