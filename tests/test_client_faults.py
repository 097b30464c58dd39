"""Bad answers from the server: a 200 whose body is truncated, empty, ``{}`` or mislabelled.
None may stick in the cache; each is retried like a 5xx and then reported as the server's
fault; every walk gives each live transaction exactly once or the package's own error.
Real HTTP against the stand-in; retries wait on a fake clock."""

from __future__ import annotations

import random

import pytest

from invtools.errors import InvtoolsError, ServerError
from invtools.sandbox import Faults
from invtools.sandbox.limits import BODY_FAULTS

pytestmark = pytest.mark.network


def live_ids(sb) -> list[int]:
    return [t["id"] for t in sb.data().transactions]


def sent_to(sb, route: str) -> int:
    return sum(r.route == route for r in sb.requests)


@pytest.mark.parametrize("kind", BODY_FAULTS)
def test_one_bad_answer_is_retried_and_never_cached(sb, make_client, fake_clock, kind):
    c = make_client(sb, clock=fake_clock)
    row = next(c.transactions())
    expected = sb.data().transaction(row["id"])
    sb.faults = Faults(on_requests={1}, kinds=(kind,))
    assert c.transaction(row["id"], revision=row["revision"]) == expected
    sb.faults = None
    sb.clear_log()
    # What the cache kept is the good answer: asked again, it answers without the server.
    assert c.transaction(row["id"], revision=row["revision"]) == expected
    assert sb.requests == [] or kind == "mislabelled"  # text/plain: used, never stored


def test_bad_answers_that_never_stop_are_the_servers_fault_and_leave_nothing_behind(
    sb, make_client, fake_clock
):
    c = make_client(sb, clock=fake_clock, retries=3)
    row = next(c.transactions())
    sb.faults = Faults(rate=1.0, kinds=("truncated",))
    with pytest.raises(ServerError) as info:
        c.transaction(row["id"], revision=row["revision"])
    assert "truncated" in str(info.value) and info.value.attempts == 4
    # Recovery is the next request: nothing bad was stored.
    sb.faults = None
    sb.clear_log()
    assert c.transaction(row["id"], revision=row["revision"])["id"] == row["id"]
    assert len(sb.requests) == 1
    assert c.lines_df(since="2026-10-25", refresh=True)["transaction_id"].notna().all()


@pytest.mark.parametrize("kind", BODY_FAULTS)
def test_the_whole_list_fast_path_gives_the_right_frame_or_the_packages_error(
    sb, make_client, fake_clock, kind
):
    c = make_client(sb, clock=fake_clock)
    expected = make_client(sb, cache=False).transactions_df()["transaction_id"].tolist()
    sb.faults = Faults(on_requests={2}, kinds=(kind,))  # page 2 of the walk
    assert c.transactions_df()["transaction_id"].tolist() == expected
    sb.faults = Faults(rate=1.0, kinds=(kind,))
    if kind == "mislabelled":  # whole JSON, wrong label: used, never stored
        assert c.transactions_df(refresh=True)["transaction_id"].tolist() == expected
    else:
        with pytest.raises(ServerError, match="truncated or empty"):
            c.transactions_df(refresh=True)


def test_walks_under_bad_answers_and_edits_give_every_row_once(sb, make_client, fake_clock):
    """The fault test: body faults, 5xx and drops at a rate, edits between walks; every walk
    returns each live transaction exactly once, or raises the package's error."""
    rng = random.Random(13)
    c = make_client(sb, clock=fake_clock, retries=6)
    faults = Faults(rate=0.3, kinds=(*BODY_FAULTS, "500", "503", "drop"), seed=13)
    injected = walks = lost = doubled = errors = 0
    for round_ in range(12):
        ids = live_ids(sb)
        victim = rng.choice(ids)
        if round_ % 3 == 0:
            sb.edit_transaction(victim, transaction_time=f"2025-0{1 + round_ % 9}-02T03:04:05Z")
        elif round_ % 3 == 1:
            sb.delete_transaction(victim)
        else:
            sb.add_transaction()
        sb.faults = faults
        sb.clear_log()
        try:
            # Fresh walks (a cached one would rightly be the list as of its first page).
            whole = c.transactions_df(refresh=True)["transaction_id"].tolist()
            rows = [r["id"] for r in c.transactions(refresh=True)]
        except InvtoolsError:
            errors += 1
            continue
        finally:
            injected += sum(r.fault is not None for r in sb.requests)
            sb.faults = None
        walks += 2
        truth = set(live_ids(sb))
        for got in (whole, rows):
            lost += len(truth - set(got))
            doubled += len(got) - len(set(got))
    print(
        f"faults injected {injected}, walks {walks}, errors {errors}, rows lost {lost}, "
        f"rows doubled {doubled}"
    )
    assert injected > 20 and walks >= 20
    assert (lost, doubled) == (0, 0)
    assert errors <= 2  # six retries: a walk almost always gets through


