"""invtools as a dlt source: one team's data in any warehouse dlt loads into, revision-correct.

`dlt <https://dlthub.com/docs>`_ (``pip install 'invtools[dlt]'``) brings the destinations
(DuckDB, Postgres, BigQuery, Snowflake, MotherDuck, Parquet on a bucket), schemas, load ids
and deployment; invtools brings what dlt's generic REST source cannot do for this API: see an
edit or a deletion. The API has no change cursor (``transaction_time`` is a business date; an
edit keeps it, a deletion just leaves the list), so the transactions come from a
:class:`~invtools.TransactionMirror` synced by ``revision``, and each run loads the
transactions its syncs recorded as new, edited, removed or restored since the last load::

    import dlt, invtools.dlt
    pipeline = dlt.pipeline("invtools", destination="duckdb", dataset_name="boxhero")
    pipeline.run(invtools.dlt.boxhero())   # token: SOURCES__BOXHERO__TOKEN, or .dlt/secrets.toml

The token is a dlt secret (``sources.boxhero.token``): dlt resolves it from the environment or
``secrets.toml`` and keeps it out of its trace and state. Everything else is dlt
configuration too (``sources.boxhero.base_url``, ``mirror_path``, ...), or an argument.

The tables, each with ``team_id`` (several teams can share one dataset) and merged on its key
(dlt's ``delete-insert``: a row is replaced whole, a key gone from the service is deleted):

=============  ==================================  ==============================================
table          key                                 rows
=============  ==================================  ==============================================
teams          team_id                             the team, its service and ``data_as_of``
items          team_id, id                         items; attribute columns named as ``attributes``
                                                   says (``column_name``)
stock          team_id, item_id, location_id       quantity per item and location
locations      team_id, id                         locations
partners       team_id, id                         partners (suppliers, customers)
members        team_id, id                         members
attributes     team_id, id                         attribute definitions, ``column_name`` in items
transactions   team_id, id                         the current revision of each transaction
lines          team_id, transaction_id, line_no    the lines of each transaction's current
                                                   revision (an edit replaces them all)
=============  ==================================  ==============================================

Types are explicit, from the package's own frame schemas (:mod:`invtools.frames.schemas`), never
guessed from the first values: ids ``bigint``, quantities, levels and money (``cost``,
``price``) ``double`` (BoxHero's own numbers are binary floats on the wire), times ``timestamp``
with time zone, flags ``bool``, the rest ``text``. The lines carry no stock levels: a level
holds only over the whole history (the service recomputes later levels on an edit without
raising their revisions); ``stock`` holds today's, and a running sum of ``quantity`` the rest.

How a run stays cheap and right:

- **transactions and lines**: a full sync of the mirror (one request per list page, one per new
  or edited transaction; a detail is never fetched twice), then the transactions the mirror's
  change log names since the sync last loaded (the source's dlt state holds its id), in
  batches (``batch_size``), so a long history is never one frame in memory. A run with no
  change fetches no detail and loads no row. A run killed anywhere loses nothing: the mirror
  keeps what it fetched, dlt commits the state only with the load, so the next run loads
  everything since the last completed load.
- **the other tables** have no revision: each is listed whole (a page per 100 rows, cached for
  the short expiry of :mod:`invtools.api.endpoints`), and only the rows whose content changed
  since the last load (a hash per row, kept in the resource's dlt state) are loaded, with a
  deletion for each key gone.
- A team in Basic mode loads ``teams``, ``members``, ``partners`` and ``attributes``: the rest
  needs a team that manages stock by location; the source logs why, and ``teams.skipped``
  says so.

>>> import dlt, tempfile, os
>>> from invtools.sandbox import serve
>>> with serve(rate_limit=0, size=80) as sb, tempfile.TemporaryDirectory() as tmp:
...     pipeline = dlt.pipeline("invtools_doc", pipelines_dir=tmp, dataset_name="boxhero",
...                             destination=dlt.destinations.duckdb(f"{tmp}/shop.duckdb"))
...     source = boxhero(sb.tokens["shop"], base_url=sb.base_url, rate_limit=0,
...                      cache=False, mirror_path=f"{tmp}/shop.sqlite")
...     info = pipeline.run(source)
...     counts = pipeline.last_trace.last_normalize_info.row_counts
>>> counts["transactions"], counts["teams"]
(80, 1)
"""

