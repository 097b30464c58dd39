"""invtools.dlt: the team's data through dlt into a warehouse, against the stand-in over real HTTP,
in this process (so that ``make mutation`` runs them on the mutated source).

The destination is the state: whatever an operator's night brings (a failed or stopped run, a
restored backup, an older or replaced mirror, a subset of the resources, another pipelines
folder, a dropped table, rows lost), the next run leaves every table equal to the server's
truth (``sb.data()``): ids, revisions, names, quantities and deletions. The contract runs on
each destination the how-to names: DuckDB, the filesystem (Parquet, replaced whole) and a real
PostgreSQL (when it is installed: ``postgres_url``).
"""

from __future__ import annotations

import shutil
import uuid
from collections import Counter
from pathlib import Path

import pytest

dlt = pytest.importorskip("dlt")
duckdb = pytest.importorskip("duckdb")

from dlt.pipeline.exceptions import PipelineStepFailed  # noqa: E402

from invtools.api import Client  # noqa: E402
from invtools.dlt import TABLES, boxhero, discard_pending, last_run, load  # noqa: E402
from invtools.dlt.tables import key_of  # noqa: E402
from invtools.errors import ConfigError  # noqa: E402
from invtools.sandbox import serve  # noqa: E402

#: Each test runs several whole loads (dlt's extract, normalize and load each time): a few
#: seconds each when idle, many times that on a busy machine.
pytestmark = [pytest.mark.network, pytest.mark.timeout(600)]

SIZE = 80  # the shop's transactions (the mirror's paging is its own tests')
DETAIL_ROUTE = "/v1/location-txs/{id}"


@pytest.fixture
def sb():
    with serve(rate_limit=0, size=SIZE) as server:
        yield server


class Warehouse:
    """One dataset in one destination (``kind``: duckdb, filesystem or postgres), the dlt
    pipelines that load it, and what its tables hold."""

    def __init__(self, sb, tmp_path: Path, kind: str = "duckdb", postgres: str | None = None):
        self.sb, self.tmp, self.kind, self.postgres = sb, tmp_path, kind, postgres
        self.dataset = "boxhero" if kind != "postgres" else f"boxhero_{uuid.uuid4().hex[:10]}"
        self.file = tmp_path / "warehouse.duckdb"
        self.bucket = tmp_path / "bucket"

    def destination(self):
        if self.kind == "duckdb":
            return dlt.destinations.duckdb(str(self.file))
        if self.kind == "filesystem":
            return dlt.destinations.filesystem(bucket_url=str(self.bucket))
        return dlt.destinations.postgres(credentials=self.postgres)

    def pipeline(self, folder: str = "pipelines"):
        return dlt.pipeline(
            "invtools_test",
            pipelines_dir=str(self.tmp / folder),
            dataset_name=self.dataset,
            destination=self.destination(),
        )

    def source(self, team: str = "shop", **options):
        return boxhero(self.sb.tokens[team], **{**self.options(team), **options})

    def mirror(self, team: str = "shop") -> Path:
        """The team's mirror file (one per service: a mirror is one team of one service)."""
        return self.tmp / f"{team}-{self.sb.base_url.rsplit(':', 1)[-1]}.sqlite"

    def run(self, team="shop", *, resources=None, folder="pipelines", **options) -> dict:
        """Load ``team`` as ``invtools load`` does (``resources``: only these, through dlt's
        own ``with_resources`` and ``run``); what the run loaded, per table."""
        if resources is None:
            self.said = []
            load(
                destination=self.destination(),
                dataset=self.dataset,
                pipeline_name="invtools_test",
                pipelines_dir=str(self.tmp / folder),
                said=self.said.append,
                token=self.sb.tokens[team],
                **{**self.options(team), **options},
            )
        else:
            self.pipeline(folder).run(self.source(team, **options).with_resources(*resources))
        self.last = self.pipeline(folder)
        return last_run(self.last)[self.team_key(team)]

    def options(self, team: str = "shop") -> dict:
        return {
            "base_url": self.sb.base_url,
            "rate_limit": 0,
            "cache": str(self.tmp / f"cache-{team}-{self.sb.base_url.rsplit(':', 1)[-1]}.sqlite"),
            "mirror_path": str(self.mirror(team)),
        }

    def team_key(self, team: str = "shop") -> str:
        return f"{self.sb.base_url}#{self.sb.data(team).team['id']}"

    def rows(self, table: str, columns: str, team: str = "shop", sb=None) -> list[tuple]:
        """``columns`` of ``table``'s rows of ``team`` (of ``sb``'s service)."""
        sb = sb or self.sb
        where = (sb.base_url, sb.data(team).team["id"])
        with self.pipeline().sql_client() as client:
            name = client.make_qualified_table_name(table)
            sql = f"SELECT {columns} FROM {name} WHERE base_url = %s AND team_id = %s"
            return [tuple(r) for r in client.execute_sql(sql, *where) or []]

    def sql(self, statement: str) -> None:
        with self.pipeline().sql_client() as client:
            client.execute_sql(statement.format(dataset=client.fully_qualified_dataset_name()))

    def tables(self) -> set[str]:
        schema = self.pipeline().default_schema
        return {t for t in schema.data_table_names() if not t.startswith("_dlt")}

    # ------------------------------------------------------------ a copy, for a restore

    def backup(self) -> Path:
        """A copy of the whole dataset as the destination holds it now."""
        copy = self.tmp / f"backup_{uuid.uuid4().hex[:6]}"
        if self.kind == "duckdb":
            shutil.copy(self.file, copy)
        elif self.kind == "filesystem":
            shutil.copytree(self.bucket, copy)
        else:
            self._copy_schema(self.dataset, copy.name)
        return copy

    def restore(self, copy: Path) -> None:
        """The dataset as it was when ``copy`` was made (an operator's restore)."""
        if self.kind == "duckdb":
            shutil.copy(copy, self.file)
        elif self.kind == "filesystem":
            shutil.rmtree(self.bucket)
            shutil.copytree(copy, self.bucket)
        else:
            self.sql(f"DROP SCHEMA {self.dataset} CASCADE")
            self._copy_schema(copy.name, self.dataset)

    def _copy_schema(self, source: str, target: str) -> None:
        with self.pipeline().sql_client() as client:
            tables = client.execute_sql(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", source
            )
            client.execute_sql(f"CREATE SCHEMA {target}")
            for (table,) in tables:
                client.execute_sql(f'CREATE TABLE {target}."{table}" AS TABLE {source}."{table}"')


