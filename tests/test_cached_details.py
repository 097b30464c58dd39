"""A re-run reads its cached transaction details in bulk (issue 34): in a new process or a new
client on the same cache it sends nothing and gives the first run's rows; an edited, deleted or
backdated transaction is never served from a stale copy; one team's cached details are never
read for another. Real HTTP against the stand-in; ``sb.data()`` is the server's truth."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from invtools.errors import ConfigError
from invtools.http.cache import decode_json, decode_stored

pytestmark = pytest.mark.network

ROOT = Path(__file__).resolve().parents[1]


def truth(sb, team: str = "shop") -> list[tuple[int, int, int, float]]:
    """Every line the server holds now: (transaction id, revision, item id, quantity)."""
    data = sb.data(team)
    lines = []
    for row in data.transactions:
        detail = data.transaction(row["id"])
        for line in detail["items"]:
            lines.append((row["id"], row["revision"], line["id"], float(line["quantity"])))
    return sorted(lines)


def lines_of(df: pd.DataFrame, tx: str = "transaction_id") -> list[tuple[int, int, int, float]]:
    """Its lines as :func:`truth` gives them (``tx``: the column of the transaction's id)."""
    cols = [tx, "revision", "item_id", "quantity"]
    return sorted(
        (int(t), int(r), int(i), float(q)) for t, r, i, q in df[cols].itertuples(index=False)
    )


def detail_requests(sb) -> list[str]:
    return [r.path for r in sb.requests if r.route == "/v1/location-txs/{id}"]


def test_a_rerun_on_the_same_cache_sends_nothing_and_gives_the_first_runs_rows(sb, make_client):
    first = make_client(sb).lines_df()
    assert lines_of(first) == truth(sb)
    sb.clear_log()
    again = make_client(sb).lines_df()  # a new client: nothing of the first in memory
    assert sb.requests == []
    pd.testing.assert_frame_equal(again, first)
    assert again.attrs["requests"] == 0
    assert again.attrs["from_cache"] >= first["transaction_id"].nunique()  # each detail
    with_lines = make_client(sb).transactions_df(with_lines=True)
    assert sb.requests == []
    assert lines_of(with_lines.dropna(subset=["item_id"])) == truth(sb)


def test_a_rerun_in_a_new_process_sends_nothing(sb, make_client, tmp_path):
    cache = tmp_path / "cache.sqlite"
    first = make_client(sb, cache=cache).lines_df()
    sb.clear_log()
    child = (
        "import json, os\n"
        "from invtools import Client\n"
        "c = Client(os.environ['T'], base_url=os.environ['U'], cache=os.environ['C'],\n"
        "           rate_limit=0, progress=False)\n"
        "df = c.lines_df()\n"
        "cols = ['transaction_id', 'revision', 'item_id', 'quantity']\n"
        "print(json.dumps([[int(t), int(r), int(i), float(q)]\n"
        "                  for t, r, i, q in df[cols].itertuples(index=False)]))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("INVTOOLS_")}
    env.update(T=sb.tokens["shop"], U=sb.base_url, C=str(cache), PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-c", child], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert sb.requests == []
    got = sorted(tuple(line) for line in json.loads(done.stdout))
    assert got == lines_of(first) == truth(sb)


def test_edited_deleted_and_backdated_transactions_are_never_served_stale(sb, make_client):
    make_client(sb).lines_df()  # every detail cached at its revision
    rows = sb.data().transactions
    edited, deleted, backdated = rows[3]["id"], rows[40]["id"], rows[200]["id"]
    sb.edit_transaction(edited)  # one line's quantity changes: revision + 1
    sb.delete_transaction(deleted)
    sb.edit_transaction(backdated, transaction_time="2025-01-02T03:04:05Z")
    sb.clear_log()

    lines = make_client(sb).lines_df(max_age="0s")  # the list walked again, now
    assert lines_of(lines) == truth(sb)
    assert deleted not in set(lines["transaction_id"])
    # only the two new revisions were asked for; every other detail came from the cache
    assert sorted(detail_requests(sb)) == sorted(
        f"/v1/location-txs/{tid}" for tid in (edited, backdated)
    )
    sb.clear_log()
    tx = make_client(sb).transactions_df(with_lines=True, max_age="0s")
    assert lines_of(tx.dropna(subset=["item_id"])) == truth(sb)
    assert detail_requests(sb) == []


def test_one_teams_cached_details_are_never_read_for_another(make_client, tmp_path):
    from invtools.sandbox import serve

    with serve(rate_limit=0, size=300, shops=2) as sb:
        shop = make_client(sb, "shop")
        shop.lines_df()  # the shop's details, in the cache file both clients use
        pairs = [(r["id"], r["revision"]) for r in sb.data("shop").transactions[:5]]
        other = make_client(sb, "harrogate")
        assert other.cache_path == shop.cache_path
        sb.clear_log()
        got = list(other.transaction_details(pairs))
        # not the shop's cached answers: the server was asked, and said another team's
        # transaction is not found
        assert [detail for _pair, detail in got] == [None] * len(pairs)
        assert len(detail_requests(sb)) == len(pairs)
        assert {r.team for r in sb.requests if r.route == "/v1/location-txs/{id}"} == {"harrogate"}


# -- the pure parts of a re-run's bulk read


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)  # beyond 64 bits too
    | st.floats(allow_nan=False, allow_infinity=False)  # beyond 2**53 too: refused
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(value=json_values)
def test_a_stored_body_reads_as_the_strict_decoder_reads_it(value):
    body = json.dumps({"item": value}).encode()
    assert decode_stored(body) == decode_json(body)
    ugly = json.dumps({"item": value}, indent=1, ensure_ascii=False).encode()
    assert decode_stored(ugly) == decode_json(ugly)


def test_a_stored_body_the_strict_decoder_refuses_is_refused():
    for body in (b'{"n": NaN}', b'{"n": Infinity}', b'{"items": [', b"", None):
        assert decode_stored(body) == (False, None)


def _nested(depth: int, level: str = "[{}]", strings: str = "") -> bytes:
    """A value nested ``depth`` deep, each level ``level`` around the next (``{}`` the
    place), each with the string ``strings`` beside it."""
    body = "1"
    for _ in range(depth):
        body = level.replace("{}", f"{json.dumps(strings)}, {body}" if strings else body)
    return body.encode()


@pytest.mark.parametrize(
    "level, strings",
    [
        ("[{}]", ""),
        ('{"a": {}}', ""),
        ("[{}]", '"]["'),  # escaped quotes and brackets in a string beside each level
        ("[{}]", "]"),  # a string's bracket cancelling each level's own
        ("[{}]", "[[[["),
    ],
)
def test_a_body_is_read_up_to_the_nesting_bound_and_refused_beyond_by_both_decoders(level, strings):
    """Issue 43: a detail nested 990 deep was a bare RecursionError, read or not by how deep
    the caller's stack was; now one bound, :data:`MAX_DEPTH`, for both readers of a body."""
    from invtools.http.cache import MAX_DEPTH

    within, beyond = _nested(MAX_DEPTH, level, strings), _nested(MAX_DEPTH + 1, level, strings)
    for decode in (decode_json, decode_stored):
        assert decode(within) == (True, json.loads(within))
        assert decode(beyond) == (False, None)
        assert decode(_nested(990, level, strings)) == (False, None)
    shallow = json.dumps({"memo": "[" * 500 + "{" * 500, "n": [[1]]}).encode()
    assert decode_stored(shallow) == decode_json(shallow) == (True, json.loads(shallow))


def test_rebasing_levels_leaves_the_frame_it_was_given_as_it_was():
    from invtools.frames import lines_df, rebase_levels

    lines = lines_df(
        [
            {"id": 2, "type": "out", "transaction_time": "2026-05-02T00:00:00Z",
             "items": [{"id": 9, "quantity": 2, "new_stock_level": 1}]},  # stale: was 3
            {"id": 1, "type": "in", "transaction_time": "2026-05-01T00:00:00Z",
             "items": [{"id": 9, "quantity": 5, "new_stock_level": 5}]},
        ]
    )  # fmt: skip
    before = lines.copy()
    assert rebase_levels(lines)["new_stock_level"].tolist() == [3.0, 5.0]
    pd.testing.assert_frame_equal(lines, before)


def test_lines_of_rows_take_the_rows_columns_and_skip_deleted_details():
    from invtools.frames import lines_df, transactions_df
    from invtools.frames.lines import lines_of

    rows = [
        {"id": 5, "type": "out", "revision": 2, "transaction_time": "2026-05-02T00:00:00Z",
         "partner": {"id": 6, "name": "Ann Lee", "deleted": False},
         "to_location": {"id": 1, "name": "Shop", "deleted": False}},
        {"id": 4, "type": "in", "revision": 0, "transaction_time": "2026-05-01T00:00:00Z"},
        {"id": 3, "type": "in", "revision": 1, "transaction_time": "2026-04-30T00:00:00Z"},
    ]  # fmt: skip
    details = [  # the first cached before the partner's rename; the second deleted since
        {"id": 5, "type": "out", "revision": 2, "partner": {"id": 6, "name": "Ann"},
         "items": [{"id": 9, "quantity": 2}, {"id": 8, "quantity": 1}]},
        None,
        {"id": 3, "items": [{"id": 9, "quantity": 4, "unit": "box"}]},
    ]  # fmt: skip
    tx = transactions_df(rows)
    lines = lines_of(tx, details)
    assert lines[["transaction_id", "revision", "item_id", "quantity"]].values.tolist() == [
        [5, 2, 9, 2.0], [5, 2, 8, 1.0], [3, 1, 9, 4.0]
    ]  # fmt: skip
    assert lines["partner_name"].tolist()[:2] == ["Ann Lee", "Ann Lee"]
    assert lines["location_name"].tolist()[:2] == ["Shop", "Shop"]
    assert lines["unit"].tolist() == [None, None, "box"]  # a line's unknown field is kept
    expected = lines_df([{**d, **r} for r, d in zip(rows, details, strict=True) if d])
    pd.testing.assert_frame_equal(lines, expected)
    with pytest.raises(ConfigError, match="2 details for 3 rows"):
        lines_of(tx, details[:2])
    with pytest.raises(ConfigError, match="more details than the 3 rows"):
        lines_of(tx, [*details, None])


def test_lines_typed_a_part_at_a_time_are_the_servers_lines(sb, make_client, monkeypatch):
    """A re-run types the lines a part at a time (170,000 lines as Python objects: +97 MiB):
    across the parts' seams every line is the server's, and the frame the same as in one part."""
    import invtools.frames.lines as lines_module

    whole = make_client(sb).lines_df()
    monkeypatch.setattr(lines_module, "_PART_LINES", 7)  # many seams
    parted = make_client(sb).lines_df()
    assert lines_of(parted) == truth(sb)
    pd.testing.assert_frame_equal(parted, whole)
    names = {
        line["id"]: line["name"]
        for row in sb.data().transactions
        for line in sb.data().transaction(row["id"])["items"]
    }
    assert parted["item_name"].tolist() == [names[i] for i in parted["item_id"]]
