"""A client's notebook display against the stand-in server: it shows the team, and asks for it
once at most, without the retries and backoff of a real call."""

from __future__ import annotations

import html
import time


def test_display_fetches_the_team_once_and_shows_its_name(sb, make_client):
    c = make_client(sb, retries=5)
    out = c._repr_html_()
    team = sb.data("shop").team
    assert html.escape(team["name"]) in out and "Location mode (2)" in out
    assert c.stats.sent == 1
    c._repr_html_()
    assert c.stats.sent == 1  # fetched once, then kept
    assert repr(team["name"]) in repr(c)


def test_display_of_a_failing_server_tries_once_and_never_raises(sb, make_client):
    from invtools.sandbox import Faults

    sb.faults = Faults(rate=1.0, kinds=("503",), seed=1)
    c = make_client(sb, cache=False, retries=5, backoff=2.0)  # a call would wait for seconds
    started = time.monotonic()
    out = c._repr_html_()
    assert time.monotonic() - started < 3  # generous
    assert "not fetched yet" in out and "ServerError" in out and "client.team()" in out
    assert c.stats.sent == 1 and c.stats.retries == 0
    assert len(sb.requests) == 1
    assert sb.tokens["shop"] not in out
