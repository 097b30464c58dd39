"""Provenance on every result (issue 25, item 2): every public analysis, ``activity_table`` and
``TeamResults.frame()`` carry the provenance of the frames they were computed from, merged by
one rule (``invtools.frames.merge_provenance``); ``to_excel`` writes it for every sheet; and
``TeamResults.frame(ignore_index=True)``.

Over real HTTP against the stand-in: the expected values are the inputs' own ``attrs``, as
the client wrote them, and the server's own team records.
"""

from __future__ import annotations

import json
import warnings

import pandas as pd
import pytest

import invtools
from invtools import ArgumentTypeError, DeletedItemsWarning, WindowWarning, analysis, frames, viz

TEAMS = ["shop", "harrogate"]


@pytest.fixture(scope="module")
def shops():
    """A stand-in with two location-mode teams: the shop and its Harrogate branch."""
    from invtools.sandbox import serve

    with serve(rate_limit=0, size=200, shops=2, seed=5) as sb:
        yield sb


def _quietly(fn):
    """``fn()`` with the deleted-item and window notes (not the point here) silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeletedItemsWarning)
        warnings.simplefilter("ignore", WindowWarning)
        return fn()


def _oldest(frames_, key):
    return min((f.attrs[key] for f in frames_), key=pd.Timestamp)


def _asked(inputs):
    """What the inputs asked, one (endpoint, filters) each, each once, in order."""
    seen = []
    for f in inputs:
        pair = (f.attrs["endpoint"], f.attrs["filters"])
        if pair not in seen:
            seen.append(pair)
    return seen


def _sheet(path, name="provenance") -> list[dict]:
    """The rows of a workbook's sheet as dicts by header, read with openpyxl itself."""
    import openpyxl

    book = openpyxl.load_workbook(path, read_only=True)
    try:
        rows = list(book[name].values)
    finally:
        book.close()  # a read-only book holds its file open until closed
    return [dict(zip(rows[0], row, strict=True)) for row in rows[1:]]


@pytest.mark.network
def test_every_public_analysis_carries_its_inputs_provenance(sb, make_client):
    client = make_client(sb)
    team = sb.data("shop").team
    lines = client.lines_df(since="2026-09-01")
    items, stock, partners = client.items_df(), client.stock_df(), client.partners_df()
    tx = client.transactions_df(since="2026-09-01")
    history = frames.stock_history(lines)
    before = json.dumps([f.attrs for f in (lines, items, stock, partners, history)])
    calls = {
        "stockouts": (lambda: analysis.stockouts(history), [history]),
        "stockout_summary": (lambda: analysis.stockout_summary(history), [history]),
        "movement": (lambda: analysis.movement(lines, items), [lines, items]),
        "stock_value": (lambda: analysis.stock_value(stock, items), [stock, items]),
        "stock_at": (lambda: analysis.stock_at(history, as_of="2026-10-15"), [history]),
        "period_end_stock": (
            lambda: analysis.period_end_stock(history, freq="QE", periods=1),
            [history],
        ),
        "month_end_stock": (lambda: analysis.month_end_stock(history), [history]),
        "stock_value_by_month": (
            lambda: analysis.stock_value_by_month(history, items),
            [history, items],
        ),
        "supplier_summary": (
            lambda: analysis.supplier_summary(lines, items=items, partners=partners),
            [lines, items, partners],
        ),
        "shrinkage": (lambda: analysis.shrinkage(lines, items), [lines, items]),
        "reorder": (lambda: analysis.reorder(lines, items, look_back="4W"), [lines, items]),
        "reorder per location": (
            lambda: analysis.reorder(lines, items, stock, by="location", look_back="4W"),
            [lines, items, stock],
        ),
        "dead_stock": (
            lambda: analysis.dead_stock(lines, items, stock, look_back="30D"),
            [lines, items, stock],
        ),
        "audit": (lambda: analysis.audit(tx), [tx]),
        "activity_profile": (lambda: analysis.activity_profile(tx), [tx]),
        "top": (lambda: analysis.top(lines, by="item_name", value="quantity"), [lines]),
        "transfer_flows": (lambda: analysis.transfer_flows(lines), [lines]),
        "abc_classes": (
            lambda: analysis.abc_classes(lines, items, look_back="30D"),
            [lines, items],
        ),
        "crosstab": (lambda: analysis.crosstab(lines, rows="member"), [lines]),
        "activity_table": (lambda: viz.activity_table(lines, "W"), [lines]),
    }
    # every public analysis
    assert set(calls) == {*analysis.__all__, "activity_table", "reorder per location"}
    for name, (run, inputs) in calls.items():
        got = _quietly(run).attrs
        assert got["source"] == "api", name
        assert (got["team_id"], got["team_name"]) == (team["id"], team["name"]), name
        assert got["base_url"] == sb.base_url, name
        asked = _asked(inputs)
        want = asked[0] if len(asked) == 1 else tuple([a[i] for a in asked] for i in (0, 1))
        assert (got["endpoint"], got["filters"]) == want, name
        assert got["data_as_of"] == _oldest(inputs, "data_as_of"), name
        assert got["fetched_at"] == _oldest(inputs, "fetched_at"), name
        # the lines' window: the items, stock and partners (whole lists) hold every time
        windowed = tx if name in ("audit", "activity_profile") else lines
        assert got["window"] == (None if name == "stock_value" else windowed.attrs["window"]), name
        assert got["requests"] == sum(
            f.attrs["requests"] for f in {id(f): f for f in inputs}.values()
        )
        assert "walk" not in got, name  # a walk's record is the fetch's, not the result's
        assert json.loads(json.dumps(got)) == got, name  # plain JSON: Parquet keeps it
    moved = _quietly(calls["movement"][0]).attrs
    assert moved["endpoint"] == ["/v1/location-txs", "/v1/items"]
    assert moved["filters"] == [{"since": "2026-09-01"}, {}]
    # the inputs' own attrs are untouched by the analyses
    assert json.dumps([f.attrs for f in (lines, items, stock, partners, history)]) == before


