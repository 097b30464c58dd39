"""invtools.dlt's moving parts, quickly: the service's rows (``Truth``), what the destination
holds (``destination``), the source's resources, the discarding of a stopped run's packages
and ``load``, each against a small stand-in (50 transactions) and DuckDB, in this process.

``tests/test_dlt.py`` holds the contract end to end (every operator event on every
destination, minutes); these hold each piece's own behaviour in seconds, so ``make mutation``
can run them against every mutant of ``invtools/dlt/``.
"""

from __future__ import annotations

import http.client
import logging
import os
import sqlite3
import time
from collections import Counter
from types import SimpleNamespace

import pandas as pd
import pytest

dlt = pytest.importorskip("dlt")
duckdb = pytest.importorskip("duckdb")

from dlt.pipeline.exceptions import PipelineStepFailed  # noqa: E402

from invtools._config import TOKEN_HELP  # noqa: E402
from invtools.api import Client  # noqa: E402
from invtools.dlt import TABLES, boxhero, discard_pending, last_run, load, summary  # noqa: E402
from invtools.dlt.destination import can_merge, dropped, held, other_teams  # noqa: E402
from invtools.dlt.run import LOAD_TOKEN_HELP, failure  # noqa: E402
from invtools.dlt.tables import DELETED, FINGERPRINT, NO_LEVELS, attribute_columns, hints  # noqa: E402
from invtools.dlt.truth import Truth  # noqa: E402
from invtools.errors import AuthenticationError, ConfigError, InvtoolsError  # noqa: E402
from invtools.sandbox import serve  # noqa: E402

SIZE = 50  # the shop's transactions: the fewest the stand-in makes
network = pytest.mark.network


@pytest.fixture
def sb():
    with serve(rate_limit=0, size=SIZE) as server:
        yield server


def client_of(sb, team: str = "shop", **options) -> Client:
    return Client(
        sb.tokens[team],
        base_url=sb.base_url,
        rate_limit=0,
        progress=False,
        **{"cache": False, **options},
    )


def truth_of(sb, tmp_path, team: str = "shop", batch_size: int = 7, **options) -> Truth:
    client = client_of(sb, team, **options)
    return Truth(
        client, mirror_path=tmp_path / f"{team}.sqlite", batch_size=batch_size, progress=False
    )


def every(truth: Truth, table: str) -> pd.DataFrame:
    return pd.concat(list(truth.rows(table)), ignore_index=True)


def _texts(column: pd.Series) -> list:
    return [None if pd.isna(v) else v for v in column]


def _ref(ref):
    return None if ref is None else ref["name"]


def server_transactions(sb, team: str = "shop") -> Counter:
    view = sb.data(team)
    return Counter((r["id"], r["revision"], _ref(r["partner"])) for r in view.transactions)


def server_lines(sb, team: str = "shop") -> Counter:
    view = sb.data(team)
    return Counter(
        (r["id"], n, line["id"], float(line["quantity"]))
        for r in view.transactions
        for n, line in enumerate(view.transaction(r["id"])["items"])
    )


def duckdb_pipeline(tmp_path, name: str = "invtools_src", folder: str = "pipelines"):
    return dlt.pipeline(
        name,
        pipelines_dir=str(tmp_path / folder),
        dataset_name="boxhero",
        destination=dlt.destinations.duckdb(str(tmp_path / "warehouse.duckdb")),
    )


def source_of(sb, tmp_path, team: str = "shop", **options):
    return boxhero(
        sb.tokens[team],
        base_url=sb.base_url,
        rate_limit=0,
        cache=False,
        mirror_path=str(tmp_path / f"{team}.sqlite"),
        **options,
    )


def rows_of(pipeline, table: str, columns: str) -> Counter:
    with pipeline.sql_client() as client:
        name = client.make_qualified_table_name(table)
        return Counter(tuple(r) for r in client.execute_sql(f"SELECT {columns} FROM {name}") or [])


def team_key(sb, team: str = "shop") -> str:
    return f"{sb.base_url}#{sb.data(team).team['id']}"


# --------------------------------------------------------------------------------- the truth


