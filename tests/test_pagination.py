"""The page-walking rules (invtools.api.pagination), with fake fetch functions: no HTTP."""

from __future__ import annotations

import json

import pytest

from invtools.api.pagination import (
    Page,
    Trim,
    check_envelope,
    check_walk_args,
    iter_raw_pages,
    raw_envelope,
)
from invtools.errors import ConfigError, PaginationError


class FakeList:
    """A keyset-paginated list of ``n`` rows; records every call's params."""

    def __init__(self, n: int, *, last_cursor_not_null: bool = False) -> None:
        self.rows = [{"id": i} for i in range(1, n + 1)]
        self.calls: list[dict] = []
        self.last_cursor_not_null = last_cursor_not_null

    def __call__(self, params: dict) -> bytes:
        self.calls.append(dict(params))
        after = params.get("cursor", 0)
        page = [r for r in self.rows if r["id"] > after][: params["limit"]]
        more = bool(page) and page[-1]["id"] < self.rows[-1]["id"]
        cursor = page[-1]["id"] if page and (more or self.last_cursor_not_null) else None
        return as_body(
            {
                "items": page,
                "count": len(page),
                "limit": params["limit"],
                "cursor": cursor,
                "has_more": more,
            }
        )


def as_body(page) -> bytes:
    return json.dumps(page).encode()


def rows_of(page) -> list:
    return json.loads(page.body)["items"]


def test_walks_every_row_once_in_order():
    fake = FakeList(250)
    pages = list(iter_raw_pages(fake, {}))
    assert [p.n_rows for p in pages] == [100, 100, 50]
    assert [r["id"] for p in pages for r in rows_of(p)] == list(range(1, 251))
    assert [p.number for p in pages] == [1, 2, 3]
    assert pages[-1].has_more is False


def test_first_call_has_no_cursor_and_later_calls_pass_the_previous_one():
    fake = FakeList(25)
    list(iter_raw_pages(fake, {}, limit=10))
    assert "cursor" not in fake.calls[0]
    assert [c.get("cursor") for c in fake.calls] == [None, 10, 20]


def test_filters_are_identical_on_every_page_and_callers_dict_untouched():
    fake = FakeList(30)
    params = {"type": "in", "location_ids": [1, 2], "cursor": 999}
    list(iter_raw_pages(fake, params, limit=10))
    assert params == {"type": "in", "location_ids": [1, 2], "cursor": 999}
    for call in fake.calls:
        assert call["type"] == "in" and call["location_ids"] == [1, 2] and call["limit"] == 10
    assert "cursor" not in fake.calls[0]  # a caller's stale cursor is not sent


def test_default_limit_is_100():
    fake = FakeList(5)
    list(iter_raw_pages(fake, None))
    assert fake.calls == [{"limit": 100}]


def test_non_null_cursor_on_last_page_does_not_loop():
    fake = FakeList(25, last_cursor_not_null=True)
    pages = list(iter_raw_pages(fake, {}, limit=10))
    assert len(fake.calls) == 3
    assert pages[-1].cursor == 25 and pages[-1].has_more is False
    assert sum(p.n_rows for p in pages) == 25


def test_lazy_nothing_fetched_until_asked():
    fake = FakeList(50)
    walk = iter_raw_pages(fake, {}, limit=10)
    assert fake.calls == []
    next(walk)
    assert len(fake.calls) == 1


def test_repeated_cursor_raises_after_yielding_the_rows():
    def stuck(params):
        return as_body({"items": [{"id": 1}], "cursor": 7, "has_more": True})

    walk = iter_raw_pages(stuck, {"type": "out"})
    first = next(walk)
    assert rows_of(first) == [{"id": 1}]
    second = next(walk)
    assert second.cursor == 7
    with pytest.raises(PaginationError, match="cursor 7 twice"):
        next(walk)


@pytest.mark.parametrize(
    "body, match",
    [
        ({"cursor": None, "has_more": False}, "lacks items"),
        ({"items": [], "cursor": None}, "lacks has_more"),
        ({"items": [], "has_more": False}, "lacks cursor"),
        ({"items": {"a": 1}, "cursor": None, "has_more": False}, "not a list"),
        ({"items": [], "cursor": None, "has_more": "no"}, "not true/false"),
        ({"items": [], "cursor": 1.5, "has_more": True}, "not an integer"),
        ({"items": [], "cursor": None, "has_more": True}, "no cursor"),
        ([1, 2], "not a JSON object"),
    ],
)
def test_a_page_that_breaks_the_envelope_raises(body, match):
    with pytest.raises(PaginationError, match=match):
        list(iter_raw_pages(lambda params: as_body(body), {}))


def test_check_envelope_returns_the_parts():
    assert check_envelope({"items": [1], "cursor": 3, "has_more": True}) == ([1], 3, True)


def test_max_pages_stops_fetching():
    fake = FakeList(1000)
    pages = list(iter_raw_pages(fake, {}, limit=10, max_pages=3))
    assert len(pages) == 3 and len(fake.calls) == 3


