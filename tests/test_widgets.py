"""The notebook widgets, driven without a browser: set ``.value``, ``click()``, then assert on
the client they hand out, their status text, the callbacks, and the data they plotted.

The token picker is checked against a real stand-in server over HTTP. Token safety is checked
where a token could leak: the synced state of every widget (``get_state()`` of the picker and
all its descendants, and ``Widget.get_manager_state()`` of every live widget, which is what a
notebook saves), reprs, status messages, printed output and log records.
"""

from __future__ import annotations

import html
import json
import logging
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pandas as pd
import pytest

ipywidgets = pytest.importorskip("ipywidgets")

from invtools._config import DEFAULT_BASE_URL  # noqa: E402
from invtools.api import Client  # noqa: E402
from invtools.frames import lines_df, transactions_df  # noqa: E402
from invtools.notebook import activity_explorer, scrub, token_picker  # noqa: E402
from invtools.viz import activity_table  # noqa: E402

FAST = {"cache": False, "rate_limit": 0, "progress": False, "backoff": 0.01, "timeout": (2.0, 5.0)}


@pytest.fixture(scope="module")
def server():
    from invtools.sandbox import serve

    with serve(port=0, rate_limit=0, seed=0, size=300) as sb:
        yield sb


@pytest.fixture
def env(server, monkeypatch):
    """The sandbox's tokens exported the way a user would: INVTOOLS_TOKEN_<NAME>."""
    for name, token in server.tokens.items():
        monkeypatch.setenv(f"INVTOOLS_TOKEN_{name.upper()}", token)
    return server.tokens


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    import matplotlib.pyplot as plt

    plt.close("all")


def picker_for(server, **kw):
    return token_picker(base_url=kw.pop("base_url", server.base_url), **{**FAST, **kw})


def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def all_states(widget) -> list[dict]:
    """get_state() of ``widget`` and every widget it contains, recursively."""
    out, todo, seen = [], [widget], set()
    while todo:
        w = todo.pop()
        if id(w) in seen:
            continue
        seen.add(id(w))
        out.append(w.get_state())
        for name in w.keys:
            value = getattr(w, name)
            items = value if isinstance(value, (list, tuple)) else [value]
            todo.extend(v for v in items if isinstance(v, ipywidgets.Widget))
    return out


def assert_no_token(picker, tokens, *texts):
    blobs = [
        json.dumps(all_states(picker), default=repr),
        json.dumps(ipywidgets.Widget.get_manager_state(), default=repr),
        repr(picker),
        str(picker.message),
        repr(picker.client),
        repr(picker.team),
        repr(picker.dropdown.options),
        *texts,
    ]
    for token in tokens:
        for blob in blobs:
            assert token not in blob


# ------------------------------------------------------------------------------ token picker


def test_env_tokens_are_offered_by_name_and_choosing_one_connects(server, env):
    seen, observed = [], []
    picker = picker_for(server, on_change=seen.append)
    picker.observe(lambda ch: observed.append(ch["new"]), names="client")
    assert picker.names == ["basic", "shop"]
    assert picker.client is None and picker.team is None

    picker.dropdown.value = "shop"

    shop = server.data("shop").team
    assert picker.team.id == shop["id"] and picker.team.name == shop["name"]
    assert isinstance(picker.client, Client) and picker.client.team().id == shop["id"]
    assert seen == [picker.client] and observed == [picker.client]
    assert (
        f"<b>{html.escape(shop['name'], quote=False)}</b>" in picker.status.value
        and "Location mode" in picker.message
    )
    assert server.base_url in picker.message and "✓" in picker.status.value
    assert_no_token(picker, env.values())


def test_default_token_is_offered_as_default(server, monkeypatch):
    monkeypatch.setenv("INVTOOLS_TOKEN", server.tokens["shop"])
    picker = picker_for(server, environ={"INVTOOLS_TOKEN": server.tokens["shop"]})
    assert picker.names == ["default"]
    picker.dropdown.value = "default"
    assert picker.team.name == server.data("shop").team["name"]


