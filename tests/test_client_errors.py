"""The one request path (invtools.api.requester): response -> data/error for every status and
type, and transport failures.

Responses here are built by hand (what any server could send, including non-JSON bodies) and
handed to the requester's public ``to_data``; transport failures come from a session that
raises them (the requester takes its session as an argument, as httpx takes a transport);
test_client_http.py checks the same mapping against the stand-in server.
"""

from __future__ import annotations

import json
import logging
import socket

import pytest
import requests

from invtools.api import Client
from invtools.api.requester import Requester
from invtools.api.stats import Counters
from invtools.errors import (
    APIError,
    AuthenticationError,
    InvalidRequestError,
    NotFoundError,
    RateLimitError,
    ServerError,
    TeamModeError,
    TransportError,
)

TOKEN = "tok_SECRET_errors_0123456789"


def client(**kw) -> Client:
    kw.setdefault("base_url", "http://127.0.0.1:9")
    kw.setdefault("backoff", 0.01)
    return Client(TOKEN, cache=False, rate_limit=0, progress=False, **kw)


def requester(session=None, **kw) -> Requester:
    from invtools.http import make_session

    settings = dict(
        base_url="http://127.0.0.1:9",
        timeout=(1.0, 1.0),
        retries=0,
        backoff=0.01,
        counters=Counters(),
    )
    settings.update(kw)
    return Requester(session if session is not None else make_session(cache_path=None), **settings)


class RaisingSession:
    """A session whose every GET raises ``exc`` (and counts the attempts)."""

    cache_keys = None
    budget = None

    def __init__(self, exc):
        self.exc, self.calls = exc, 0

    def get(self, *args, **kwargs):
        self.calls += 1
        raise self.exc


def response(
    status: int,
    body=None,
    *,
    text: str | None = None,
    reason: str = "Reason",
    content_type: str = "application/json",
) -> requests.Response:
    r = requests.Response()
    r.status_code = status
    r.reason = reason
    r.headers["Content-Type"] = content_type if text is None else "text/html"
    r._content = (text if text is not None else json.dumps(body)).encode()
    r.encoding = "utf-8"
    return r


def envelope(type_: str, title: str = "Title", **extra) -> dict:
    return {
        "id": "ex_" + "a" * 24,
        "type": type_,
        "title": title,
        "correlation_id": "rq_" + "b" * 24,
        **extra,
    }


@pytest.mark.parametrize(
    "status, type_, cls",
    [
        (401, "/errors/tokens/required", AuthenticationError),
        (401, "/errors/tokens/invalid", AuthenticationError),
        (400, "/errors/invalid-team-mode", TeamModeError),
        (400, "/errors/invalid-request", InvalidRequestError),
        (404, "/errors/not-found", NotFoundError),
        (409, "/errors/conflict", InvalidRequestError),
        (429, "/errors/too-many-requests", RateLimitError),
        (500, "/errors/internal", ServerError),
        (502, None, ServerError),
        (503, None, ServerError),
        (504, None, ServerError),
    ],
)
def test_every_status_maps_to_its_error(status, type_, cls):
    body = envelope(type_) if type_ else None
    with pytest.raises(cls) as info:
        requester().to_data(response(status, body), "/v1/partners", 3)
    err = info.value
    assert err.status == status and err.method == "GET" and err.path == "/v1/partners"
    assert err.attempts == 3
    if type_:
        assert err.type == type_ and err.correlation_id == "rq_" + "b" * 24
        assert err.error_id == "ex_" + "a" * 24
        assert "rq_" + "b" * 24 in str(err)


def test_success_returns_the_decoded_json():
    assert requester().to_data(response(200, {"items": [1]}), "/v1/members", 1) == {"items": [1]}


def test_non_json_error_body_uses_the_reason_phrase():
    with pytest.raises(ServerError) as info:
        requester().to_data(
            response(502, text="<html>Bad Gateway</html>", reason="Bad Gateway"), "/v1/items", 6
        )
    assert info.value.title == "Bad Gateway" and info.value.type is None
    assert "502" in str(info.value) and "6 attempt" in str(info.value)


def test_non_json_success_body_is_an_api_error_that_names_the_base_url():
    with pytest.raises(APIError, match="not with JSON") as info:
        requester().to_data(response(200, text="<html>login</html>"), "/v1/items", 1)
    assert "http://127.0.0.1:9" in str(info.value)


def test_401_never_shows_given_and_says_what_to_do():
    body = envelope("/errors/tokens/invalid", "Invalid token", given=TOKEN)
    with pytest.raises(AuthenticationError) as info:
        requester().to_data(response(401, body), "/v1/teams/linked", 1)
    err = info.value
    for text in (str(err), repr(err), repr(err.details), repr(err.args)):
        assert TOKEN not in text
    assert "Integrations" in str(err)


