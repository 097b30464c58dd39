"""connect(): a token from the environment, or the built-in demo server, said loudly."""

from __future__ import annotations

import gc
import weakref

import pytest

import invtools
from invtools import notebook


@pytest.fixture
def fresh_demo():
    yield
    notebook.stop_demo_server()


def test_without_a_token_connect_starts_the_demo_server_and_says_so(fresh_demo, capsys):
    client = invtools.connect(cache=False, progress=False)
    err = capsys.readouterr().err
    assert "BUILT-IN DEMO SERVER" in err and "INVTOOLS_TOKEN" in err
    team = client.team()
    assert team.uses_locations and team.name == "Greenfield Hardware & Garden"
    assert notebook.is_demo(client)
    assert client.rate_limit == 0  # no pacing against the local demo server
    # the demo tokens are offered by name to the picker, and the banner is not repeated
    assert set(invtools.team_tokens()) >= {"shop", "basic"}
    cafe = invtools.connect("basic", cache=False)
    assert capsys.readouterr().err == ""
    assert cafe.team().mode_name == "Basic" and not cafe.team().uses_locations
    assert invtools.demo_server() is notebook.demo_server()  # one server per process


def test_a_token_in_the_environment_wins(sb, monkeypatch, fresh_demo, capsys):
    monkeypatch.setenv("INVTOOLS_TOKEN", sb.tokens["basic"])
    monkeypatch.setenv("INVTOOLS_BASE_URL", sb.base_url)
    client = invtools.connect(cache=False)
    assert client.team().name == sb.data("basic").team["name"]
    assert not notebook.is_demo(client) and capsys.readouterr().err == ""
    assert client.rate_limit == 5  # the real service's pacing unless told otherwise


def test_named_team_tokens(sb, monkeypatch, fresh_demo):
    monkeypatch.setenv("INVTOOLS_TOKEN_CAFE", sb.tokens["basic"])
    monkeypatch.setenv("INVTOOLS_BASE_URL", sb.base_url)
    assert invtools.team_tokens() == {"cafe": sb.tokens["basic"]}
    assert invtools.connect("cafe", cache=False).team().mode == 0


def test_unknown_demo_team_says_which_exist(fresh_demo):
    with pytest.raises(invtools.ConfigError, match=r"INVTOOLS_TOKEN_NOPE.*shop"):
        invtools.connect("nope", quiet=True)


def test_session_summary_counts_requests_and_cache_hits(fresh_demo, tmp_path):
    client = invtools.connect(quiet=True, cache=tmp_path / "c.sqlite", progress=False)
    list(client.items())
    list(client.items())
    s = notebook.session_summary()
    assert s["teams"] == ["Greenfield Hardware & Garden"]
    pages = s["pages"] // 2
    assert pages >= 3 and s["from_cache"] == pages and s["sent"] == pages + 1  # + the team
    assert s["rows"] == 2 * len(notebook.demo_server().data("shop").items)


def test_connect_keeps_no_client_alive(fresh_demo, tmp_path, open_files):
    cache = tmp_path / "c.sqlite"
    dropped = invtools.connect(quiet=True, cache=cache, progress=False)
    kept = invtools.connect("basic", quiet=True, cache=False, progress=False)
    dropped.team()
    kept.team()
    assert open_files(cache) > 0
    gone = weakref.ref(dropped)
    del dropped
    gc.collect()
    assert gone() is None  # connect() remembered it only weakly
    assert open_files(cache) == 0  # and its session was closed when it went
    # The summary still counts what the dropped one did, in the order they were made (each_team
    # drops its clients as soon as their team answered: the demo's summary said 0 requests).
    summary = notebook.session_summary()
    shop = invtools.connect(quiet=True, cache=False, progress=False).team().name
    assert summary["teams"] == [shop, kept.team().name] and summary["sent"] == 2


def test_team_tokens_never_display_a_token(monkeypatch):
    monkeypatch.setenv("INVTOOLS_TOKEN_SHOP", "tok-shop-secret")
    monkeypatch.setenv("INVTOOLS_TOKEN", "tok-default-secret")
    found = invtools.team_tokens()
    from IPython.lib.pretty import pretty

    for shown in (repr(found), str(found), f"{found}", pretty(found)):
        assert "secret" not in shown and "shop" in shown and "default" in shown
    assert found["shop"] == "tok-shop-secret"  # still a mapping for those who need the value


