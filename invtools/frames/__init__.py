"""Records in, typed DataFrames out: one function per resource, pure (no HTTP, no I/O).

Each function takes any iterable of record dicts exactly as the API sends them (a list from
``json.loads``, or a walk such as ``client.transactions()``: rows are consumed once) and returns
a DataFrame whose columns, order and dtypes are declared once, in :data:`SCHEMAS`:

=================  ==========================================================================
resource           columns (dtype)
=================  ==========================================================================
``transactions``   transaction_id, type (category in/out/move/adjust), transaction_time,
                   created_at (both datetime64[ms, UTC]), revision, count_of_items (Int64),
                   total_quantity (float64), partner_/from_location_/to_location_ + id
                   (Int64), name (string), deleted (boolean); location_id, location_name
                   (where the stock changed); created_by_ + id, name, deleted; memo, url
                   (string); backdated, opening_count (boolean: an opening stock count,
                   :mod:`.openings`)
``lines``          transaction_id, transaction_time, type, revision, partner_id, partner_name,
                   from_location_id, from_location_name, to_location_id, to_location_name,
                   location_id, location_name, created_by_id, created_by_name,
                   opening_count (the transaction's), item_id, item_name, sku, barcode,
                   quantity, item_deleted, new_stock_level, from_location_new_stock_level,
                   to_location_new_stock_level
``items``          item_id, name, sku, barcode, photo_url, cost, price, quantity, then
                   ``attr_<name>`` per item attribute (number float64, date datetime64[ms, UTC],
                   text/barcode string)
``stock``          item_id, item_name, sku, location_id, location_name, quantity
``locations``      location_id, name, quantity, memo
``partners``       partner_id, type (category supplier/customer), name, phone, email, address,
                   memo
``members``        member_id, name, role (category admin/member/viewer)
``attributes``     attribute_id, attr_type, attr_name (string), rank (Int64)
``stock_history``  transaction_time, transaction_id, item_id, item_name, location_id,
                   location_name, stock, change, item_deleted
=================  ==========================================================================

Conventions (the contract plots and the mirror rely on):

- A frame of one kind of thing names its key ``<thing>_id`` (the wire's ``id``), as every
  other frame names it: ``items.item_id`` is ``stock.item_id`` and ``lines.item_id``,
  ``transactions.transaction_id`` is ``lines.transaction_id``, ``partners.partner_id`` is
  ``transactions.partner_id``, so frames join on one name (``lines.merge(items,
  on="item_id")``).
- ids and counts are ``Int64`` (nullable); times ``datetime64[ms, UTC]`` (the wire has
  millisecond precision, so nothing is lost); quantities and money ``float64``; text is
  ``string`` (``pd.StringDtype()``, missing values ``<NA>``); flags ``boolean`` (nullable).
- An embedded reference ``{id, name, deleted}`` becomes ``<ref>_id``, ``<ref>_name``,
  ``<ref>_deleted``; a null reference gives ``<NA>`` in all three.
- ``location_id``/``location_name`` (transactions and lines) is the one place the stock
  changed: the ``to_location`` -- the location of an in, out or adjust, and the destination of
  a move (its source stays in ``from_location_*``) -- or the ``from_location`` when there is
  no ``to_location``. ``created_by_id``/``created_by_name``: the member who recorded it.
- A missing known field is ``<NA>``. A value that does not parse (a money string like
  ``"n/a"``, a malformed time, an id that is not an integer, a ``type`` outside the known
  categories) becomes ``<NA>``/``NaN``/``NaT`` rather than an exception: one bad row must not
  cost the analyst the whole download.
- Fields the server sends that the schema does not know are kept, as-is (``object`` dtype),
  appended after the schema columns in order of first appearance; rows without them hold
  ``None``. If such a field's name clashes with a schema column it is renamed ``extra_<name>``.
- An empty input gives an empty frame with every schema column and its dtype.

Rows are read once, a chunk (``CHUNK_ROWS`` rows) at a time, into per-column lists
(references to the parsed values, no copies; embedded references straight into pyarrow struct
arrays), and each column is then typed in one vectorised call. Only one chunk of the input is
held at a time, so a generator's rows can be freed as they are read.
``benchmarks/bench_frames.py`` measures this against ``pd.json_normalize``.

:func:`with_provenance` records where a frame came from in ``df.attrs`` (one
:class:`~invtools.frames.provenance.Provenance`, as JSON values: it survives ``to_parquet``).

What lives where (each module's docstring says more):

=================  ==========================================================================
module             what it holds
=================  ==========================================================================
``schemas``        the dtypes, :data:`SCHEMAS`, ``ATTR_DTYPES``, :data:`BACKDATE_THRESHOLD`,
                   partner type names, the wire fields of a transaction row
``columns``        typing one column (int, float, time, string, boolean, category), forgiving;
                   the columns of an embedded reference, the location where stock changed
``reader``         the chunked row reader (``CHUNK_ROWS`` rows at a time) filling per-column
                   lists, and the frame built from it
``resources``      :func:`transactions_df`, :func:`items_df`, :func:`stock_df`,
                   :func:`locations_df`, :func:`partners_df`, :func:`members_df`,
                   :func:`attributes_df`
``lines``          :func:`lines_df`; :func:`with_item_columns` (item columns onto lines)
``arrow``          :func:`transactions_df_from_pages`: page bytes parsed by pyarrow; what a
                   build freed given back (``give_back``)
``stock``          :func:`stock_history`, :func:`rebase_levels`
``tally``          what a window holds from the list rows alone: transactions and units per
                   type, the line a long fetch of details says first
``provenance``     :func:`with_provenance`, :data:`PROVENANCE_KEYS`,
                   :func:`merge_provenance` (several frames' records in one)
``context``        :func:`context_of` (a frame's team, grain, window and the moment it is as
                   of: what every analysis reads), :func:`window_of`, :func:`fit_window`
``stretch``        :func:`complete_since`: the stretch of a window a partial fetch holds in
                   full (details newest first, in the background)
``names``          :func:`current_names`: references named as their lists say now (a
                   rename raises no revision)
``openings``       :func:`opening_counts`: the one rule for opening stock counts, decided
                   where a frame is built (``opening_count``); :data:`OPENING_NOTE`
``deleted``        :func:`deleted_items`, :func:`leave_out_deleted`: deleted items in
                   analyses and plots (left out by default, and said)
``export``         :func:`excel_ready`: a frame ``to_excel`` takes (local times, no zone);
                   :func:`to_excel`: frames to one workbook, with a provenance sheet
=================  ==========================================================================

Imports: of invtools only the foundation (:mod:`invtools.errors`, :mod:`invtools._types`);
besides that pandas, numpy and pyarrow (and openpyxl, for
:func:`to_excel` only). Pure: no HTTP, and no files but the workbook :func:`to_excel` is
asked to write.
Inside the package the imports go one way: ``columns`` imports ``schemas``; ``reader``
imports ``columns``; ``resources`` and ``lines`` import ``reader`` (``lines`` also
``provenance``); ``arrow`` imports ``resources``; ``stock`` imports ``lines`` and
``provenance``; ``openings`` imports ``reader``, and ``resources``, ``lines`` and ``arrow``
import it; ``provenance``, ``deleted`` and ``export`` import none of them. Use the
names of this package's ``__all__`` (and the documented constants ``ATTR_DTYPES``,
``PARTNER_TYPE_NAMES``, ``CHUNK_ROWS``, ``BLOCK_BYTES``); the modules' other public names
are shared inside the package only.

>>> import pandas as pd
>>> df = transactions_df([{"id": 7, "type": "in", "transaction_time": "2026-05-02T01:10:00.000Z",
...                        "created_at": "2026-05-02T01:10:05.000Z", "partner": None}])
>>> (df.loc[0, "partner_id"] is pd.NA, str(df["transaction_time"].dtype),
...  bool(df.loc[0, "backdated"]))
(True, 'datetime64[ms, UTC]', False)
"""

