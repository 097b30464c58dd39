"""The client's contract, run against every model of the service (issue 32, item 8).

One base class of tests, :class:`Contract`, and one subclass per server model, the way
requests-cache runs ``BaseCacheTest`` against every backend: the plain stand-in; stated budgets
(``coarse_budget`` and the ``ratelimit_headers:*`` quirks, paced on a fake clock); the other
quirks; and a stand-in whose ``Date`` is skewed (``serve(date_skew=...)``: 30 and 400 days
behind, 400 days ahead, missing, year 1, jumping 173 years between answers). Every test
compares what the client gives with the server's truth (``sb.data("shop")``: ids, revisions,
times, quantities -- not ids alone).

The clock rule these tests hold (issue 32, item 2; docs/explanation/now.md):

- ``client.now()`` is the ``Date`` of the team answer, checked. No ``Date``, an unparseable one
  or one before the year 2000: the local clock, with a ``ClockWarning``. More than a day ahead
  of the local clock: the local clock, with a ``ClockWarning``. A refreshed team answer
  (``team(refresh=True)``) whose clock jumps more than a day from the client's: the client's
  clock is kept, with a ``ClockWarning``. Behind: believed (the plain stand-in is weeks behind
  the wall clock and says nothing), but never older than rows the service itself returned: a
  walk returning a row whose ``created_at`` is over a day later than the clock moves the
  clock forward to it, with a ``ClockWarning``, and the frame's window is computed from the
  moved clock.
- Every frame of the client carries ``attrs["as_of"]`` (ISO UTC text): the moment it is as
  of on the service's clock (with no ``until=``: when its data left the server, about
  ``client.now()`` for a fresh fetch), and ``attrs["data_as_of"]`` on that same clock.

The tests of that rule failed on the code before it (34 of them, across the models, run as
strict xfails until it landed).
Each model's server lives for its class (a small history); each test makes its own clients
with their own cache file, and compares with the truth as it is when it asks.
"""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar

import pandas as pd
import pytest

import invtools
from invtools import NotFoundError, TeamModeError, TransactionMirror
from invtools.api.clock import OFF_BY
from invtools.errors import AuthenticationError
from invtools.sandbox import serve

pytestmark = pytest.mark.network

#: The shop's transactions: a small history (sandbox minimum 50), a few rows in 30 days.
SIZE = 100
CLOCK_WARNING: type[Warning] = invtools.ClockWarning
#: How close two readings of one clock must be (a test's own run time, pacing on the fake clock).
NEAR = timedelta(minutes=1)
#: A row more than this later than the clock moves the clock on (the rule).
LATE = OFF_BY
DAY = timedelta(days=1)
SINCE = pd.Timedelta(days=30)


# ------------------------------------------------------------------------------- helpers


@contextmanager
def clock_warnings() -> Iterator[list[str]]:
    """Collect the messages of the ``ClockWarning``s said inside; any other warning still
    fails the test (the suite's filterwarnings is "error")."""
    said: list[str] = []
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("error")
        warnings.simplefilter("always", CLOCK_WARNING)
        yield said
    said.extend(str(w.message) for w in seen if w.category is CLOCK_WARNING)


def utc(text: str) -> pd.Timestamp:
    return pd.Timestamp(text).tz_convert("UTC")


def team_clock(sb) -> datetime:
    """The stand-in's own clock for the shop (its data's end and a minute), whatever its
    ``Date`` says."""
    return datetime.fromtimestamp(sb.store("shop").now_ms() / 1000, UTC)


def wall() -> datetime:
    return datetime.now(UTC)


def truth_rows(sb) -> pd.DataFrame:
    """The shop's live transactions as the server holds them: id, revision, type, times."""
    rows = sb.data("shop").transactions
    df = pd.DataFrame(
        [(r["id"], r["revision"], r["type"], r["transaction_time"], r["created_at"]) for r in rows],
        columns=["transaction_id", "revision", "type", "transaction_time", "created_at"],
    )
    for col in ("transaction_time", "created_at"):
        df[col] = pd.to_datetime(df[col], utc=True)
    return df


def truth_lines(sb, ids) -> list[tuple]:
    """(transaction, revision, item, quantity, new stock level) of each line of ``ids``, now."""
    view, out = sb.data("shop"), []
    for tx_id in ids:
        detail = view.transaction(int(tx_id))
        for line in detail["items"]:
            out.append(
                (
                    detail["id"],
                    detail["revision"],
                    line["id"],
                    float(line["quantity"]),
                    float(line["new_stock_level"]),
                )
            )
    return sorted(out)