# How a walk trims its rows (Trim): the walk asks for no further page once ``done``.


def pages_of(n: int, size: int) -> list[list[dict]]:
    return [[{"id": i} for i in range(s + 1, min(s + size, n) + 1)] for s in range(0, n, size)]


def trimmed(trim: Trim, pages: list[list[dict]]) -> list[list[dict]]:
    """The pages as a walk hands them out: trimmed, and none after the trim is done."""
    out = []
    for page in pages:
        if trim.done:
            break
        out.append(trim(page))
    return out


def test_max_rows_trims_the_last_page_and_stops():
    assert [len(p) for p in trimmed(Trim(max_rows=25), pages_of(1000, 10))] == [10, 10, 5]


def test_max_rows_on_a_page_boundary_wants_no_extra_page():
    trim = Trim(max_rows=20)
    assert len(trimmed(trim, pages_of(1000, 10))) == 2 and trim.done


def test_max_rows_zero_wants_nothing():
    assert Trim(max_rows=0).done and not Trim().done


def test_stop_at_ends_the_walk_at_that_row():
    trim = Trim(stop_at=lambda r: r["id"] > 34)
    pages = trimmed(trim, pages_of(100, 10))
    assert [r["id"] for p in pages for r in p] == list(range(1, 35)) and len(pages) == 4


def test_keep_filters_rows_and_max_rows_counts_kept_rows():
    pages = trimmed(Trim(keep=lambda r: r["id"] % 2 == 0, max_rows=7), pages_of(100, 10))
    assert [r["id"] for p in pages for r in p] == [2, 4, 6, 8, 10, 12, 14] and len(pages) == 2


@pytest.mark.parametrize(
    "kwargs",
    [
        {"limit": 0},
        {"limit": 101},
        {"limit": "10"},
        {"max_pages": -1},
        {"max_pages": True},
    ],
)
def test_bad_arguments_raise_at_once(kwargs):
    fake = FakeList(5)
    with pytest.raises(ConfigError):  # an InvtoolsError, and still a ValueError
        iter_raw_pages(fake, {}, **kwargs)
    assert fake.calls == []
    with pytest.raises(ConfigError, match="max_rows"):
        check_walk_args(100, None, 1.5)


def test_page_repr_shows_counts_not_rows():
    assert repr(Page([{"id": 1}] * 3, 2, 9, True)) == (
        "Page(number=2, rows=3, cursor=9, has_more=True, from_cache=False)"
    )


# ------------------------------------------------- what a user reads when a walk goes wrong
# (issue 20: found by mutation testing -- messages and the raw walk's arguments)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"limit": 0}, "limit must be an integer from 1 to 100, not 0"),
        ({"limit": "10"}, "limit must be an integer from 1 to 100, not '10'"),
        ({"max_pages": -1}, "max_pages must be a non-negative integer or None, not -1"),
        ({"max_rows": 1.5}, "max_rows must be a non-negative integer or None, not 1.5"),
    ],
)
def test_a_bad_argument_is_named_with_its_value(kwargs, message):
    args = {"limit": 100, "max_pages": None, "max_rows": None} | kwargs
    with pytest.raises(ConfigError) as info:
        check_walk_args(args["limit"], args["max_pages"], args["max_rows"])
    assert str(info.value) == message


def test_a_broken_page_is_named_by_its_number():
    bodies = {
        None: {"items": [{"id": 1}], "cursor": 1, "has_more": True},
        1: {"items": [{"id": 2}], "cursor": 2, "has_more": True},
        2: {"items": [], "has_more": True},
    }
    walk = iter_raw_pages(lambda params: as_body(bodies[params.get("cursor")]), {})
    next(walk), next(walk)
    with pytest.raises(PaginationError) as info:
        next(walk)
    assert str(info.value) == (
        "page 3 lacks cursor of the page envelope (items, count, limit, "
        "cursor, has_more); is this a list endpoint?"
    )


@pytest.mark.parametrize(
    "body, message",
    [
        (
            {"items": {"a": 1}, "cursor": None, "has_more": False},
            "page 1: 'items' is dict, not a list",
        ),
        ([1, 2], "page 1 is not a JSON object but list; is this a list endpoint?"),
        (
            {"cursor": None, "has_more": False},
            "page 1 lacks items of the page envelope (items, count, limit, cursor, has_more); "
            "is this a list endpoint?",
        ),
        (
            {"has_more": False},
            "page 1 lacks items, cursor of the page envelope (items, count, limit, "
            "cursor, has_more); is this a list endpoint?",
        ),
    ],
)
def test_a_page_that_breaks_the_envelope_says_how_in_words(body, message):
    with pytest.raises(PaginationError) as info:
        list(iter_raw_pages(lambda params: as_body(body), {}))
    assert str(info.value) == message


def test_more_pages_with_an_empty_cursor_is_refused():
    with pytest.raises(PaginationError, match="no cursor"):
        check_envelope({"items": [], "cursor": "", "has_more": True})


