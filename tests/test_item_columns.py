"""Issue 25, item 3: item attributes on lines -- ``client.lines_df(item_columns=[...])`` and
``invtools.frames.with_item_columns`` -- and the shops compared by category and by SKU across
teams, each equal to plain pandas on the stand-in's raw JSON (``sb.data(team)``)."""

from __future__ import annotations

import pandas as pd
import pytest
from truth import raw_lines

import invtools
from invtools import ConfigError
from invtools.frames import with_item_columns

pytestmark = pytest.mark.network

SHOPS = ["shop", "harrogate", "york"]


def _raw_categories(view) -> dict[int, str]:
    """item id -> its ``Category`` attribute, from the server's live items."""
    return {
        it["id"]: a["value"]
        for it in view.items
        for a in it.get("attrs") or ()
        if a["name"] == "Category"
    }


def test_item_columns_are_the_items_values_joined_by_item_id(sb, make_client):
    client = make_client(sb)
    view = sb.data("shop")
    lines = client.lines_df(item_columns=["sku", "attr_Category", "cost"])
    plain = client.lines_df()

    # placed after item_name, typed as in the items frame; the other columns as without
    items = client.items_df()
    at = list(lines.columns).index("item_name")
    assert list(lines.columns[at + 1 : at + 3]) == ["attr_Category", "cost"]
    assert lines["attr_Category"].dtype == items["attr_Category"].dtype
    assert lines["cost"].dtype == "float64"
    pd.testing.assert_frame_equal(
        lines.drop(columns=["attr_Category", "cost"]), plain, check_like=False
    )

    # the values: the server's raw items, by the line's item id
    category = _raw_categories(view)
    cost = {it["id"]: float(it["cost"]) for it in view.items}
    want_cat = [category.get(int(i), pd.NA) for i in lines["item_id"]]
    assert lines["attr_Category"].astype(object).tolist() == want_cat
    want_cost = pd.Series([cost.get(int(i), float("nan")) for i in lines["item_id"]])
    pd.testing.assert_series_equal(
        lines["cost"].reset_index(drop=True), want_cost, check_names=False
    )

    # a deleted item's line: <NA> (the server holds no such item), its own sku kept
    gone = ~lines["item_id"].isin(list(cost))
    assert gone.any() and bool(lines.loc[gone, "item_deleted"].all())
    assert lines.loc[gone, "attr_Category"].isna().all()
    assert lines.loc[gone, "cost"].isna().all()
    assert lines.loc[gone, "sku"].notna().all()


def test_item_columns_merge_the_items_provenance(sb, make_client):
    client = make_client(sb)
    lines = client.lines_df(since="2026-10-01", item_columns="attr_Category")
    plain = client.lines_df(since="2026-10-01")
    assert lines.attrs["endpoint"] == ["/v1/location-txs", "/v1/items"]
    # the lines' window kept (the items frame has none); its end is the clock at each call
    assert lines.attrs["window"]["since"] == plain.attrs["window"]["since"]
    assert lines.attrs["window"]["until"] is not None
    assert lines.attrs["team_name"] == sb.data("shop").team["name"]


def test_a_bad_name_is_a_config_error_listing_the_columns_before_any_detail(sb, make_client):
    client = make_client(sb)
    client.items_df()  # cached: what the error needs is there
    with client.measure() as m, pytest.raises(ConfigError) as caught:
        client.lines_df(since="30D", item_columns=["attr_Categroy"])
    said = str(caught.value)
    assert "attr_Categroy" in said and "attr_Category" in said and "item_columns" in said
    assert m.sent == 0  # no detail was fetched for a name that cannot be joined

    with pytest.raises(ConfigError, match="quantity"):  # the line's own quantity
        client.lines_df(since="30D", item_columns=["quantity"])
    with pytest.raises(invtools.ArgumentTypeError, match="item_columns"):
        client.lines_df(since="30D", item_columns=[3])


def test_with_item_columns_joins_a_mirrors_lines_too(sb, make_client, tmp_path):
    client = make_client(sb)
    mirror = invtools.TransactionMirror(tmp_path / "m.sqlite", client)
    mirror.sync(progress=False)
    joined = with_item_columns(mirror.lines_df(), client.items_df(), ["attr_Supplier"])
    supplier = {
        it["id"]: a["value"]
        for it in sb.data("shop").items
        for a in it.get("attrs") or ()
        if a["name"] == "Supplier"
    }
    want = [supplier.get(int(i), pd.NA) for i in joined["item_id"]]
    assert joined["attr_Supplier"].astype(object).tolist() == want
    assert joined.attrs["source"] == ["mirror", "api"]


@pytest.fixture(scope="module")
def shops_server():
    from invtools.sandbox import serve

    with serve(rate_limit=0, size=300, shops=3, seed=7) as server:
        yield server


def test_shops_by_category_and_by_sku_equal_plain_pandas(shops_server, monkeypatch, tmp_path):
    for name, token in shops_server.tokens.items():
        monkeypatch.setenv(f"INVTOOLS_TOKEN_{name.upper()}", token)
    monkeypatch.setenv("INVTOOLS_BASE_URL", shops_server.base_url)
    since = "2026-09-01"

    # the notebook's cells: one call per team, one stack, two tables
    answers = invtools.each_team(
        lambda c: c.lines_df(since=since, item_columns=["attr_Category"]),
        SHOPS,
        progress=False,
        cache=tmp_path / "c.sqlite",
        rate_limit=0,
    )
    lines = answers.frame(ignore_index=True)
    sold = lines[lines["type"] == "out"].rename(columns={"quantity": "units"})  # out: positive
    by_category = sold.pivot_table(
        index="attr_Category", columns="team", values="units", aggfunc="sum", fill_value=0
    )
    by_sku = sold.pivot_table(
        index="sku", columns="team", values="units", aggfunc="sum", fill_value=0
    )
    assert lines.index.equals(pd.RangeIndex(len(lines)))
    assert lines.attrs["team_name"] == [shops_server.data(t).team["name"] for t in SHOPS]

    # plain pandas on each team's raw JSON
    raw = []
    for team in SHOPS:
        view = shops_server.data(team)
        found = raw_lines(view)
        late = found["time"] >= pd.Timestamp(since, tz="UTC")
        found = found.loc[late, ["tx", "item", "type", "qty"]]
        found = found.rename(columns={"tx": "transaction_id", "item": "item_id", "qty": "quantity"})
        found["team"] = team
        found["category"] = found["item_id"].map(_raw_categories(view))
        sku = {it["id"]: it["sku"] for it in view.items}
        for row in view.transactions:  # deleted items are not listed: their lines' sku
            for line in (view.transaction(row["id"]) or {}).get("items", ()):
                sku.setdefault(line["id"], line.get("sku"))
        found["sku"] = found["item_id"].map(sku)
        raw.append(found)
    raw_sold = pd.concat(raw, ignore_index=True).query("type == 'out'")
    raw_sold = raw_sold.rename(columns={"quantity": "units"})
    want_category = raw_sold.pivot_table(
        index="category", columns="team", values="units", aggfunc="sum", fill_value=0
    )
    want_sku = raw_sold.pivot_table(
        index="sku", columns="team", values="units", aggfunc="sum", fill_value=0
    )
    assert len(by_category) > 3 and len(by_sku) > 20 and by_category.sum().gt(0).all()
    for got, want in ((by_category, want_category), (by_sku, want_sku)):
        pd.testing.assert_frame_equal(
            got.rename_axis(index=None, columns=None).astype(float),
            want.rename_axis(index=None, columns=None)[list(got.columns)].astype(float),
            check_index_type=False,
            check_column_type=False,
        )
