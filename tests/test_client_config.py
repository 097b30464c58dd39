"""Client set-up without a server: token, base URL, timeouts, reprs. No HTTP is sent."""

from __future__ import annotations

import pickle

import pytest

from invtools._config import clean_token, normalise_base_url
from invtools._types import parse_time
from invtools.api import Client, Team
from invtools.errors import AuthenticationError, ConfigError, TransportError

TOKEN = "tok_SECRET_0123456789abcdef"


def make(**kw):
    kw.setdefault("base_url", "http://127.0.0.1:9")
    kw.setdefault("cache", False)
    kw.setdefault("rate_limit", 0)
    return Client(kw.pop("token", TOKEN), **kw)


def test_no_token_anywhere_says_where_tokens_come_from(monkeypatch):
    monkeypatch.delenv("INVTOOLS_TOKEN", raising=False)
    with pytest.raises(ConfigError) as info:
        Client(cache=False)
    msg = str(info.value)
    assert "Integrations" in msg and "INVTOOLS_TOKEN" in msg and "Client(token=" in msg


def test_token_from_environment_is_cleaned_and_sent(monkeypatch, sb):
    monkeypatch.setenv("INVTOOLS_TOKEN", f"  Bearer {sb.tokens['shop']}\n")
    c = Client(base_url=sb.base_url, cache=False, rate_limit=0)
    assert c.team().name == sb.data("shop").team["name"]  # the server accepted the token
    c.close()


@pytest.mark.parametrize(
    "pasted",
    [
        f"  {TOKEN}  ",
        f"Bearer {TOKEN}",
        f"bearer   {TOKEN}\n",
        f"'{TOKEN}'",
        f'"Bearer {TOKEN}"',
        f"\u201c{TOKEN}\u201d",
        f"\u2018Bearer {TOKEN}\u2019",
        f"\u201e{TOKEN}\u201c",
        f"\u00ab{TOKEN}\u00bb",
    ],
)
def test_pasted_token_is_cleaned(pasted):
    assert clean_token(pasted) == TOKEN


@pytest.mark.parametrize(
    "bad", [f"\u201c{TOKEN}", f"{TOKEN}\u2019", TOKEN[:5] + "\u2013" + TOKEN[6:], TOKEN + "\u00e9"]
)
def test_a_token_with_typographic_or_other_non_ascii_characters_is_refused_in_words(sb, bad):
    """Issue 11, item 5: it got past clean_token and ended in a raw UnicodeEncodeError whose
    .object held "Bearer <token>"."""
    with pytest.raises(ConfigError, match="not plain ASCII") as info:
        Client(bad, base_url=sb.base_url, cache=False, rate_limit=0).team()
    text = str(info.value) + repr(info.value.args)
    assert TOKEN[:8] not in text and "Bearer" not in text


@pytest.mark.parametrize("bad", ["", "   ", "Bearer ", "abc def", "abc\r\nX-Evil: 1", 123])
def test_unusable_token_is_refused_without_echoing_it(bad):
    with pytest.raises(ConfigError) as info:
        clean_token(bad)
    if isinstance(bad, str) and bad.strip():
        assert bad.strip() not in str(info.value)


@pytest.mark.parametrize(
    "url, expected",
    [
        ("https://rest.boxhero-app.com", "https://rest.boxhero-app.com"),
        ("https://rest.boxhero-app.com/", "https://rest.boxhero-app.com"),
        ("https://rest.boxhero-app.com/v1", "https://rest.boxhero-app.com"),
        ("https://rest.boxhero-app.com/v1/", "https://rest.boxhero-app.com"),
        (" HTTPS://REST.boxhero-app.com ", "https://rest.boxhero-app.com"),
        ("https://proxy.example.com/boxhero/v1", "https://proxy.example.com/boxhero"),
        ("http://127.0.0.1:8765", "http://127.0.0.1:8765"),
        ("http://127.1.2.3:80/", "http://127.1.2.3:80"),
        ("http://localhost:8765/v1", "http://localhost:8765"),
        ("http://[::1]:8765", "http://[::1]:8765"),
    ],
)
def test_base_url_is_normalised(url, expected):
    assert normalise_base_url(url) == expected


@pytest.mark.parametrize(
    "url, match",
    [
        ("http://rest.boxhero-app.com", "Refusing plain http://"),
        ("http://10.0.0.5:8765", "Refusing plain http://"),
        ("http://localhost.evil.com", "Refusing plain http://"),
        ("ftp://example.com", "https://"),
        ("rest.boxhero-app.com", "https://"),
        ("https://user:pw@example.com", "user name or password"),
        ("https://example.com/?x=1", "query"),
        ("", "base_url"),
        ("http://127.0.0.1:99999", "port"),
        ("http://127.0.0.1:0", "port"),
        ("https://example.com:https", "port"),
        ("http://[::1", "not a URL"),  # issue 26, item 10: was a bare ValueError
        ("https://[::1:8765/?token=hunter2secret", "not a URL"),
    ],
)
def test_unsafe_or_broken_base_url_is_refused(url, match):
    with pytest.raises(ConfigError, match=match):
        make(base_url=url)