def test_invalid_request_lists_the_parameter_problems():
    body = envelope("/errors/invalid-request", errors=[{"param": "limit", "problem": "max 100"}])
    with pytest.raises(InvalidRequestError, match="limit"):
        requester().to_data(response(400, body), "/v1/items", 1)


def test_server_side_team_mode_error_names_the_team(sb, make_client):
    c = make_client(sb, "basic")
    with pytest.raises(TeamModeError) as info:
        c.get("/v1/items/5")  # get() does not check the mode first: the server refuses
    msg = str(info.value)
    name = sb.data("basic").team["name"]
    assert f"{name!r}" in msg and "Basic mode (0)" in msg and "/v1/items/{id}" in msg
    assert "members()" in msg and "partners()" in msg and "attributes()" in msg
    assert info.value.status == 400 and info.value.correlation_id.startswith("rq_")


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_refused_connection_is_a_transport_error_naming_the_url(caplog):
    caplog.set_level(logging.DEBUG)
    base = f"http://127.0.0.1:{_closed_port()}"
    c = client(base_url=base, retries=2)
    with pytest.raises(TransportError) as info:
        c.get("/v1/teams/linked")
    err = info.value
    assert base in str(err) and "refused" in str(err) and "still running" in str(err)
    assert err.attempts == 3 and isinstance(err.__cause__, requests.ConnectionError)
    # Refused: nothing reached a server, so nothing counts as sent; the retries do count.
    assert c.stats.sent == 0 and c.stats.retries == 2
    assert "retry 1 of 2" in caplog.text
    assert TOKEN not in caplog.text


@pytest.mark.parametrize(
    "exc, words",
    [
        (requests.exceptions.InvalidURL("Failed to parse: port out of range"), "InvalidURL"),
        (requests.exceptions.InvalidSchema("No connection adapters"), "InvalidSchema"),
        (requests.exceptions.MissingSchema("No scheme supplied"), "MissingSchema"),
        (requests.exceptions.TooManyRedirects("Exceeded 30 redirects."), "kept redirecting"),
        (requests.exceptions.ContentDecodingError("bad gzip"), "ContentDecodingError"),
        (requests.exceptions.RequestException("something new"), "RequestException"),
    ],
)
def test_failures_a_retry_cannot_cure_fail_at_once(exc, words):
    session = RaisingSession(exc)
    r = requester(session, retries=5, backoff=5.0)  # a retry would sleep for seconds
    with pytest.raises(TransportError) as info:
        r.send("/v1/members", None)
    assert session.calls == 1 and info.value.attempts == 1 and info.value.__cause__ is exc
    stats = r.counters.snapshot()
    assert words in str(info.value) and stats.retries == 0
    # A URL requests refused to build never left; a redirect loop or a bad body did.
    assert stats.sent == (0 if isinstance(exc, ValueError) else 1)


def test_connection_errors_are_still_retried():
    session = RaisingSession(
        requests.exceptions.ConnectionError("Connection aborted. RemoteDisconnected")
    )
    r = requester(session, retries=2)
    with pytest.raises(TransportError, match="closed the connection"):
        r.send("/v1/members", None)
    stats = r.counters.snapshot()
    assert session.calls == 3 and stats.retries == 2 and stats.sent == 3


def _listener(behaviour: str):
    """A raw socket server that accepts one connection then hangs or hangs up."""
    import threading

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    stop = threading.Event()

    def run():
        srv.settimeout(0.1)
        conns = []
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                continue
            conn.recv(65536)
            if behaviour == "hangup":
                conn.close()
            elif behaviour == "truncate":
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    b'Content-Length: 100\r\n\r\n{"items": ['
                )
                conn.close()
            else:
                conns.append(conn)  # never answer
        for conn in conns:
            conn.close()
        srv.close()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return f"http://127.0.0.1:{srv.getsockname()[1]}", lambda: (stop.set(), t.join())


@pytest.mark.parametrize(
    "behaviour, words",
    [
        ("hangup", "closed the connection"),
        ("truncate", "dropped in the middle"),
        ("silent", "read timeout"),
    ],
)
def test_dropped_and_slow_connections_are_transport_errors_after_retries(behaviour, words):
    base, stop = _listener(behaviour)
    try:
        c = client(base_url=base, retries=1, timeout=(1.0, 0.3))
        with pytest.raises(TransportError) as info:
            c.get("/v1/members")
    finally:
        stop()
    assert words in str(info.value) and base in str(info.value)
    assert info.value.attempts == 2 and info.value.__cause__ is not None