def tx_keys(df: pd.DataFrame, id_col: str = "transaction_id") -> list[tuple]:
    """(id, revision, type, transaction time) of each row, sorted."""
    got = zip(
        df[id_col], df["revision"], df["type"].astype(str), df["transaction_time"], strict=True
    )
    return sorted((int(i), int(r), t, pd.Timestamp(w)) for i, r, t, w in got)


def line_keys(df: pd.DataFrame, *, levels: bool = True) -> list[tuple]:
    """(transaction, revision, item, quantity[, new stock level]) of each line, sorted."""
    ids = df[["transaction_id", "revision", "item_id"]].to_numpy(dtype="int64").tolist()
    values = df[["quantity", "new_stock_level"] if levels else ["quantity"]]
    got = values.to_numpy(dtype="float64").tolist()
    return sorted(tuple(i) + tuple(v) for i, v in zip(ids, got, strict=True))


def window_of(df: pd.DataFrame) -> tuple[pd.Timestamp, pd.Timestamp]:
    w = df.attrs["window"]
    return utc(w["since"]), utc(w["until"])


def shown(*things: Any) -> list[str]:
    """What a user may see of ``things``: a frame's attrs and first rows, anything's repr and
    str."""
    out = []
    for thing in things:
        if isinstance(thing, pd.DataFrame):
            out += [repr(thing.attrs), thing.head().to_string()]
        else:
            out += [repr(thing), str(thing)]
    return out


def assert_no_token(sb, texts: list[str], *extra: str) -> None:
    for token in [*sb.tokens.values(), *extra]:
        assert not [text for text in texts if token in text], "a token is shown"


def sb_revision(sb, tx_id: int) -> int:
    return sb.data("shop").transaction(tx_id)["revision"]


