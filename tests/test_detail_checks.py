"""A transaction's detail is the one asked for, or the package's own error naming the
transaction (issue 43, item 1): never another transaction's lines, another revision's than the
``?revision=N`` asked, or a bare ``RecursionError`` from an answer nested too deep. Nothing of
such an answer is kept: the same call on the same cache (or the same mirror), once the server
answers right, gives the server's truth.

Real HTTP against the stand-in: its detail route is made to answer wrong for real (another
transaction's detail, another version of the same one, a body nested 990 deep), the way
``tests/test_dlt.py``'s ``_failed_run`` makes a detail fail; ``sb.data()`` is the truth.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import pytest

from invtools.errors import InvtoolsError, ServerError
from invtools.mirror import TransactionMirror

pytestmark = pytest.mark.network

DETAIL = re.compile(r"^/v1/location-txs/(\d+)(\?.*)?$")


def truth(sb, ids=None) -> list[tuple[int, int, int, float]]:
    """The server's lines now: (transaction id, revision, item id, quantity), of ``ids`` (all)."""
    data = sb.data()
    got = []
    for row in data.transactions:
        if ids is None or row["id"] in ids:
            for line in data.transaction(row["id"])["items"]:
                got.append((row["id"], row["revision"], line["id"], float(line["quantity"])))
    return sorted(got)


def lines_of(df, tx: str = "transaction_id") -> list[tuple[int, int, int, float]]:
    cols = [tx, "revision", "item_id", "quantity"]
    return sorted(
        (int(t), int(r), int(i), float(q))
        for t, r, i, q in df.dropna(subset=["item_id"])[cols].itertuples(index=False)
    )


def answer_wrong(sb, tid: int, wrong: Callable[[str], tuple[str | None, bytes | None]]):
    """Make the stand-in answer every request for ``tid``'s detail with ``wrong(query)``: a
    target to answer instead (another transaction's, another revision's), or a body; returns
    a function that puts the server right again."""
    original = sb.handle

    def handle(method, target, authorization, fault=None):
        asked = DETAIL.match(target)
        if asked and int(asked[1]) == tid:
            instead, body = wrong(asked[2] or "")
            if body is not None:
                return 200, {"Content-Type": "application/json"}, body
            target = instead
        return original(method, target, authorization, fault=fault)

    sb.handle = handle
    return lambda: setattr(sb, "handle", original)


def another_transaction(sb, tid: int, other: int):
    """``tid``'s detail answered with ``other``'s (at its own current revision)."""
    return answer_wrong(sb, tid, lambda _query: (f"/v1/location-txs/{other}", None))


def nested_990_deep(sb, tid: int):
    """``tid``'s detail as it is, its memo an array nested 990 deep."""
    detail = sb.data().transaction(tid)
    deep = "[" * 990 + "]" * 990
    body = json.dumps({"item": {**detail, "memo": "DEEP"}}).replace('"DEEP"', deep).encode()
    return answer_wrong(sb, tid, lambda _query: (None, body))


def _lines(pairs) -> list[tuple[int, int, int, float]]:
    """The lines of ``(transaction id, detail)`` pairs, as :func:`truth` gives them."""
    return [
        (t, d["revision"], line["id"], float(line["quantity"]))
        for t, d in pairs
        for line in d["items"]
    ]


#: Each way of asking for details, and what it gives as lines (transaction id, revision,
#: item, quantity) of the transactions ``ids`` at the revisions ``revs``.
CALLS: dict[str, Callable] = {
    "transaction(id)": lambda c, ids, revs: _lines((t, c.transaction(t)) for t in ids),
    "transaction(id, revision=N)": lambda c, ids, revs: _lines(
        (t, c.transaction(t, revision=r)) for t, r in zip(ids, revs, strict=True)
    ),
    "transaction_details": lambda c, ids, revs: _lines(
        (t, d) for (t, _r), d in c.transaction_details(list(zip(ids, revs, strict=True)))
    ),
    "lines_df": lambda c, ids, revs: [x for x in lines_of(c.lines_df()) if x[0] in ids],
    "transactions_df(with_lines=True)": lambda c, ids, revs: [
        x for x in lines_of(c.transactions_df(with_lines=True), "transaction_id") if x[0] in ids
    ],
}


def newest_two(sb) -> tuple[int, int]:
    rows = sb.data().transactions
    return rows[0]["id"], rows[1]["id"]