@network
def test_the_truth_is_the_services_rows_table_by_table_in_the_hinted_columns(sb, tmp_path):
    truth = truth_of(sb, tmp_path)
    view = sb.data()
    assert truth.key == (sb.base_url, view.team["id"])
    assert truth.skipped == []
    for table in TABLES:
        for rows in truth.rows(table):
            assert list(rows.columns[:2]) == ["base_url", "team_id"], table
            assert list(rows.columns[-2:]) == [FINGERPRINT, DELETED], table
            assert set(rows["base_url"]) <= {sb.base_url}
            assert set(rows["team_id"]) <= {view.team["id"]}
            attrs = (
                {c for c in rows.columns if c.startswith("attr_")} if table == "items" else set()
            )
            assert set(rows.columns) - attrs == set(hints(table)), table
    items = every(truth, "items")
    assert Counter(zip(items["item_id"], items["name"], items["sku"], strict=True)) == Counter(
        (i["id"], i["name"], i["sku"]) for i in view.items
    )
    assert "attr_weight_kg" in items.columns  # the attribute columns named for the warehouse
    stock = every(truth, "stock")
    assert Counter(zip(stock["item_id"], stock["location_id"], stock["quantity"], strict=True)) == (
        Counter(
            (i["id"], q["location_id"], float(q["quantity"]))
            for i in view.items
            for q in i["quantities"]
        )
    )
    for table, records in (("locations", view.locations), ("partners", view.partners)):
        got = every(truth, table)
        key = {"locations": "location_id", "partners": "partner_id"}[table]
        assert Counter(zip(got[key], got["name"], strict=True)) == Counter(
            (r["id"], r["name"]) for r in records
        )
    members = every(truth, "members")
    assert Counter(zip(members["member_id"], members["role"], strict=True)) == Counter(
        (m["id"], m["role"]) for m in view.members
    )
    attributes = every(truth, "attributes")
    named = attribute_columns(attributes)
    assert attributes["column_name"].tolist() == [
        named[f"attr_{n}"] for n in attributes["attr_name"]
    ]
    assert set(attributes["column_name"]) <= set(items.columns)
    (team,) = truth.rows("teams")
    assert team[["team_name", "mode"]].iloc[0].tolist() == [view.team["name"], "Location"]
    assert team["skipped"].isna().all()
    assert str(team["data_as_of"].dt.tz) == "UTC" and team["data_as_of"].notna().all()


@network
def test_the_transactions_and_lines_come_in_batches_numbered_per_transaction(sb, tmp_path):
    truth = truth_of(sb, tmp_path, batch_size=7)
    batches = list(truth.rows("transactions"))
    assert len(batches) >= 5 and max(map(len, batches)) <= 7
    assert len(batches[-1]) == 0  # an empty batch last: a table of no rows
    txs = pd.concat(batches, ignore_index=True)
    assert Counter(
        zip(txs["transaction_id"], txs["revision"], _texts(txs["partner_name"]), strict=True)
    ) == Counter((k[0], k[1], k[2]) for k in server_transactions(sb).elements())
    assert "removed_at" not in txs.columns
    lines = every(truth, "lines")
    assert Counter(
        zip(
            lines["transaction_id"],
            lines["line_no"],
            lines["item_id"],
            lines["quantity"],
            strict=True,
        )
    ) == server_lines(sb)
    assert not set(NO_LEVELS) & set(lines.columns)
    position = list(lines.columns).index("transaction_id")
    assert list(lines.columns)[position + 1] == "line_no"
    assert (tmp_path / "shop.sqlite").is_file()  # the mirror is the one it was given


@network
def test_the_truth_of_a_later_run_has_a_deletion_gone_and_names_as_they_are_now(sb, tmp_path):
    every(truth_of(sb, tmp_path), "lines")  # a first run: the mirror synced
    gone = sb.data().transactions[3]["id"]
    sb.delete_transaction(gone)
    partner = next(r["partner"]["id"] for r in sb.data().transactions if r["partner"])
    sb.edit_partner(partner, name="Renamed Ltd")
    truth = truth_of(sb, tmp_path)
    txs = every(truth, "transactions")
    assert gone not in set(txs["transaction_id"])
    assert gone not in set(every(truth, "lines")["transaction_id"])
    assert "Renamed Ltd" in set(txs["partner_name"].dropna())
    assert Counter(
        zip(txs["transaction_id"], txs["revision"], _texts(txs["partner_name"]), strict=True)
    ) == Counter(tuple(k) for k in server_transactions(sb).elements())