def test_pasted_token_is_cleared_before_it_reaches_the_network():
    from invtools.sandbox import serve

    field_while_answering = []
    picker = None

    def on_request(line):  # the server's log hook, called while it answers (before it replies)
        if "/v1/teams/linked" in line:
            field_while_answering.append(picker.password.value)

    with serve(port=0, rate_limit=0, size=50, log=on_request) as sb:
        token = sb.tokens["shop"]
        picker = token_picker(base_url=sb.base_url, environ={}, **FAST)
        assert picker.names == [] and "paste a token" in picker.message

        picker.password.value = f"  Bearer {token}\n"
        picker.button.click()

        assert field_while_answering == [""]  # already emptied when the token was sent
        assert picker.password.value == ""
        assert picker.team.name == sb.data("shop").team["name"]
        assert "pasted token" in picker.message
        assert picker.dropdown.value is None
        assert_no_token(picker, [token])
        picker.client.close()


def test_a_revoked_token_is_refused_even_while_its_team_is_cached(sb, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)  # every logger, the cache's included
    picker = token_picker(
        base_url=sb.base_url,
        environ={"INVTOOLS_TOKEN_SHOP": sb.tokens["shop"]},
        **{**FAST, "cache": tmp_path / "responses.sqlite"},
    )
    picker.dropdown.value = "shop"
    assert picker.client is not None and "Connected" in picker.message
    sb.revoke_token("shop")  # deleted in the web app meanwhile; the team is cached for hours
    picker.button.click()  # check it again
    assert picker.client is None and picker.team is None
    assert "token refused" in picker.message and "✗" in picker.status.value
    # The server was asked each time, and said no the second time.
    assert [(r.path, r.status) for r in sb.requests] == [
        ("/v1/teams/linked", 200),
        ("/v1/teams/linked", 401),
    ]
    assert_no_token(picker, [sb.tokens["shop"]], caplog.text)


def test_a_pasted_token_is_emptied_whatever_is_done_next(server, env):
    pasted = "tok_pasted-then-a-name-was-chosen-0123456789"
    picker = picker_for(server)
    picker.password.value = pasted
    picker.dropdown.value = "shop"  # a name chosen instead of pressing Connect
    assert picker.password.value == ""
    assert picker.team.name == server.data("shop").team["name"]  # the choice wins
    assert "pasted token was not used" in picker.message
    assert_no_token(picker, [pasted, *env.values()])

    picker.password.value = pasted
    picker.refresh()
    assert picker.password.value == ""
    picker.password.value = pasted
    picker.connect("basic")
    assert picker.password.value == "" and not picker.team.uses_locations
    assert_no_token(picker, [pasted, *env.values()])


@pytest.fixture
def demo():
    """The built-in demo server as connect() starts it with no token in the environment: its
    tokens exported as INVTOOLS_TOKEN_SHOP/_BASIC. Stopped afterwards."""
    import invtools
    from invtools.notebook import stop_demo_server

    invtools.connect(quiet=True, cache=False)
    yield invtools.demo_server()
    stop_demo_server()


def test_in_demo_mode_demo_tokens_are_checked_at_the_demo_server(demo, loopback_only):
    from invtools import is_demo

    picker = token_picker(**FAST)  # no base_url: INVTOOLS_BASE_URL, else the service
    assert picker.names == ["basic", "harrogate", "shop", "york"]  # the demo teams
    assert picker.base_url == DEFAULT_BASE_URL
    demo.clear_log()
    picker.dropdown.value = "shop"
    assert loopback_only == []  # nothing tried to leave this machine
    assert picker.client is not None and is_demo(picker.client)
    assert picker.team.name == demo.data("shop").team["name"]
    assert [r.path for r in demo.requests] == ["/v1/teams/linked"]
    assert demo.base_url in picker.message and "demo server" in picker.message
    # Wherever the picker points, a demo token goes only to the demo server.
    picker = token_picker(base_url="https://inventory.example.com", **FAST)
    picker.dropdown.value = "basic"
    assert loopback_only == [] and is_demo(picker.client)
    assert_no_token(picker, demo.tokens.values())