from __future__ import annotations

from invtools.frames.arrow import BLOCK_BYTES as BLOCK_BYTES  # documented, not in __all__
from invtools.frames.arrow import transactions_df_from_pages
from invtools.frames.context import Context, context_of, fit_window, window_of
from invtools.frames.deleted import DELETED_NOTE, deleted_items, leave_out_deleted
from invtools.frames.export import excel_ready, to_excel
from invtools.frames.lines import lines_df, with_item_columns
from invtools.frames.names import current_names
from invtools.frames.openings import OPENING_NOTE, opening_counts
from invtools.frames.provenance import (
    PROVENANCE_KEYS,
    merge_provenance,
    with_provenance,
)
from invtools.frames.reader import CHUNK_ROWS as CHUNK_ROWS  # documented, not in __all__
from invtools.frames.resources import (
    attributes_df,
    items_df,
    locations_df,
    members_df,
    partners_df,
    stock_df,
    transactions_df,
)
from invtools.frames.schemas import ATTR_DTYPES as ATTR_DTYPES  # documented, not in __all__
from invtools.frames.schemas import (
    BACKDATE_THRESHOLD,
    PARTNER_TYPE_DTYPE,
    ROLE_DTYPE,
    SCHEMAS,
    TIME_DTYPE,
    TX_TYPE_DTYPE,
)
from invtools.frames.schemas import PARTNER_TYPE_NAMES as PARTNER_TYPE_NAMES  # likewise
from invtools.frames.stock import rebase_levels, stock_history
from invtools.frames.stretch import complete_since

__all__ = [
    "SCHEMAS",
    "TIME_DTYPE",
    "TX_TYPE_DTYPE",
    "PARTNER_TYPE_DTYPE",
    "ROLE_DTYPE",
    "BACKDATE_THRESHOLD",
    "PROVENANCE_KEYS",
    "transactions_df",
    "transactions_df_from_pages",
    "lines_df",
    "with_item_columns",
    "current_names",
    "items_df",
    "stock_df",
    "locations_df",
    "partners_df",
    "members_df",
    "attributes_df",
    "stock_history",
    "rebase_levels",
    "with_provenance",
    "merge_provenance",
    "Context",
    "context_of",
    "window_of",
    "fit_window",
    "complete_since",
    "DELETED_NOTE",
    "deleted_items",
    "OPENING_NOTE",
    "opening_counts",
    "leave_out_deleted",
    "excel_ready",
    "to_excel",
]