# ------------------------------------------------------------------------- the server's truth


def _ref(ref, field="name"):
    return None if ref is None else ref[field]


def truth(sb, team: str = "shop") -> dict[str, Counter]:
    """Every table's rows as the server holds them (the columns :func:`loaded` reads)."""
    view = sb.data(team)
    tx, lines = Counter(), Counter()
    for row in view.transactions:
        tx[
            (
                row["id"],
                row["revision"],
                _ref(row["partner"]),
                _ref(row["partner"], "deleted"),
                _ref(row["to_location"]),
                _ref(row["from_location"]),
                _ref(row["created_by"]),
                _ref(row["created_by"], "deleted"),
            )
        ] += 1
        for n, line in enumerate(view.transaction(row["id"])["items"]):
            lines[
                (
                    row["id"],
                    n,
                    line["id"],
                    float(line["quantity"]),
                    line["name"],
                    line["sku"],
                    line["deleted"],
                    _ref(row["partner"]),
                    _ref(row["to_location"]),
                    _ref(row["from_location"]),
                    _ref(row["created_by"]),
                )
            ] += 1
    names = {a["id"]: a["attr_name"] for a in view.attrs}
    return {
        "transactions": tx,
        "lines": lines,
        "items": Counter((i["id"], i["name"], i["sku"], float(i["quantity"])) for i in view.items),
        "attribute values": Counter(
            (i["id"], names[a["id"]], float(a["value"]))
            for i in view.items
            for a in i["attrs"]
            if a["type"] == "number" and a["value"] is not None
        ),
        "stock": Counter(
            (i["id"], q["location_id"], float(q["quantity"]))
            for i in view.items
            for q in i["quantities"]
        ),
        "locations": Counter((r["id"], r["name"]) for r in view.locations),
        "partners": Counter((r["id"], r["name"]) for r in view.partners),
        "members": Counter((r["id"], r["name"], r["role"]) for r in view.members),
        "attributes": Counter((r["id"], r["attr_name"]) for r in view.attrs),
        "teams": Counter([(view.team["id"], view.team["name"])]),
    }