from __future__ import annotations

import functools
import os
import re
import time
import weakref
from collections.abc import Iterator, Mapping
from typing import Any

import dlt
import pandas as pd
import pyarrow as pa
from dlt.common import logger

from invtools import frames
from invtools._config import DEFAULT_BASE_URL
from invtools.api import Client
from invtools.errors import ConfigError
from invtools.frames.schemas import SCHEMAS
from invtools.mirror import TransactionMirror

__all__ = ["boxhero", "load", "last_run", "summary", "attribute_columns", "TABLES", "DELETED"]

#: The hard-delete flag (dlt's ``hard_delete`` hint): a row with it set deletes its key.
DELETED = "_deleted"

#: table -> (the frame schema its columns come from, its key, what an update replaces).
TABLES: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "teams": ("", ("team_id",), ("team_id",)),
    "items": ("items", ("team_id", "id"), ("team_id", "id")),
    "stock": (
        "stock",
        ("team_id", "item_id", "location_id"),
        ("team_id", "item_id", "location_id"),
    ),
    "locations": ("locations", ("team_id", "id"), ("team_id", "id")),
    "partners": ("partners", ("team_id", "id"), ("team_id", "id")),
    "members": ("members", ("team_id", "id"), ("team_id", "id")),
    "attributes": ("attributes", ("team_id", "id"), ("team_id", "id")),
    "transactions": ("transactions", ("team_id", "id"), ("team_id", "id")),
    # an edit replaces the transaction's lines: every line of its id, whatever their number
    "lines": ("lines", ("team_id", "transaction_id", "line_no"), ("team_id", "transaction_id")),
}
#: What every team's API allows; the rest needs Location mode.
EVERY_MODE = ("teams", "members", "partners", "attributes")
#: The lines' stock levels are left out (see the module's docstring).
_NO_LEVELS = ("new_stock_level", "from_location_new_stock_level", "to_location_new_stock_level")


def _data_type(dtype: Any) -> str:
    """The dlt data type of a frame column's dtype."""
    if isinstance(dtype, pd.DatetimeTZDtype):
        return "timestamp"
    kind = str(dtype).lower()
    if kind.startswith("int") or kind.startswith("uint"):
        return "bigint"
    if kind.startswith("float"):
        return "double"
    if kind == "boolean" or kind == "bool":
        return "bool"
    return "text"  # string, category


def _hints(schema: str) -> dict[str, dict[str, Any]]:
    """The explicit column hints of a table: its frame schema's columns, typed."""
    columns: dict[str, dict[str, Any]] = {"team_id": {"data_type": "bigint", "nullable": False}}
    for col, dtype in SCHEMAS.get(schema, {}).items():
        if col not in _NO_LEVELS:
            columns[col] = {"data_type": _data_type(dtype)}
    if schema == "lines":
        columns["line_no"] = {"data_type": "bigint", "nullable": False}
    if schema == "attributes":
        columns["column_name"] = {"data_type": "text"}
    columns[DELETED] = {"data_type": "bool", "hard_delete": True}
    return columns


_TEAM_HINTS = {
    "team_id": {"data_type": "bigint", "nullable": False},
    "team_name": {"data_type": "text"},
    "mode": {"data_type": "text"},
    "base_url": {"data_type": "text"},
    "data_as_of": {"data_type": "timestamp"},
    "skipped": {"data_type": "text"},
    DELETED: {"data_type": "bool", "hard_delete": True},
}