@network
def test_a_basic_team_has_the_tables_every_mode_allows_and_says_which_not(sb, tmp_path):
    truth = truth_of(sb, tmp_path, "basic")
    assert truth.skipped == ["items", "locations", "stock", "transactions", "lines"]
    (team,) = truth.rows("teams")
    assert team["mode"].iloc[0] == "Basic"
    assert team["skipped"].iloc[0] == "items, locations, stock, transactions, lines"
    assert team["data_as_of"].notna().all()
    view = sb.data("basic")
    members = every(truth, "members")
    assert sorted(members["member_id"]) == sorted(m["id"] for m in view.members)
    attributes = every(truth, "attributes")
    assert sorted(attributes["attr_name"]) == sorted(a["attr_name"] for a in view.attrs)
    assert attributes["column_name"].notna().all()
    assert not (tmp_path / "basic.sqlite").exists()  # no mirror: no transactions to read


@network
def test_a_basic_teams_attributes_are_read_fresh_past_the_cache(sb, tmp_path):
    cache = str(tmp_path / "cache.sqlite")
    every(truth_of(sb, tmp_path, "basic", cache=cache), "attributes")
    renamed = sb.data("basic").attrs[0]["id"]
    sb.edit_attribute(renamed, attr_name="Renamed", team="basic")
    attributes = every(truth_of(sb, tmp_path, "basic", cache=cache), "attributes")
    assert "Renamed" in set(attributes["attr_name"])


@network
def test_stock_and_attributes_read_the_pages_the_items_fetched(sb, tmp_path):
    truth = truth_of(sb, tmp_path, cache=str(tmp_path / "cache.sqlite"))
    every(truth, "items"), every(truth, "locations")
    sb.clear_log()
    every(truth, "attributes"), every(truth, "stock")
    assert not sb.requests


# ------------------------------------------------------------------------ what it holds


def _tiny(pipeline, table: str, rows: list[dict]) -> None:
    pipeline.run(rows, table_name=table, write_disposition="append")


def test_what_the_destination_holds_is_the_teams_keys_and_fingerprints(tmp_path):
    pipeline = duckdb_pipeline(tmp_path)
    assert held(pipeline, ["members"], ("u", 1)) == {"members": None}  # no dataset yet
    _tiny(
        pipeline,
        "members",
        [
            {"base_url": "u", "team_id": 1, "member_id": 1, FINGERPRINT: "a"},
            {"base_url": "u", "team_id": 1, "member_id": 2, FINGERPRINT: "b"},
            {"base_url": "u", "team_id": 2, "member_id": 3, FINGERPRINT: "c"},
            {"base_url": "v", "team_id": 1, "member_id": 4, FINGERPRINT: "d"},
        ],
    )
    _tiny(
        pipeline,
        "stock",
        [{"base_url": "u", "team_id": 1, "item_id": 5, "location_id": 6, FINGERPRINT: "e"}],
    )
    got = held(pipeline, ["members", "stock", "lines"], ("u", 1))
    assert got == {"members": {(1,): "a", (2,): "b"}, "stock": {(5, 6): "e"}, "lines": None}
    assert held(pipeline, ["members"], ("w", 1)) == {"members": {}}
    assert held(
        dlt.pipeline("no_destination", pipelines_dir=str(tmp_path)), ["members"], ("u", 1)
    ) == {"members": {}}


def test_a_destination_that_cannot_be_read_back_is_refused_with_what_to_use(tmp_path):
    pipeline = dlt.pipeline(
        "dummy", pipelines_dir=str(tmp_path), destination=dlt.destinations.dummy()
    )
    with pytest.raises(ConfigError, match=r"'dummy' cannot be read back.*duckdb, postgres"):
        held(pipeline, ["members"], ("u", 1))


def test_the_other_teams_of_a_dataset(tmp_path):
    pipeline = duckdb_pipeline(tmp_path)
    assert other_teams(pipeline, ("u", 1)) == []  # no dataset
    teams = [("u", 1), ("u", 2), ("v", 1), ("u", 2)]
    _tiny(pipeline, "teams", [{"base_url": u, "team_id": t} for u, t in teams])
    assert sorted(other_teams(pipeline, ("u", 1))) == [("u", 2), ("v", 1)]
    assert other_teams(pipeline, ("w", 9)) != [] and ("u", 1) in other_teams(pipeline, ("w", 9))
    assert other_teams(dlt.pipeline("none", pipelines_dir=str(tmp_path)), ("u", 1)) == []


