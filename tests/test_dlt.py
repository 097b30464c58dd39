"""invtools.dlt: the team's data through dlt into DuckDB, against the stand-in over real HTTP.

Every table is compared with the server's truth (``sb.data()``): ids, revisions, lines and
deletions, after a first load and after edits, a deletion, a new and a backdated row.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

dlt = pytest.importorskip("dlt")
duckdb = pytest.importorskip("duckdb")

from dlt.pipeline.exceptions import PipelineStepFailed  # noqa: E402

from invtools import frames  # noqa: E402
from invtools.api import Client  # noqa: E402
from invtools.dlt import TABLES, attribute_columns, boxhero, last_run  # noqa: E402
from invtools.sandbox import serve  # noqa: E402

pytestmark = pytest.mark.network

SIZE = 120  # the shop's transactions: two list pages
ROOT = Path(__file__).resolve().parents[1]
DETAIL_ROUTE = "/v1/location-txs/{id}"


@pytest.fixture
def sb():
    with serve(rate_limit=0, size=SIZE) as server:
        yield server


class Warehouse:
    """One dlt pipeline into one DuckDB file, and what its tables hold."""

    def __init__(self, sb, tmp_path: Path, name: str = "invtools_test") -> None:
        self.sb, self.tmp = sb, tmp_path
        self.file = tmp_path / "warehouse.duckdb"
        self.pipeline = dlt.pipeline(
            name,
            pipelines_dir=str(tmp_path / "pipelines"),
            dataset_name="boxhero",
            destination=dlt.destinations.duckdb(str(self.file)),
        )

    def source(self, team: str = "shop", **options):
        options = {
            "base_url": self.sb.base_url,
            "rate_limit": 0,
            "cache": str(self.tmp / f"cache-{team}.sqlite"),
            "mirror_path": str(self.tmp / f"{team}.sqlite"),
            **options,
        }
        return boxhero(self.sb.tokens[team], **options)

    def run(self, team: str = "shop", **options) -> dict:
        """Load ``team``; what the run loaded (:func:`invtools.dlt.last_run`)."""
        self.pipeline.run(self.source(team, **options))
        team_id = self.sb.data(team).team["id"]
        return last_run(self.pipeline)[f"{self.sb.base_url}#{team_id}"]

    def rows(self, sql: str) -> list[tuple]:
        with duckdb.connect(str(self.file), read_only=True) as con:
            return con.sql(sql).fetchall()

    def tables(self) -> set[str]:
        found = self.rows(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'boxhero'"
        )
        return {name for (name,) in found if not name.startswith("_dlt")}


@pytest.fixture
def warehouse(sb, tmp_path):
    return Warehouse(sb, tmp_path)


# ------------------------------------------------------------------------- the server's truth


def truth_transactions(sb, team="shop") -> set[tuple]:
    view = sb.data(team)
    return {(view.team["id"], r["id"], r["revision"]) for r in view.transactions}


def truth_lines(sb, team="shop") -> Counter:
    """(team, transaction, line number, item, quantity) of every current line."""
    view = sb.data(team)
    out = Counter()
    for row in view.transactions:
        for n, line in enumerate(view.transaction(row["id"])["items"]):
            out[(view.team["id"], row["id"], n, line["id"], float(line["quantity"]))] += 1
    return out


def truth_stock(sb, team="shop") -> set[tuple]:
    view = sb.data(team)
    return {
        (view.team["id"], item["id"], q["location_id"], float(q["quantity"]))
        for item in view.items
        for q in item["quantities"]
    }


def loaded_transactions(w: Warehouse) -> set[tuple]:
    return set(w.rows("SELECT team_id, id, revision FROM boxhero.transactions"))


def loaded_lines(w: Warehouse) -> Counter:
    return Counter(
        w.rows("SELECT team_id, transaction_id, line_no, item_id, quantity FROM boxhero.lines")
    )


def loaded_stock(w: Warehouse) -> set[tuple]:
    return set(w.rows("SELECT team_id, item_id, location_id, quantity FROM boxhero.stock"))


def assert_equal_to_the_server(w: Warehouse, sb, team="shop"):
    assert loaded_transactions(w) == truth_transactions(sb, team)
    assert loaded_lines(w) == truth_lines(sb, team)
    assert loaded_stock(w) == truth_stock(sb, team)
    view = sb.data(team)
    items = w.rows("SELECT id, name, quantity FROM boxhero.items")
    assert sorted(items) == [(i["id"], i["name"], float(i["quantity"])) for i in view.items]
    partners = w.rows("SELECT id, name FROM boxhero.partners ORDER BY id")
    assert partners == [(p["id"], p["name"]) for p in view.partners]
    for table, records in (("locations", view.locations), ("members", view.members)):
        assert w.rows(f"SELECT id FROM boxhero.{table} ORDER BY id") == [
            (r["id"],) for r in records
        ]


# ------------------------------------------------------------------------------- the loads


def test_a_first_load_equals_the_server_and_the_tables_are_typed_on_purpose(sb, warehouse):
    counts = warehouse.run()
    assert_equal_to_the_server(warehouse, sb)
    assert counts["transactions"] == [SIZE, 0, 0]
    assert counts["lines"][0] == sum(truth_lines(sb).values())
    assert warehouse.tables() == set(TABLES)
    types = dict(
        warehouse.rows(
            "SELECT table_name || '.' || column_name, data_type FROM information_schema.columns "
            "WHERE table_schema = 'boxhero'"
        )
    )
    assert types["transactions.id"] == types["lines.item_id"] == "BIGINT"
    assert types["lines.quantity"] == types["stock.quantity"] == types["items.cost"] == "DOUBLE"
    assert types["transactions.transaction_time"] == "TIMESTAMP WITH TIME ZONE"
    assert types["transactions.backdated"] == "BOOLEAN"
    assert types["items.attr_weight_kg"] == "DOUBLE"  # named on purpose, not attr_weight_kgx
    assert not any(col.endswith("__v_double") for col in types)
    # the attribute columns' names are in the data: the attributes table says them
    mapping = dict(warehouse.rows("SELECT attr_name, column_name FROM boxhero.attributes"))
    assert mapping["Weight (kg)"] == "attr_weight_kg"
    assert {f"items.{c}" for c in mapping.values()} <= set(types)
    team = warehouse.rows("SELECT team_id, team_name, base_url, data_as_of FROM boxhero.teams")
    assert team[0][:3] == (sb.data().team["id"], sb.data().team["name"], sb.base_url)
    assert team[0][3] is not None


def test_edits_a_deletion_a_new_and_a_backdated_row_load_only_what_changed(sb, warehouse):
    warehouse.run()
    rows = sb.data().transactions
    edited, deleted = rows[3]["id"], rows[10]["id"]
    sb.edit_transaction(edited)
    sb.delete_transaction(deleted)
    sb.add_transaction(type="in")
    sb.add_transaction(type="out", transaction_time=rows[60]["transaction_time"])  # backdated
    gone_partner = sb.data().partners[4]["id"]
    sb.edit_partner(gone_partner, deleted=True)

    sb.clear_log()
    counts = warehouse.run()
    assert_equal_to_the_server(warehouse, sb)
    assert not warehouse.rows(f"SELECT * FROM boxhero.lines WHERE transaction_id = {deleted}")
    assert counts["transactions"] == [2, 1, 1]  # new (one backdated), edited, removed
    assert counts["partners"][2] == 1
    # details: exactly the edited and the two new transactions
    details = [r for r in sb.requests if r.route == DETAIL_ROUTE]
    assert len(details) == 3
    # only what changed was loaded: the new and changed rows, and the deletions
    loaded = warehouse.pipeline.last_trace.last_normalize_info.row_counts
    assert loaded["transactions"] == 2 + 1 + 1
    assert loaded["partners"] == 1


def test_a_run_with_no_change_fetches_no_detail_and_loads_no_row(sb, warehouse):
    warehouse.run()
    sb.clear_log()
    counts = warehouse.run()
    assert not [r for r in sb.requests if r.route == DETAIL_ROUTE]
    assert all(counts[t] == [0, 0, 0] for t in TABLES if t != "teams")
    loaded = warehouse.pipeline.last_trace.last_normalize_info.row_counts
    assert set(loaded) <= {"teams"} | {t for t in loaded if t.startswith("_dlt")}
    assert_equal_to_the_server(warehouse, sb)


def test_a_restarted_process_on_the_same_files_loads_only_what_changed(sb, tmp_path):
    Warehouse(sb, tmp_path).run()
    sb.delete_transaction(sb.data().transactions[0]["id"])
    again = Warehouse(sb, tmp_path)  # a new pipeline object: its state from the files
    counts = again.run()
    assert counts["transactions"] == [0, 0, 1]
    assert_equal_to_the_server(again, sb)


def test_two_teams_share_one_dataset_and_keep_their_own_rows(tmp_path):
    with serve(rate_limit=0, size=60, shops=2) as sb:
        w = Warehouse(sb, tmp_path)
        w.run("shop")
        w.run("harrogate")
        sb.delete_transaction(sb.data("harrogate").transactions[0]["id"], team="harrogate")
        w.run("harrogate")
        for team in ("shop", "harrogate"):
            team_id = sb.data(team).team["id"]
            mine = {t for t in loaded_transactions(w) if t[0] == team_id}
            assert mine == truth_transactions(sb, team)
        assert len(w.rows("SELECT * FROM boxhero.teams")) == 2


def test_a_basic_mode_team_loads_what_every_team_may_and_says_why_not_the_rest(sb, warehouse):
    counts = warehouse.run("basic")
    assert warehouse.tables() == {"teams", "members", "partners", "attributes"}
    skipped = warehouse.rows("SELECT skipped FROM boxhero.teams")[0][0]
    assert {"items", "stock", "transactions", "lines"} <= set(skipped.split(", "))
    view = sb.data("basic")
    assert sorted(warehouse.rows("SELECT id FROM boxhero.members")) == [
        (m["id"],) for m in view.members
    ]
    assert "transactions" not in counts


# ------------------------------------------------------------------------- failures and kills


def test_a_failed_run_loses_nothing_and_the_next_run_finishes_the_work(sb, warehouse, tmp_path):
    warehouse.run()
    rows = sb.data().transactions
    sb.edit_transaction(rows[1]["id"])
    failing = rows[2]["id"]
    sb.edit_transaction(failing)
    sb.add_transaction(type="in")
    original = sb.handle

    def fail_one_detail(method, target, headers, fault=None):
        if target.split("?")[0].endswith(f"/location-txs/{failing}"):
            return 500, {"Content-Type": "text/html"}, b"<html>Internal Server Error</html>"
        return original(method, target, headers, fault=fault)

    sb.handle = fail_one_detail
    no_retries = Client(
        sb.tokens["shop"],
        base_url=sb.base_url,
        cache=tmp_path / "c.sqlite",
        rate_limit=0,
        retries=0,
        progress=False,
    )
    with no_retries, pytest.raises(PipelineStepFailed) as failed:
        warehouse.pipeline.run(warehouse.source(client=no_retries))
    assert "500" in str(failed.value)
    sb.handle = original
    counts = warehouse.run()
    assert_equal_to_the_server(warehouse, sb)
    assert counts["transactions"] == [1, 2, 0]  # all three, though the mirror has two already


def test_a_run_stopped_between_extract_and_load_is_loaded_by_the_next(sb, tmp_path):
    Warehouse(sb, tmp_path).run()
    sb.delete_transaction(sb.data().transactions[5]["id"])
    sb.edit_transaction(sb.data().transactions[6]["id"])
    # extracted (the mirror synced, the changes read, the state moved on) but not loaded: a
    # process killed there leaves its package pending, and the next run loads it first
    Warehouse(sb, tmp_path).pipeline.extract(Warehouse(sb, tmp_path).source())
    again = Warehouse(sb, tmp_path)
    again.run()
    assert_equal_to_the_server(again, sb)


_CHILD = """
import os, sys, dlt
from invtools.dlt import boxhero
tmp = sys.argv[2]
pipeline = dlt.pipeline("invtools_test", pipelines_dir=tmp + "/pipelines", dataset_name="boxhero",
                        destination=dlt.destinations.duckdb(tmp + "/warehouse.duckdb"))
