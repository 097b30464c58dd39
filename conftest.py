"""Names for the docstring examples (``pytest --doctest-modules``, see pyproject.toml).

The examples in the package's docstrings are written the way an analyst uses invtools, with a
few names assumed from earlier cells. This file provides them, to doctests only:

- ``client``: an :class:`invtools.Client` of the demo shop on a stand-in server
  (:func:`invtools.sandbox.serve`, 200 transactions, on 127.0.0.1, rate limit off);
- ``mirror``: an :class:`invtools.TransactionMirror` of that shop in a temporary file, synced
  once;
- ``sandbox``: the stand-in server itself (its ``base_url`` and demo ``tokens``);
- ``invtools`` and ``pd`` (pandas).

A name is given to a doctest only when its examples use it without defining it (and the module
does not define it either), and the server, client and mirror are made on first use, once per
test session (per xdist worker): a run that needs none of them (``pytest tests/...``) starts
nothing. Every doctest also runs with no ``INVTOOLS_*`` variable set and with the cache and data
directories in a temporary folder, so an example never reads a developer's token, never reaches
the real service and never writes into the user's own folders. After each doctest the built-in
demo server of :func:`invtools.connect` is stopped, if an example started it.
"""

from __future__ import annotations

import ast
import os
import sys

import pytest

#: name -> the session fixture that makes it
PROVIDED = {
    "client": "_doctest_client",
    "mirror": "_doctest_mirror",
    "sandbox": "_doctest_sandbox",
    "invtools": "_doctest_invtools",
    "pd": "_doctest_pandas",
}


@pytest.fixture(scope="session")
def _doctest_sandbox():
    from invtools.sandbox import serve

    with serve(size=200, rate_limit=0) as sb:
        yield sb


@pytest.fixture(scope="session")
def _doctest_client(_doctest_sandbox):
    from invtools import Client

    sb = _doctest_sandbox
    with Client(
        sb.tokens["shop"], base_url=sb.base_url, cache=False, rate_limit=0, progress=False
    ) as client:
        yield client


@pytest.fixture(scope="session")
def _doctest_mirror(_doctest_client, tmp_path_factory):
    from invtools import TransactionMirror

    mirror = TransactionMirror(
        tmp_path_factory.mktemp("doctest-mirror") / "shop.sqlite", _doctest_client
    )
    mirror.sync()
    return mirror


@pytest.fixture(scope="session")
def _doctest_invtools():
    import invtools

    return invtools


@pytest.fixture(scope="session")
def _doctest_pandas():
    import pandas

    return pandas


@pytest.fixture(scope="session")
def _doctest_home(tmp_path_factory):
    home = tmp_path_factory.mktemp("doctest-home")
    return {"XDG_CACHE_HOME": str(home / "cache"), "XDG_DATA_HOME": str(home / "data")}


def free_names(dtest) -> set[str]:
    """Names the examples of ``dtest`` read before (or without) binding them, that its module
    does not define either."""
    bound, free = set(dtest.globs), set()
    for example in dtest.examples:
        try:
            tree = ast.parse(example.source)
        except SyntaxError:
            continue
        names = [n for n in ast.walk(tree) if isinstance(n, ast.Name)]
        stored = {n.id for n in names if not isinstance(n.ctx, ast.Load)}
        free |= {n.id for n in names if isinstance(n.ctx, ast.Load)} - bound - stored
        bound |= stored
    return free


@pytest.fixture(autouse=True)
def _doctest_names(request):
    dtest = getattr(request.node, "dtest", None)
    if dtest is None:  # not a doctest: nothing to do
        yield
        return
    monkeypatch = request.getfixturevalue("monkeypatch")
    for name in list(os.environ):
        if name.startswith("INVTOOLS_"):
            monkeypatch.delenv(name)
    for name, value in request.getfixturevalue("_doctest_home").items():
        monkeypatch.setenv(name, value)
    namespace = request.getfixturevalue("doctest_namespace")
    wanted = free_names(dtest) & set(PROVIDED)
    for name in wanted:
        namespace[name] = request.getfixturevalue(PROVIDED[name])
    yield
    for name in wanted:
        namespace.pop(name, None)
    connection = sys.modules.get("invtools.notebook.connection")
    if connection is not None:
        connection.stop_demo_server()  # a demo server an example started stops with it