def test_which_destinations_merge(tmp_path):
    assert can_merge(duckdb_pipeline(tmp_path))
    assert can_merge(dlt.pipeline("none", pipelines_dir=str(tmp_path)))  # an extract alone
    files = dlt.pipeline(
        "files",
        pipelines_dir=str(tmp_path),
        destination=dlt.destinations.filesystem(bucket_url=str(tmp_path / "bucket")),
    )
    assert not can_merge(files)


def test_a_table_loaded_then_dropped_by_hand_is_found(tmp_path):
    pipeline = duckdb_pipeline(tmp_path)
    assert dropped(pipeline, None, ["members"], ("u", 1)) == []  # no schema: nothing loaded
    row = {"base_url": "u", "team_id": 1, FINGERPRINT: "a"}
    _tiny(pipeline, "members", [{**row, "member_id": 1}])
    _tiny(pipeline, "partners", [{**row, "partner_id": 1}])
    schema = pipeline.default_schema
    assert dropped(pipeline, schema, ["members", "partners", "items"], ("u", 1)) == []
    with pipeline.sql_client() as client:
        client.execute_sql(f"DROP TABLE {client.make_qualified_table_name('members')}")
    assert dropped(pipeline, schema, ["members", "partners", "items"], ("u", 1)) == ["members"]
    files = dlt.pipeline(
        "files",
        pipelines_dir=str(tmp_path),
        destination=dlt.destinations.filesystem(bucket_url=str(tmp_path / "bucket")),
    )
    assert dropped(files, schema, ["members"], ("u", 1)) == []  # it re-creates its own tables


# -------------------------------------------------------------------------- the resources


@network
def test_a_load_then_a_change_loads_the_difference_and_deletes_the_gone(sb, tmp_path):
    pipeline = duckdb_pipeline(tmp_path)
    pipeline.run(source_of(sb, tmp_path))
    counts = last_run(pipeline)[team_key(sb)]
    assert set(counts) == set(TABLES)
    assert {k: counts["transactions"][k] for k in ("new", "changed", "removed")} == {
        "new": SIZE,
        "changed": 0,
        "removed": 0,
    }
    assert rows_of(
        pipeline, "transactions", "transaction_id, revision, partner_name"
    ) == server_transactions(sb)
    assert rows_of(pipeline, "lines", "transaction_id, line_no, item_id, quantity") == server_lines(
        sb
    )

    gone = sb.data().transactions[2]["id"]
    sb.delete_transaction(gone)
    edited = sb.data().transactions[5]["id"]
    sb.edit_transaction(edited)
    member = sb.data().members[0]["id"]
    sb.edit_member(member, name="M. Renamed")
    pipeline = duckdb_pipeline(tmp_path)
    pipeline.run(source_of(sb, tmp_path))
    counts = last_run(pipeline)[team_key(sb)]
    assert counts["transactions"]["removed"] == 1 and counts["transactions"]["new"] == 0
    assert counts["transactions"]["changed"] >= 1
    assert {k: counts["members"][k] for k in ("new", "changed", "removed")} == {
        "new": 0,
        "changed": 1,
        "removed": 0,
    }
    assert rows_of(
        pipeline, "transactions", "transaction_id, revision, partner_name"
    ) == server_transactions(sb)
    assert rows_of(pipeline, "lines", "transaction_id, line_no, item_id, quantity") == server_lines(
        sb
    )
    assert ("M. Renamed",) in rows_of(pipeline, "members", "name")

    pipeline = duckdb_pipeline(tmp_path)
    pipeline.run(source_of(sb, tmp_path))  # a quiet night: nothing moves, no row is loaded
    counts = last_run(pipeline)[team_key(sb)]
    moved = {t: c["new"] + c["changed"] + c["removed"] for t, c in counts.items() if t != "teams"}
    assert not any(moved.values()), moved
    loaded = pipeline.last_trace.last_normalize_info.row_counts
    assert {t for t in loaded if not t.startswith("_dlt")} <= {"teams"}, loaded