def test_in_demo_mode_a_real_token_never_goes_to_the_demo_server(demo, loopback_only):
    real = "tok_a-real-teams-token-0123456789abcdef"
    # Pointed at the demo server (as a notebook may do): the pasted token is not sent at all.
    picker = token_picker(base_url=demo.base_url, **FAST)
    demo.clear_log()
    picker.password.value = real
    picker.button.click()
    assert demo.requests == [] and picker.client is None
    assert "not one of the built-in demo server's" in picker.message
    assert_no_token(picker, [real])
    # Pointed nowhere: it goes to the real service's address (refused here), not the demo's.
    picker = token_picker(**{**FAST, "retries": 0})
    picker.password.value = real
    picker.button.click()
    assert demo.requests == [] and picker.client is None
    assert loopback_only == ["rest.boxhero-app.com"]
    assert f"Could not reach {DEFAULT_BASE_URL}" in picker.message
    assert_no_token(picker, [real])


def test_refused_pasted_token_says_how_to_fix_it_and_never_shows_it(server, caplog):
    caplog.set_level(logging.DEBUG)
    bad = "tok_this-one-was-deleted-0123456789"  # the stand-in server echoes it in `given`
    seen = []
    picker = picker_for(server, environ={}, on_change=seen.append)
    picker.password.value = bad
    picker.button.click()

    assert picker.client is None and seen == []
    assert "token refused" in picker.message
    assert (
        "it may have been deleted; issue a new one under Settings > Integrations" in picker.message
    )
    assert "✗" in picker.status.value
    assert_no_token(picker, [bad], caplog.text)


def test_wrong_base_url_closed_port_names_the_url(server, env):
    url = closed_port_url()
    picker = picker_for(server, base_url=url, **{**FAST, "retries": 0})
    picker.dropdown.value = "shop"
    assert picker.client is None
    assert url in picker.message and "Could not reach" in picker.message
    assert "connection was refused" in picker.message and "Check the base URL" in picker.message
    assert_no_token(picker, env.values())


def test_wrong_base_url_path_is_a_404_that_names_the_url(server, env):
    picker = picker_for(server, base_url=server.base_url + "/not-the-api")
    picker.dropdown.value = "shop"
    assert picker.client is None
    assert "404" in picker.message
    assert f"{server.base_url}/not-the-api/v1/teams/linked" in picker.message
    assert "Check the base URL" in picker.message


def test_insecure_base_url_is_refused_before_sending(server, env):
    picker = picker_for(server, base_url="http://inventory.example.com")
    picker.dropdown.value = "shop"
    assert picker.client is None and "https://" in picker.message
    assert_no_token(picker, env.values())


def test_basic_mode_team_connects_with_a_warning(server, env):
    seen = []
    picker = picker_for(server, on_change=seen.append)
    picker.dropdown.value = "basic"
    basic = server.data("basic").team
    assert picker.team.name == basic["name"] and not picker.team.uses_locations
    assert seen == [picker.client]
    for word in (
        "Basic mode",
        "does not manage stock by location",
        "items",
        "stock",
        "transactions",
    ):
        assert word in picker.message
    assert "⚠" in picker.status.value


def test_a_failed_choice_drops_the_previous_client(server, env, monkeypatch):
    observed = []
    picker = picker_for(server)
    picker.observe(lambda ch: observed.append(ch["new"]), names="client")
    picker.dropdown.value = "shop"
    assert picker.client is not None
    monkeypatch.delenv("INVTOOLS_TOKEN_BASIC")
    picker.dropdown.value = "basic"
    assert picker.client is None and picker.team is None and observed[-1] is None
    assert "INVTOOLS_TOKEN_BASIC" in picker.message


def live_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.is_alive()}


def assert_ended(threads: set[threading.Thread]) -> None:
    for thread in threads:
        thread.join(timeout=30)
    assert not [t for t in threads if t.is_alive()]


# The picker's promise: the client it replaces is closed, so its connections and cache file do
# not pile up. Seen from outside: the cache file is held open by one client at a time, and every
# thread a replaced client caused (the server's, one per kept-alive connection) ends.