LOADED = {
    "transactions": "transaction_id, revision, partner_name, partner_deleted, to_location_name, "
    "from_location_name, created_by_name, created_by_deleted",
    "lines": "transaction_id, line_no, item_id, quantity, item_name, sku, item_deleted, "
    "partner_name, to_location_name, from_location_name, created_by_name",
    "items": "item_id, name, sku, quantity",
    "stock": "item_id, location_id, quantity",
    "locations": "location_id, name",
    "partners": "partner_id, name",
    "members": "member_id, name, role",
    "attributes": "attribute_id, attr_name",
    "teams": "team_id, team_name",
}


def loaded(w: Warehouse, team: str = "shop", sb=None) -> dict[str, Counter]:
    """What the warehouse holds of ``team``, in the columns of :func:`truth`."""
    sb = sb or w.sb
    out = {table: Counter(w.rows(table, columns, team, sb)) for table, columns in LOADED.items()}
    # each number attribute's values in the column its attributes row names
    values = Counter()
    for _, name, column in w.rows("attributes", "attribute_id, attr_name, column_name", team, sb):
        for item_id, value in w.rows("items", f"item_id, {column}", team, sb):
            if isinstance(value, float):
                values[(item_id, name, value)] += 1
    out["attribute values"] = values
    return out


def assert_equal_to_the_server(w: Warehouse, team: str = "shop", sb=None) -> None:
    sb = sb or w.sb
    want, got = truth(sb, team), loaded(w, team, sb)
    for table in want:
        assert got[table] == want[table], (
            table,
            got[table] - want[table],
            want[table] - got[table],
        )


# ------------------------------------------------------------------ what changes on the service


def _referenced(sb, kind: str, team: str = "shop") -> list[int]:
    """Ids of the ``kind`` references the live transactions use, most used first."""
    view = sb.data(team)
    if kind == "item":
        lines = [li for r in view.transactions for li in view.transaction(r["id"])["items"]]
        used = Counter(li["id"] for li in lines if not li["deleted"])
    else:
        refs = [r[kind] for r in view.transactions if r[kind] is not None]
        used = Counter(ref["id"] for ref in refs if not ref["deleted"])
    return [i for i, _ in used.most_common()]


MUTATIONS = {
    "edit": lambda sb: sb.edit_transaction(sb.data().transactions[3]["id"]),
    "backdate": lambda sb: sb.add_transaction(
        type="out", transaction_time=sb.data().transactions[60]["transaction_time"]
    ),
    "delete": lambda sb: sb.delete_transaction(sb.data().transactions[10]["id"]),
    "add": lambda sb: sb.add_transaction(type="in"),
    "rename partner": lambda sb: sb.edit_partner(_referenced(sb, "partner")[0], name="Renamed Ltd"),
    "delete partner": lambda sb: sb.edit_partner(_referenced(sb, "partner")[1], deleted=True),
    "rename location": lambda sb: sb.edit_location(
        _referenced(sb, "to_location")[0], name="Floor 2"
    ),
    "rename member": lambda sb: sb.edit_member(_referenced(sb, "created_by")[0], name="M. Renamed"),
    "rename item": lambda sb: sb.edit_item(_referenced(sb, "item")[0], name="Renamed", sku="NEW-1"),
    "delete item": lambda sb: sb.edit_item(_referenced(sb, "item")[1], deleted=True),
    "rename attribute": lambda sb: sb.edit_attribute(
        next(a["id"] for a in sb.data().attrs if a["attr_type"] == "number"), attr_name="Mass (kg)"
    ),
}


KIND_GROUPS = (
    ("edit", "backdate", "delete", "add"),
    ("rename partner", "delete partner", "rename location", "rename member"),
    ("rename item", "delete item", "rename attribute"),
)


def moved(counts: dict) -> dict[str, int]:
    """The tables (not ``teams``, loaded every run) whose rows a run's counts say moved."""
    out = {t: c["new"] + c["changed"] + c["removed"] for t, c in counts.items() if t != "teams"}
    return {t: n for t, n in out.items() if n}


def mutate_everything(sb) -> None:
    for mutation in MUTATIONS.values():
        mutation(sb)


# ------------------------------------------------------------------------------- the loads