@network
def test_a_filesystem_dataset_is_replaced_whole_and_holds_one_team(tmp_path, caplog):
    caplog.set_level(logging.WARNING, logger="dlt")
    with serve(rate_limit=0, size=SIZE, shops=2) as sb:
        bucket = tmp_path / "bucket"
        pipeline = dlt.pipeline(
            "invtools_files",
            pipelines_dir=str(tmp_path / "pipelines"),
            dataset_name="boxhero",
            destination=dlt.destinations.filesystem(bucket_url=str(bucket)),
        )
        pipeline.run(source_of(sb, tmp_path))
        sb.delete_transaction(sb.data().transactions[0]["id"])
        pipeline.run(source_of(sb, tmp_path))
        counts = last_run(pipeline)[team_key(sb)]
        assert counts["transactions"]["replaced"] == SIZE - 1
        assert counts["lines"]["replaced"] == sum(server_lines(sb).values())
        assert counts["teams"]["replaced"] == 1
        files = str(bucket / "boxhero" / "transactions" / "*.parquet")
        got = duckdb.sql(f"SELECT transaction_id, revision FROM read_parquet('{files}')").fetchall()
        assert Counter(got) == Counter((i, r) for i, r, _ in server_transactions(sb).elements())
        # replaced whole, no row deletes another: nothing for dlt to warn of
        assert not [r for r in caplog.records if "hard_delete" in r.getMessage()]
        other = sb.data("harrogate").team["id"]
        with pytest.raises(PipelineStepFailed, match=f"holds team {sb.data().team['id']} of "):
            pipeline.run(source_of(sb, tmp_path, "harrogate"))
        assert other != sb.data().team["id"]


@network
def test_a_table_dropped_by_hand_stops_the_source_with_what_to_do_and_that_works(sb, tmp_path):
    pipeline = duckdb_pipeline(tmp_path)
    pipeline.run(source_of(sb, tmp_path))
    with pipeline.sql_client() as client:
        client.execute_sql(f"DROP TABLE {client.make_qualified_table_name('lines')}")
    with pytest.raises(PipelineStepFailed, match="the table lines is gone from the destination"):
        duckdb_pipeline(tmp_path).run(source_of(sb, tmp_path))
    pipeline = duckdb_pipeline(tmp_path)
    pipeline.run(source_of(sb, tmp_path).with_resources("lines"), refresh="drop_resources")
    assert rows_of(pipeline, "lines", "transaction_id, line_no, item_id, quantity") == server_lines(
        sb
    )


@network
def test_the_requests_a_run_counts_are_the_requests_the_service_received(sb, tmp_path):
    pipeline = duckdb_pipeline(tmp_path)
    sb.clear_log()  # the team's own request, made with the source, is counted too
    source = source_of(sb, tmp_path)
    pipeline.run(source)
    counts = last_run(pipeline)[team_key(sb)]
    assert sum(c["requests"] for c in counts.values()) == len(sb.requests)


# ------------------------------------------------------------------- a stopped run's packages


def _package(pipeline) -> None:
    pipeline.extract(dlt.resource([{"a": 1}], name="things"))


def test_nothing_pending_is_nothing_touched(tmp_path):
    pipeline = duckdb_pipeline(tmp_path)
    _package(pipeline)
    pipeline.normalize()
    pipeline.load()
    same, said = discard_pending(pipeline)
    assert same is pipeline and said is None
    assert (tmp_path / "pipelines" / "invtools_src" / "state.json").is_file()


def test_pending_packages_are_discarded_and_said(tmp_path):
    pipeline = duckdb_pipeline(tmp_path)
    _package(pipeline)
    pipeline.normalize()  # one normalized
    _package(pipeline)  # and one extracted
    pipeline, said = discard_pending(pipeline)
    assert said == (
        f"discarded 2 load package(s) a stopped run left in {tmp_path / 'pipelines'}: this run "
        "loads what the destination lacks, so nothing is lost"
    )
    assert not pipeline.has_pending_data
    assert (
        not pipeline.list_extracted_load_packages() and not pipeline.list_normalized_load_packages()
    )


def test_a_working_folder_dlt_cannot_read_is_discarded_and_said(tmp_path):
    pipeline = duckdb_pipeline(tmp_path)
    _package(pipeline)
    (tmp_path / "pipelines" / "invtools_src" / "normalize" / ".version").write_text("damaged")
    pipeline, said = discard_pending(duckdb_pipeline(tmp_path))
    folder = tmp_path / "pipelines"
    assert said.startswith(
        f"discarded a damaged working folder (ValueError) a stopped run left in {folder}:"
    )
    assert pipeline.list_extracted_load_packages() == []
    _package(pipeline)  # and dlt works there again
    assert len(pipeline.list_extracted_load_packages()) == 1


# ------------------------------------------------------------------------------ invtools load


