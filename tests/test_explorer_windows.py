"""The activity explorer's window (issue 19): ``since``/``until`` spelled as for the client's
methods -- a duration back from now, a Timedelta, a month, a date -- for a Client (real HTTP
on 127.0.0.1 against the stand-in) and for a frame. The expected rows come from the stand-in's
raw JSON (``sb.data("shop")``) with plain pandas."""

from __future__ import annotations

from datetime import datetime

import pandas as pd
import pytest

pytest.importorskip("ipywidgets")

from invtools.errors import ConfigError
from invtools.frames import lines_df, transactions_df
from invtools.notebook import activity_explorer

pytestmark = pytest.mark.network


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    import matplotlib.pyplot as plt

    plt.close("all")


def raw(sb) -> pd.DataFrame:
    """The shop's live transactions as the stand-in holds them: id, time, type."""
    rows = pd.DataFrame(sb.data("shop").transactions)
    rows["time"] = pd.to_datetime(rows["transaction_time"], utc=True)
    return rows


def days_back_to(sb, row: int) -> int:
    """A whole number of days that reaches back past the ``row``-th newest transaction."""
    when = datetime.fromisoformat(sb.data("shop").transactions[row]["transaction_time"])
    return int((service_now(sb) - when).total_seconds() // 86_400) + 1


def service_now(sb) -> pd.Timestamp:
    """The stand-in's clock, which durations count back from (docs/explanation/now.md)."""
    return pd.Timestamp(sb.store("shop").now_ms(), unit="ms", tz="UTC")


def ids(frame: pd.DataFrame) -> list[int]:
    return sorted(int(i) for i in frame["transaction_id"])


@pytest.mark.parametrize("spell", ["text", "timedelta"])
def test_since_a_duration_is_the_same_data_as_the_explicit_date(sb, make_client, spell):
    client = make_client(sb)
    days = days_back_to(sb, 150)
    moment = service_now(sb) - pd.Timedelta(days=days)
    rows = raw(sb)
    expected = sorted(int(i) for i in rows.loc[rows["time"] >= moment, "id"])
    assert 150 <= len(expected) < len(rows)  # a real window: some rows are older

    since = f"{days}D" if spell == "text" else pd.Timedelta(days=days)
    ex = activity_explorer(client, since=since)
    explicit = activity_explorer(client, since=moment.isoformat())
    assert ids(ex.data) == ids(explicit.data) == expected
    assert ex.data.attrs["filters"]["since"] == str(since)  # passed to the client as given
    # What is counted is that window: every transaction in it, once.
    assert int(ex.table.to_numpy().sum()) == len(expected)
    assert ex.since.value == rows.loc[rows["time"] >= moment, "time"].min().date()


def test_a_month_window_from_a_client_and_from_a_frame(sb, make_client):
    client = make_client(sb)
    rows = raw(sb)
    month = rows["time"].iloc[len(rows) // 2].strftime("%Y-%m")
    first = pd.Timestamp(f"{month}-01", tz="UTC")
    inside = rows[(rows["time"] >= first) & (rows["time"] < first + pd.offsets.MonthBegin())]
    assert 0 < len(inside) < len(rows)

    from_client = activity_explorer(client, since=month, until=month)
    assert ids(from_client.data) == sorted(int(i) for i in inside["id"])
    filters = from_client.data.attrs["filters"]
    assert (filters["since"], filters["until"]) == (month, month)

    # The same window cuts a frame and its lines alike.
    view = sb.data("shop")
    details = [view.transaction(int(i)) for i in rows["id"].iloc[: len(rows) // 2 + 40]]
    lines = lines_df(details)
    ex = activity_explorer(
        transactions_df(view.transactions), since=month, until=month, lines=lines
    )
    assert ids(ex.data) == sorted(int(i) for i in inside["id"])
    line_times = pd.to_datetime(ex.lines["transaction_time"], utc=True)
    assert len(ex.lines) and set(ex.lines["transaction_id"]) <= set(inside["id"])
    assert line_times.min() >= first and line_times.max() < first + pd.offsets.MonthBegin()
    ex.by.value = "item"
    assert int(ex.table.to_numpy().sum()) == len(ex.lines)


def test_dates_of_the_explorers_zone(sb, make_client):
    """With ``tz``, a month is that zone's month: Tokyo's starts at 15:00 UTC the day before."""
    client = make_client(sb)
    rows = raw(sb)

    def window(month: str, zone: str) -> list[int]:
        start = pd.Timestamp(f"{month}-01", tz=zone)
        end = start + pd.offsets.MonthBegin()
        return sorted(
            int(i) for i in rows.loc[(rows["time"] >= start) & (rows["time"] < end), "id"]
        )

    # A month whose Tokyo window holds other rows than its UTC window (shop hours end 18:00).
    month = next(
        m
        for m in sorted(set(rows["time"].dt.strftime("%Y-%m")))
        if window(m, "Asia/Tokyo") != window(m, "UTC")
    )
    expected = window(month, "Asia/Tokyo")
    ex = activity_explorer(client, since=month, until=month, tz="Asia/Tokyo")
    assert ids(ex.data) == expected
    frame = activity_explorer(
        transactions_df(sb.data("shop").transactions), since=month, until=month, tz="Asia/Tokyo"
    )
    assert ids(frame.data) == expected
    assert ids(activity_explorer(client, since=month, until=month).data) == window(month, "UTC")


def make_frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "transaction_id": [1, 2, 3],
            "transaction_time": pd.to_datetime(
                ["2026-03-02", "2026-03-18", "2026-04-02"], utc=True
            ),
            "type": ["in", "out", "out"],
            "total_quantity": [5.0, 2.0, 1.0],
        }
    )


def test_a_window_that_is_wrong_says_so_naming_the_explorer():
    tx = make_frame()
    with pytest.raises(ConfigError, match=r"activity_explorer: since='2026-04'.*after until"):
        activity_explorer(tx, since="2026-04", until="2026-03")
    with pytest.raises(ConfigError, match="activity_explorer: since='soon' is not a date"):
        activity_explorer(tx, since="soon")
    with pytest.raises(ConfigError, match="activity_explorer: tz='Mars/Olympus'"):
        activity_explorer(tx, tz="Mars/Olympus")
    with pytest.raises(ConfigError, match="activity_explorer: since/until cut the frame"):
        activity_explorer(tx.drop(columns="transaction_time"), since="90D")
    with pytest.raises(TypeError, match="activity_explorer needs a transactions DataFrame"):
        activity_explorer([{"id": 1}])
    with pytest.raises(TypeError, match="activity_explorer: lines must be a lines DataFrame"):
        activity_explorer(tx, lines="lines.csv")
    assert ids(activity_explorer(tx, until="2026-03").data) == [1, 2]
    assert ids(activity_explorer(tx, since=pd.Timestamp("2026-03-10")).data) == [2, 3]