def test_a_first_load_equals_the_server_and_the_tables_are_typed_on_purpose(sb, tmp_path):
    w = Warehouse(sb, tmp_path)
    counts = w.run()
    assert_equal_to_the_server(w)
    assert counts["transactions"]["new"] == SIZE
    assert w.tables() == set(TABLES)
    with duckdb.connect(str(w.file), read_only=True) as con:
        types = dict(
            con.sql(
                "SELECT table_name || '.' || column_name, data_type FROM "
                "information_schema.columns WHERE table_schema = 'boxhero'"
            ).fetchall()
        )
    assert types["transactions.transaction_id"] == types["lines.item_id"] == "BIGINT"
    assert types["lines.quantity"] == types["stock.quantity"] == types["items.cost"] == "DOUBLE"
    assert types["transactions.transaction_time"] == "TIMESTAMP WITH TIME ZONE"
    assert types["transactions.backdated"] == "BOOLEAN"
    assert types["transactions.type"] == types["members.role"] == "VARCHAR"
    assert types["items.attr_weight_kg"] == "DOUBLE"  # named on purpose, not attr_weight_kgx
    assert not any(col.endswith("__v_double") for col in types)
    # the categories load as their values, not as empty cells
    assert {t for (t,) in w.rows("transactions", "type")} == {"in", "out", "move", "adjust"}
    assert {r for (r,) in w.rows("members", "role")} == {"admin", "member", "viewer"}
    assert {t for (t,) in w.rows("partners", "type")} == {"supplier", "customer"}
    mapping = dict(w.rows("attributes", "attr_name, column_name"))
    assert mapping["Weight (kg)"] == "attr_weight_kg"
    team = w.rows("teams", "team_id, team_name, base_url, mode, data_as_of")
    assert team[0][:4] == (sb.data().team["id"], sb.data().team["name"], sb.base_url, "Location")
    assert team[0][4] is not None


@pytest.mark.parametrize("kinds", KIND_GROUPS, ids=[g[0] for g in KIND_GROUPS])
def test_each_kind_of_change_reaches_the_warehouse_and_only_it_is_loaded(sb, tmp_path, kinds):
    assert set(MUTATIONS) == {k for group in KIND_GROUPS for k in group}  # every kind, once
    w = Warehouse(sb, tmp_path)
    w.run()
    for mutation in kinds:
        change = MUTATIONS[mutation]
        before = truth(sb)
        change(sb)
        after = truth(sb)
        sb.clear_log()
        counts = w.run()
        assert_equal_to_the_server(w)
        details = [r for r in sb.requests if r.route == DETAIL_ROUTE]
        assert len(details) <= 1, mutation  # only a new or edited transaction's, never a rename's
        assert moved(counts), mutation
        # exactly the transactions and lines that differ, each once; nothing else of theirs
        for table, key in (("transactions", 1), ("lines", 2)):
            old = {row[:key]: row for row in before[table]}
            new = {row[:key]: row for row in after[table]}
            differ = sum(old.get(k) != new.get(k) for k in old.keys() | new.keys())
            assert moved(counts).get(table, 0) == differ, (mutation, table)
        loaded_rows = w.last.last_trace.last_normalize_info.row_counts
        total = sum(n for t, n in loaded_rows.items() if t in TABLES and t != "teams")
        assert total == sum(moved(counts).values()), mutation


def test_a_quiet_night_fetches_no_detail_and_loads_no_row(sb, tmp_path):
    w = Warehouse(sb, tmp_path)
    sb.clear_log()
    counts = w.run()
    assert sum(c["requests"] for c in counts.values()) == len(sb.requests)  # each counted once
    sb.clear_log()
    counts = w.run()
    assert sum(c["requests"] for c in counts.values()) == len(sb.requests)
    assert not [r for r in sb.requests if r.route == DETAIL_ROUTE]
    # the list walks only: a page per 100 rows of each list
    assert Counter(r.route for r in sb.requests) == {
        "/v1/location-txs": 1,
        "/v1/items": 4,
        "/v1/item-attrs": 1,
        "/v1/locations": 1,
        "/v1/partners": 1,
        "/v1/members": 1,
    }
    assert not moved(counts)
    loaded_rows = w.last.last_trace.last_normalize_info.row_counts
    assert {t for t in loaded_rows if not t.startswith("_dlt")} <= {"teams"}
    assert_equal_to_the_server(w)


# ------------------------------------------------------------- what an operator's night brings