def _load(sb, tmp_path, monkeypatch, team: str = "shop", **options) -> tuple[str, list[str]]:
    monkeypatch.chdir(tmp_path)
    said: list[str] = []
    line = load(
        base_url=sb.base_url,
        rate_limit=0,
        cache=False,
        mirror_path=str(tmp_path / f"{team}.sqlite"),
        said=said.append,
        **options,
    )
    return line, said


def _here(tmp_path):
    return dlt.pipeline(
        "invtools",
        pipelines_dir=str(tmp_path / ".dlt" / "pipelines"),
        dataset_name="boxhero",
        destination=dlt.destinations.duckdb(str(tmp_path / "invtools.duckdb")),
    )


def _basic(sb) -> str:
    """The line a first load of the Basic-mode team says, up to its requests (its four tables:
    a load of the shop's nine takes twice as long, and load is the same for both)."""
    view = sb.data("basic")
    return (
        f"team {view.team['id']} of {sb.base_url}: teams +1 ~0 -0, partners "
        f"+{len(view.partners)} ~0 -0, members +{len(view.members)} ~0 -0, attributes "
        f"+{len(view.attrs)} ~0 -0; "
    )


def _members(sb) -> Counter:
    return Counter((m["id"], m["name"]) for m in sb.data("basic").members)


@network
def test_load_runs_here_with_the_token_of_invtools_and_says_a_line(sb, tmp_path, monkeypatch):
    monkeypatch.setenv("INVTOOLS_TOKEN", sb.tokens["basic"])
    line, said = _load(sb, tmp_path, monkeypatch, "basic")
    assert line.startswith(_basic(sb)) and line.endswith(" s") and "requests, " in line
    assert "\n" not in line and said == []
    assert (tmp_path / "invtools.duckdb").is_file()
    assert (tmp_path / ".dlt" / "pipelines" / "invtools").is_dir()
    assert rows_of(_here(tmp_path), "members", "member_id, name") == _members(sb)
    sb.edit_member(sb.data("basic").members[0]["id"], team="basic", name="M. Renamed")
    line, _ = _load(sb, tmp_path, monkeypatch, "basic")
    assert ", members +0 ~1 -0, " in line
    assert rows_of(_here(tmp_path), "members", "member_id, name") == _members(sb)


@network
def test_loads_token_of_dlt_comes_before_invtools(sb, tmp_path, monkeypatch):
    monkeypatch.setenv("INVTOOLS_TOKEN", "not-a-token-" + "x" * 20)
    monkeypatch.setenv("SOURCES__BOXHERO__TOKEN", sb.tokens["basic"])
    line, _ = _load(sb, tmp_path, monkeypatch, "basic")
    assert line.startswith(_basic(sb))
    monkeypatch.delenv("SOURCES__BOXHERO__TOKEN")
    line, _ = _load(sb, tmp_path, monkeypatch, "basic", token=sb.tokens["basic"])  # given: it
    assert ", members +0 ~0 -0, " in line


@pytest.fixture
def dlt_secrets(tmp_path):
    """``dlt_secrets(text)``: ``text`` as ``.dlt/secrets.toml`` of ``tmp_path``, the folder a
    load then starts in (as ``invtools load`` run there). dlt reads its project folder once a
    process, so it is read again; and its own again after the test."""
    from dlt.common.configuration.container import Container
    from dlt.common.configuration.specs.pluggable_run_context import PluggableRunContext

    context = Container()[PluggableRunContext]
    before, here = context.context.run_dir, os.getcwd()

    def write(text: str) -> None:
        (tmp_path / ".dlt").mkdir(exist_ok=True)
        (tmp_path / ".dlt" / "secrets.toml").write_text(text)
        os.chdir(tmp_path)
        context.reload(str(tmp_path))

    yield write
    os.chdir(here)
    context.reload(before)


@network
def test_load_takes_the_token_from_dlts_secrets_file(sb, tmp_path, monkeypatch, dlt_secrets):
    dlt_secrets(f'[sources.boxhero]\ntoken = "{sb.tokens["basic"]}"\n')
    line, _ = _load(sb, tmp_path, monkeypatch, "basic")
    assert line.startswith(_basic(sb))


