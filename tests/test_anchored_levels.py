"""Stock levels of a ``since=`` frame (issue 43): an edit of a transaction before the window
changes every later level without raising the later transactions' revisions, so the levels
stored in cached details (and the opening stock read off them) go stale. A window that reaches
now is anchored at the service's current stock (the items list); elsewhere the frame says so.
Real HTTP against the stand-in; ``sb.data()`` is the server's truth."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pandas as pd
import pytest

from invtools import TransactionMirror, frames
from invtools.api.records import Record, walks_folder
from invtools.errors import LevelsWarning
from invtools.frames.stock import in_series_order

pytestmark = pytest.mark.network


def _edit_before_the_window(sb, client, days: int = 120) -> dict:
    """Edit (one line's quantity) the newest transaction ``days`` before the client's clock,
    whose item also has lines in the last 90 days; return its detail as it is now."""
    floor = pd.Timestamp(client.now()) - pd.Timedelta(days=days)
    recent = set(client.lines_df(since="90D")["item_id"])  # every detail cached, at its revision
    for row in sb.data().transactions:  # newest first
        if pd.Timestamp(row["transaction_time"]) < floor:
            items = {line["id"] for line in sb.data().transaction(row["id"])["items"]}
            if items & recent and row["type"] != "move":
                return sb.edit_transaction(row["id"])
    raise AssertionError("no transaction before the window")


def _current(sb) -> tuple[dict[int, float], dict[tuple[int, int], float]]:
    """The server's current stock: per item, and per item and location."""
    items = sb.data().items
    total = {i["id"]: float(i["quantity"]) for i in items}
    at = {(i["id"], q["location_id"]): float(q["quantity"]) for i in items for q in i["quantities"]}
    return total, at


def _last_levels(history: pd.DataFrame) -> dict:
    last = in_series_order(history).groupby(["item_id", "location_id"], dropna=False)
    return {
        (int(i), None if pd.isna(loc) else int(loc)): float(s)
        for (i, loc), s in last["stock"].last().items()
    }


def test_a_since_frame_ends_at_the_services_stock_after_an_edit_before_its_window(sb, make_client):
    client = make_client(sb)
    edited = _edit_before_the_window(sb, client)
    total, at = _current(sb)
    # the lists walked again (every detail but the edited one's from the cache)
    for lines in (
        client.lines_df(since="90D", max_age="0s"),
        make_client(sb).lines_df(since="90D", max_age="0s"),
    ):
        history = frames.stock_history(lines)
        last = {i: s for (i, _), s in _last_levels(history).items() if i in total}
        assert last == {i: total[i] for i in last}
        assert {line["id"] for line in edited["items"]} & set(last)  # the edit's items are in it
        per_location = _last_levels(frames.stock_history(lines, by_location=True))
        per_location = {k: s for k, s in per_location.items() if k[0] in total}
        assert per_location == {k: at.get(k, 0.0) for k in per_location}


def test_refresh_reads_the_current_stock_again(sb, make_client):
    client = make_client(sb)
    first = client.lines_df(since="90D")
    _edit_before_the_window(sb, client)
    total, _ = _current(sb)
    lines = client.lines_df(since="90D", refresh=True)
    last = {i: s for (i, _), s in _last_levels(frames.stock_history(lines)).items() if i in total}
    assert last == {i: total[i] for i in last}
    assert len(lines) == len(first)


def test_a_window_ending_in_the_past_warns_that_its_levels_are_the_stored_ones(sb, make_client):
    client = make_client(sb)
    until = pd.Timestamp(client.now()) - pd.Timedelta(days=10)
    with pytest.warns(LevelsWarning, match=r"until=.*lines_df\(since=") as caught:
        client.lines_df(since="90D", until=until)
    assert "items" in str(caught[0].message)
    with pytest.warns(LevelsWarning, match="type="):
        client.lines_df(since="90D", type="out")


def test_anchor_levels_sets_the_last_level_to_the_current_stock():
    lines = frames.lines_df(
        [
            {"id": 2, "type": "out", "transaction_time": "2026-05-02T00:00:00Z",
             "to_location": {"id": 1, "name": "WH", "deleted": False},
             "items": [{"id": 9, "quantity": 2, "new_stock_level": 1,
                        "to_location_new_stock_level": 1}]},
            {"id": 1, "type": "in", "transaction_time": "2026-05-01T00:00:00Z",
             "to_location": {"id": 1, "name": "WH", "deleted": False},
             "items": [{"id": 9, "quantity": 5, "new_stock_level": 3,
                        "to_location_new_stock_level": 3},
                       {"id": 8, "quantity": 1, "new_stock_level": 1,
                        "to_location_new_stock_level": 1}]},
        ]
    )  # fmt: skip
    items = [{"id": 9, "quantity": 13, "quantities": [{"location_id": 1, "quantity": 13}]}]
    anchored = frames.rebase_levels(lines, frames.stock_df(items))  # 8: not listed, as it was
    assert anchored["new_stock_level"].tolist() == [13.0, 15.0, 1.0]
    assert anchored["to_location_new_stock_level"].tolist() == [13.0, 15.0, 1.0]


def _age_walks(client, minutes: int = 5) -> None:
    """Make every walk recorded beside the client's cache ``minutes`` older."""
    for path in walks_folder(client.cache_path).glob("*.walk"):
        record = Record.from_bytes(path.read_bytes())
        aged = replace(record, began=record.began - timedelta(minutes=minutes))
        path.write_bytes(aged.to_bytes())


def test_an_items_list_replayed_from_before_the_transactions_list_is_read_again(sb, make_client):
    client = make_client(sb)
    client.items_df()  # the items list read (replayed for 10 minutes) ...
    _age_walks(client)  # ... five minutes ago
    sold = sb.add_transaction()  # then a sale: in the transactions list walked next
    lines = client.lines_df(since="90D")
    assert sold["id"] in set(lines["transaction_id"])
    total, _ = _current(sb)
    last = {i: s for (i, _), s in _last_levels(frames.stock_history(lines)).items() if i in total}
    assert last == {i: total[i] for i in last}


def test_a_transactions_list_replayed_from_before_the_items_list_is_walked_again(sb, make_client):
    client = make_client(sb)
    client.transactions_df(since="90D")  # the list's walk recorded ...
    _age_walks(client)  # ... five minutes ago
    sold = sb.add_transaction()  # then a sale: in the items list read next, not in that record
    lines = client.lines_df(since="90D")
    assert sold["id"] in set(lines["transaction_id"])
    total, _ = _current(sb)
    last = {i: s for (i, _), s in _last_levels(frames.stock_history(lines)).items() if i in total}
    assert last == {i: total[i] for i in last}


def test_the_mirrors_since_frame_ends_at_the_services_stock_after_an_edit_before_it(
    sb, make_client, tmp_path
):
    client = make_client(sb)
    mirror = TransactionMirror(tmp_path / "m.sqlite", client)
    mirror.sync()
    _edit_before_the_window(sb, client)
    mirror.sync()
    total, at = _current(sb)
    lines = mirror.lines_df(since="90D")
    last = {i: s for (i, _), s in _last_levels(frames.stock_history(lines)).items() if i in total}
    assert last == {i: total[i] for i in last}
    per_location = _last_levels(frames.stock_history(lines, by_location=True))
    per_location = {k: s for k, s in per_location.items() if k[0] in total}
    assert per_location == {k: at.get(k, 0.0) for k in per_location}