def _failed_run(w, sb):
    """A run that fails mid-way (one detail answers 500, no retries), then the next run."""
    mutate_everything(sb)
    failing = sb.data().transactions[0]["id"]  # the new one: its detail is fetched
    original = sb.handle

    def fail_one_detail(method, target, headers, fault=None):
        if target.split("?")[0].endswith(f"/location-txs/{failing}"):
            return 500, {"Content-Type": "text/html"}, b"<html>Internal Server Error</html>"
        return original(method, target, headers, fault=fault)

    sb.handle = fail_one_detail
    client = Client(
        sb.tokens["shop"],
        base_url=sb.base_url,
        cache=False,
        rate_limit=0,
        retries=0,
        progress=False,
    )
    with client, pytest.raises(PipelineStepFailed, match="500"):
        w.pipeline().run(w.source(client=client))
    sb.handle = original


def _pending_package(w, sb):
    """A run stopped after dlt's extract: its package pending, the next run loads it first."""
    mutate_everything(sb)
    w.pipeline().extract(w.source())
    assert w.pipeline().has_pending_data


def _discarded_package(w, sb):
    """The same, but the package is thrown away (what invtools load does)."""
    _pending_package(w, sb)
    _, said = discard_pending(w.pipeline())
    assert said and "discarded" in said


def _restored_backup(w, sb):
    """The destination restored from a copy older than what was loaded since."""
    copy = w.backup()
    mutate_everything(sb)
    w.run()
    w.restore(copy)


def _older_mirror(w, sb):
    """The mirror replaced by an older copy of itself (a cache restored by restore-keys)."""
    shutil.copy(w.mirror(), w.tmp / "old.sqlite")
    mutate_everything(sb)
    w.run()
    sb.edit_transaction(sb.data().transactions[5]["id"])
    sb.delete_transaction(sb.data().transactions[7]["id"])
    shutil.copy(w.tmp / "old.sqlite", w.mirror())


def _new_mirror(w, sb):
    """The mirror gone (a new machine, an expired cache): a new one is made."""
    mutate_everything(sb)
    w.mirror().unlink()


def _subset_runs(w, sb):
    """Runs of some of the resources (dlt's with_resources): none moves another's state."""
    mutate_everything(sb)
    w.run(resources=["teams"])
    w.run(resources=["transactions", "partners"])
    assert Counter(w.rows("transactions", "transaction_id, revision, partner_name")) == Counter(
        (r["id"], r["revision"], _ref(r["partner"])) for r in sb.data().transactions
    )
    sb.edit_transaction(sb.data().transactions[2]["id"])
    w.run(resources=["lines"])


def _another_folder(w, sb):
    """A run from another pipelines folder (another machine), then one from the first again,
    its local state older than the destination."""
    mutate_everything(sb)
    w.run(folder="elsewhere")
    sb.delete_transaction(sb.data().transactions[4]["id"])
    sb.edit_item(_referenced(sb, "item")[2], name="Renamed again")


def _dropped_tables(w, sb):
    """Tables dropped by hand (the lines, the items)."""
    mutate_everything(sb)
    if w.kind == "filesystem":
        for table in ("lines", "items"):
            shutil.rmtree(w.bucket / w.dataset / table)
    else:
        w.sql("DROP TABLE {dataset}.lines")
        w.sql("DROP TABLE {dataset}.items")


def _lost_rows(w, sb):
    """Rows deleted by hand in the destination."""
    mutate_everything(sb)
    w.sql("DELETE FROM {dataset}.transactions WHERE transaction_id % 3 = 0")
    w.sql("DELETE FROM {dataset}.stock WHERE location_id % 2 = 0")


EVENTS = {
    "a failed run": _failed_run,
    "a pending package": _pending_package,
    "a discarded package": _discarded_package,
    "a restored backup": _restored_backup,
    "an older mirror": _older_mirror,
    "a new mirror": _new_mirror,
    "subset runs": _subset_runs,
    "another folder": _another_folder,
    "dropped tables": _dropped_tables,
    "lost rows": _lost_rows,
}


#: The events that differ from one destination to another (what it holds, and how it is
#: read, restored or dropped) run on each; the others (the mirror's, a run's) on DuckDB.
ON_EVERY_DESTINATION = ("a restored backup", "dropped tables", "lost rows", "another folder")


def _cases():
    for event in EVENTS:
        kinds = (
            ("duckdb", "filesystem", "postgres") if event in ON_EVERY_DESTINATION else ("duckdb",)
        )
        for kind in kinds:
            if (kind, event) != ("filesystem", "lost rows"):  # plain files: see dropped tables
                yield pytest.param(kind, event, id=f"{kind}-{event}")


