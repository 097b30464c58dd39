"""invtools.each_team: the same question for several teams at once, over real HTTP.

The stand-in serves three location-mode teams (the shop and two branches) and the Basic-mode
café. Overlap is shown without timing: a barrier that only opens when every team's question
runs at once, and the server's count of requests answered at the same time.
"""

from __future__ import annotations

import _thread
import threading
import time

import pandas as pd
import pytest

import invtools
from invtools.errors import Cancelled

SOON = 5.0  # seconds: a deadline for what happens at once, never a wait for timing
SHOPS = ["shop", "harrogate", "york"]


@pytest.fixture(scope="module")
def teams_server():
    from invtools.sandbox import serve

    # Not the demo server's seed: its tokens are never taken for the demo's (connect() sends
    # a demo token to the demo server, should one run).
    with serve(rate_limit=0, size=300, shops=3, seed=7) as sb:
        yield sb


@pytest.fixture
def env(teams_server, monkeypatch, tmp_path):
    """Every team's token in the environment, as an analyst sets them."""
    for name, token in teams_server.tokens.items():
        monkeypatch.setenv(f"INVTOOLS_TOKEN_{name.upper()}", token)
    monkeypatch.setenv("INVTOOLS_BASE_URL", teams_server.base_url)
    return dict(cache=tmp_path / "teams.sqlite", rate_limit=0)


def _tokens_absent(tokens, *texts):
    for token in tokens:
        for text in texts:
            assert token not in text


def test_each_teams_answer_is_what_its_own_call_gives(teams_server, env, make_client):
    question = lambda c: c.lines_df(since="2026-10-01")  # noqa: E731
    answers = invtools.each_team(question, SHOPS, progress=False, **env)
    assert list(answers) == SHOPS and answers.errors == {}
    for name in SHOPS:
        alone = question(make_client(teams_server, name, cache=False))
        pd.testing.assert_frame_equal(answers[name], alone)
        assert answers[name].attrs["team_name"] == teams_server.data(name).team["name"]
        assert answers.outcome(name).stats.sent > 0

    stacked = answers.frame()
    assert list(stacked.columns[:1]) == ["team"]
    assert stacked["team"].value_counts().to_dict() == {n: len(answers[n]) for n in SHOPS}
    pd.testing.assert_frame_equal(
        stacked[stacked["team"] == "york"].drop(columns="team"), answers["york"]
    )
    assert set(stacked.attrs["teams"]) == set(SHOPS)


def test_with_no_teams_given_every_team_in_the_environment_is_asked(teams_server, env):
    answers = invtools.each_team(lambda c: c.team().name, progress=False, **env)
    assert dict(answers) == {
        n: teams_server.data(n).team["name"] for n in sorted(teams_server.tokens)
    }


def test_clients_you_made_are_used_as_they_are_and_left_open(teams_server, make_client):
    clients = {n: make_client(teams_server, n) for n in SHOPS}
    with clients["shop"].measure() as m:  # the caller's measurement counts its team's work
        answers = invtools.each_team(lambda c: len(c.partners_df()), clients, progress=False)
    assert dict(answers) == {n: len(teams_server.data(n).partners) for n in SHOPS}
    assert m.sent == answers.outcome("shop").stats.sent > 0
    assert clients["york"].team().mode == 2  # still open


@pytest.fixture
def demo_stopped_after():
    """connect() of a name with no token starts the demo server (to list its teams): stop it."""
    from invtools import notebook

    yield
    notebook.stop_demo_server()


def test_a_basic_team_a_refused_token_and_a_missing_one_fail_in_their_slots(
    monkeypatch, demo_stopped_after
):
    from invtools.sandbox import serve

    with serve(rate_limit=0, size=300, shops=3, seed=7) as sb:  # tokens unlike the demo's
        for name, token in sb.tokens.items():
            monkeypatch.setenv(f"INVTOOLS_TOKEN_{name.upper()}", token)
        monkeypatch.setenv("INVTOOLS_BASE_URL", sb.base_url)
        sb.revoke_token("harrogate")  # deleted in the web app since
        answers = invtools.each_team(
            lambda c: c.items_df(),
            ["shop", "harrogate", "basic", "york", "nowhere"],
            progress=False,
            cache=False,
            rate_limit=0,
        )
        assert list(answers) == ["shop", "harrogate", "basic", "york", "nowhere"]
        assert set(answers.ok) == {"shop", "york"}
        assert len(answers["shop"]) == len(sb.data("shop").items)
        assert len(answers["york"]) == len(sb.data("york").items)
        assert isinstance(answers["harrogate"], invtools.AuthenticationError)
        assert isinstance(answers["basic"], invtools.TeamModeError)
        assert "Corner Café" in str(answers["basic"])
        assert isinstance(answers["nowhere"], invtools.ConfigError)
        assert "INVTOOLS_TOKEN_NOWHERE" in str(answers["nowhere"])
        assert set(answers.errors) == {"harrogate", "basic", "nowhere"}

        with pytest.raises(ValueError, match=r"harrogate.*basic.*nowhere"):
            answers.frame()
        assert set(answers.ok.frame()["team"]) == {"shop", "york"}
        summary = answers.summary()
        assert summary["ok"].to_dict() == {
            "shop": True,
            "harrogate": False,
            "basic": False,
            "york": True,
            "nowhere": False,
        }
        assert summary.loc["basic", "error"].startswith("TeamModeError: ")
        # No token anywhere in what the results show or say, the refused one included.
        notes = [n for e in answers.errors.values() for n in getattr(e, "__notes__", [])]
        _tokens_absent(
            sb.tokens.values(),
            repr(answers),
            str(answers),
            answers._repr_html_(),
            summary.to_string(),
            *map(str, answers.errors.values()),
            *map(repr, answers.errors.values()),
            *notes,
        )