@network
def test_load_says_only_the_team_it_ran(tmp_path, monkeypatch):
    """Two services' teams in one dataset, loaded one after the other: the line of each run
    is its own team's."""
    with serve(rate_limit=0, size=SIZE) as a, serve(rate_limit=0, size=SIZE) as b:
        line, _ = _load(a, tmp_path, monkeypatch, "basic", token=a.tokens["basic"])
        assert line.startswith(_basic(a))
        line, _ = _load(b, tmp_path, monkeypatch, "basic", token=b.tokens["basic"])
        assert line.startswith(_basic(b)) and "\n" not in line


@network
def test_load_discards_a_stopped_run_and_says_so(sb, tmp_path, monkeypatch):
    _load(sb, tmp_path, monkeypatch, "basic", token=sb.tokens["basic"])
    sb.edit_member(sb.data("basic").members[0]["id"], team="basic", name="M. Renamed")
    _here(tmp_path).extract(source_of(sb, tmp_path, "basic"))  # a run stopped after its extract
    line, said = _load(sb, tmp_path, monkeypatch, "basic", token=sb.tokens["basic"])
    assert said == [
        f"discarded 1 load package(s) a stopped run left in {tmp_path / '.dlt' / 'pipelines'}: "
        "this run loads what the destination lacks, so nothing is lost"
    ]
    assert ", members +0 ~1 -0, " in line
    assert rows_of(_here(tmp_path), "members", "member_id, name") == _members(sb)


@network
def test_load_reloads_the_tables_dropped_by_hand_and_says_so(sb, tmp_path, monkeypatch):
    _load(sb, tmp_path, monkeypatch, "basic", token=sb.tokens["basic"])
    sb.edit_member(sb.data("basic").members[0]["id"], team="basic", name="M. Renamed")
    sb.edit_attribute(sb.data("basic").attrs[0]["id"], team="basic", attr_name="Renamed")
    with _here(tmp_path).sql_client() as client:
        for table in ("members", "partners"):
            client.execute_sql(f"DROP TABLE {client.make_qualified_table_name(table)}")
    started = time.monotonic()
    line, said = _load(sb, tmp_path, monkeypatch, "basic", token=sb.tokens["basic"])
    took = time.monotonic() - started
    assert said == ["partners, members: gone from the destination, loaded afresh"]
    # then the run of every table: the rest loaded as always
    assert ", partners +0 ~0 -0, members +0 ~0 -0, attributes +0 ~1 -0; " in line
    assert rows_of(_here(tmp_path), "members", "member_id, name") == _members(sb)
    partners = Counter(p["id"] for p in sb.data("basic").partners)
    assert (
        Counter(i for (i,) in rows_of(_here(tmp_path), "partners", "partner_id").elements())
        == partners
    )
    seconds = float(line.rsplit(", ", 1)[1].removesuffix(" s"))  # the run's own, both loads
    assert 0 < seconds <= took + 0.05, line


@network
def test_load_takes_dlts_duckdb_credentials_and_its_own_folder(sb, tmp_path, monkeypatch):
    elsewhere = tmp_path / "elsewhere.duckdb"
    monkeypatch.setenv("DESTINATION__DUCKDB__CREDENTIALS", str(elsewhere))
    jobs = str(tmp_path / "jobs")
    _load(sb, tmp_path, monkeypatch, "basic", token=sb.tokens["basic"], pipelines_dir=jobs)
    assert elsewhere.is_file() and not (tmp_path / "invtools.duckdb").exists()
    assert (tmp_path / "jobs" / "invtools").is_dir() and not (tmp_path / ".dlt").exists()


@network
def test_a_load_writes_the_duckdb_file_where_it_runs_whatever_ran_before(sb, tmp_path, monkeypatch):
    """Two folders, one pipelines folder: each load's file is where it runs (dlt alone keeps
    the folder of the pipeline's first run)."""
    jobs = str(tmp_path / "jobs")
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        _load(
            sb,
            tmp_path / folder,
            monkeypatch,
            "basic",
            token=sb.tokens["basic"],
            pipelines_dir=jobs,
        )
        assert (tmp_path / folder / "invtools.duckdb").is_file(), folder


def test_a_duckdb_file_named_like_its_dataset_is_refused():
    with pytest.raises(ConfigError) as refused:
        load(dataset="boxhero", pipeline_name="boxhero", token="t", base_url="http://127.0.0.1:9")
    assert str(refused.value) == (
        "a DuckDB file named like its dataset (boxhero.duckdb, dataset 'boxhero') makes "
        "DuckDB's names ambiguous; give another pipeline name or dataset"
    )
    with pytest.raises(ConfigError, match="ambiguous"):
        load(dataset="x", pipeline_name="x", token="t", base_url="http://127.0.0.1:9")


