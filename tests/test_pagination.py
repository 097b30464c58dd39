"""The page-walking rules (invtools.pagination), with fake fetch functions: no HTTP."""

from __future__ import annotations

import pytest

from invtools._progress import walk_progress as with_progress
from invtools.api.pagination import Page, check_envelope, iter_pages
from invtools.errors import ConfigError, PaginationError


class FakeList:
    """A keyset-paginated list of ``n`` rows; records every call's params."""

    def __init__(self, n: int, *, last_cursor_not_null: bool = False) -> None:
        self.rows = [{"id": i} for i in range(1, n + 1)]
        self.calls: list[dict] = []
        self.last_cursor_not_null = last_cursor_not_null

    def __call__(self, params: dict) -> dict:
        self.calls.append(dict(params))
        after = params.get("cursor", 0)
        page = [r for r in self.rows if r["id"] > after][: params["limit"]]
        more = bool(page) and page[-1]["id"] < self.rows[-1]["id"]
        cursor = page[-1]["id"] if page and (more or self.last_cursor_not_null) else None
        return {"items": page, "count": len(page), "limit": params["limit"], "cursor": cursor,
                "has_more": more}


def test_walks_every_row_once_in_order():
    fake = FakeList(250)
    pages = list(iter_pages(fake, {}))
    assert [len(p.rows) for p in pages] == [100, 100, 50]
    assert [r["id"] for p in pages for r in p.rows] == list(range(1, 251))
    assert [p.number for p in pages] == [1, 2, 3]
    assert pages[-1].has_more is False


def test_first_call_has_no_cursor_and_later_calls_pass_the_previous_one():
    fake = FakeList(25)
    list(iter_pages(fake, {}, limit=10))
    assert "cursor" not in fake.calls[0]
    assert [c.get("cursor") for c in fake.calls] == [None, 10, 20]


def test_filters_are_identical_on_every_page_and_callers_dict_untouched():
    fake = FakeList(30)
    params = {"type": "in", "location_ids": [1, 2], "cursor": 999}
    list(iter_pages(fake, params, limit=10))
    assert params == {"type": "in", "location_ids": [1, 2], "cursor": 999}
    for call in fake.calls:
        assert call["type"] == "in" and call["location_ids"] == [1, 2] and call["limit"] == 10
    assert "cursor" not in fake.calls[0]  # a caller's stale cursor is not sent


def test_default_limit_is_100():
    fake = FakeList(5)
    list(iter_pages(fake, None))
    assert fake.calls == [{"limit": 100}]


def test_non_null_cursor_on_last_page_does_not_loop():
    fake = FakeList(25, last_cursor_not_null=True)
    pages = list(iter_pages(fake, {}, limit=10))
    assert len(fake.calls) == 3
    assert pages[-1].cursor == 25 and pages[-1].has_more is False
    assert sum(len(p.rows) for p in pages) == 25


def test_lazy_nothing_fetched_until_asked():
    fake = FakeList(50)
    walk = iter_pages(fake, {}, limit=10)
    assert fake.calls == []
    next(walk)
    assert len(fake.calls) == 1


def test_repeated_cursor_raises_after_yielding_the_rows():
    def stuck(params):
        return {"items": [{"id": 1}], "cursor": 7, "has_more": True}

    walk = iter_pages(stuck, {"type": "out"})
    first = next(walk)
    assert first.rows == [{"id": 1}]
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
        list(iter_pages(lambda params: body, {}))


def test_check_envelope_returns_the_parts():
    assert check_envelope({"items": [1], "cursor": 3, "has_more": True}) == ([1], 3, True)


def test_max_pages_stops_fetching():
    fake = FakeList(1000)
    pages = list(iter_pages(fake, {}, limit=10, max_pages=3))
    assert len(pages) == 3 and len(fake.calls) == 3


def test_max_rows_trims_the_last_page_and_stops():
    fake = FakeList(1000)
    pages = list(iter_pages(fake, {}, limit=10, max_rows=25))
    assert [len(p.rows) for p in pages] == [10, 10, 5]
    assert len(fake.calls) == 3


def test_max_rows_on_a_page_boundary_fetches_no_extra_page():
    fake = FakeList(1000)
    list(iter_pages(fake, {}, limit=10, max_rows=20))
    assert len(fake.calls) == 2


def test_max_rows_zero_fetches_nothing():
    fake = FakeList(10)
    assert list(iter_pages(fake, {}, max_rows=0)) == []
    assert fake.calls == []


def test_stop_at_ends_the_walk_without_another_fetch():
    fake = FakeList(100)
    pages = list(iter_pages(fake, {}, limit=10, stop_at=lambda r: r["id"] > 34))
    assert [r["id"] for p in pages for r in p.rows] == list(range(1, 35))
    assert len(fake.calls) == 4


def test_keep_filters_rows_and_max_rows_counts_kept_rows():
    fake = FakeList(100)
    rows = [r["id"] for p in iter_pages(fake, {}, limit=10, keep=lambda r: r["id"] % 2 == 0,
                                        max_rows=7) for r in p.rows]
    assert rows == [2, 4, 6, 8, 10, 12, 14]
    assert len(fake.calls) == 2


@pytest.mark.parametrize("kwargs", [{"limit": 0}, {"limit": 101}, {"limit": "10"},
                                    {"max_pages": -1}, {"max_rows": 1.5},
                                    {"max_pages": True}])
def test_bad_arguments_raise_at_once(kwargs):
    fake = FakeList(5)
    with pytest.raises(ConfigError):  # an InvtoolsError, and still a ValueError
        iter_pages(fake, {}, **kwargs)
    assert fake.calls == []


def test_with_progress_is_transparent_and_silent_for_short_walks(capsys):
    pages = [Page([{"id": i}], i, i, True) for i in range(1, 3)]
    assert list(with_progress(pages, enabled=True)) == pages
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out == ""


def test_with_progress_shows_a_bar_on_long_walks(capsys):
    pages = [Page([{"id": i}] * 10, i, i, i < 6) for i in range(1, 7)]
    assert list(with_progress(pages, enabled=True, desc="/v1/items")) == pages
    err = capsys.readouterr().err
    assert "/v1/items" in err and "rows" in err


def test_with_progress_disabled_writes_nothing(capsys):
    pages = [Page([{"id": i}], i, i, True) for i in range(1, 10)]
    assert list(with_progress(pages, enabled=False)) == pages
    assert capsys.readouterr().err == ""


def test_page_repr_shows_counts_not_rows():
    assert repr(Page([{"id": 1}] * 3, 2, 9, True)) == (
        "Page(number=2, rows=3, cursor=9, has_more=True, from_cache=False)")
