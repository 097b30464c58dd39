"""One name for one key (issue 44, item 5): a frame of one kind of thing names its key
``<thing>_id``, the way every other frame names it (``stock.item_id``, ``lines.transaction_id``),
so frames join on one column name with no rename. The wire keeps ``id``.

Checked over real HTTP against the stand-in, for the client's frames, the mirror's and the
warehouse tables; the joins give the server's truth (``sb.data("shop")``).
"""

from __future__ import annotations

import pytest

from invtools.mirror import TransactionMirror
from invtools.sandbox import serve

pytestmark = pytest.mark.network

#: frame -> its key, and the server's list of the same things.
KEYS = {
    "items": ("item_id", "items"),
    "locations": ("location_id", "locations"),
    "partners": ("partner_id", "partners"),
    "members": ("member_id", "members"),
    "attributes": ("attribute_id", "attrs"),
    "transactions": ("transaction_id", "transactions"),
}


@pytest.fixture(scope="module")
def shop():
    with serve(rate_limit=0, seed=0, size=60) as server:
        yield server


@pytest.fixture
def client(shop, make_client):
    return make_client(shop)


@pytest.mark.parametrize("kind", list(KEYS))
def test_each_frame_of_one_kind_of_thing_names_its_key_thing_id(shop, client, kind):
    key, listed = KEYS[kind]
    df = getattr(client, f"{kind}_df")()
    assert df.columns[0] == key and "id" not in df.columns
    truth = [row["id"] for row in getattr(shop.data("shop"), listed)]
    assert sorted(df[key].tolist()) == sorted(truth)


def test_lines_join_items_on_item_id_and_name_each_line_as_the_server_does(shop, client):
    lines, items = client.lines_df(), client.items_df()
    joined = lines.merge(items, on="item_id", suffixes=("", "_of_item"))
    view = shop.data("shop")
    names = {item["id"]: item["name"] for item in view.items}
    expected = sorted(
        (row["id"], line["id"], names[line["id"]])
        for row in view.transactions
        for line in view.transaction(row["id"])["items"]
        if line["id"] in names
    )
    got = zip(joined["transaction_id"], joined["item_id"], joined["name"], strict=True)
    assert sorted(got) == expected


def test_stock_joins_items_on_item_id_and_adds_up_to_each_items_quantity(shop, client):
    joined = client.stock_df().merge(client.items_df(), on="item_id", suffixes=("", "_total"))
    per_item = joined.groupby("item_id")[["quantity", "quantity_total"]].agg(
        {"quantity": "sum", "quantity_total": "first"}
    )
    truth = {item["id"]: float(item["quantity"]) for item in shop.data("shop").items}
    assert per_item["quantity"].to_dict() == truth
    assert per_item["quantity_total"].to_dict() == truth


def test_transactions_join_partners_on_partner_id_as_the_server_names_them(shop, client):
    tx, partners = client.transactions_df(), client.partners_df()
    joined = tx.merge(partners, on="partner_id", suffixes=("", "_partner"))
    view = shop.data("shop")
    live = {p["id"]: p["name"] for p in view.partners}
    expected = sorted(
        (row["id"], live[row["partner"]["id"]])
        for row in view.transactions
        if row["partner"] is not None and row["partner"]["id"] in live
    )
    got = zip(joined["transaction_id"], joined["name"], strict=True)
    assert sorted(got) == expected


def test_the_mirrors_frames_name_their_keys_so_too(shop, client, tmp_path):
    mirror = TransactionMirror(tmp_path / "mirror.sqlite", client)
    mirror.sync()
    tx = mirror.transactions_df()
    assert tx.columns[0] == "transaction_id" and "id" not in tx.columns
    assert sorted(tx["transaction_id"]) == sorted(r["id"] for r in shop.data("shop").transactions)
    for frame in (mirror.lines_df(), mirror.stock_history(), mirror.changes_df()):
        assert "id" not in frame.columns and "transaction_id" in frame.columns
    syncs = mirror.syncs_df()
    assert syncs.columns[0] == "sync_id" and "id" not in syncs.columns
    assert set(mirror.changes_df()["sync_id"]) <= set(syncs["sync_id"])
    joined = mirror.lines_df().merge(client.items_df(), on="item_id", suffixes=("", "_of_item"))
    names = {item["id"]: item["name"] for item in shop.data("shop").items}
    assert [names[i] for i in joined["item_id"]] == joined["name"].tolist()


def test_the_warehouse_tables_name_their_keys_as_the_frames_do(shop, tmp_path):
    dlt = pytest.importorskip("dlt")
    pytest.importorskip("duckdb")
    from invtools.dlt import TABLES, load

    options = dict(
        base_url=shop.base_url,
        rate_limit=0,
        cache=str(tmp_path / "cache.sqlite"),
        mirror_path=str(tmp_path / "mirror.sqlite"),
        said=lambda line: None,
    )
    destination = dlt.destinations.duckdb(str(tmp_path / "warehouse.duckdb"))
    common = dict(pipeline_name="keys", pipelines_dir=str(tmp_path / "pipelines"))
    load(destination=destination, dataset="boxhero", token=shop.tokens["shop"], **common, **options)
    pipeline = dlt.pipeline(destination=destination, dataset_name="boxhero", **common)
    schema = pipeline.default_schema
    for kind, (key, listed) in KEYS.items():
        columns = schema.get_table_columns(kind)
        assert "id" not in columns
        keys = [c for c, hint in columns.items() if hint.get("primary_key")]
        assert keys == ["base_url", "team_id", key]
        with pipeline.sql_client() as sql:
            rows = sql.execute_sql(f"SELECT {key} FROM {sql.make_qualified_table_name(kind)}")
        truth = [row["id"] for row in getattr(shop.data("shop"), listed)]
        assert sorted(r[0] for r in rows) == sorted(truth)
    assert set(KEYS) < set(TABLES)
    # the tables join as the frames do
    with pipeline.sql_client() as sql:
        stock, items = (sql.make_qualified_table_name(t) for t in ("stock", "items"))
        joined = sql.execute_sql(
            f"SELECT i.item_id, sum(s.quantity), min(i.quantity) FROM {stock} s "
            f"JOIN {items} i USING (base_url, team_id, item_id) GROUP BY i.item_id"
        )
    truth = {item["id"]: float(item["quantity"]) for item in shop.data("shop").items}
    assert {i: float(q) for i, q, _ in joined} == truth
    assert {i: float(q) for i, _, q in joined} == truth