def _hostile_list(sb, page):
    """Answer the items list with ``page(number)`` (a JSON-able page), the rest as usual."""
    import json

    original, calls = sb.handle, []

    def handle(method, target, authorization, fault=None):
        if target.startswith("/v1/items?") or target == "/v1/items":
            calls.append(target)
            body = json.dumps(page(len(calls))).encode()
            return 200, {"Content-Type": "application/json"}, body
        return original(method, target, authorization, fault=fault)

    sb.handle = handle
    return calls


def test_a_list_that_says_has_more_on_empty_pages_for_ever_ends_with_the_packages_error(
    sb, make_client
):
    """Issue 26, item 3: 599 pages in 30 s and counting, no limit."""
    from invtools.api.pagination import MAX_EMPTY_RUN
    from invtools.errors import PaginationError

    calls = _hostile_list(
        sb, lambda n: {"items": [], "count": 0, "limit": 100, "cursor": n, "has_more": True}
    )
    with pytest.raises(PaginationError, match="empty pages in a row"):
        make_client(sb, cache=False).items_df()
    assert len(calls) == MAX_EMPTY_RUN


@pytest.mark.parametrize(
    ("row", "words"),
    [
        ({"name": "no id"}, "'id' is None"),
        ({"id": "7", "name": "id as text"}, "'id' is '7'"),
        ({"id": True, "name": "id as bool"}, "'id' is True"),
        ({"id": 2**70, "name": "id beyond 64 bits"}, "'id' is 1180591620717411303424"),
        ({"id": 7, "revision": 10**25, "name": "revision beyond"}, "'revision' is 1000"),
        ({"id": 7, "revision": 1.5, "name": "revision a float"}, "'revision' is 1.5"),
    ],
)
def test_a_row_without_a_usable_id_or_revision_is_the_servers_fault_never_a_row(
    sb, make_client, row, words
):
    """Issue 26, items 6 and 7: such rows were kept, their id a silent <NA>."""
    from invtools.errors import PaginationError

    page = {"items": [{"id": 1, "name": "fine"}, row], "count": 2, "limit": 100}
    _hostile_list(sb, lambda n: {**page, "cursor": None, "has_more": False})
    client = make_client(sb, cache=False)
    for call in (client.items_df, lambda: list(client.items())):
        with pytest.raises(PaginationError) as caught:
            call()
        assert "page 1, row 2" in str(caught.value) and words in str(caught.value)


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_a_redirect_elsewhere_is_refused_saying_where_and_nothing_of_it_is_kept(
    sb, make_client, status
):
    """Issue 26, item 4: a redirect to another host was followed, its (empty) answer cached
    under the real URL as the team's items until refresh=True."""
    from invtools.errors import APIError

    original = sb.handle
    elsewhere = "http://127.0.0.1:9/v1/items?limit=100"

    def handle(method, target, authorization, fault=None):
        if target.startswith("/v1/items"):
            return status, {"Location": elsewhere, "Content-Length": "0"}, b""
        return original(method, target, authorization, fault=fault)

    sb.handle = handle
    client = make_client(sb)
    with pytest.raises(APIError) as caught:
        client.items_df()
    assert "redirected" in str(caught.value) and "127.0.0.1:9" in str(caught.value)
    assert sb.tokens["shop"] not in str(caught.value)

    sb.handle = original  # the server fixed: the same call, the same cache, the real items
    items = client.items_df()
    assert sorted(items["item_id"]) == sorted(i["id"] for i in sb.data("shop").items)


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity", "1e30", "-9.1e15"])
def test_a_number_that_is_not_json_is_the_servers_fault_and_never_kept(
    sb, make_client, fake_clock, constant
):
    """Issue 26, item 7: NaN and Infinity (which Python's json reads, JSON does not have) went
    into frames and the mirror as quantities; so did 1e30, a quantity no float counts in units
    (1e30 + 1 == 1e30: every sum over it is wrong)."""
    bad = f'{{"id": 1, "name": "x", "quantity": {constant}}}'
    original = sb.handle

    def handle(method, target, authorization, fault=None):
        if target.startswith("/v1/items"):
            page = '"count": 1, "limit": 100, "cursor": null, "has_more": false'
            body = f'{{"items": [{bad}], {page}}}'
            return 200, {"Content-Type": "application/json"}, body.encode()
        return original(method, target, authorization, fault=fault)

    sb.handle = handle
    client = make_client(sb, clock=fake_clock)
    with pytest.raises(ServerError):
        client.items_df()
    sb.handle = original  # the server fixed: nothing of the bad answer was kept
    items = client.items_df()
    assert sorted(items["item_id"]) == sorted(i["id"] for i in sb.data("shop").items)