def test_an_explicit_base_url_wins_and_needs_a_token(sb, monkeypatch, fresh_demo):
    monkeypatch.setenv("INVTOOLS_TOKEN", sb.tokens["shop"])
    monkeypatch.setenv("INVTOOLS_BASE_URL", "http://127.0.0.1:9")  # nothing listens there
    client = invtools.connect(base_url=sb.base_url, cache=False)
    assert client.base_url == sb.base_url and client.team().uses_locations
    monkeypatch.delenv("INVTOOLS_TOKEN")
    with pytest.raises(invtools.ConfigError, match="no token"):
        invtools.connect(base_url=sb.base_url)


def test_connect_never_points_a_real_token_at_the_demo_server(monkeypatch, fresh_demo):
    demo = notebook.demo_server()
    monkeypatch.setenv("INVTOOLS_TOKEN_MINE", "tok_my-own-team-0123456789")
    demo.clear_log()
    with pytest.raises(invtools.ConfigError, match="not one of the built-in demo server's"):
        invtools.connect("mine", base_url=demo.base_url)
    monkeypatch.setenv("INVTOOLS_BASE_URL", demo.base_url)
    with pytest.raises(invtools.ConfigError, match="not one of the built-in demo server's"):
        invtools.connect("mine")
    assert demo.requests == []
    assert "tok_my-own" not in repr(notebook.session_summary())


def test_stop_demo_server_starts_afresh(monkeypatch, fresh_demo, capsys):
    monkeypatch.setenv("INVTOOLS_TOKEN_BASIC", "the-users-own")  # not the demo's to remove
    first = invtools.connect(cache=False, progress=False, retries=0)
    server = notebook.demo_server()
    assert "BUILT-IN DEMO SERVER" in capsys.readouterr().err
    assert set(invtools.team_tokens()) == {"shop", "harrogate", "york", "basic"}
    assert notebook.session_summary()["teams"] == ["Greenfield Hardware & Garden"]

    notebook.stop_demo_server()
    # The demo tokens it exported went with it (connect("shop") must not send a dead demo
    # token to the real service); a token the user set stays.
    assert invtools.team_tokens() == {"basic": "the-users-own"}
    assert notebook.session_summary()["teams"] == [] and not notebook.is_demo(first)
    with pytest.raises(invtools.TransportError):
        first.team(refresh=True)  # its server is gone
    notebook.stop_demo_server()  # nothing runs: harmless

    second = invtools.connect(cache=False, progress=False)
    assert "BUILT-IN DEMO SERVER" in capsys.readouterr().err  # said again for the new server
    assert notebook.demo_server() is not server and notebook.is_demo(second)
    assert second.team().name == "Greenfield Hardware & Garden"


def test_connect_with_something_other_than_a_team_name_says_what_it_takes():
    """Issue 13, item 7: connect(5) gave a raw AttributeError."""
    import invtools

    for bad in (5, 1.5, ["shop"]):
        with pytest.raises(TypeError, match="team is a name such as 'shop'"):
            invtools.connect(bad)


@pytest.mark.parametrize(
    "pasted", ["tok_AbCdEf0123456789aBcDeF", "eyJhbGciOi.JIUzI1NiJ9-x_y", "  Bearer abc.def  "]
)
def test_a_token_passed_as_the_team_name_is_never_repeated(monkeypatch, fresh_demo, pasted):
    """connect("tok_...") said the token back twice: as the team and in INVTOOLS_TOKEN_<NAME>."""
    monkeypatch.delenv("INVTOOLS_TOKEN", raising=False)
    with pytest.raises(invtools.ConfigError) as caught:
        invtools.connect(pasted, quiet=True, cache=False)
    message = str(caught.value)
    for part in pasted.split():
        assert part.upper() not in message.upper() or part == "Bearer"
    assert "Client(token" in message  # where a token goes


@pytest.mark.parametrize(
    "call",
    [
        lambda: invtools.team_tokens(environ=42),
        lambda: invtools.team_tokens(environ=["INVTOOLS_TOKEN=x"]),
        lambda: invtools.each_team(None),
        lambda: invtools.each_team("shop"),
    ],
)
def test_bad_arguments_to_the_notebook_helpers_are_the_packages_own_errors(call):
    """Issue 26, item 10: AttributeError and "'NoneType' object is not callable" before."""
    with pytest.raises(invtools.ArgumentTypeError):
        call()


def test_the_demo_server_asked_for_again_with_other_options_says_so(fresh_demo):
    """Issue 26, item 9: demo_server(...) with other options silently gave the first server."""
    first = notebook.demo_server()
    assert notebook.demo_server() is first  # the same options: the same server
    with pytest.raises(invtools.ConfigError, match="stop_demo_server"):
        notebook.demo_server(rate_limit=5)
    notebook.stop_demo_server()
    assert notebook.demo_server(rate_limit=5).rate_limit == 5