pipeline.run(boxhero(base_url=sys.argv[1], rate_limit=0, cache=tmp + "/cache-shop.sqlite",
                     mirror_path=tmp + "/shop.sqlite"))
print("finished")
"""


def test_a_killed_first_run_re_run_equals_the_server(sb, tmp_path):
    # The details of the 30 newest transactions are answered, the others' not until the test
    # ends: the child is mid-sync when it is killed, however loaded the machine.
    answered = {t["id"] for t in sb.data().transactions[:30]}
    release, original = threading.Event(), sb.handle

    def hold_the_rest(method, target, headers, fault=None):
        tid = target.split("?")[0].rsplit("/", 1)[-1]
        if "/location-txs/" in target and tid.isdigit() and int(tid) not in answered:
            release.wait(120)
        return original(method, target, headers, fault=fault)

    sb.handle = hold_the_rest
    env = {**os.environ, "SOURCES__BOXHERO__TOKEN": sb.tokens["shop"], "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, sb.base_url, str(tmp_path)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and child.poll() is None:
            if sum(r.route == DETAIL_ROUTE for r in sb.requests) >= 30:
                break
            time.sleep(0.05)
        assert child.poll() is None, child.communicate()
        child.send_signal(signal.SIGKILL)
    finally:
        if child.poll() is None:
            child.kill()
        child.communicate()
        release.set()
        sb.handle = original
    assert child.returncode == -signal.SIGKILL
    w = Warehouse(sb, tmp_path)
    counts = w.run()
    assert counts["transactions"] == [SIZE, 0, 0]
    assert_equal_to_the_server(w, sb)


# ------------------------------------------------------------------------------- the token


def test_no_token_in_any_file_the_pipeline_writes(sb, tmp_path, monkeypatch):
    token = sb.tokens["shop"]
    monkeypatch.setenv("SOURCES__BOXHERO__TOKEN", token)  # dlt's own way: the environment
    w = Warehouse(sb, tmp_path)
    mirror = str(tmp_path / "shop.sqlite")
    w.pipeline.run(boxhero(base_url=sb.base_url, rate_limit=0, mirror_path=mirror))
    sb.add_transaction(type="in")
    w.run()  # and given as an argument
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name == "trace.pickle" for p in written)  # the trace is there, and checked
    assert any("state" in p.name for p in written)
    leaks = [p for p in written if token.encode() in p.read_bytes()]
    assert not leaks
    assert token not in repr(w.source())


def test_a_replaced_mirror_file_is_refused_not_taken_for_no_change(sb, warehouse, tmp_path):
    warehouse.run()
    sb.delete_transaction(sb.data().transactions[0]["id"])
    with pytest.raises(PipelineStepFailed, match="not the file this dataset"):
        warehouse.run(mirror_path=str(tmp_path / "new.sqlite"))  # its first sync sees no change
    (tmp_path / "shop.sqlite").unlink()  # or the same path, made anew
    with pytest.raises(PipelineStepFailed, match="keep the mirror between runs"):
        warehouse.run()
    assert len(loaded_transactions(warehouse)) == SIZE  # nothing loaded from either


def test_a_token_from_the_environment_needs_no_argument(sb, tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCES__BOXHERO__TOKEN", sb.tokens["shop"])
    w = Warehouse(sb, tmp_path)
    w.pipeline.run(boxhero(base_url=sb.base_url, rate_limit=0, mirror_path=str(tmp_path / "m")))
    assert loaded_transactions(w) == truth_transactions(sb)


# ------------------------------------------------------------------------------- the parts


def test_attribute_columns_are_names_dlt_keeps_and_never_meet():
    import pandas as pd
    from dlt.common.normalizers.naming.snake_case import NamingConvention

    names = ["Weight (kg)", "Colour", "colour", "Größe", "2nd line", "", "a--b", "A B"]
    attrs = pd.DataFrame({"id": range(1, len(names) + 1), "attr_name": names})
    columns = attribute_columns(attrs)
    assert len(set(columns.values())) == len(names)
    naming = NamingConvention()
    assert all(naming.normalize_identifier(c) == c for c in columns.values())


def test_batch_size_bounds_the_rows_per_batch_and_loads_the_same(sb, warehouse):
    warehouse.run(batch_size=7)
    assert_equal_to_the_server(warehouse, sb)


@pytest.mark.parametrize("bad", [0, -1, 2.5, "10", True])
def test_a_bad_batch_size_is_the_packages_error(sb, warehouse, bad):
    from invtools.errors import ConfigError

    with pytest.raises(ConfigError, match="batch_size"):
        warehouse.source(batch_size=bad)


def test_the_lines_carry_no_stock_level_a_batch_cannot_know(sb, warehouse):
    warehouse.run()
    columns = {
        c
        for (c,) in warehouse.rows(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'lines'"
        )
    }
    assert not {c for c in columns if "stock_level" in c}
    assert {"transaction_id", "line_no", "item_id", "quantity", "team_id"} <= columns
    shop = frames.lines_df([sb.data().transaction(r["id"]) for r in sb.data().transactions])
    assert sum(loaded_lines(warehouse).values()) == len(shop)


# ------------------------------------------------------------------------ invtools load (CLI)


def _load(sb, tmp_path, env):
    return subprocess.run(
        [sys.executable, "-m", "invtools", "load", "--base-url", sb.base_url],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT), "SOURCES__BOXHERO__RATE_LIMIT": "0", **env},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_invtools_load_prints_a_line_per_run_and_exits_non_zero_on_failure(tmp_path):
    with serve(rate_limit=0, size=50) as sb:
        first = _load(sb, tmp_path, {"INVTOOLS_TOKEN": sb.tokens["shop"]})
        assert first.returncode == 0, first.stderr
        sb.delete_transaction(sb.data().transactions[0]["id"])
        again = _load(sb, tmp_path, {"SOURCES__BOXHERO__TOKEN": sb.tokens["shop"]})
        bad = _load(sb, tmp_path, {"SOURCES__BOXHERO__TOKEN": "not-a-token-" + "x" * 20})
        (line,) = first.stdout.splitlines()
        assert f"team {sb.data().team['id']} of {sb.base_url}:" in line
        assert "transactions +50 ~0 -0" in line and "requests" in line
        assert "transactions +0 ~0 -1" in again.stdout
        # the default DuckDB file, named apart from its dataset
        with duckdb.connect(str(tmp_path / "invtools.duckdb"), read_only=True) as con:
            loaded = con.sql("SELECT id, revision FROM boxhero.transactions").fetchall()
        assert set(loaded) == {(r["id"], r["revision"]) for r in sb.data().transactions}
    assert bad.returncode == 1
    assert bad.stderr.strip().splitlines()[-1].startswith("invtools load: failed: ")
    assert "AuthenticationError" in bad.stderr and "Traceback" not in bad.stderr
    assert "not-a-token" not in bad.stderr + bad.stdout
    # where the token of a load goes, not the Python client's Client(token=...)
    assert "SOURCES__BOXHERO__TOKEN" in bad.stderr and "Client(token=" not in bad.stderr


def test_a_duckdb_file_named_like_its_dataset_is_refused_before_anything_is_sent(tmp_path):
    from invtools.dlt import load
    from invtools.errors import ConfigError

    with pytest.raises(ConfigError, match="ambiguous"):
        load(dataset="boxhero", pipeline_name="boxhero", token="t", base_url="http://127.0.0.1:9")


def test_no_token_anywhere_is_the_packages_error_saying_where_to_put_one(tmp_path):
    from invtools.errors import ConfigError

    with pytest.raises(ConfigError, match="SOURCES__BOXHERO__TOKEN"):
        boxhero(base_url="http://127.0.0.1:9", mirror_path=str(tmp_path / "m.sqlite"))
