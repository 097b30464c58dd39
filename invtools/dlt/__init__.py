"""invtools as a dlt source: one team's data in any warehouse dlt loads into, revision-correct.

`dlt <https://dlthub.com/docs>`_ (``pip install 'invtools[dlt]'``) brings the destinations
(DuckDB, Postgres, BigQuery, Snowflake, MotherDuck, Parquet on a bucket), schemas, load ids
and deployment; invtools brings what dlt's generic REST source cannot do for this API: see an
edit, a rename or a deletion. The API has no change cursor (``transaction_time`` is a business
date; an edit keeps it, a deletion just leaves the list), so the transactions come from a
:class:`~invtools.TransactionMirror` synced by ``revision``::

    import dlt, invtools.dlt
    pipeline = dlt.pipeline("invtools", destination="duckdb", dataset_name="boxhero")
    pipeline.run(invtools.dlt.boxhero())   # token: SOURCES__BOXHERO__TOKEN, or .dlt/secrets.toml

The token is a dlt secret (``sources.boxhero.token``): dlt resolves it from the environment or
``secrets.toml`` and keeps it out of its trace and state. Everything else is dlt
configuration too (``sources.boxhero.base_url``, ``mirror_path``, ...), or an argument.

**The destination is the state.** No cursor is kept anywhere else: each resource, as its
extract starts, reads the key and fingerprint of every row of its table the destination holds
for the team (:mod:`~invtools.dlt.destination`), and loads the difference from what the
service holds now (:mod:`~invtools.dlt.truth`): rows new or changed, and a deletion for each
key gone. Whatever happened in between (a restored backup, a dropped table, an older or
replaced mirror, a subset of the resources run with ``with_resources``, a package discarded
after a kill, another folder or job) the next run converges to the service's rows. A quiet
night costs the list walks and one query of the destination per table, and loads no row.

The tables, each keyed first by the team's ``base_url`` and ``team_id`` (a team is its
service and its id: several teams, of several services, can share one dataset), merged on
their key (dlt's ``delete-insert``), each row with its ``_fingerprint``:

- ``teams`` (key ``base_url, team_id``): the team's name and mode, ``data_as_of`` (the moment
  the mirror's rows are as of, on the service's clock) and ``skipped`` (the tables its mode
  does not allow);
- ``items`` (``item_id``): items, attribute columns named as ``attributes.column_name`` says
  (:func:`attribute_columns`: ``attr_Weight (kg)`` is ``attr_weight_kg``; after a rename,
  the values move to the new name's column);
- ``stock`` (``item_id, location_id``): the quantity per item and location;
- ``locations`` (``location_id``), ``partners`` (``partner_id``), ``members`` (``member_id``),
  ``attributes`` (``attribute_id``);
- ``transactions`` (``transaction_id``): the current revision of each transaction, its
  references named as the lists say now;
- ``lines`` (``transaction_id, line_no``): the lines of each transaction's current revision.

A destination that cannot merge (dlt's ``filesystem`` without a table format) gets every
table replaced whole each run, so its files always equal the service's rows; such a dataset
holds one team.

Types are explicit, from the package's own frame schemas (:mod:`invtools.frames.schemas`), never
guessed from the first values: ids ``bigint``, quantities ``double`` (whole until the first
2.5 kg: one column all the same), times ``timestamp`` with time zone, flags ``bool``, the rest
``text``. Money (``cost``, ``price``) is ``double`` as in the package's frames: the wire sends
decimal strings such as ``"6.86"``, which a double gives back to 15 significant digits; write
``CAST(cost AS DECIMAL(18, 2))`` where a sum must be exact to the cent. The lines carry no
stock levels: a level holds only over the whole history (the service recomputes later levels
on an edit without raising their revisions); ``stock`` holds today's, and a running sum of
``quantity`` the rest.

A team in Basic mode loads ``teams``, ``members``, ``partners`` and ``attributes``: the rest
needs a team that manages stock by location; the source logs why, and ``teams.skipped`` says
so.

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

from invtools.dlt.pending import discard_pending
from invtools.dlt.run import last_run, load, summary
from invtools.dlt.source import boxhero
from invtools.dlt.tables import DELETED, FINGERPRINT, TABLES, attribute_columns, key_of

__all__ = [
    "boxhero",
    "load",
    "last_run",
    "summary",
    "discard_pending",
    "attribute_columns",
    "key_of",
    "TABLES",
    "DELETED",
    "FINGERPRINT",
]
