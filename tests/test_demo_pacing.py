"""Clients of the built-in demo server are paced the same way whichever helper made them
(issue 19): ``connect()``, the token picker and ``each_team`` all follow
``demo_client_options``: the demo server's own limit (none by default), its cache, and an
option given explicitly wins."""

from __future__ import annotations

import pytest

import invtools
from invtools import notebook

pytest.importorskip("ipywidgets")


@pytest.fixture
def fresh_demo(monkeypatch):
    for name in ("INVTOOLS_TOKEN", "INVTOOLS_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    notebook.stop_demo_server()
    yield
    notebook.stop_demo_server()


def pace(client) -> tuple:
    """What decides how a client is paced, and where its answers go."""
    return client.rate_limit, client.rate_limit_scope, client.cache_path


def picked(name: str = "shop", **client_options):
    picker = invtools.token_picker(**{"progress": False, **client_options})
    picker.dropdown.value = name
    assert picker.client is not None, picker.message
    return picker.client


def test_connect_and_the_picker_pace_the_default_demo_server_alike(fresh_demo):
    shop = invtools.connect(quiet=True, progress=False)
    chosen = picked()
    assert invtools.is_demo(chosen)
    assert pace(chosen) == pace(shop) == (0.0, "endpoint", notebook.demo_cache_path())
    # each_team makes its clients with connect(): the same again
    paces = invtools.each_team(lambda c: pace(c), ["shop", "york"], progress=False)
    assert paces["shop"] == paces["york"] == pace(shop)


def test_a_demo_server_with_a_limit_paces_every_client_at_it(fresh_demo):
    sb = invtools.demo_server(rate_limit=5)
    shop = invtools.connect(quiet=True, progress=False)
    chosen = picked("york")
    assert shop.rate_limit == chosen.rate_limit == 5.0
    assert pace(shop) == pace(chosen)
    # the limit is read when a client is made: a minute's budget, one budget per token
    sb.rate_limit, sb.rate_window = 300, 60.0
    sb.quirks = {"shared_rate_limit"}
    later = invtools.connect("basic", quiet=True, progress=False)
    assert pace(later) == pace(picked("basic")) == (5.0, "token", notebook.demo_cache_path())


def test_an_explicit_option_wins_and_other_addresses_are_left_alone(fresh_demo, sb):
    invtools.demo_server(rate_limit=5)
    assert invtools.connect(quiet=True, rate_limit=2).rate_limit == 2.0
    assert picked(rate_limit=2).rate_limit == 2.0
    assert picked(cache=False).cache_path is None
    # a server that is not the demo's: the options as given, the client's own defaults
    assert notebook.demo_client_options(sb.base_url, {"timeout": 3}) == {"timeout": 3}
    notebook.stop_demo_server()  # (sb has the same seed, so the same tokens, as the demo's)
    picker = invtools.token_picker(
        base_url=sb.base_url,
        environ={"INVTOOLS_TOKEN_X": sb.tokens["shop"]},
        cache=False,
        progress=False,
    )
    picker.dropdown.value = "x"
    assert not invtools.is_demo(picker.client) and picker.client.rate_limit == 5.0