def attribute_columns(attributes: pd.DataFrame) -> dict[str, str]:
    """The warehouse name of each item attribute column: ``attr_<name>`` of
    :meth:`~invtools.Client.items_df` -> ``attr_`` and the name in lower snake case (what
    dlt's naming convention keeps as it is), ``_<id>`` added where two names would meet.

    >>> attrs = pd.DataFrame({"id": [7, 8, 9], "attr_name": ["Weight (kg)", "Colour", "colour"]})
    >>> attribute_columns(attrs)
    {'attr_Weight (kg)': 'attr_weight_kg', 'attr_Colour': 'attr_colour_8', 'attr_colour': 'attr_colour_9'}
    """  # noqa: E501 - the doctest shows the mapping whole
    plain = {
        int(i): "attr_" + (re.sub(r"[^0-9a-z]+", "_", str(name).lower()).strip("_") or "x")
        for i, name in zip(attributes["id"], attributes["attr_name"], strict=True)
    }
    taken = pd.Series(plain).value_counts()
    return {
        f"attr_{name}": plain[int(i)] + (f"_{int(i)}" if taken[plain[int(i)]] > 1 else "")
        for i, name in zip(attributes["id"], attributes["attr_name"], strict=True)
    }


_ARROW = {
    "bigint": pa.int64(),
    "double": pa.float64(),
    "bool": pa.bool_(),
    "text": pa.string(),
    "timestamp": pa.timestamp(
        "us", tz="UTC"
    ),  # dlt's default precision: every destination keeps it
}


def _plain(df: pd.DataFrame, team_id: int) -> pd.DataFrame:
    """``df`` as a table's rows: ``team_id`` first, categories as text, the hard-delete flag
    (unset), no index, no attrs."""
    out = df.copy()
    out.attrs = {}
    for col in out.columns:
        if isinstance(out[col].dtype, pd.CategoricalDtype):
            out[col] = out[col].astype("string")
    out.insert(0, "team_id", pd.Series([team_id] * len(out), dtype="Int64", index=out.index))
    out[DELETED] = pd.array([None] * len(out), dtype="boolean")
    return out.reset_index(drop=True)


def _table(df: pd.DataFrame, table: str) -> pa.Table:
    """``df`` as Arrow, each column of the type its dtype says (:func:`_data_type`), the key
    never null: every batch of a table has one schema, whatever its values (dlt refuses to
    buffer two), and the one the hints say."""
    key = TABLES[table][1]
    schema = pa.schema(
        [pa.field(c, _ARROW[_data_type(df[c].dtype)], nullable=c not in key) for c in df.columns]
    )
    return pa.Table.from_pandas(df, schema=schema, preserve_index=False)


def _tombstones(like: pd.DataFrame, keys: list[tuple], table: str) -> pa.Table:
    """One row per key of ``table`` to delete, in the columns of ``like``: the key and the
    hard-delete flag set, the rest null."""
    key = list(TABLES[table][1])
    df = pd.DataFrame(keys, columns=key, dtype="Int64").reindex(columns=like.columns)
    df = df.astype(like.dtypes.to_dict())
    df[DELETED] = pd.array([True] * len(df), dtype="boolean")
    return _table(df, table)


class _Tally:
    """What a run loaded, per table: new, changed, removed rows (kept in the source's state)."""

    def __init__(self, state: dict, tables: list[str]) -> None:
        self.state = state
        state["last_run"] = {table: [0, 0, 0] for table in ["requests", *tables]}
        state["last_run_at"] = time.time()  # wall clock: which teams a run loaded

    def add(self, table: str, new: int = 0, changed: int = 0, removed: int = 0) -> None:
        counts = self.state["last_run"].setdefault(table, [0, 0, 0])
        for i, n in enumerate((new, changed, removed)):
            counts[i] += int(n)