def mutate(sb) -> tuple[int, int]:
    """Delete one transaction and edit another (a line's quantity: revision + 1), in the
    middle of the history; return (deleted id, edited id)."""
    rows = sb.data("shop").transactions
    deleted, edited = rows[len(rows) // 2]["id"], rows[len(rows) // 3]["id"]
    sb.delete_transaction(deleted)
    sb.edit_transaction(edited)
    return deleted, edited


# ------------------------------------------------------------------------------- the contract


class Contract:
    """What the client does against any model of the service. A subclass names its model:

    - ``options``: the stand-in's (``serve(...)``) besides a small history and no budget;
      ``skew_for(sb)`` the ``date_skew`` it has, set again before each test;
    - ``paced``: the model has a budget; the server and the clients share a fake clock, and
      the clients pace at the real 5 a second;
    - ``behind``: the ``Date`` is that far behind the stand-in's clock: believed, until rows
      the service returns are later;
    - ``local``: the ``Date`` cannot be believed (missing, absurd, far ahead): the client keeps
      the local clock and says so;
    - ``jumps``: consecutive answers' ``Date`` jump (the first after the option is set is the
      stand-in's clock, the second 173 years later);
    """

    options: ClassVar[dict[str, Any]] = {}
    paced: ClassVar[bool] = False
    behind: ClassVar[timedelta | None] = None
    local: ClassVar[bool] = False
    jumps: ClassVar[bool] = False

    @classmethod
    def quiet(cls) -> bool:
        """Every ``Date`` this model states is the stand-in's true clock: nothing to warn of."""
        return not (cls.behind or cls.local or cls.jumps)

    def expected_clock(self, sb) -> datetime:
        """What a fresh client's ``now()`` must be, before any walk."""
        if self.local:
            return wall()
        return team_clock(sb) - (self.behind or timedelta(0))

    @classmethod
    def skew_for(cls, sb) -> Any:
        """The ``date_skew`` of this model (set before each test: "jumping" counts from it)."""
        return cls.options.get("date_skew")

    @pytest.fixture(scope="class")
    @classmethod
    def server(cls):
        options = {"rate_limit": 0, **cls.options}
        with serve(port=0, seed=0, size=SIZE, **options) as sb:
            yield sb

    @pytest.fixture(autouse=True)
    def _model(self, request, server, fake_clock):
        if self.paced:  # the fake clock starts at the wall clock: the client's local clock
            fake_clock.now = time.time()
            server.clock = fake_clock
            server.limiter.clear()
        server.date_skew = self.skew_for(server)
        server.faults = None
        yield

    @pytest.fixture
    def client_of(self, server, make_client, fake_clock):
        """``client_of(team="shop", cache=...)``: a fresh client of this model (paced ones at
        the real pace on the fake clock)."""

        def make(team: str = "shop", **kw):
            if self.paced:
                kw = {"rate_limit": 5, "clock": fake_clock, **kw}
            return make_client(server, team, **kw)

        return make

    def assert_said(self, said: list[str], expected: bool | None) -> None:
        """A ClockWarning was said (``expected`` True) or none (False); None: either."""
        if expected is not None:
            assert bool(said) == expected, said

    # -- the data: the same as the server's, on every model ------------------------------

    def assert_equal_to_the_truth(self, server, txs, lines, items=None) -> None:
        """Rows (id, revision, type, time), lines (with the stock after each) and items
        (name, stock) as the server holds them now."""
        truth = truth_rows(server)
        assert tx_keys(txs) == tx_keys(truth)
        assert line_keys(lines) == truth_lines(server, truth["transaction_id"])
        if items is not None:
            stock = sorted((i["id"], i["name"], float(i["quantity"])) for i in server.data().items)
            got = zip(items["item_id"], items["name"], items["quantity"].astype(float), strict=True)
            assert sorted((int(i), n, q) for i, n, q in got) == stock

    def test_whole_history_frames_and_a_mirror_equal_the_truth_after_deletions_and_edits(
        self, server, client_of, tmp_path
    ):
        """One test, so that the mirror takes the details the client's frames fetched (from
        its cache): the file stays fast on every model."""
        deleted, edited = mutate(server)
        client = client_of()
        with clock_warnings() as said:
            items, txs, lines = client.items_df(), client.transactions_df(), client.lines_df()
        self.assert_equal_to_the_truth(server, txs, lines, items)
        assert deleted not in set(txs["transaction_id"]) and deleted not in set(
            lines["transaction_id"]
        )
        assert set(txs.loc[txs["transaction_id"] == edited, "revision"]) == {
            sb_revision(server, edited)
        }
        texts = shown(client, items, txs, lines)

        mirror = TransactionMirror(tmp_path / "mirror.sqlite", client)
        with clock_warnings() as more:
            first = mirror.sync()
            self.assert_equal_to_the_truth(server, mirror.transactions_df(), mirror.lines_df())
            deleted, edited = mutate(server)
            added = server.add_transaction(type="in", lines=[(int(items["item_id"].iloc[0]), 3)])
            report = mirror.sync()
            mirrored = mirror.transactions_df(), mirror.lines_df()
            fresh = client.transactions_df(refresh=True), client.lines_df(refresh=True)
        assert (first.kind, first.new) == ("full", len(txs))
        assert (report.new, report.changed, report.removed) == (1, 1, 1)
        for got in (mirrored, fresh):  # the mirror rebuilds its stock levels, like lines_df
            self.assert_equal_to_the_truth(server, *got)
            assert {added["id"], edited} <= set(got[0]["transaction_id"]) and deleted not in set(
                got[0]["transaction_id"]
            )
        assert mirrored[0].attrs["team_id"] == server.data().team["id"]
        assert mirrored[1].attrs["base_url"] == server.base_url
        self.assert_said(said + more, False if self.quiet() else None)
        texts += shown(mirror, first, report, *mirrored, *fresh)
        assert_no_token(server, texts + said + more)

    @pytest.mark.parametrize("frame", ["transactions_df", "lines_df"])
    def test_a_relative_window_holds_exactly_the_truths_rows_in_it(self, server, client_of, frame):
        client = client_of()
        with clock_warnings() as said:
            df = getattr(client, frame)(since="30D")
        since, until = window_of(df)
        assert abs(until - since - SINCE) < pd.Timedelta("1s")
        times = df["transaction_time"]
        assert not (times > until).any(), "rows after the window's end"
        assert times.empty or until >= times.max()
        truth = truth_rows(server)
        inside = truth[truth["transaction_time"].between(since, until)]
        if frame == "transactions_df":
            assert tx_keys(df) == tx_keys(inside)
        else:
            assert line_keys(df) == truth_lines(server, inside["transaction_id"])
        self.assert_said(said, False if self.quiet() else None)
        assert_no_token(server, shown(df) + said)

    def test_every_frame_says_which_team_and_service_it_is_of(self, server, client_of):
        client, team_id = client_of(), server.data().team["id"]
        with clock_warnings() as said:
            got = [
                client.items_df(),
                client.transactions_df(since="30D"),
                client.lines_df(since="30D"),
                client.locations_df(),
                client.partners_df(),
                client.members_df(),
            ]
            other = client_of("basic").members_df()
        for df in got:
            assert (df.attrs["team_id"], df.attrs["base_url"]) == (team_id, server.base_url)
        assert other.attrs["team_id"] == server.data("basic").team["id"] != team_id
        self.assert_said(said, False if self.quiet() else None)
        assert_no_token(server, shown(*got, other) + said)

    def test_no_token_in_an_error_a_log_line_or_a_window_sync(
        self, server, client_of, tmp_path, caplog
    ):
        """(Every other test checks what it makes too.)"""
        caplog.set_level(logging.DEBUG, logger="invtools")
        bad = "sbx_shop_" + "q" * 32  # the shape of a demo token, refused
        client = client_of()
        mirror = TransactionMirror(tmp_path / "tokens.sqlite", client)
        with clock_warnings() as said:
            report = mirror.sync(look_back="30D")
            texts = shown(client, client.team(), client.now(), mirror, report)
            texts += shown(mirror.transactions_df(), mirror.lines_df()) + said

        def refused() -> None:
            with invtools.Client(bad, base_url=server.base_url, cache=False) as stranger:
                stranger.team()

        for call, error in [
            (lambda: client.get("/v1/items/999999999"), NotFoundError),
            (lambda: client_of("basic").items_df(), TeamModeError),
            (refused, AuthenticationError),
        ]:
            with clock_warnings() as more, pytest.raises(error) as raised:
                call()
            texts += shown(raised.value) + more
            said += more
        self.assert_said(said, False if self.quiet() else None)
        assert_no_token(server, [*texts, caplog.text], bad)

    # -- the clock ------------------------------------------------------------------------

    def test_the_clock_is_the_checked_date_of_the_team_answer(self, server, client_of):
        client = client_of()
        with clock_warnings() as said:
            now = client.now()
        assert abs(now - self.expected_clock(server)) < NEAR
        assert now < wall() + DAY  # never more than a day ahead of the local clock
        self.assert_said(said, self.local)
        if self.local:
            assert said[0]  # a message that says which clock is used, and why

    def test_rows_later_than_the_clock_move_it_on_and_the_window_with_it(self, server, client_of):
        client = client_of()
        with clock_warnings() as said:
            lines = client.lines_df(since="30D")
            now = client.now()
        since, until = window_of(lines)
        assert abs(until - since - SINCE) < pd.Timedelta("1s")
        assert abs(now - until.to_pydatetime()) < NEAR  # the window ends at the clock
        truth = truth_rows(server)
        returned = truth[truth["transaction_time"] >= since]  # at least what the walk saw
        assert returned.empty or now >= returned["created_at"].max() - LATE
        if self.behind:  # moved on to about the stand-in's true data end
            assert abs(until.to_pydatetime() - team_clock(server)) < 2 * LATE
        self.assert_said(said, True if self.behind or self.local else None if self.jumps else False)

    def test_a_refreshed_team_answer_that_jumps_keeps_the_clients_clock(self, server, client_of):
        client = client_of()
        with clock_warnings():
            before = client.now()
        with clock_warnings() as said:
            client.team(refresh=True)
            after = client.now()
        assert abs(after - before) < NEAR
        self.assert_said(said, True if self.jumps else None if self.local else False)
        # A later client of the same cache file believes no more than this one did.
        with clock_warnings():
            later = client_of().now()
        assert later < wall() + DAY
        assert abs(later - before) < NEAR or abs(later - wall()) < NEAR

    def test_every_frame_is_as_of_one_moment_on_the_services_clock(self, server, client_of):
        client = client_of()
        fetch = {
            "items": client.items_df,
            "transactions": client.transactions_df,
            "window": lambda: client.transactions_df(since="30D"),
            "lines": lambda: client.lines_df(since="30D"),
            "members": client.members_df,
        }
        for name, frame in fetch.items():
            with clock_warnings() as said:
                df = frame()
                now = client.now()  # the clock may have moved on during the walk
            as_of = utc(df.attrs["as_of"]).to_pydatetime()
            assert abs(as_of - now) < NEAR, name  # fresh: when its data left the server
            assert abs(utc(df.attrs["data_as_of"]).to_pydatetime() - as_of) < NEAR, name
            self.assert_said(said, False if self.quiet() else None)

    # -- the pace: the one the model states (issue 44, item 6) ----------------------------

    def test_a_client_at_the_default_pace_keeps_to_what_the_model_states(
        self, server, make_client, fake_clock
    ):
        """A model with no budget (the stand-in at ``rate_limit=0``) says so, and a client at
        the real service's default of 5 a second does not wait; any other is paced."""
        client = make_client(server, rate_limit=5, clock=fake_clock, cache=False, concurrency=1)
        pairs = [(t["id"], t["revision"]) for t in server.data("shop").transactions[:11]]
        with clock_warnings() as said:
            client.team()
            start = fake_clock.now
            got = [detail for _row, detail in client.transaction_details(pairs)]
        assert [(d["id"], d["revision"]) for d in got] == pairs
        if self.paced:
            assert fake_clock.now - start >= 10 / 5 * 0.9 and not client.budget.unlimited
        else:
            assert fake_clock.now == start and client.budget.unlimited
        self.assert_said(said, False if self.quiet() else None)


# ------------------------------------------------------------------------------- the models


class TestPlainStandIn(Contract):
    """The stand-in as it ships: its ``Date`` is its data's end, weeks behind the wall clock:
    believed, and nothing said."""


class TestCoarseBudget(Contract):
    """Limit per minute, Reset in whole seconds, on every answer."""

    options: ClassVar[dict[str, Any]] = {"rate_limit": 5, "coarse_budget": True}
    paced = True


class TestBudgetStatedAsResetOnly(Contract):
    options: ClassVar[dict[str, Any]] = {"rate_limit": 5, "quirks": "ratelimit_headers:reset"}
    paced = True


class TestBudgetStatedAsRetryAfterOnly(Contract):
    options: ClassVar[dict[str, Any]] = {"rate_limit": 5, "quirks": "ratelimit_headers:retry_after"}
    paced = True


class TestBudgetNotStated(Contract):
    options: ClassVar[dict[str, Any]] = {"rate_limit": 5, "quirks": "ratelimit_headers:none"}
    paced = True


class TestSharedRateLimit(Contract):
    """One budget per token for every endpoint."""

    options: ClassVar[dict[str, Any]] = {"rate_limit": 5, "quirks": "shared_rate_limit"}
    paced = True


class TestLastCursorNotNull(Contract):
    options: ClassVar[dict[str, Any]] = {"quirks": "last_cursor_not_null"}


class TestTeamWrapped(Contract):
    options: ClassVar[dict[str, Any]] = {"quirks": "team_wrapped"}


class TestDateBehind30Days(Contract):
    """Believed until the rows say otherwise: today 30D windows hold rows after their end."""

    options: ClassVar[dict[str, Any]] = {"date_skew": timedelta(days=-30)}
    behind = timedelta(days=30)


class TestDateBehind400Days(Contract):
    options: ClassVar[dict[str, Any]] = {"date_skew": timedelta(days=-400)}
    behind = timedelta(days=400)


class TestDateAhead400Days(Contract):
    """400 days ahead of the local clock (a fixed skew from the stand-in's own clock, which is
    weeks behind the wall clock, would stop being ahead of it in a year)."""

    local = True

    @classmethod
    def skew_for(cls, sb) -> timedelta:
        return timedelta(days=400) + (wall() - team_clock(sb))


class TestDateIn2200(Contract):
    options: ClassVar[dict[str, Any]] = {"date_skew": timedelta(days=63_300)}
    local = True


class TestDateMissing(Contract):
    """No ``Date`` at all: today the local clock, silently."""

    options: ClassVar[dict[str, Any]] = {"date_skew": "missing"}
    local = True


class TestDateUnparseable(Contract):
    """``Mon, 01 Jan 0001``: today read as 2001, so every row is after a 30D window's end."""

    options: ClassVar[dict[str, Any]] = {"date_skew": "unparseable"}
    local = True


class TestDateJumping(Contract):
    """Consecutive answers 173 years apart: today a refreshed team answer in 2199 is believed,
    and a later client of the same cache believes it too."""

    options: ClassVar[dict[str, Any]] = {"date_skew": "jumping"}
    jumps = True