@pytest.mark.network
def test_a_stack_of_two_teams_names_both_and_no_analysis_adds_them_up(shops, make_client, tmp_path):
    """Issue 32: a stack of teams keeps each team's context (its window is measured on its own
    clock), an analysis of it is refused naming both, and each team analysed on its own then
    stacked names both."""
    pytest.importorskip("openpyxl")
    clients = {n: make_client(shops, n) for n in TEAMS}
    teams = [shops.data(n).team for n in TEAMS]
    lines = invtools.each_team(lambda c: c.lines_df(since="2026-10-01"), clients, progress=False)
    items = invtools.each_team(lambda c: c.items_df(), clients, progress=False)
    stacked, both_items = lines.frame(ignore_index=True), items.frame(ignore_index=True)
    windows = [lines[n].attrs["window"] for n in TEAMS]
    per_team = invtools.each_team(
        lambda c: _quietly(lambda: analysis.supplier_summary(c.lines_df(since="2026-10-01"))),
        clients,
        progress=False,
    ).frame(ignore_index=True)
    results = {
        "lines": stacked,
        "activity": viz.activity_table(stacked, "W", by="team"),
        "suppliers": per_team,
    }
    for name, result in results.items():
        got = result.attrs
        assert got["team_id"] == [t["id"] for t in teams], name
        assert got["team_name"] == [t["name"] for t in teams], name
        assert got["base_url"] == [shops.base_url] * len(TEAMS), name  # entry i: team i
        assert got["data_as_of"] == _oldest(list(lines.values()), "data_as_of"), name
        assert got["window"] == windows, name  # each team's own
        assert got["rows"] == len(result), name
    for analyse in (
        lambda: analysis.supplier_summary(stacked),
        lambda: analysis.stockouts(frames.stock_history(stacked)),
        lambda: analysis.shrinkage(stacked, both_items, by="member"),
        lambda: analysis.shrinkage(lines[TEAMS[0]], items[TEAMS[1]]),  # one shop, other's items
    ):
        with pytest.raises(invtools.ConfigError, match="teams") as raised:
            _quietly(analyse)
        assert all(t["name"] in str(raised.value) for t in teams[:2])
    # a stack cut to one team's rows is that team's, context and all
    first = stacked[stacked["team"] == TEAMS[0]]
    alone = _quietly(lambda: analysis.supplier_summary(first))
    assert alone.attrs["team_id"] == teams[0]["id"]
    assert alone.attrs["window"] == windows[0]
    pd.testing.assert_frame_equal(
        alone, _quietly(lambda: analysis.supplier_summary(lines[TEAMS[0]]))
    )
    assert set(stacked.attrs["teams"]) == set(TEAMS)  # each team's own attrs, as before
    # and its Excel sheet says so
    path = frames.to_excel(tmp_path / "teams.xlsx", results)
    for row in _sheet(path):
        assert json.loads(row["team_name"]) == [t["name"] for t in teams], row["sheet"]
        assert row["data_as_of"] == results[row["sheet"]].attrs["data_as_of"]


