"""What a fetching call writes on stderr: with ``progress=False`` nothing at all (no bar, no
cost line), whatever the client's own setting; with ``progress=True`` its bars and, before a
long first fetch of details, the one cost line ("N transaction details to fetch, about T").
Under ``each_team`` that line names the team it is for.

The client here is paced at 1 request a second, one at a time, on a fake clock: 200 details
"take" over 3 min (the cost line is due) while no test waits for them, and no wait is long enough
to be said (the pacing's own notice of a long wait is not progress: it stays).
"""

from __future__ import annotations

import re

import pytest

import invtools
from invtools.mirror import TransactionMirror

TXS = "/v1/location-txs"

# (name, call, what progress=True shows: the detail bar and cost line, or a walk's bar)
CALLS = [
    ("lines_df", lambda c, **kw: c.lines_df(since="3650D", **kw), "details"),
    ("transactions_df lines", lambda c, **kw: c.transactions_df(with_lines=True, **kw), "details"),
    (
        "transaction_details",
        lambda c, **kw: list(c.transaction_details(list(c.transactions(progress=False)), **kw)),
        "details",
    ),
    ("sync", lambda c, tmp, **kw: TransactionMirror(tmp / "m.sqlite", c).sync(**kw), "details"),
    ("transactions_df", lambda c, **kw: c.transactions_df(**kw), None),  # 2 pages: no bar
    ("transactions", lambda c, **kw: list(c.transactions(limit=20, **kw)), "transactions"),
    ("pages", lambda c, **kw: list(c.pages(TXS, limit=20, **kw)), "transactions"),
    ("items", lambda c, **kw: list(c.items(limit=20, **kw)), "items"),
    ("partners", lambda c, **kw: list(c.partners(limit=2, **kw)), None),
    ("items_df", lambda c, **kw: c.items_df(**kw), None),
    ("stock_df", lambda c, **kw: c.stock_df(**kw), None),
    ("partners_df", lambda c, **kw: c.partners_df(**kw), None),
    ("fetch_costs", lambda c, **kw: c.fetch_costs(**kw), None),  # short walks: no bar
]


def run(call, client, tmp_path, **kw):
    try:
        return call(client, **kw)
    except TypeError:  # the mirror's sync needs a path
        return call(client, tmp_path, **kw)


@pytest.fixture(scope="module")
def small():
    from invtools.sandbox import serve

    # it says nothing of its budget, so a client paces as configured (and costs something)
    with serve(rate_limit=0, seed=0, size=200, quirks="ratelimit_headers:none") as sb:
        yield sb


@pytest.fixture
def paced(small, make_client, fake_clock, tmp_path):
    """A client that shows progress by default, paced on a fake clock, a cache of its own."""
    made = iter(range(100))

    def make(**kw):
        cache = tmp_path / f"cache-{next(made)}.sqlite"
        return make_client(
            small, rate_limit=1, concurrency=1, clock=fake_clock, cache=cache, progress=True, **kw
        )

    return make


@pytest.mark.parametrize(("name", "call", "shows"), CALLS, ids=[c[0] for c in CALLS])
def test_progress_false_on_a_call_silences_everything_it_would_show(
    paced, tmp_path, capfd, name, call, shows
):
    client = paced()
    client.team()
    capfd.readouterr()
    run(call, client, tmp_path, progress=False)
    captured = capfd.readouterr()
    assert captured.err == "" and captured.out == ""


@pytest.mark.parametrize(
    ("name", "call", "shows"), [c for c in CALLS if c[2]], ids=[c[0] for c in CALLS if c[2]]
)
def test_progress_true_on_a_call_shows_its_bars(paced, tmp_path, capfd, name, call, shows):
    client = paced()
    client.team()
    capfd.readouterr()
    run(call, client, tmp_path, progress=True)
    err = capfd.readouterr().err
    if shows == "details":
        assert "200 transaction details to fetch, about 3 min" in err
        assert "transaction details: " in err and "/200" in err
    else:
        assert f"{shows}: " in err


def test_a_client_made_quiet_is_quiet_unless_a_call_asks(paced, tmp_path, capfd):
    quiet = paced()
    quiet.progress = False
    quiet.lines_df()
    assert capfd.readouterr().err == ""
    quiet.lines_df(refresh=True, progress=True)  # cached details: no line, no bar to count
    assert "details to fetch" not in capfd.readouterr().err


# ------------------------------------------------------------------ under each_team


@pytest.fixture
def three_shops(monkeypatch):
    from invtools.sandbox import serve

    with serve(rate_limit=0, size=120, shops=3, seed=7, quirks="ratelimit_headers:none") as sb:
        for name, token in sb.tokens.items():
            monkeypatch.setenv(f"INVTOOLS_TOKEN_{name.upper()}", token)
        monkeypatch.setenv("INVTOOLS_BASE_URL", sb.base_url)
        yield sb


SHOPS = ["shop", "harrogate", "york"]


def _shown(err: str) -> list[str]:
    """The lines a terminal shows of ``err`` (tqdm 4.66 moves the cursor over its bars first)."""
    return re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", err).splitlines()


def test_under_each_team_the_cost_line_names_its_team(three_shops, tmp_path, fake_clock, capfd):
    paced = dict(rate_limit=1, concurrency=1, clock=fake_clock, quiet=True)
    invtools.each_team(lambda c: c.lines_df(), SHOPS, cache=tmp_path / "a.sqlite", **paced)
    said = sorted(line for line in _shown(capfd.readouterr().err) if "to fetch" in line)
    assert len(said) == 3
    for name, line in zip(sorted(SHOPS), said, strict=True):
        n = len(three_shops.data(name).transactions)
        assert line.startswith(f"{name}: {n} transaction details to fetch, about ")
        # 0.98/s (1/s paced with its 2 % margin), after the first answer's 0.8 s
        assert re.search(r" at 0\.9[5-8]\d* requests/s; Ctrl-C keeps what has been fetched$", line)

    # progress=False, of each_team or of the call: no line at all
    invtools.each_team(
        lambda c: c.lines_df(), SHOPS, cache=tmp_path / "b.sqlite", progress=False, **paced
    )
    invtools.each_team(
        lambda c: c.lines_df(progress=False), SHOPS, cache=tmp_path / "c.sqlite", **paced
    )
    assert "to fetch" not in capfd.readouterr().err

    # outside each_team, the same client's line names no team
    alone = invtools.connect("york", cache=tmp_path / "d.sqlite", progress=True, **paced)
    alone.lines_df()
    alone.close()
    said = [line for line in _shown(capfd.readouterr().err) if "to fetch" in line]
    n = len(three_shops.data("york").transactions)
    assert len(said) == 1 and said[0].startswith(f"{n} transaction details to fetch, about ")