def test_the_teams_questions_run_at_the_same_time(make_client):
    from invtools.sandbox import serve

    with serve(rate_limit=0, size=300, shops=3, latency=0.3) as sb:
        clients = {n: make_client(sb, n, concurrency=1) for n in SHOPS}
        # Opens only when all three questions are running at once (else it breaks: fails).
        together = threading.Barrier(len(SHOPS), timeout=SOON)

        def question(client):
            together.wait()
            return client.team(refresh=True).name

        sb.clear_log()
        answers = invtools.each_team(question, clients, progress=False)
        assert answers.errors == {}
        assert sb.max_in_flight == len(SHOPS)  # one request per team, all answered at once
        assert {r.team for r in sb.requests} == set(SHOPS)


def test_ctrl_c_stops_every_team_and_keeps_the_finished_ones(make_client):
    from invtools.sandbox import serve

    with serve(rate_limit=0, size=300, shops=3, latency=0.05) as sb:
        clients = {n: make_client(sb, n) for n in SHOPS}
        shop_done, stopped_by = threading.Event(), []

        def question(client):
            name = client.team().name
            if client is clients["shop"]:
                shop_done.set()
                return name
            assert shop_done.wait(SOON)
            if client is clients["harrogate"]:
                _thread.interrupt_main()  # Ctrl-C, while the caller waits for the teams
            try:
                while True:  # a long question: request after request, until stopped
                    client.team(refresh=True)
            except Cancelled as err:
                stopped_by.append(err)
                raise

        started = time.monotonic()
        with pytest.raises(KeyboardInterrupt) as caught:
            invtools.each_team(question, clients, progress=False)
        assert time.monotonic() - started < SOON
        partial = caught.value.results
        assert partial["shop"] == sb.data("shop").team["name"]
        assert set(partial.errors) == {"harrogate", "york"}
        assert all(isinstance(e, Cancelled) for e in partial.errors.values())
        assert "had answered (shop)" in "\n".join(caught.value.__notes__)
        # Both long questions were stopped by the client refusing to send more.
        deadline = time.monotonic() + SOON
        while len(stopped_by) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(stopped_by) == 2
        _tokens_absent(sb.tokens.values(), repr(partial), *caught.value.__notes__)


def test_a_fault_in_the_question_is_raised_naming_the_team(teams_server, make_client):
    clients = {n: make_client(teams_server, n) for n in SHOPS}

    def question(client):
        if client is clients["york"]:
            return {}["no such column"]
        return client.team().name

    with pytest.raises(KeyError) as caught:
        invtools.each_team(question, clients, progress=False)
    assert "team 'york'" in "\n".join(caught.value.__notes__)
    # Unless it is caught on purpose: then it is that team's slot.
    answers = invtools.each_team(question, clients, progress=False, catch=Exception)
    assert isinstance(answers["york"], KeyError) and set(answers.ok) == {"shop", "harrogate"}


def test_frame_of_series_is_one_row_per_team(teams_server, make_client):
    clients = {n: make_client(teams_server, n) for n in SHOPS}
    answers = invtools.each_team(
        lambda c: c.members_df()["role"].value_counts(), clients, progress=False
    )
    wide = answers.frame()
    assert list(wide.index) == SHOPS and wide.index.name == "team"
    assert wide.loc["york", "admin"] == 1
    with pytest.raises(TypeError, match="DataFrames"):
        invtools.each_team(lambda c: c.team().id, clients, progress=False).frame()


def test_a_frame_of_several_teams_round_trips_through_parquet(teams_server, make_client, tmp_path):
    clients = {n: make_client(teams_server, n) for n in SHOPS}
    stacked = invtools.each_team(lambda c: c.locations_df(), clients, progress=False).frame()
    stacked.to_parquet(tmp_path / "locations.parquet")
    back = pd.read_parquet(tmp_path / "locations.parquet")
    pd.testing.assert_frame_equal(back, stacked)
    assert back.attrs == stacked.attrs


def test_one_progress_bar_per_team_labelled_with_it(teams_server, make_client, capsys):
    from invtools.notebook.teams import SHOW_AFTER

    clients = {n: make_client(teams_server, n) for n in SHOPS}
    invtools.each_team(lambda c: c.team().name, clients)  # quick: no bars
    assert capsys.readouterr().err == ""

    def slow(client):
        time.sleep(SHOW_AFTER + 0.3)
        return client.team().name

    invtools.each_team(slow, clients)  # bars on (a terminal's: on stderr)
    shown = capsys.readouterr().err
    for name in SHOPS:
        assert f"{name}: " in shown
    _tokens_absent(teams_server.tokens.values(), shown)


def test_bad_arguments_are_refused_before_anything_runs(teams_server, make_client):
    client = make_client(teams_server, "shop")
    for bad in ("shop", [client], {"shop": "a token"}):
        with pytest.raises(TypeError):
            invtools.each_team(lambda c: 1, bad)
    with pytest.raises(TypeError, match="connects nothing"):
        invtools.each_team(lambda c: 1, {"shop": client}, cache=False)
    with pytest.raises(invtools.ConfigError, match="max_workers"):
        invtools.each_team(lambda c: 1, {"shop": client}, max_workers=0)
