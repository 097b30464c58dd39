"""The mirror's full sync on the client's walk engine: chains from the seams the client's
last whole walk recorded, as many as the client or the call allows, and no chain left running
after an interrupted sync. Real HTTP against the stand-in; frames compared with a one-chain
mirror's and with the server's rows."""

from __future__ import annotations

import threading

import pandas as pd
import pytest

from invtools.mirror import TransactionMirror

TXS = "/v1/location-txs"


@pytest.fixture
def quick(make_client):
    """A stand-in that answers at once (a sync fetches every detail), 600 transactions."""
    from invtools.sandbox import serve

    with serve(port=0, rate_limit=0, seed=0, size=600) as server:
        yield server, make_client(server, cache=False)


def list_requests(sb):
    return [r for r in sb.requests if r.route == TXS]


def chain_threads():
    return [t for t in threading.enumerate() if t.name.startswith("invtools-chain")]


def first_rows(sb):
    return sb.data("shop").transactions


def seams_of(client):
    """The ids the next fresh whole walk's chains start from (what the last one recorded)."""
    walk = client.transactions(refresh=True)
    list(walk)
    return [i for _ms, i in walk.seams]


def test_a_full_resync_runs_chains_from_the_files_cursors_and_matches_one_chain(quick, tmp_path):
    sb, client = quick
    chained = TransactionMirror(tmp_path / "chains.sqlite", client)
    first = chained.sync()
    cursors = seams_of(client)
    assert first.kind == "full" and len(cursors) == 5  # 6 pages: 6 chains
    rows = first_rows(sb)
    sb.edit_transaction(rows[150]["id"], transaction_time=rows[450]["transaction_time"])
    sb.delete_transaction(rows[300]["id"])
    sb.add_transaction()
    sb.edit_transaction(rows[550]["id"])
    sb.clear_log()
    report = chained.sync()
    sent = list_requests(sb)
    assert {str(c) for c in cursors} <= {r.params.get("cursor", [None])[0] for r in sent}
    assert report.list_pages == len(sent) <= 7
    assert (report.new, report.changed, report.removed) == (1, 2, 1)
    single = TransactionMirror(tmp_path / "one.sqlite", client)
    single.sync(chains=1)
    pd.testing.assert_frame_equal(chained.transactions_df(), single.transactions_df())
    pd.testing.assert_frame_equal(chained.lines_df(), single.lines_df())


def test_an_interrupted_sync_leaves_no_thread_running_and_the_next_one_completes(
    quick, tmp_path, monkeypatch
):
    import invtools.mirror.sync as sync

    _sb, client = quick
    mirror = TransactionMirror(tmp_path / "m.sqlite", client)
    mirror.sync()
    calls = []
    stage = sync.stage

    def interrupted(conn, batch):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        stage(conn, batch)

    monkeypatch.setattr(sync, "stage", interrupted)
    with pytest.raises(KeyboardInterrupt):
        mirror.sync()
    assert chain_threads() == []
    monkeypatch.setattr(sync, "stage", stage)
    assert mirror.sync().unchanged == 600


@pytest.mark.parametrize(
    ("concurrency", "chains", "started"), [(2, None, 1), (3, None, 2), (8, 1, 0), (8, None, 5)]
)
def test_a_full_resync_runs_as_many_chains_as_the_call_or_the_client_allows(
    quick, tmp_path, make_client, concurrency, chains, started
):
    # the first full sync records 5 seams (6 pages of 100); the next one starts a chain at
    # `started` of them: at most `chains`, else the client's concurrency, chains in all
    sb, first = quick
    path = tmp_path / "m.sqlite"
    TransactionMirror(path, first).sync()
    seams = seams_of(first)
    client = make_client(sb, cache=False, concurrency=concurrency)
    sb.clear_log()
    report = TransactionMirror(path, client).sync(chains=chains)
    asked = {r.params.get("cursor", [None])[0] for r in list_requests(sb)}
    assert report.kind == "full" and len({str(i) for i in seams} & asked) == started
    # its anchor: the service's clock when the walk began
    assert abs(report.anchor - pd.Timestamp(client.now())) < pd.Timedelta("1min")
    got = TransactionMirror(path, client).transactions_df()
    assert got["transaction_id"].tolist() == [r["id"] for r in first_rows(sb)]
    assert got["revision"].tolist() == [r["revision"] for r in first_rows(sb)]


@pytest.mark.parametrize("look_back", [None, "3650D"])
@pytest.mark.parametrize(("client_shows", "asked"), [(False, True), (True, False)])
def test_a_syncs_progress_argument_overrides_the_clients(
    quick, tmp_path, make_client, capsys, client_shows, asked, look_back
):
    sb, _ = quick
    client = make_client(sb, cache=False, progress=client_shows)
    TransactionMirror(tmp_path / "m.sqlite", client).sync(look_back=look_back, progress=asked)
    err = capsys.readouterr().err
    # the list's bar (six pages) and the details' bar (600), or nothing at all
    assert ("transactions" in err and "/600" in err) if asked else err == ""


def test_a_window_sync_over_several_pages_anchors_at_the_services_clock(quick, tmp_path):
    # ten years back reaches the list's end: every page walked one by one, a full sync
    sb, client = quick
    mirror = TransactionMirror(tmp_path / "m.sqlite", client)
    report = mirror.sync(look_back="3650D")
    rows = first_rows(sb)
    assert report.kind == "full" and report.list_pages == 6
    assert abs(report.anchor - pd.Timestamp(client.now())) < pd.Timedelta("1min")
    assert mirror.transactions_df()["transaction_id"].tolist() == [r["id"] for r in rows]