@pytest.mark.network
def test_to_excel_gives_every_sheet_its_team_endpoint_and_age(sb, make_client, tmp_path):
    pytest.importorskip("openpyxl")
    client = make_client(sb)
    team = sb.data("shop").team
    lines, items, stock = client.lines_df(since="2026-09-01"), client.items_df(), client.stock_df()
    sheets = {
        "lines": lines,
        "movement": _quietly(lambda: analysis.movement(lines, items)),
        "stock_value": analysis.stock_value(stock, items),
        "stockouts": _quietly(lambda: analysis.stockout_summary(frames.stock_history(lines))),
        "activity": viz.activity_table(lines, "M"),
        "plain": pd.DataFrame({"x": [1]}),  # a frame of your own: no provenance
    }
    rows = {row["sheet"]: row for row in _sheet(frames.to_excel(tmp_path / "a.xlsx", sheets))}
    assert list(rows) == list(sheets)
    for name, df in sheets.items():
        row = rows[name]
        if name == "plain":  # the columns are there, blank
            assert {"team_id", "team_name", "endpoint", "data_as_of"} <= set(row)
            assert row["team_name"] is None and row["data_as_of"] is None
            continue
        assert (row["team_id"], row["team_name"]) == (team["id"], team["name"]), name
        endpoint = df.attrs["endpoint"]
        assert row["endpoint"] == (json.dumps(endpoint) if isinstance(endpoint, list) else endpoint)
        assert row["data_as_of"] == df.attrs["data_as_of"], name
        assert row["base_url"] == sb.base_url, name
    assert json.loads(rows["movement"]["endpoint"]) == ["/v1/location-txs", "/v1/items"]
    assert rows["stock_value"]["data_as_of"] == min(
        stock.attrs["data_as_of"], items.attrs["data_as_of"], key=pd.Timestamp
    )


@pytest.mark.network
def test_frame_ignore_index_gives_a_fresh_range_index(shops, make_client):
    clients = {n: make_client(shops, n) for n in TEAMS}
    answers = invtools.each_team(lambda c: c.lines_df(since="2026-10-01"), clients, progress=False)
    kept, fresh = answers.frame(), answers.frame(ignore_index=True)
    assert not kept.index.is_unique  # each team's rows numbered from 0: labels repeat
    assert fresh.index.equals(pd.RangeIndex(len(kept)))
    pd.testing.assert_frame_equal(fresh, kept.reset_index(drop=True))
    assert fresh.attrs == kept.attrs
    # the case: rows picked back by their labels inside a groupby
    for team, q in fresh.groupby("team"):
        pd.testing.assert_frame_equal(fresh.loc[q.index], q)
        assert len(kept.loc[kept[kept["team"] == team].index]) > len(q)  # other teams' too
    # Series: one row per team, the team a first column
    roles = invtools.each_team(
        lambda c: c.members_df()["role"].value_counts(), clients, progress=False
    ).frame(ignore_index=True)
    assert roles.columns[0] == "team" and roles["team"].tolist() == TEAMS
    assert roles.index.equals(pd.RangeIndex(2))
    with pytest.raises(ArgumentTypeError, match="ignore_index"):
        answers.frame(ignore_index="yes")