def test_switching_teams_closes_the_previous_client(server, env, monkeypatch, tmp_path, open_files):
    cache = tmp_path / "responses.sqlite"
    before = live_threads()
    # Rate-limited (generously): pacing must not start threads of its own either.
    picker = picker_for(server, **{**FAST, "rate_limit": 1000, "cache": cache})
    old_and_new = []
    picker.observe(lambda ch: old_and_new.append((ch["old"], ch["new"])), names="client")

    picker.dropdown.value = "shop"
    shop = picker.client
    one_client = open_files(cache)
    shop_threads = live_threads() - before
    assert one_client > 0 and shop_threads

    picker.dropdown.value = "basic"
    basic = picker.client
    assert basic is not shop and basic.team().name == server.data("basic").team["name"]
    assert old_and_new[-1] == (shop, basic)  # observers still see which client was replaced
    assert_ended(shop_threads)
    # SQLite parks a closed connection's database descriptor while another connection of the
    # process holds a lock on the file (POSIX locks belong to the process), and hands it to the
    # next connection: so the count after one switch is the steady state, and must not grow.
    after_a_switch = open_files(cache)
    assert one_client <= after_a_switch <= 2 * one_client
    basic_threads = live_threads() - before
    assert basic_threads

    picker.button.click()  # reconnecting the same team hands out a new client, closes the old
    assert picker.client is not basic and picker.client is not None
    assert_ended(basic_threads)
    for name in ["shop", "basic", "shop", "basic"]:
        picker.dropdown.value = name
        assert picker.client.team().name == server.data(name).team["name"]
    assert open_files(cache) == after_a_switch

    # A failed choice closes the client it drops, as well as the one it made.
    monkeypatch.delenv("INVTOOLS_TOKEN_SHOP")
    picker.dropdown.value = "shop"
    assert picker.client is None
    assert_ended(live_threads() - before)
    assert open_files(cache) == 0


def test_a_refused_token_closes_both_the_new_and_the_previous_client(
    server, env, monkeypatch, tmp_path, open_files
):
    closed = []
    real_close = Client.close
    monkeypatch.setattr(Client, "close", lambda self: (closed.append(self), real_close(self)))
    cache = tmp_path / "responses.sqlite"
    before = live_threads()
    picker = picker_for(server, **{**FAST, "rate_limit": 1000, "cache": cache})
    picker.dropdown.value = "shop"
    shop = picker.client
    shop_threads = live_threads() - before
    assert shop is not None and open_files(cache) > 0

    picker.password.value = "tok_refused-0123456789"
    picker.button.click()
    assert picker.client is None and "token refused" in picker.message
    # The previous client, seen from outside: its threads end and it lets go of the cache file
    # (it is still referenced here, so only closing it does that).
    assert_ended(shop_threads)
    assert open_files(cache) == 0
    # The refused client is never handed out, and once it is garbage its resources go anyway:
    # only a spy on its public close() sees that the picker closed it at once.
    assert shop in closed and len([c for c in closed if c is not shop]) == 1


def test_a_failing_callback_is_logged_without_the_token(server, env, caplog):
    caplog.set_level(logging.DEBUG, logger="invtools")
    token = env["shop"]

    def leaky(client):
        raise ValueError(f"could not use Bearer {token} for export")

    picker = picker_for(server, on_change=leaky)
    picker.dropdown.value = "shop"
    assert picker.client is not None
    records = [r for r in caplog.records if "callback" in r.getMessage()]
    assert len(records) == 1 and records[0].levelno == logging.WARNING
    logged = records[0].getMessage()
    assert "ValueError: could not use Bearer *** for export" in logged
    assert token not in logged and token not in caplog.text
    assert_no_token(picker, env.values(), caplog.text)


def test_base_url_defaults_to_invtools_base_url_from_the_environment(server, monkeypatch):
    token = server.tokens["shop"]
    # From os.environ when no environ is given, as connect() reads it.
    monkeypatch.setenv("INVTOOLS_BASE_URL", server.base_url)
    monkeypatch.setenv("INVTOOLS_TOKEN_SHOP", token)
    picker = token_picker(**FAST)
    assert picker.base_url == server.base_url
    picker.dropdown.value = "shop"
    assert picker.client.base_url == server.base_url
    assert picker.team.name == server.data("shop").team["name"]

    # From the given environ when there is one (the tokens' environment).
    picker = token_picker(
        environ={"INVTOOLS_BASE_URL": server.base_url, "INVTOOLS_TOKEN_SHOP": token}, **FAST
    )
    picker.dropdown.value = "shop"
    assert picker.client is not None and picker.client.base_url == server.base_url

    # An explicit base_url wins; unset or empty means the real service.
    assert token_picker(base_url="https://other.example").base_url == "https://other.example"
    assert token_picker(environ={"INVTOOLS_TOKEN_SHOP": token}).base_url == DEFAULT_BASE_URL
    assert token_picker(environ={"INVTOOLS_BASE_URL": ""}).base_url == DEFAULT_BASE_URL
    monkeypatch.delenv("INVTOOLS_BASE_URL")
    assert token_picker().base_url == DEFAULT_BASE_URL


