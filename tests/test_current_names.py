"""Current names everywhere (issue 43): a rename on the service raises no revision, yet the
client's frames, the mirror's frames and the warehouse name every reference as the service
does now, with no transaction detail fetched again, and the mirror's report says the rename.

One contract, every kind of rename: each compared with the server's truth (``sb.data()``),
row by row, not ids alone.
"""

from __future__ import annotations

from collections import Counter

import pandas as pd
import pytest

from invtools.mirror import TransactionMirror
from invtools.sandbox import serve

pytestmark = [pytest.mark.network, pytest.mark.timeout(300)]

SIZE = 50
DETAIL_ROUTE = "/v1/location-txs/{id}"
TX_REFS = ("partner", "from_location", "to_location", "created_by")


@pytest.fixture
def sb():
    with serve(rate_limit=0, size=SIZE, seed=0) as server:
        yield server


def _name(ref: dict | None) -> str | None:
    return None if ref is None else ref["name"]


def _used(sb, ref: str) -> int:
    """The id of the live ``ref`` (a transaction reference, or ``item``) most used."""
    view = sb.data()
    if ref == "item":
        found = [li for r in view.transactions for li in view.transaction(r["id"])["items"]]
    else:
        found = [r[ref] for r in view.transactions if r[ref] is not None]
    return Counter(x["id"] for x in found if not x["deleted"]).most_common(1)[0][0]


#: kind -> (rename it on the service, the name the rename gives)
RENAMES = {
    "partner": lambda sb: sb.edit_partner(_used(sb, "partner"), name="Renamed Ltd"),
    "location": lambda sb: sb.edit_location(_used(sb, "to_location"), name="Floor 2"),
    "member": lambda sb: sb.edit_member(_used(sb, "created_by"), name="M. Renamed"),
    "item name": lambda sb: sb.edit_item(_used(sb, "item"), name="Renamed Mug"),
    "item sku": lambda sb: sb.edit_item(_used(sb, "item"), sku="NEW-SKU-1", barcode="999"),
    "attribute": lambda sb: sb.edit_attribute(
        next(a["id"] for a in sb.data().attrs if a["attr_type"] == "number"),
        attr_name="Mass (kg)",
    ),
}
#: What the report says a rename changed, per kind (attribute names are no transaction's).
SAID = {
    "partner": "Renamed Ltd",
    "location": "Floor 2",
    "member": "M. Renamed",
    "item name": "Renamed Mug",
    "item sku": "NEW-SKU-1",
}


def _plain(value):
    return None if value is None or value is pd.NA or value != value else value


def _tx_truth(sb) -> Counter:
    return Counter((r["id"], *(_name(r[ref]) for ref in TX_REFS)) for r in sb.data().transactions)


def _lines_truth(sb) -> Counter:
    view = sb.data()
    return Counter(
        (r["id"], li["id"], li["name"], li["sku"], li["barcode"], _name(r["partner"]))
        for r in view.transactions
        for li in view.transaction(r["id"])["items"]
    )


def _tx_rows(df: pd.DataFrame) -> Counter:
    cols = ["transaction_id", *(f"{ref}_name" for ref in TX_REFS)]
    return Counter(tuple(map(_plain, row)) for row in df[cols].itertuples(index=False))


def _line_rows(df: pd.DataFrame) -> Counter:
    cols = ["transaction_id", "item_id", "item_name", "sku", "barcode", "partner_name"]
    return Counter(tuple(map(_plain, row)) for row in df[cols].itertuples(index=False))


def _details(sb) -> int:
    return sum(r.route == DETAIL_ROUTE for r in sb.requests)


@pytest.mark.parametrize("kind", list(RENAMES))
class TestEveryRenameReachesEveryFrame:
    """A rename reaches the client's frames on the next ``refresh=True``, the mirror's on
    the next sync (whose report says it) and the warehouse on the next load."""

    @pytest.fixture
    def renamed(self, sb, make_client, tmp_path, kind):
        client = make_client(sb)
        mirror = TransactionMirror(tmp_path / "mirror.sqlite", client)
        client.lines_df(), mirror.sync()  # every detail kept, at the names of before
        RENAMES[kind](sb)
        sb.clear_log()
        return client, mirror

    def test_the_clients_and_the_mirrors_frames(self, sb, renamed, kind):
        client, mirror = renamed
        tx = client.transactions_df(refresh=True)
        lines = client.lines_df(refresh=True)
        joined = client.transactions_df(refresh=True, with_lines=True)
        report = mirror.sync()
        assert _details(sb) == 0  # every detail kept by revision: the lists name them
        assert _tx_rows(tx) == _tx_rows(mirror.transactions_df()) == _tx_truth(sb)
        assert _line_rows(lines) == _line_rows(mirror.lines_df()) == _lines_truth(sb)
        assert _line_rows(joined) == _lines_truth(sb)
        assert (report.new, report.changed, report.removed) == (0, 0, 0)
        if kind in SAID:  # the report says the rename as what changed
            assert report.renamed == 1
            assert "1 renamed" in str(report) and SAID[kind] in str(report)
        else:
            assert report.renamed == 0 and "renamed" not in str(report)
        # an attribute's column follows its current name, on items and joined onto lines
        items = client.items_df(refresh=True)
        attrs = sb.data().attrs
        assert {c for c in items.columns if c.startswith("attr_")} == {
            f"attr_{a['attr_name']}" for a in attrs
        }
        number = next(a for a in attrs if a["attr_type"] == "number")
        column = f"attr_{number['attr_name']}"
        weights = {
            i["id"]: next((a["value"] for a in i["attrs"] if a["id"] == number["id"]), None)
            for i in sb.data().items
        }
        got = client.lines_df(item_columns=[column]).drop_duplicates("item_id")
        for item_id, value in zip(got["item_id"], got[column], strict=True):
            if weights.get(item_id) is not None:
                assert value == pytest.approx(float(weights[item_id]))

    def test_the_warehouse(self, sb, renamed, kind, tmp_path):
        duckdb = pytest.importorskip("duckdb")
        dlt = pytest.importorskip("dlt")
        from invtools.dlt import load

        _, mirror = renamed
        file = tmp_path / "warehouse.duckdb"
        load(
            destination=dlt.destinations.duckdb(str(file)),
            dataset="boxhero",
            pipeline_name="names_test",
            pipelines_dir=str(tmp_path / "pipelines"),
            said=lambda _: None,
            token=sb.tokens["shop"],
            base_url=sb.base_url,
            rate_limit=0,
            cache=str(tmp_path / "dlt-cache.sqlite"),
            mirror_path=str(mirror.path),
        )
        assert _details(sb) == 0
        with duckdb.connect(str(file), read_only=True) as con:
            tx = con.sql(
                "SELECT transaction_id, partner_name, from_location_name, to_location_name, "
                "created_by_name FROM boxhero.transactions"
            ).fetchall()
            lines = con.sql(
                "SELECT transaction_id, item_id, item_name, sku, barcode, partner_name "
                "FROM boxhero.lines"
            ).fetchall()
            attrs = con.sql("SELECT attribute_id, attr_name FROM boxhero.attributes").fetchall()
        assert Counter(tx) == _tx_truth(sb)
        assert Counter(lines) == _lines_truth(sb)
        assert set(attrs) == {(a["id"], a["attr_name"]) for a in sb.data().attrs}
