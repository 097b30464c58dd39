"""Investigations on the typed frames: the questions an analyst asks first, each in one call.

Pure functions over the frames of :mod:`invtools.frames` (no HTTP): what the example notebooks
ask of the data more than once lives here, not in the notebooks.

- :func:`stockouts` — one row per out-of-stock episode, from a ``stock_history`` frame.
- :func:`stockout_summary` — per item: how often it ran out, for how long, how long restocking
  took.
- :func:`movement` — per item: received, sold, adjusted, last sale, days since; with the items
  frame also stock on hand and its value; ``dead`` flags stock that did not sell.
- :func:`stock_value` — units and value of the stock per location.
- :func:`stock_at` — the stock of each item (and location) at a given time, from a history,
  a window's opening balances included.
- :func:`period_end_stock` — the stock of each item (or each item at each location) at every
  month's, quarter's or year's end (wide or long); :func:`month_end_stock` its month case.
- :func:`stock_value_by_month` — units and value of the stock at each month's end.
- :func:`supplier_summary` — per supplier: deliveries, quantity, value at cost, days between
  deliveries, distinct items.
- :func:`shrinkage` — adjustments' net quantity and value at cost per item, location or
  member, biggest loss first, with the cumulative share for an 80 % cut.
- :func:`reorder` — what sold over a look-back: daily out, stock on hand, days of cover, the
  date each runs out, and those that run out within the lead time; ``by="location"``: per item
  and location, with what to do (transfer or order).
- :func:`dead_stock` — per location, the items holding stock that did not sell for ``days``:
  items, units, value at cost and its share of the location's stock value.
- :func:`abc_classes` — the items classed A, B or C by what went out (at cost, at price or in
  units), the cuts as arguments; ``by="location"``: the stock each class holds per location.
- :func:`crosstab` — transactions (or units) by two groupings at once: per member and month of
  each type, per location and type, per partner and month.
- :func:`activity_profile` — transactions and units per month of the year or per weekday, per
  type, the pooling of the years said (``how="mean"``: per year present; ``"sum"``).
- :func:`top` — the top N of any group, ties with the N-th kept, ranked and said.
- :func:`transfer_flows` — the from -> to table of moves: units, transactions, items per pair
  of locations.
- :func:`audit` — the transactions edited or backdated, among those recorded in a window, per
  member who recorded them, with the lag (and what the API cannot tell: who edited, when).

"As of" defaults to the moment the frame is as of (when its data left the server, on the
service's clock) rather than the wall clock, so a question asked of a fixed download (or of the
demo data) always gives the same answer; a frame that records none (a merge, one built by hand)
is measured to its newest time, with a :class:`~invtools.errors.WindowWarning` saying to pass
``as_of=``. A window cut after the fetch is checked against the rows
(docs/explanation/now.md).

Deleted items (gone from ``items_df()``, their old lines flagged ``item_deleted``) are left out
of every result about items by default; ``include_deleted=True`` keeps them. When some were
left out, a :class:`~invtools.errors.DeletedItemsWarning` names them and the result's
``attrs["deleted_items_excluded"]`` lists their ids (see :mod:`invtools.frames.deleted`).
Every result carries the provenance of the frames it was computed from (``df.attrs``, see
:func:`invtools.frames.with_provenance`), merged by one rule
(:func:`invtools.frames.merge_provenance`): the team (several teams: all named, ``team_id`` and
``team_name`` as lists), the endpoint(s) and filters asked, the lines' ``window`` and the oldest
input's ``data_as_of``; so an export of it (:func:`invtools.frames.to_excel`) says whose data it
is and how old.

What lives where:

=================  ==========================================================================
module             what it holds
=================  ==========================================================================
``common``         checking the frame given, "as of" times, carrying the inputs' provenance
``episodes``       :func:`stockouts`, :func:`stockout_summary`
``turnover``       :func:`movement`, :func:`stock_value`
``levels``         :func:`stock_at`
``periods``        :func:`period_end_stock`, :func:`month_end_stock`, :func:`stock_value_by_month`
``audits``         :func:`supplier_summary`, :func:`shrinkage`
``planning``       :func:`reorder`, :func:`dead_stock`
``classes``        :func:`abc_classes`
``tables``         :func:`crosstab`
``recording``      :func:`audit`
``profiles``       :func:`activity_profile`
``ranking``        :func:`top`
``flows``          :func:`transfer_flows`
=================  ==========================================================================

Imports: pandas, numpy, :mod:`invtools.frames` and the foundation (:mod:`invtools.errors`);
never :mod:`invtools.api` (analyses read frames, they never fetch), nor plots. Inside the
package every module imports ``common`` and nothing else of it. Use the names of this
package's ``__all__``; the modules' other public names are shared inside the package only.

>>> import invtools
>>> invtools.analysis.stock_at is stock_at
True
"""

from __future__ import annotations

from invtools.analysis.audits import shrinkage, supplier_summary
from invtools.analysis.classes import abc_classes
from invtools.analysis.episodes import stockout_summary, stockouts
from invtools.analysis.flows import transfer_flows
from invtools.analysis.levels import stock_at
from invtools.analysis.periods import month_end_stock, period_end_stock, stock_value_by_month
from invtools.analysis.planning import dead_stock, reorder
from invtools.analysis.profiles import activity_profile
from invtools.analysis.ranking import top
from invtools.analysis.recording import audit
from invtools.analysis.tables import crosstab
from invtools.analysis.turnover import movement, stock_value

__all__ = [
    "stockouts",
    "stockout_summary",
    "movement",
    "stock_value",
    "stock_at",
    "period_end_stock",
    "month_end_stock",
    "stock_value_by_month",
    "supplier_summary",
    "shrinkage",
    "reorder",
    "dead_stock",
    "abc_classes",
    "audit",
    "activity_profile",
    "crosstab",
    "top",
    "transfer_flows",
]