@pytest.mark.parametrize("call", CALLS)
def test_a_detail_of_another_transaction_is_the_servers_fault_never_its_lines(
    sb, make_client, fake_clock, call
):
    """The issue: transaction A's detail answered with B's gave B's lines as A's (lines_df: A
    with 1 line where it has 2), and the cache kept them for good."""
    a, b = newest_two(sb)
    revs = [{r["id"]: r["revision"] for r in sb.data().transactions}[a]]
    put_right = another_transaction(sb, a, b)
    client = make_client(sb, clock=fake_clock)
    with pytest.raises(ServerError) as caught:
        CALLS[call](client, [a], revs)
    said = str(caught.value)
    assert f"transaction {a}" in said and f"transaction {b}" in said, said
    assert "try again" in said
    put_right()
    assert sorted(CALLS[call](client, [a], revs)) == truth(sb, {a})  # nothing of B was kept


@pytest.mark.parametrize("call", ["transaction(id, revision=N)", "transaction_details", "lines_df"])
def test_another_revision_than_the_one_asked_is_the_servers_fault(
    sb, make_client, fake_clock, call
):
    """``?revision=N`` answered with another version of the same transaction: kept for good
    as version N before."""
    a, _b = newest_two(sb)
    before = {r["id"]: r["revision"] for r in sb.data().transactions}[a]
    sb.edit_transaction(a)  # now at before + 1; the list says so
    now = before + 1

    def other_version(query: str):
        return f"/v1/location-txs/{a}?revision={before if f'={now}' in query else now}", None

    put_right = answer_wrong(sb, a, other_version)
    client = make_client(sb, clock=fake_clock)
    with pytest.raises(ServerError) as caught:
        CALLS[call](client, [a], [now])
    said = str(caught.value)
    assert f"transaction {a}" in said and f"revision {now}" in said and f"{before}" in said
    put_right()
    assert sorted(CALLS[call](client, [a], [now])) == truth(sb, {a})


@pytest.mark.parametrize("call", CALLS)
def test_a_detail_nested_too_deep_is_the_servers_fault_never_a_recursion_error(
    sb, make_client, fake_clock, call
):
    """The issue: a detail nested 990 deep raised a bare RecursionError."""
    a, _b = newest_two(sb)
    revs = [{r["id"]: r["revision"] for r in sb.data().transactions}[a]]
    put_right = nested_990_deep(sb, a)
    client = make_client(sb, clock=fake_clock)
    with pytest.raises(InvtoolsError) as caught:
        CALLS[call](client, [a], revs)
    assert f"/v1/location-txs/{a}" in str(caught.value), str(caught.value)
    put_right()
    assert sorted(CALLS[call](client, [a], revs)) == truth(sb, {a})


@pytest.mark.parametrize("wrong", ["another transaction", "nested too deep"])
def test_a_mirror_stores_no_wrong_detail_and_a_rerun_stores_the_right_one(
    sb, make_client, fake_clock, tmp_path, wrong
):
    """The mirror's sync fetches its details through the client: a wrong one fails the sync
    naming the transaction, is stored neither as that transaction's nor as any other's, and
    the next sync (the server right again) stores the server's lines."""
    a, b = newest_two(sb)
    put_right = another_transaction(sb, a, b) if wrong == "another transaction" else None
    put_right = put_right or nested_990_deep(sb, a)
    client = make_client(sb, clock=fake_clock)
    mirror = TransactionMirror(tmp_path / "mirror.sqlite", client)
    with pytest.raises(ServerError) as caught:
        mirror.sync(look_back="30D")
    assert str(a) in str(caught.value)
    put_right()
    mirror.sync(look_back="30D")
    window = set(mirror.transactions_df()["transaction_id"])
    assert a in window and b in window
    assert lines_of(mirror.lines_df()) == truth(sb, window)


@pytest.mark.parametrize("call", ["transaction(id, revision=N)", "lines_df"])
def test_a_wrong_detail_an_earlier_version_cached_is_asked_for_again(
    sb, make_client, fake_clock, monkeypatch, call
):
    """A cache written before this check holds the wrong detail as the transaction's, for
    good: it is not served, but asked of the server again (and the right one kept)."""
    import invtools.api.requester

    a, b = newest_two(sb)
    revs = [{r["id"]: r["revision"] for r in sb.data().transactions}[a]]
    put_right = another_transaction(sb, a, b)
    with monkeypatch.context() as earlier:  # an earlier version: nothing forgotten
        earlier.setattr(invtools.api.requester, "forget", lambda *args, **kwargs: None)
        with pytest.raises(ServerError):
            CALLS[call](make_client(sb, clock=fake_clock), [a], revs)
    put_right()
    assert sorted(CALLS[call](make_client(sb, clock=fake_clock), [a], revs)) == truth(sb, {a})
    sb.clear_log()
    assert sorted(CALLS[call](make_client(sb, clock=fake_clock), [a], revs)) == truth(sb, {a})
    assert not [r for r in sb.requests if r.route == "/v1/location-txs/{id}"]  # kept now