def test_callbacks_list_decorator_and_a_failing_callback(server, env):
    calls = []

    def broken(client):
        raise RuntimeError("boom")

    picker = picker_for(server, on_change=[lambda c: calls.append(("a", c)), broken])

    @picker.on_change
    def later(client):
        calls.append(("b", client))

    picker.dropdown.value = "shop"
    assert [name for name, _ in calls] == ["a", "b"]
    assert all(c is picker.client for _, c in calls)
    assert "A callback failed: RuntimeError: boom" in picker.message
    picker.button.click()  # nothing pasted: reconnects the chosen team
    assert [name for name, _ in calls] == ["a", "b", "a", "b"]


def test_refresh_offers_a_token_exported_later(server, env, monkeypatch):
    picker = picker_for(server)
    picker.dropdown.value = "shop"
    monkeypatch.setenv("INVTOOLS_TOKEN_SECOND", env["shop"])
    picker.refresh()
    assert picker.names == ["basic", "second", "shop"] and picker.dropdown.value == "shop"
    picker.dropdown.value = "second"
    assert picker.team.name == server.data("shop").team["name"]
    assert_no_token(picker, env.values())


def test_connect_without_a_choice_asks_for_one(server):
    picker = picker_for(server, environ={})
    picker.button.click()
    assert picker.client is None and "Paste a token" in picker.message


class _EchoHandler(BaseHTTPRequestHandler):
    """A server that repeats the token it got in every part of an error it can."""

    def do_GET(self):  # noqa: N802
        token = self.headers.get("Authorization", "").removeprefix("Bearer ")
        body = json.dumps(
            {
                "type": "/errors/forbidden",
                "title": f"token {token} is not allowed",
                "errors": [
                    {"parameter": "token", "given": token, "message": f"{token} has no access"}
                ],
                "correlation_id": "rq_echo",
            }
        ).encode()
        self.send_response(403)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_messages_are_scrubbed_when_the_server_echoes_the_token(caplog):
    caplog.set_level(logging.DEBUG)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _EchoHandler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        token = "echo-me-please-9f8e7d6c"
        picker = token_picker(
            base_url=f"http://127.0.0.1:{httpd.server_port}",
            environ={"INVTOOLS_TOKEN_ECHO": token},
            **FAST,
        )
        picker.dropdown.value = "echo"
        assert picker.client is None
        assert "403" in picker.message and "***" in picker.message
        assert_no_token(picker, [token], caplog.text)
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_nothing_printed_contains_a_token(server, env, capsys):
    picker = picker_for(server)
    picker.dropdown.value = "shop"
    picker.password.value = env["basic"]
    picker.button.click()
    print(picker, picker.client, picker.team)
    from IPython.core.formatters import format_display_data

    bundle = format_display_data(picker)  # what a notebook shows for the picker
    out = capsys.readouterr()
    assert picker.team.name == server.data("basic").team["name"]
    assert_no_token(picker, env.values(), out.out, out.err, json.dumps(bundle, default=repr))


def test_scrub_masks_the_longest_secret_first():
    assert scrub("abc abcdef", ["abc", "abcdef"]) == "*** ***"
    assert scrub("nothing here", ["", "zz"]) == "nothing here"


# -------------------------------------------------------------------------- activity explorer