# ------------------------------------------------------------------ a run's counts and line


def test_last_run_reads_each_tables_counts_per_team():
    one = {"new": 1, "changed": 0, "removed": 2, "requests": 3, "at": 5.0}
    state = {
        "sources": {
            "boxhero": {
                "resources": {
                    "items": {"last_run": {"u#1": one, "v#2": {"replaced": 4}}},
                    "lines": {"last_run": {"u#1": {"replaced": 7}}},
                    "stranger": {"last_run": {"u#1": one}},
                    "teams": {},
                }
            }
        }
    }
    got = last_run(SimpleNamespace(state=state))
    assert got == {
        "u#1": {"items": one, "lines": {"replaced": 7}},
        "v#2": {"items": {"replaced": 4}},
    }
    assert list(got["u#1"]) == ["items", "lines"]  # in the order a run extracts them
    got["u#1"]["items"]["new"] = 99
    assert one["new"] == 1  # a copy


@pytest.mark.parametrize(
    "state",
    [
        {},
        {"sources": {}},
        {"sources": {"boxhero": {}}},
        {"sources": {"boxhero": {"resources": {}}}},
        {"sources": {"boxhero": {"resources": {"items": {}}}}},
        {"sources": {"other": {"resources": {"items": {"last_run": {"u#1": {}}}}}}},
    ],
)
def test_no_run_yet_is_no_counts(state):
    assert last_run(SimpleNamespace(state=state)) == {}


def test_the_summary_line():
    counts = {
        "teams": {"new": 0, "changed": 1, "removed": 0, "requests": 5},
        "lines": {"replaced": 12},
        "items": {"new": 3, "changed": 0, "removed": 7, "requests": 2},
    }
    assert summary(counts, 12.345) == (
        "teams +0 ~1 -0, lines 12 replaced, items +3 ~0 -7; 7 requests, 12.3 s"
    )
    assert summary({}, 0) == "; 0 requests, 0.0 s"


# ------------------------------------------------------------------------------- a failure


def _raised(exc: BaseException, *, cause=None, context=None) -> BaseException:
    exc.__cause__, exc.__context__ = cause, context
    return exc


def test_the_packages_own_error_anywhere_in_the_chain_is_the_line():
    ours = ConfigError("the mirror is not writable")
    wrapped = _raised(RuntimeError("dlt"), cause=_raised(ValueError("step"), context=ours))
    assert failure(wrapped) == "ConfigError: the mirror is not writable"
    assert failure(_raised(RuntimeError("dlt"), context=ours)) == failure(ours)


def test_a_refused_token_says_where_a_loads_token_goes():
    refused = AuthenticationError(f"401 from the service. {TOKEN_HELP}")
    line = failure(_raised(RuntimeError("dlt"), cause=refused))
    assert line == f"AuthenticationError: 401 from the service. {LOAD_TOKEN_HELP}"
    assert "SOURCES__BOXHERO__TOKEN" in line and "Client(token=" not in line


@pytest.mark.parametrize(
    ("root", "starts"),
    [
        (BlockingIOError(11, "locked"), "a file is locked by another process: another load"),
        (http.client.IncompleteRead(b"x"), "the connection to the service broke mid-answer: run"),
        (ConnectionRefusedError(111, "refused"), "the service could not be reached: check"),
        (sqlite3.OperationalError("disk I/O error"), "a file of invtools' could not be read or"),
        (PermissionError(13, "denied"), "a file could not be read or written: check"),
        (KeyError("x"), "KeyError: 'x' (run again; if it fails the same way, report it"),
    ],
)
def test_a_failure_says_what_went_wrong_and_what_to_do(root, starts):
    for how in ("cause", "context"):
        top = _raised(RuntimeError("dlt's words"), **{how: _raised(ValueError("step"), cause=root)})
        line = failure(top)
        assert line.startswith(starts), line
        assert line.endswith(f"({type(root).__name__}: {root})") or line.startswith(
            type(root).__name__
        )


def test_a_chain_that_loops_ends():
    a, b = RuntimeError("a"), RuntimeError("b")
    a.__context__, b.__context__ = b, a
    assert (
        failure(a)
        == "RuntimeError: b (run again; if it fails the same way, report it with this line)"
    )
    assert issubclass(ConfigError, InvtoolsError)