def _diffed(
    df: pd.DataFrame, table: str, seen: dict[str, str], tally: _Tally
) -> Iterator[pa.Table]:
    """The rows of a table with no revision that changed since ``seen`` (key -> row hash,
    updated in place): new and changed rows, and a deletion per key gone."""
    key = TABLES[table][1]
    keys = df[list(key)].astype("string").agg(":".join, axis=1).tolist() if len(df) else []
    content = df.drop(columns=[DELETED])
    hashes = [format(int(h), "x") for h in pd.util.hash_pandas_object(content, index=False)]
    now = dict(zip(keys, hashes, strict=True))
    fresh = [k not in seen or seen[k] != h for k, h in now.items()]
    gone = [k for k in seen if k not in now]
    tally.add(
        table,
        new=sum(k not in seen for k in now),
        changed=sum(k in seen and seen[k] != h for k, h in now.items()),
        removed=len(gone),
    )
    if any(fresh):
        yield _table(df[fresh].reset_index(drop=True), table)
    if gone:
        yield _tombstones(df, [tuple(int(p) for p in k.split(":")) for k in gone], table)
    seen.clear()
    seen.update(now)


@dlt.source(name="boxhero", section="boxhero", max_table_nesting=0, root_key=False)
def boxhero(
    token: str = dlt.secrets.value,
    base_url: str = DEFAULT_BASE_URL,
    mirror_path: str | None = None,
    cache: Any = True,
    rate_limit: float | None = 5.0,
    concurrency: int = 8,
    batch_size: int = 5000,
    progress: bool = False,
    client: Any = None,
) -> Any:
    """The team of ``token`` as dlt resources: ``teams``, ``items``, ``stock``, ``locations``,
    ``partners``, ``members``, ``attributes``, ``transactions`` and ``lines`` (see the module).

    ``token``: a dlt secret (``SOURCES__BOXHERO__TOKEN`` or ``[sources.boxhero] token`` in
    ``.dlt/secrets.toml``). ``base_url``, ``cache``, ``rate_limit``, ``concurrency`` and
    ``progress``: the :class:`~invtools.Client`'s (or ``client``: one made already, used as it
    is). ``mirror_path``: the team's :class:`~invtools.TransactionMirror` file (default: the
    team's own file in the user data folder, the one a notebook's mirror uses). ``batch_size``:
    transactions per batch loaded (memory: about a batch at a time).

    >>> pipeline.run(boxhero())                                      # doctest: +SKIP
    """
    if client is None:
        client = Client(
            token,
            base_url=base_url,
            cache=cache,
            rate_limit=rate_limit,
            concurrency=concurrency,
            progress=progress,
        )
        owned = client
    else:
        owned = None
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ConfigError(f"boxhero: batch_size must be a positive int, not {batch_size!r}")
    team = client.team()  # one request (cached): which tables the team's mode allows
    skipped = [] if team.uses_locations else [t for t in TABLES if t not in EVERY_MODE]
    if skipped:
        logger.warning(
            f"boxhero: team {team.name!r} (id {team.id}) is in {team.mode_name} mode: "
            f"{', '.join(skipped)} need a team that manages stock by location; loading "
            f"{', '.join(EVERY_MODE)}"
        )
    here = f"{client.base_url}#{team.id}"  # a team is its service and its id
    mirror = TransactionMirror(mirror_path, client) if team.uses_locations else None

    def team_state(scope: dict) -> dict:
        return scope.setdefault("teams", {}).setdefault(here, {})

    @functools.cache
    def tally() -> _Tally:  # one per run, in the source's state
        loaded = [t for t in TABLES if t not in skipped and t != "teams"]
        return _Tally(team_state(dlt.current.source_state()), loaded)

    @functools.cache
    def changes() -> tuple[list[int] | None, Any]:
        """Sync the mirror, once a run: the transactions to load (None: all) and the moment
        the mirror's rows are as of."""
        assert mirror is not None
        state = team_state(dlt.current.source_state())
        loaded = state.get("sync_id", 0) if state.get("mirror") == str(mirror.path) else 0
        with client.measure() as m:
            mirror.sync(progress=progress)
        tally().add("requests", new=m.sent)
        last, ids = mirror.changed_since(loaded)
        log = mirror.changes_df()
        log = log[log["sync_id"] > loaded]
        kinds: dict[int, list[str]] = {}  # each transaction's changes, sync by sync
        for tx, change in zip(log["transaction_id"], log["change"].astype(str), strict=True):
            kinds.setdefault(int(tx), []).append(change)
        born = {tx for tx, seen in kinds.items() if seen[0].endswith("new")}
        gone = {tx for tx, seen in kinds.items() if seen[-1] == "removed"}
        tally().add(
            "transactions",
            new=len(born - gone),
            changed=len(set(kinds) - born - gone),
            removed=len(gone - born),
        )
        state.update(sync_id=last, mirror=str(mirror.path))
        return (None if loaded == 0 else ids), frames.context_of(log).as_of

    def listed(table: str, frame: Any) -> Any:
        _, key, replaced = TABLES[table]

        @dlt.resource(
            name=table,
            primary_key=key,
            merge_key=replaced,
            write_disposition={"disposition": "merge", "strategy": "delete-insert"},
            columns=_hints(TABLES[table][0]),
        )
        def rows() -> Iterator[pa.Table]:
            seen = team_state(dlt.current.resource_state()).setdefault("rows", {})
            with client.measure() as m:
                df = frame()
            tally().add("requests", new=m.sent)
            yield from _diffed(_plain(df, team.id), table, seen, tally())

        return rows

    def items() -> pd.DataFrame:
        df = client.items_df(progress=progress)
        return df.rename(columns=attribute_columns(client.attributes_df()))

    def attributes() -> pd.DataFrame:
        df = client.attributes_df()
        df["column_name"] = pd.array(list(attribute_columns(df).values()), dtype="string")
        return df

    def stock() -> pd.DataFrame:
        return client.stock_df(progress=progress)

    def batches(table: str) -> Iterator[pa.Table]:
        assert mirror is not None
        ids, _ = changes()
        for txs, lines in mirror.batches(ids, size=batch_size):
            removed = txs["removed_at"].notna().to_numpy()
            gone = [(team.id, int(i)) for i in txs.loc[removed, "id"]]
            if table == "transactions":
                rows = _plain(txs[~removed].drop(columns="removed_at"), team.id)
                yield _table(rows, table)
                if gone:
                    yield _tombstones(rows, gone, table)
            else:
                rows = _plain(lines, team.id)
                number = rows.groupby("transaction_id").cumcount().astype("Int64")
                rows.insert(2, "line_no", number)
                tally().add(table, new=len(rows), removed=len(gone))
                yield _table(rows, table)
                if gone:  # every line of a removed transaction: its merge key is enough
                    yield _tombstones(rows, [(*g, 0) for g in gone], table)

    def from_mirror(table: str) -> Any:
        _, key, replaced = TABLES[table]
        return dlt.resource(
            batches(table),  # a generator: nothing runs before dlt extracts it
            name=table,
            primary_key=key,
            merge_key=replaced,
            write_disposition={"disposition": "merge", "strategy": "delete-insert"},
            columns=_hints(TABLES[table][0]),
        )

    @dlt.resource(
        name="teams",
        primary_key="team_id",
        write_disposition={"disposition": "merge", "strategy": "delete-insert"},
        columns=_TEAM_HINTS,
    )
    def teams() -> Iterator[dict]:
        as_of = None if mirror is None else changes()[1]  # the mirror synced: its moment
        yield {
            "team_id": team.id,
            "team_name": team.name,
            "mode": team.mode_name,
            "base_url": client.base_url,
            "data_as_of": as_of if as_of is not None else client.now(),
            "skipped": ", ".join(skipped) or None,
        }

    frames_of = {
        "items": items,
        "stock": stock,
        "locations": client.locations_df,
        "partners": client.partners_df,
        "members": client.members_df,
        "attributes": attributes,
    }
    resources = [teams]
    for table in TABLES:
        if table in skipped or table == "teams":
            continue
        if table in ("transactions", "lines"):
            resources.append(from_mirror(table))
        else:
            resources.append(listed(table, frames_of[table]))
    if owned is not None:
        # dlt has no hook for a source's end: the client closes when the resources go
        weakref.finalize(resources[0], owned.close)
    return resources