class TestTheNextRunConverges:
    """Every operator event, after every kind of change: the next run leaves the tables equal
    to the server's truth, and the one after loads nothing."""

    @pytest.mark.parametrize(("kind", "event"), list(_cases()))
    def test_after(self, request, sb, tmp_path, kind, event):
        postgres = request.getfixturevalue("postgres_url") if kind == "postgres" else None
        warehouse = Warehouse(sb, tmp_path, kind, postgres)
        warehouse.run()
        assert_equal_to_the_server(warehouse)
        EVENTS[event](warehouse, sb)
        warehouse.run()
        assert_equal_to_the_server(warehouse)
        again = warehouse.run()
        if warehouse.kind != "filesystem":  # (replaced whole: every row, every run)
            assert not moved(again)


# ------------------------------------------------------------------------------ teams, services


def test_two_services_with_one_team_id_keep_their_own_rows(tmp_path):
    with serve(rate_limit=0, size=60, seed=0) as a, serve(rate_limit=0, size=80, seed=0) as b:
        assert a.data().team["id"] == b.data().team["id"]  # one id, two services
        w = Warehouse(a, tmp_path)
        w.run()
        other = Warehouse(b, tmp_path)
        other.run()
        b.delete_transaction(b.data().transactions[0]["id"])
        other.run()
        assert_equal_to_the_server(w, sb=a)
        assert_equal_to_the_server(other, sb=b)
        with duckdb.connect(str(w.file), read_only=True) as con:
            teams = con.sql("SELECT base_url, team_id FROM boxhero.teams").fetchall()
        assert sorted(teams) == sorted([(a.base_url, 48213), (b.base_url, 48213)])


def test_two_teams_share_one_dataset_and_keep_their_own_rows(tmp_path):
    with serve(rate_limit=0, size=60, shops=2) as sb:
        w = Warehouse(sb, tmp_path)
        w.run("shop")
        w.run("harrogate")
        sb.delete_transaction(sb.data("harrogate").transactions[0]["id"], team="harrogate")
        sb.edit_partner(_referenced(sb, "partner", "shop")[0], name="Only the shop's")
        w.run("harrogate")
        w.run("shop")
        assert_equal_to_the_server(w, "shop")
        assert_equal_to_the_server(w, "harrogate")


def test_a_filesystem_dataset_holds_one_team_and_says_so(tmp_path):
    with serve(rate_limit=0, size=50, shops=2) as sb:
        w = Warehouse(sb, tmp_path, "filesystem")
        w.run("shop")
        with pytest.raises(PipelineStepFailed, match="dataset of its own"):
            w.run("harrogate")
        assert_equal_to_the_server(w, "shop")


def test_a_basic_mode_team_loads_what_every_team_may_and_says_why_not_the_rest(sb, tmp_path):
    w = Warehouse(sb, tmp_path)
    counts = w.run("basic")
    assert w.tables() == {"teams", "members", "partners", "attributes"}
    (skipped,) = w.rows("teams", "skipped", "basic")[0]
    assert {"items", "stock", "transactions", "lines"} <= set(skipped.split(", "))
    view = sb.data("basic")
    assert sorted(w.rows("members", "member_id", "basic")) == [(m["id"],) for m in view.members]
    assert "transactions" not in counts


# ------------------------------------------------------------------------------- the token


def test_no_token_in_any_file_the_pipeline_writes(sb, tmp_path, monkeypatch):
    token = sb.tokens["shop"]
    monkeypatch.setenv("SOURCES__BOXHERO__TOKEN", token)  # dlt's own way: the environment
    w = Warehouse(sb, tmp_path)
    w.pipeline().run(boxhero(base_url=sb.base_url, rate_limit=0, mirror_path=str(w.mirror())))
    sb.add_transaction(type="in")
    w.run()  # and given as an argument
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name == "trace.pickle" for p in written)  # the trace is there, and checked
    assert any("state" in p.name for p in written)
    assert not [p for p in written if token.encode() in p.read_bytes()]
    assert token not in repr(w.source())
    assert_equal_to_the_server(w)


def test_no_token_anywhere_is_the_packages_error_saying_where_to_put_one(tmp_path):
    with pytest.raises(ConfigError, match="SOURCES__BOXHERO__TOKEN"):
        boxhero(base_url="http://127.0.0.1:9", mirror_path=str(tmp_path / "m.sqlite"))


