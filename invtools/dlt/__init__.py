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

- ``teams`` (key ``team_id``): the team, its service (``base_url``), ``data_as_of`` (the
  moment the mirror's rows are as of, on the service's clock) and ``skipped`` (the tables its
  mode does not allow);
- ``items`` (``team_id, id``): items, attribute columns named as ``attributes.column_name``
  says (:func:`attribute_columns`: ``attr_Weight (kg)`` is ``attr_weight_kg``);
- ``stock`` (``team_id, item_id, location_id``): the quantity per item and location;
- ``locations``, ``partners``, ``members``, ``attributes`` (``team_id, id``);
- ``transactions`` (``team_id, id``): the current revision of each transaction;
- ``lines`` (``team_id, transaction_id, line_no``): the lines of each transaction's current
  revision; an edit replaces all of a transaction's lines, whatever their number.

Types are explicit, from the package's own frame schemas (:mod:`invtools.frames.schemas`), never
guessed from the first values: ids ``bigint``, quantities ``double`` (whole until the first
2.5 kg: one column all the same), times ``timestamp`` with time zone, flags ``bool``, the rest
``text``. Money (``cost``, ``price``) is ``double`` as in the package's frames: the wire sends
decimal strings such as ``"6.86"``, which a double gives back to 15 significant digits; write
``CAST(cost AS DECIMAL(18, 2))`` where a sum must be exact to the cent. The lines carry no
stock levels: a level holds only over the whole history (the service recomputes later levels
on an edit without raising their revisions); ``stock`` holds today's, and a running sum of
``quantity`` the rest.

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

from invtools.dlt.run import last_run, load, summary
from invtools.dlt.source import boxhero
from invtools.dlt.tables import DELETED, TABLES, attribute_columns

__all__ = ["boxhero", "load", "last_run", "summary", "attribute_columns", "TABLES", "DELETED"]