@pytest.mark.parametrize(
    "url",
    [
        "ftp://me:hunter2secret@example.com",  # bad scheme: was echoed before the check
        "me:hunter2secret@example.com",  # no scheme at all
        "https://me:hunter2secret@example.com",
        "https://me:hunter2/secret@example.com",  # a '/' hides the user-info from urlsplit
        "https://example.com/?token=hunter2secret",
        "https://example.com/#hunter2secret",
        "http://example.com/?token=hunter2secret",  # http refused: the query is not shown
        "http://127.0.0.1:99999/?token=hunter2secret",
        "https://[::1/?token=hunter2secret",  # not a URL at all
    ],
)
def test_base_url_errors_never_repeat_credentials_or_query(url):
    with pytest.raises(ConfigError) as info:
        make(base_url=url)
    assert "hunter2" not in str(info.value) and "me:" not in str(info.value)


@pytest.mark.parametrize("timeout", [None, 0, -1, float("inf"), (5, None), "soon"])
def test_timeouts_must_be_finite(timeout):
    with pytest.raises(ConfigError, match="timeout"):
        make(timeout=timeout)


def test_defaults_are_finite_and_keyword_only():
    c = make()
    assert c.timeout == (5.0, 60.0) and c.retries == 5
    with pytest.raises(TypeError):
        Client(TOKEN, "https://rest.boxhero-app.com")  # base_url is keyword-only


@pytest.mark.parametrize(
    "kw",
    [
        {"retries": -1},
        {"retries": 1.5},
        {"rate_limit": -2},
        {"rate_limit_scope": "host"},
        {"backoff": -1},
        {"cache": 3.5},
    ],
)
def test_bad_settings_raise_config_error(kw):
    with pytest.raises(ConfigError):
        make(**kw)


def test_token_in_no_repr_str_or_attribute():
    c = make()
    assert TOKEN not in repr(c)
    assert TOKEN not in str(c)
    assert TOKEN not in repr(vars(c))
    assert all(TOKEN not in repr(v) for v in vars(c).values())
    assert "not fetched yet" in repr(c)


def test_repr_html_of_an_unreachable_client_shows_what_it_knows_and_tries_nothing():
    import socket
    import time

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    c = make(base_url=f"http://127.0.0.1:{port}", retries=5, backoff=2.0)
    started = time.monotonic()
    out = c._repr_html_()
    assert time.monotonic() - started < 0.5
    assert "team not fetched yet" in out and "client.team()" in out and TOKEN not in out
    assert f"127.0.0.1:{port}" in out and c.stats.sent == 0
    assert "not fetched yet" in repr(c)


def test_cache_folder_the_user_named_keeps_its_mode(tmp_path, monkeypatch):
    import os
    import stat

    # INVTOOLS_CACHE_DIR=/tmp (as root) must not lock everyone else out of /tmp.
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    monkeypatch.setenv("INVTOOLS_CACHE_DIR", str(shared))
    for cache in (True, shared):
        c = make(cache=cache)
        c.close()
        assert c.cache_path.parent == shared
        assert stat.S_IMODE(os.stat(shared).st_mode) == 0o777
        assert stat.S_IMODE(os.stat(c.cache_path).st_mode) == 0o600


def test_cache_folders_the_client_creates_are_private(tmp_path, monkeypatch):
    import os
    import stat

    monkeypatch.setenv("INVTOOLS_CACHE_DIR", str(tmp_path / "new" / "cache"))
    c = make(cache=True)
    c.close()
    assert stat.S_IMODE(os.stat(tmp_path / "new").st_mode) == 0o700
    assert stat.S_IMODE(os.stat(c.cache_path.parent).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(c.cache_path).st_mode) == 0o600