@pytest.mark.parametrize("bad", [0, -1, 2.5, "10", True])
def test_a_bad_batch_size_is_the_packages_error(sb, tmp_path, bad):
    with pytest.raises(ConfigError, match="batch_size"):
        Warehouse(sb, tmp_path).source(batch_size=bad)


def test_batch_size_bounds_the_rows_per_batch_and_loads_the_same(sb, tmp_path):
    w = Warehouse(sb, tmp_path)
    w.run(batch_size=7)
    assert_equal_to_the_server(w)
    mutate_everything(sb)
    w.run(batch_size=7)
    assert_equal_to_the_server(w)


def test_the_lines_carry_no_stock_level_a_batch_cannot_know(sb, tmp_path):
    w = Warehouse(sb, tmp_path)
    w.run()
    columns = set(w.pipeline().default_schema.get_table_columns("lines"))
    assert not {c for c in columns if "stock_level" in c}
    assert set(key_of("lines")) | {"item_id", "quantity"} <= columns


# ------------------------------------------------------------------------- a kill inside dlt


def _killed_at(owner, name: str, after_unlink: str | None = None):
    """Patch ``owner.name`` (in a child) so that the process SIGKILLs itself right after it
    (``after_unlink``: right after that file is unlinked while it runs): nothing of dlt's
    ``finally`` runs, as with a real ``kill -9``."""
    import functools
    import os
    import signal

    original = getattr(owner, name)

    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        if after_unlink is None:
            original(*args, **kwargs)
            os.kill(os.getpid(), signal.SIGKILL)
        unlink = os.unlink

        def dying(path, *a, **k):
            unlink(path, *a, **k)
            if os.path.basename(path) == after_unlink:
                os.kill(os.getpid(), signal.SIGKILL)

        os.unlink = dying
        return original(*args, **kwargs)

    setattr(owner, name, wrapper)


KILLS = {
    # normalize: the package moved to load/normalized, its extracted copy not yet deleted
    "normalize, between its two moves": ("normalize", "LoadStorage", "commit_new_load_package"),
    # normalize: killed while deleting the extracted copy, its schema.json already gone
    "normalize, inside its delete": ("normalize", "PackageStorage", "delete_package"),
    # load: the package marked completed, not yet moved to load/loaded
    "load, after its completed marker": ("load", "PackageStorage", "complete_loading_package"),
}


@pytest.mark.parametrize("kill", list(KILLS))
def test_a_run_killed_inside_dlt_jams_dlt_and_the_next_load_heals_it(sb, tmp_path, kill):
    import multiprocessing
    import signal

    from dlt.common.storages.load_package import PackageStorage
    from dlt.common.storages.load_storage import LoadStorage

    step, owner, name = KILLS[kill]
    w = Warehouse(sb, tmp_path)
    w.run()
    mutate_everything(sb)
    pipeline = w.pipeline()
    pipeline.extract(w.source())  # here: the child below talks to no server
    if step == "load":
        pipeline.normalize()

    def child():
        cls = {"LoadStorage": LoadStorage, "PackageStorage": PackageStorage}[owner]
        _killed_at(cls, name, "schema.json" if name == "delete_package" else None)
        getattr(w.pipeline(), step)()

    process = multiprocessing.get_context("fork").Process(target=child)
    process.start()
    process.join(60)
    assert process.exitcode == -signal.SIGKILL
    with pytest.raises(PipelineStepFailed):  # dlt alone: every later run fails
        w.pipeline().run(w.source())
    w.run()  # invtools load
    assert any("discarded" in line for line in w.said)
    assert_equal_to_the_server(w)


# ------------------------------------------------------------------------ invtools load (CLI)


def _cli(sb, folder: Path, monkeypatch, capsys, *args, token=None) -> tuple[int, str, str]:
    """``invtools load`` in ``folder``, in this process; (exit status, stdout, stderr)."""
    from invtools.cli import main

    monkeypatch.chdir(folder)
    monkeypatch.setenv("SOURCES__BOXHERO__RATE_LIMIT", "0")  # dlt's configuration
    monkeypatch.setenv("SOURCES__BOXHERO__TOKEN", token or sb.tokens["shop"])
    monkeypatch.setenv("SOURCES__BOXHERO__MIRROR_PATH", str(folder / "shop.sqlite"))
    capsys.readouterr()
    status = main(["load", "--base-url", sb.base_url, *args])
    out, err = capsys.readouterr()
    return status, out, err