def test_the_merge_rule_on_frames_of_your_own():
    from invtools.frames import merge_provenance, with_provenance

    def made(**fields):
        return with_provenance(pd.DataFrame({"x": [1]}), **fields)

    lines = made(
        team_id=1,
        team_name="Shop",
        endpoint="/v1/location-txs",
        window={"since": "2026-08-02T00:00:00.000Z", "until": "2026-10-31T17:10:00.000Z"},
        data_as_of="2026-10-31T17:10:00.000Z",
        requests=5,
    )
    # one frame: its record as it is; None and frames without provenance add nothing
    assert merge_provenance([lines, None, pd.DataFrame()]) == lines.attrs
    assert merge_provenance(lines) == lines.attrs
    assert merge_provenance([pd.DataFrame()]) == {} and merge_provenance([]) == {}
    assert merge_provenance([lines, lines])["requests"] == 5  # the same frame counts once
    # a frame naming no team adds none
    assert merge_provenance([lines, made(endpoint="/v1/items")])["team_name"] == "Shop"
    # windows: each team's own
    later = made(
        team_id=2,
        team_name="Shop",  # two teams of one name stay two: ids and names align
        endpoint="/v1/location-txs",
        window={"since": "2026-09-01T00:00:00.000Z", "until": "2026-10-31T17:00:00.000Z"},
        data_as_of="2026-10-31T17:00:00.000Z",
    )
    two = merge_provenance([lines, later])
    assert (two["team_id"], two["team_name"]) == ([1, 2], ["Shop", "Shop"])
    assert two["window"] == [lines.attrs["window"], later.attrs["window"]]  # each team's own
    assert two["data_as_of"] == "2026-10-31T17:00:00.000Z"
    # one team's frames: the window of the frame measured, the first
    same = merge_provenance([lines, made(**{**later.attrs, "team_id": 1})])
    assert same["team_id"] == 1 and same["window"] == lines.attrs["window"]
    # a merged record merged again: its lists taken entry by entry, never nested
    third = made(team_id=3, team_name="York", endpoint="/v1/items")
    three = merge_provenance([made(**{k: two[k] for k in frames.PROVENANCE_KEYS}), third])
    assert three["window"] == [*two["window"], None]
    assert (three["team_id"], three["team_name"]) == ([1, 2, 3], ["Shop", "Shop", "York"])
    assert three["endpoint"] == ["/v1/location-txs", "/v1/items"]
    assert three["filters"] == [{}, {}]
    assert invtools.Provenance.from_attrs(three).team_name == ["Shop", "Shop", "York"]
    for wrong in ("lines", 42, {"a": lines}, [lines, "items"]):
        with pytest.raises(ArgumentTypeError, match="merge_provenance"):
            merge_provenance(wrong)


def test_merging_cannot_lie_about_team_window_or_rows():
    """Issue 32, item 5: a team is its service and its id; a merge keeps the window of the
    frame measured (the first); a None among the inputs drops nothing; ``rows`` of a result
    is the result's."""
    from invtools.frames import merge_provenance, with_provenance

    def made(**fields):
        return with_provenance(pd.DataFrame({"x": [1]}), **fields)

    demo = made(team_id=1, team_name="Shop", base_url="http://127.0.0.1:8765", endpoint="/v1/items")
    real = made(team_id=1, team_name="Shop", base_url="https://rest.boxhero-app.com")
    both = merge_provenance([demo, real])
    assert both["team_id"] == [1, 1]
    assert both["base_url"] == ["http://127.0.0.1:8765", "https://rest.boxhero-app.com"]
    # a frame naming no service joins the team of its id
    assert merge_provenance([demo, made(team_id=1, team_name="Shop")])["team_id"] == 1

    august = made(
        team_id=1, window={"since": "2026-08-01T00:00:00.000Z", "until": "2026-08-31T23:59:59.999Z"}
    )
    october = made(
        team_id=1, window={"since": "2026-10-01T00:00:00.000Z", "until": "2026-10-31T23:59:59.999Z"}
    )
    assert merge_provenance([august, october])["window"] == august.attrs["window"]

    items = made(team_id=1, endpoint="/v1/items", as_of="2026-10-31T17:09:00.000Z")
    after = merge_provenance([august, None, items])
    assert after["endpoint"] == "/v1/items"
    assert after["as_of"] == "2026-10-31T17:09:00.000Z"  # the frame after the None is merged
    assert after["window"] == august.attrs["window"]