def test_unusable_cache_path_is_a_config_error_saying_what_to_do(tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("a file, not a folder")
    with pytest.raises(ConfigError) as info:
        make(cache=afile / "x")
    msg = str(info.value)
    assert str(afile / "x") in msg and "cache=False" in msg and "INVTOOLS_CACHE_DIR" in msg


def test_team_html_and_repr_show_name_id_mode():
    t = Team.from_body({"item": {"id": 4, "name": "<Shop>", "mode": 0}})
    assert t.uses_locations is False and t.mode_name == "Basic"
    assert "&lt;Shop&gt;" in t._repr_html_() and "team 4" in t._repr_html_()
    assert "raw" not in repr(t)
    assert pickle.loads(pickle.dumps(t)) == t


@pytest.mark.parametrize(
    "value, iso",
    [
        ("2026-05-02", "2026-05-02T00:00:00+00:00"),
        ("2026-05-02T01:10:00.000Z", "2026-05-02T01:10:00+00:00"),
        ("2026-05-02T03:10:00+02:00", "2026-05-02T01:10:00+00:00"),
    ],
)
def test_parse_time_is_utc(value, iso):
    assert parse_time(value).isoformat() == iso


def test_parse_time_end_of_day_and_naive():
    from datetime import date, datetime

    assert parse_time(date(2026, 5, 2), end=True).isoformat().startswith("2026-05-02T23:59:59")
    assert parse_time(datetime(2026, 5, 2, 1)).tzinfo is not None
    with pytest.raises(ConfigError, match="not a date or time"):
        parse_time("last tuesday")


def test_path_must_be_an_api_path():
    with pytest.raises(ConfigError, match="/v1/"):
        make().get("https://elsewhere.example.com/v1/items")


def test_walk_arguments_are_checked_before_anything_is_sent():
    c = make()
    with pytest.raises(ValueError):
        c.pages("/v1/items", limit=500)
    with pytest.raises(ConfigError):
        c.transactions(since="2026-05-02", until="2026-05-01")
    with pytest.raises(ConfigError):
        c.transactions(type="sold")
    with pytest.raises(ConfigError):
        c.partners(type="friend")
    assert c.stats.sent == 0


# -- issue 13, item 6: tokens out of tracebacks -----------------------------------------------
def _locals_outside_this_file(exc: BaseException) -> str:
    """Every local of every frame of the traceback (and its chained causes) that is not in
    this test file, as a traceback printed with its locals shows them."""
    import traceback

    te = traceback.TracebackException.from_exception(exc, capture_locals=True)
    text = []
    while te is not None:
        text += [
            f"{name} = {value}"
            for frame in te.stack
            if frame.filename != __file__
            for name, value in (frame.locals or {}).items()
        ]
        te = te.__cause__ or te.__context__
    return "\n".join(text)


def test_no_traceback_local_holds_the_token_in_clear(sb):
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{s.getsockname()[1]}"
    with pytest.raises(TransportError) as info:
        Client(TOKEN, base_url=closed, cache=False, rate_limit=0, retries=0).team()
    shown = _locals_outside_this_file(info.value)
    assert "headers" in shown and TOKEN not in shown  # the urllib3 frames were there

    bad = TOKEN[:10] + " " + TOKEN[10:]
    with pytest.raises(ConfigError) as info:
        Client(bad, cache=False)
    shown = _locals_outside_this_file(info.value)
    assert "token" in shown and TOKEN[:10] not in shown and TOKEN[10:] not in shown

    with pytest.raises(AuthenticationError) as info:  # the server echoes the token it got
        Client(TOKEN, base_url=sb.base_url, cache=False, rate_limit=0).team()
    shown = _locals_outside_this_file(info.value)
    assert "resp" in shown and TOKEN not in shown and TOKEN not in repr(info.value.__dict__)


# -- issue 13, item 7: bad arguments are refused in words, never read as something else ------
@pytest.mark.parametrize("rate", [1e-9, float("nan"), float("inf"), True, -1, "5"])
def test_a_rate_limit_that_is_no_rate_is_refused(rate):
    with pytest.raises(ConfigError, match="rate_limit must be requests per second"):
        Client(TOKEN, base_url="http://127.0.0.1:9", cache=False, rate_limit=rate)


def test_an_empty_cache_path_is_refused_and_nothing_is_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for empty in ("", "  "):
        with pytest.raises(ConfigError, match="cache must be"):
            Client(TOKEN, base_url="http://127.0.0.1:9", cache=empty, rate_limit=0)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "call",
    [
        lambda c: c.item(100001.9),
        lambda c: c.item(True),
        lambda c: c.transaction(5.5),
        lambda c: c.transaction(5, revision=1.5),
        lambda c: list(c.items(item_ids=[1.7])),
        lambda c: list(c.items(item_ids="abc")),
        lambda c: list(c.items(item_ids=100001.9)),
        lambda c: c.items_df(location_ids=[None]),
    ],
)
def test_an_id_that_is_not_a_whole_number_is_refused_before_anything_is_sent(sb, call):
    c = Client(sb.tokens["shop"], base_url=sb.base_url, cache=False, rate_limit=0)
    c.team()
    sb.clear_log()
    with pytest.raises(ConfigError, match="whole number"):
        call(c)
    assert sb.requests == []
    c.close()


def test_ids_as_digits_still_work(sb):
    c = Client(sb.tokens["shop"], base_url=sb.base_url, cache=False, rate_limit=0)
    first = next(c.items())
    assert c.item(str(first["id"]))["id"] == first["id"]
    assert [r["id"] for r in c.items(item_ids=str(first["id"]))] == [first["id"]]
    c.close()


@pytest.mark.parametrize("bad", [42, 1.5, b"/tmp/c.sqlite", ["c.sqlite"]])
def test_a_cache_that_is_no_path_is_the_packages_own_error(bad, tmp_path):
    """Issue 26, item 10: cache_info(cache=42) and TransactionMirror(path=42) gave a bare
    TypeError from os or pathlib; Client(cache=42) too."""
    import invtools

    for call in (
        lambda: invtools.cache_info(cache=bad),
        lambda: invtools.prune_cache(bad),
        lambda: make(cache=bad),
        lambda: invtools.TransactionMirror(bad),
    ):
        with pytest.raises(invtools.ArgumentTypeError, match="path"):
            call()