def make_transactions(n: int = 240, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    start = pd.Timestamp("2026-01-01", tz="UTC")
    times = start + pd.to_timedelta(np.sort(rng.uniform(0, 120, n)), unit="D")
    types = rng.choice(["in", "out", "out", "move", "adjust"], n)
    qty = rng.integers(1, 40, n).astype(float)
    qty[types == "adjust"] *= -1
    return pd.DataFrame(
        {
            "transaction_id": np.arange(1, n + 1),
            "type": pd.Categorical(types, categories=["in", "out", "move", "adjust"]),
            "transaction_time": times,
            "total_quantity": qty,
            "partner_name": pd.array(rng.choice(["Acme", "Bolt Co", None], n), dtype="string"),
            "to_location_name": pd.array(rng.choice(["Shop", "Store room"], n), dtype="string"),
            "from_location_name": pd.array([None] * n, dtype="string"),
        }
    )


def bars(ax) -> dict[str, np.ndarray]:
    """Bar heights per legend label, as drawn."""
    return {c.get_label(): np.array([p.get_height() for p in c.patches]) for c in ax.containers}


def assert_drawn(ex, expected: pd.DataFrame):
    pd.testing.assert_frame_equal(ex.table, expected)
    drawn = bars(ex.ax)
    assert list(drawn) == list(expected.columns)
    for col in expected.columns:
        np.testing.assert_allclose(drawn[col], expected[col].to_numpy(dtype=float))


@pytest.fixture(scope="module")
def tx():
    return make_transactions()


def test_explorer_draws_what_activity_table_counts(tx):
    ex = activity_explorer(tx)
    assert (ex.since.value, ex.until.value) == (
        tx.transaction_time.min().date(),
        tx.transaction_time.max().date(),
    )
    assert_drawn(
        ex,
        activity_table(tx, "W", "type", "count", top=8, since=ex.since.value, until=ex.until.value),
    )
    assert ex.image.value[:8] == b"\x89PNG\r\n\x1a\n"
    # The summary: totals per type, the grand total and the busiest week.
    assert ex.summary["count"].to_dict() == tx["type"].value_counts().to_dict()
    per_week = ex.table.sum(axis=1)
    assert ex.busiest == (per_week.idxmax(), per_week.max())
    assert f"<b>Total:</b> {len(tx)} transactions" in ex.summary_html.value
    assert "Busiest week" in ex.summary_html.value


def test_changing_frequency_metric_and_kind_redraws(tx):
    ex = activity_explorer(tx)
    first_png = ex.image.value
    ex.freq.value = "M"
    expected = activity_table(tx, "M", since=ex.since.value, until=ex.until.value)
    assert_drawn(ex, expected)
    assert len(ex.table) == 4 and ex.image.value != first_png

    ex.metric.value = "quantity"
    expected = activity_table(
        tx, "M", metric="quantity", since=ex.since.value, until=ex.until.value
    )
    assert_drawn(ex, expected)
    assert ex.summary["quantity"].sum() == pytest.approx(tx["total_quantity"].abs().sum())
    assert "units" in ex.summary_html.value

    ex.kind.value = "line"
    assert ex.ax.containers == [] and len(ex.ax.get_lines()) == 4
    np.testing.assert_allclose(ex.ax.get_lines()[0].get_ydata(), expected["in"].to_numpy())


def test_type_filter_and_date_range(tx):
    ex = activity_explorer(tx)
    ex.types.value = ("out", "adjust")
    kept = tx[tx["type"].isin(["out", "adjust"])]
    assert_drawn(ex, activity_table(kept, "W", since=ex.since.value, until=ex.until.value))
    assert list(ex.table.columns) == ["out", "adjust"]

    ex.since.value, ex.until.value = (
        pd.Timestamp("2026-02-02").date(),
        pd.Timestamp("2026-02-15").date(),
    )
    expected = activity_table(kept, "W", since="2026-02-02", until="2026-02-15")
    assert_drawn(ex, expected)
    assert len(ex.table) == 2
    in_range = kept[
        (kept.transaction_time >= "2026-02-02") & (kept.transaction_time < "2026-02-16")
    ]
    assert int(ex.table.to_numpy().sum()) == len(in_range)

    ex.types.value = ()
    assert ex.table.to_numpy().sum() == 0 and ex.busiest is None
    assert "no transactions in range" in [t.get_text() for t in ex.ax.texts]


def test_split_by_location_and_by_supplier_or_customer(tx):
    ex = activity_explorer(tx)
    assert "item" not in ex.by.options
    assert ex.by.options == ("type", "location", "supplier", "customer")  # never mixed
    ex.by.value = "supplier"
    assert_drawn(
        ex, activity_table(tx, "W", "supplier", since=ex.since.value, until=ex.until.value)
    )
    deliveries = tx[(tx["type"] == "in") & tx["partner_name"].notna()]
    assert set(ex.table.columns) == {"Acme", "Bolt Co"}
    assert ex.table.to_numpy().sum() == len(deliveries)
    assert ex.ax.get_legend().get_title().get_text() == "supplier"
    assert f"<b>Total:</b> {len(deliveries)} transactions with a supplier" in ex.summary_html.value
    ex.by.value = "customer"
    sales = tx[(tx["type"] == "out") & tx["partner_name"].notna()]
    assert ex.table.to_numpy().sum() == len(sales)
    assert ex.ax.get_legend().get_title().get_text() == "customer"
    ex.by.value = "location"
    assert set(ex.table.columns) == {"Shop", "Store room"}


def test_a_bad_range_is_a_message_in_words_not_an_exception(tx):
    ex = activity_explorer(tx)
    ex.since.value = pd.Timestamp("2026-03-01").date()
    ex.until.value = pd.Timestamp("2026-02-01").date()
    assert "Start 2026-03-01 is after end 2026-02-01" in ex.message.value and ex.table.empty
    assert "datetime" not in ex.message.value + repr(ex)
    ex.until.value = pd.Timestamp("2026-03-31").date()
    assert ex.message.value == "" and not ex.table.empty


def test_the_date_range_follows_the_frame_not_the_lines(server):
    view = server.data("shop")
    history = transactions_df(view.transactions)
    lines = lines_df([view.transaction(row["id"]) for row in view.transactions])  # all of it
    since = history["transaction_time"].max() - pd.Timedelta(days=60)
    recent = history[history["transaction_time"] >= since]  # a frame fetched with since=
    first, last = (recent["transaction_time"].min().date(), recent["transaction_time"].max().date())

    ex = activity_explorer(recent, lines=lines)
    assert (ex.since.value, ex.until.value) == (first, last)
    assert (ex.since.min, ex.since.max, ex.until.min, ex.until.max) == (first, last, first, last)
    ex.until.value = first - pd.Timedelta(days=30)  # outside the data: held at its edge
    assert ex.until.value == first
    ex.until.value = last
    for split in ("type", "item"):
        ex.by.value = split
        # Weeks of the frame only: no months of zeros before it.
        assert ex.table.index[0] == pd.Period(first, "W").start_time.tz_localize("UTC"), split
        assert ex.table.index[-1] <= pd.Timestamp(last, tz="UTC"), split
    in_range = lines[lines["transaction_time"] >= pd.Timestamp(first, tz="UTC")]
    assert int(ex.table.to_numpy().sum()) == len(in_range)


def test_explorer_from_a_client_with_lines(server):
    client = Client(server.tokens["shop"], base_url=server.base_url, **FAST)
    ex = activity_explorer(client)
    view = server.data("shop")
    assert len(ex.data) == len(view.transactions) == 300
    assert ex.table.to_numpy().sum() == 300

    details = [view.transaction(row["id"]) for row in view.transactions[:60]]
    lines = lines_df(details)
    ex = activity_explorer(transactions_df(view.transactions), lines=lines)
    assert "item" in ex.by.options
    before = ex.redraws
    with ex.hold():
        ex.by.value = "item"
        ex.metric.value = "quantity"
        ex.freq.value = "M"
    assert ex.redraws == before + 1  # one redraw for three changes
    expected = activity_table(
        lines, "M", "item", "quantity", top=8, since=ex.since.value, until=ex.until.value
    )
    assert_drawn(ex, expected)
    assert len(ex.table.columns) <= 9 and "lines" not in ex.summary_html.value


def test_explorer_from_a_basic_team_says_why():
    from invtools.errors import TeamModeError
    from invtools.sandbox import serve

    with serve(port=0, rate_limit=0, size=50) as sb:
        client = Client(sb.tokens["basic"], base_url=sb.base_url, **FAST)
        with pytest.raises(TeamModeError, match="Basic mode"):
            activity_explorer(client)