def test_invtools_load_prints_a_line_per_run_and_keeps_its_files_in_its_folder(
    sb, tmp_path, monkeypatch, capsys
):
    status, out, err = _cli(sb, tmp_path, monkeypatch, capsys)
    assert status == 0, err
    (line,) = out.splitlines()
    assert line.startswith(f"team {sb.data().team['id']} of {sb.base_url}: ")
    assert f"transactions +{SIZE} ~0 -0" in line and "requests" in line
    assert (tmp_path / ".dlt" / "pipelines" / "invtools").is_dir()  # here, not dlt's own folder
    assert not err  # not a terminal: no bars, no notes
    sb.delete_transaction(sb.data().transactions[0]["id"])
    sb.edit_partner(_referenced(sb, "partner")[0], name="Renamed Ltd")
    status, out, _ = _cli(sb, tmp_path, monkeypatch, capsys, "--quiet")
    assert status == 0 and "transactions +0 ~" in out and "-1," in out
    with duckdb.connect(str(tmp_path / "invtools.duckdb"), read_only=True) as con:
        rows = con.sql(
            "SELECT transaction_id, revision, partner_name FROM boxhero.transactions"
        ).fetchall()
    assert Counter(rows) == Counter(
        (r["id"], r["revision"], _ref(r["partner"])) for r in sb.data().transactions
    )


def test_two_jobs_in_two_folders_keep_apart(sb, tmp_path, monkeypatch, capsys):
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir(), second.mkdir()
    assert _cli(sb, first, monkeypatch, capsys)[0] == 0
    status, out, _ = _cli(sb, second, monkeypatch, capsys)  # one pipeline name, its own state
    assert status == 0 and f"transactions +{SIZE} ~0 -0" in out  # into its own warehouse


def test_a_killed_load_is_said_and_healed_by_the_next(sb, tmp_path, monkeypatch, capsys):
    assert _cli(sb, tmp_path, monkeypatch, capsys)[0] == 0
    sb.add_transaction(type="in")
    pipeline = dlt.pipeline(
        "invtools",
        pipelines_dir=str(tmp_path / ".dlt" / "pipelines"),
        destination=dlt.destinations.duckdb(str(tmp_path / "invtools.duckdb")),
        dataset_name="boxhero",
    )
    pipeline.extract(Warehouse(sb, tmp_path).source())  # stopped after its extract
    status, out, err = _cli(sb, tmp_path, monkeypatch, capsys)
    assert status == 0
    assert err.startswith("invtools load: discarded 1 load package(s)")
    assert "transactions +1 ~0 -0" in out
    status, out, err = _cli(sb, tmp_path, monkeypatch, capsys, "--quiet")
    assert status == 0 and not err


def test_a_failed_load_says_why_and_what_to_do_in_one_line(sb, tmp_path, monkeypatch, capsys):
    bad = "not-a-token-" + "x" * 20
    status, out, err = _cli(sb, tmp_path, monkeypatch, capsys, token=bad)
    assert status == 1 and not out
    (line,) = err.strip().splitlines()
    assert line.startswith("invtools load: failed: AuthenticationError: ")
    assert "SOURCES__BOXHERO__TOKEN" in line and "Client(token=" not in line
    assert bad not in err
    # a mirror that cannot be written: the package's own words, what to do
    (tmp_path / "shop.sqlite").mkdir()  # a folder where the mirror's file would be
    status, out, err = _cli(sb, tmp_path, monkeypatch, capsys)
    (line,) = err.strip().splitlines()
    assert status == 1 and line.startswith("invtools load: failed: ")
    assert "Traceback" not in err and "shop.sqlite" in line


def test_a_duckdb_file_named_like_its_dataset_is_refused_before_anything_is_sent(tmp_path):
    with pytest.raises(ConfigError, match="ambiguous"):
        load(dataset="boxhero", pipeline_name="boxhero", token="t", base_url="http://127.0.0.1:9")


def test_the_filesystem_tables_read_as_plain_parquet_equal_the_server(sb, tmp_path):
    w = Warehouse(sb, tmp_path, "filesystem")
    w.run()
    mutate_everything(sb)
    w.run()
    files = str(w.bucket / "boxhero" / "transactions" / "*.parquet")
    rows = duckdb.sql(f"SELECT transaction_id, revision FROM read_parquet('{files}')").fetchall()
    assert Counter(rows) == Counter((r["id"], r["revision"]) for r in sb.data().transactions)