def last_run(pipeline: Any) -> dict[str, dict[str, list[int]]]:
    """What the pipeline's last run of :func:`boxhero` loaded, per team (``base_url#id``):
    ``{table: [new, changed, removed]}`` (``lines``: ``[lines written, 0, transactions whose
    lines were deleted]``; ``requests``: ``[sent, 0, 0]``), from the source's dlt state."""
    teams = pipeline.state.get("sources", {}).get("boxhero", {}).get("teams", {})
    return {team: dict(state.get("last_run", {})) for team, state in teams.items()}


def summary(counts: Mapping[str, list[int]], seconds: float) -> str:
    """One line of what a run loaded (:func:`last_run` of one team) and how long it took.

    >>> summary({"requests": [6, 0, 0], "items": [0, 2, 0], "transactions": [1, 1, 1],
    ...          "lines": [5, 0, 1]}, 0.92)
    'items +0 ~2 -0, transactions +1 ~1 -1, lines 5 written -1; 6 requests, 0.9 s'
    """
    parts = []
    for table, (new, changed, removed) in counts.items():
        if table == "lines":
            parts.append(f"lines {new} written -{removed}")
        elif table != "requests":
            parts.append(f"{table} +{new} ~{changed} -{removed}")
    sent = counts.get("requests", [0])[0]
    return f"{', '.join(parts)}; {sent} requests, {seconds:.1f} s"


