"""A client's notebook display against the stand-in server: it shows what the client knows and
never sends a request (a display that waits on the network freezes the notebook)."""

from __future__ import annotations

import html
import socket
import time


def test_display_sends_nothing_and_shows_the_team_once_it_is_known(sb, make_client):
    c = make_client(sb, retries=5)
    out = c._repr_html_()
    assert "team not fetched yet" in out and "client.team()" in out
    assert c.stats.sent == 0 and sb.requests == []
    assert "not fetched yet" in repr(c)

    team = sb.data("shop").team
    c.team()
    out = c._repr_html_()
    assert html.escape(team["name"]) in out and "Location mode (2)" in out
    assert repr(team["name"]) in repr(c)
    assert c.stats.sent == 1 and len(sb.requests) == 1  # the team() call, nothing more
    assert sb.tokens["shop"] not in out + repr(c)


def test_display_of_a_client_whose_server_never_answers_returns_at_once(make_client, sb):
    # A server that accepts connections (the kernel's backlog does) but never answers: the old
    # display waited for its read timeout, about 3 s, on every display of the client.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        c = make_client(sb, base_url=url, retries=5, timeout=(5.0, 30.0))
        started = time.monotonic()
        out = c._repr_html_()
        assert time.monotonic() - started < 0.5
        silent.setblocking(False)
        try:
            conn, _ = silent.accept()
        except BlockingIOError:
            conn = None  # nobody connected
        if conn is not None:
            conn.close()
            raise AssertionError("the display opened a connection")
    assert "team not fetched yet" in out and c.stats.sent == 0
