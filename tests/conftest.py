"""Shared fixtures.

- every test: ``INVTOOLS_TOKEN`` unset and ``XDG_CACHE_HOME`` pointed at a temporary folder,
  so no test reads a developer's token or writes into their real cache directory;
- ``sb``: a fresh stand-in server (``invtools.sandbox.serve``) on 127.0.0.1, rate limit off,
  no quirks or faults -- tests switch those on where they are the point;
- ``make_client``: ``make_client(sb, team="shop", **overrides)`` -> a :class:`Client` for one
  of the sandbox's teams, with its own cache file in ``tmp_path``, pacing off, no progress
  bar, and short backoff so retry tests stay quick.
"""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _isolated_environment(monkeypatch, tmp_path_factory):
    monkeypatch.delenv("INVTOOLS_TOKEN", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))


@pytest.fixture
def sb():
    from invtools.sandbox import serve

    with serve(port=0, rate_limit=0, seed=0, size=600) as server:
        yield server


@pytest.fixture
def make_client(tmp_path):
    from invtools.client import Client

    made = []

    def make(server, team: str = "shop", **overrides):
        settings = dict(base_url=server.base_url, cache=tmp_path / "cache.sqlite",
                        rate_limit=0, progress=False, backoff=0.01, timeout=(2.0, 5.0))
        settings.update(overrides)
        client = Client(server.tokens[team], **settings)
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()