def load(
    *,
    destination: str = "duckdb",
    dataset: str = "boxhero",
    pipeline_name: str = "invtools",
    pipelines_dir: str | None = None,
    **options: Any,
) -> str:
    """Run :func:`boxhero` into ``destination`` (a dlt destination's name, configured the dlt
    way: ``DESTINATION__POSTGRES__CREDENTIALS`` and so on; ``duckdb``: the file
    ``<pipeline_name>.duckdb`` here) and ``dataset``; return :func:`summary`'s line, the team
    first. ``options``: :func:`boxhero`'s (the token from the environment when not given:
    ``SOURCES__BOXHERO__TOKEN``, or ``INVTOOLS_TOKEN``). This is ``invtools load``.

    A DuckDB file named like its dataset fails dlt's load ("ambiguous reference to catalog or
    schema"): that pair is refused before anything is sent.
    """
    if destination == "duckdb" and pipeline_name == dataset:
        raise ConfigError(
            f"a DuckDB file named like its dataset ({pipeline_name}.duckdb, dataset {dataset!r}) "
            "makes DuckDB's names ambiguous; give another pipeline name or dataset"
        )
    if options.get("token") is None and not os.environ.get("SOURCES__BOXHERO__TOKEN"):
        options["token"] = os.environ.get("INVTOOLS_TOKEN")  # None: dlt's own config files
    if options.get("token") is None:
        options.pop("token", None)
    where: dict[str, Any] = {} if pipelines_dir is None else {"pipelines_dir": pipelines_dir}
    pipeline = dlt.pipeline(pipeline_name, destination=destination, dataset_name=dataset, **where)
    started, wall = time.monotonic(), time.time()
    pipeline.run(boxhero(**options))
    seconds = time.monotonic() - started
    teams = pipeline.state.get("sources", {}).get("boxhero", {}).get("teams", {})
    ran = [team for team, state in teams.items() if state.get("last_run_at", 0) >= wall]
    return "\n".join(
        "team {1} of {0}: {2}".format(
            *team.rsplit("#", 1), summary(last_run(pipeline)[team], seconds)
        )
        for team in ran
    )