def test_a_repeated_cursor_names_the_page_and_the_filters():
    def stuck(params):
        return as_body({"items": [], "cursor": 7, "has_more": True})

    with pytest.raises(PaginationError) as info:
        list(iter_raw_pages(stuck, {"type": "out", "since": "2026-01-01"}, limit=50))
    assert str(info.value) == (
        "the server handed out cursor 7 twice (again on page 2); stopping "
        "instead of looping. Filters: type='out', since='2026-01-01', "
        "limit=50"
    )


# ------------------------------------------------------------ the raw walk (bulk frames)


def raw_list(n: int, per_page: int):
    """Undecoded pages of ``n`` rows, keyed by the cursor that asks for them."""
    bodies = {}
    for start in range(0, n, per_page):
        more = start + per_page < n
        rows = ",".join(f'{{"id":{i}}}' for i in range(start + 1, min(start + per_page, n) + 1))
        cursor = start + per_page if more else "null"
        bodies[start or None] = (
            f'{{"items":[{rows}],"count":{min(per_page, n - start)},'
            f'"cursor":{cursor},"has_more":{str(more).lower()}}}'
        ).encode()
    return bodies


def test_the_raw_walk_stops_at_max_pages_and_resumes_from_start():
    bodies = raw_list(10, 2)
    fetch = lambda params: bodies[params.get("cursor")]  # noqa: E731
    assert [p.cursor for p in iter_raw_pages(fetch, max_pages=2)] == [2, 4]
    resumed = list(iter_raw_pages(fetch, start=6))
    assert [(p.number, p.n_rows, p.cursor, p.has_more) for p in resumed] == [
        (1, 2, 8, True),
        (2, 2, None, False),
    ]
    assert b'"id":7' in resumed[0].body


def test_the_raw_walk_refuses_bad_arguments_at_once():
    with pytest.raises(ConfigError, match="max_pages must be a non-negative integer"):
        iter_raw_pages(lambda params: b"", max_pages=-1)
    with pytest.raises(ConfigError, match="limit must be"):
        iter_raw_pages(lambda params: b"", limit=500)


@pytest.mark.parametrize(
    "body, expected",
    [
        # A row with a field named like one of the envelope's: the envelope's value, not the row's.
        (b'{"items":[{"id":1,"cursor":9}],"count":1,"cursor":5,"has_more":true}', (5, True, 1)),
        (
            b'{"items":[{"id":1,"has_more":false}],"count":1,"cursor":5,"has_more":true}',
            (5, True, 1),
        ),
        (
            b'{"items":[{"id":1,"count":4},{"id":2}],"count":2,"cursor":null,"has_more":false}',
            (None, False, 2),
        ),
    ],
)
def test_raw_envelope_is_not_fooled_by_a_rows_field(body, expected):
    assert raw_envelope(body) == expected


def test_a_raw_page_that_is_not_json_is_named_by_its_number():
    bodies = {None: b'{"items":[1],"count":1,"cursor":1,"has_more":true}', 1: b"<html>"}
    walk = iter_raw_pages(lambda params: bodies[params.get("cursor")])
    next(walk)
    with pytest.raises(PaginationError) as info:
        next(walk)
    assert str(info.value) == "page 2 is not JSON; is this a list endpoint?"
    broken = {
        None: b'{"items":[1],"count":1,"cursor":1,"has_more":true}',
        1: b'{"items":[],"cursor":"","has_more":true}',
    }
    walk = iter_raw_pages(lambda params: broken[params.get("cursor")])
    next(walk)
    with pytest.raises(PaginationError, match=r"^page 2 says has_more"):
        next(walk)


def _endless_empty(params: dict) -> bytes:
    """A hostile list: empty pages that say has_more, each with a new cursor, for ever."""
    after = int(params.get("cursor", 0))
    if after > 20_000:  # the test's own bound: the code under test never stopped
        raise AssertionError("the walk followed 20,000 empty pages")
    return json.dumps({"items": [], "count": 0, "cursor": after + 1, "has_more": True}).encode()


def test_a_list_of_empty_pages_that_never_ends_is_refused_naming_the_filters():
    """Issue 26, item 3: has_more for ever with empty pages and a moving cursor never ended."""
    with pytest.raises(PaginationError) as caught:
        list(iter_raw_pages(_endless_empty, {"type": "in"}, limit=100))
    message = str(caught.value)
    assert "empty pages in a row" in message and "type='in'" in message
    assert "MAX_EMPTY_RUN" in message  # how to allow longer runs


def test_a_run_of_empty_pages_shorter_than_the_limit_is_followed():
    from invtools.api import pagination

    def fetch(params):  # MAX_EMPTY_RUN - 1 empty pages, then a row
        after = int(params.get("cursor", 0))
        if after < pagination.MAX_EMPTY_RUN - 1:
            body = {"items": [], "count": 0, "cursor": after + 1, "has_more": True}
        else:
            body = {"items": [{"id": 1}], "count": 1, "cursor": None, "has_more": False}
        return json.dumps(body).encode()

    pages = list(iter_raw_pages(fetch))
    assert len(pages) == pagination.MAX_EMPTY_RUN and pages[-1].n_rows == 1
