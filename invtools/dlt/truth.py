"""What the service holds for one team now, table by table: the rows a load reconciles the
destination with (:class:`Truth`).

Each list is fetched once a run, fresh (items with the attribute definitions, then locations,
partners, members; stock and the attributes read the pages the items walk fetched moments
before; for a team with a mirror, the lists its sync read for the names moments before).
The transactions and their lines come from the team's
:class:`~invtools.TransactionMirror`, synced once a run (the list walked whole, a detail only
for a new or edited transaction: a detail is never fetched twice), and are read back in
batches so a long history is never one frame in memory. Their references are named as the
team's lists said at that sync (the mirror's frames name them so:
:mod:`invtools.mirror.names`): a rename on the service raises no revision.

The mirror is a cache of the service, not a record of what was loaded: an older, newer or
replaced file only changes how many details the sync fetches, never which rows the run loads.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterator
from typing import Any

import pandas as pd

from invtools import frames
from invtools.dlt.tables import EVERY_MODE, NO_LEVELS, TABLES, attribute_columns, plain
from invtools.mirror import TransactionMirror, batches

__all__ = ["Truth"]


class Truth:
    """The service's rows of ``client``'s team now, per table of :data:`~invtools.dlt.TABLES`
    (:meth:`rows`), for a run of the source. ``mirror_path``: the team's mirror file (None: its
    default); ``batch_size``: transactions per batch; ``progress``: bars and the cost line."""

    def __init__(
        self, client: Any, *, mirror_path: Any, batch_size: int, progress: bool | None
    ) -> None:
        self.client, self.progress, self.batch_size = client, progress, batch_size
        with client.measure() as asked:
            self.team = client.team()  # one request (cached): which tables the mode allows
        self.unsaid = asked.sent  # counted with the first batch of the run
        self.key = (client.base_url, int(self.team.id))  # a team is its service and its id
        located = self.team.uses_locations
        self.skipped = [] if located else [t for t in TABLES if t not in EVERY_MODE]
        self.mirror = TransactionMirror(mirror_path, client) if located else None

    def rows(self, table: str, sent: list[int] | None = None) -> Iterator[pd.DataFrame]:
        """The rows of ``table`` (:func:`~invtools.dlt.tables.plain`: the team's key first,
        each row's fingerprint), in one frame or, for transactions and lines, in batches;
        the requests each batch sent added to ``sent[0]``. (Counted a batch at a time: dlt
        runs the resources' generators in turn, so a count held open across a ``yield``
        would count another resource's requests too.)"""
        batches, sent = self._rows(table), [0] if sent is None else sent
        sent[0], self.unsaid = sent[0] + self.unsaid, 0
        while True:
            with self.client.measure() as step:
                batch = next(batches, None)
            sent[0] += step.sent
            if batch is None:
                return
            yield batch

    def _rows(self, table: str) -> Iterator[pd.DataFrame]:
        if table in ("transactions", "lines"):
            for txs, lines in self._batches():
                yield plain(txs if table == "transactions" else lines, *self.key)
        else:
            yield plain(getattr(self, f"_{table}")(), *self.key)

    # ------------------------------------------------------------------ one fetch a run each

    @functools.cache  # noqa: B019 - one Truth a run: the cache goes with it
    def _fresh(self) -> bool:
        """Whether the lists are fetched afresh: not after this run's sync, which read them
        fresh for the names moments before (:mod:`invtools.mirror.names`)."""
        if self.mirror is None:
            return True
        self._synced()
        return False

    @functools.cache  # noqa: B019
    def _items(self) -> pd.DataFrame:
        fresh = self._fresh()
        if not fresh:  # the items as the sync read them; their attributes' names afresh
            self.client.attributes(refresh=True)
        df = self.client.items_df(refresh=fresh, progress=self.progress)
        return df.rename(columns=attribute_columns(self.client.attributes_df()))

    @functools.cache  # noqa: B019
    def _locations(self) -> pd.DataFrame:
        return self.client.locations_df(refresh=self._fresh())

    @functools.cache  # noqa: B019
    def _partners(self) -> pd.DataFrame:
        return self.client.partners_df(refresh=self._fresh(), progress=self.progress)

    @functools.cache  # noqa: B019
    def _members(self) -> pd.DataFrame:
        return self.client.members_df(refresh=self._fresh())

    def _stock(self) -> pd.DataFrame:
        self._items(), self._locations()  # stock reads the pages these fetched
        return self.client.stock_df(progress=self.progress)

    def _attributes(self) -> pd.DataFrame:
        if self.team.uses_locations:
            self._items()  # fetched the definitions moments before
        df = self.client.attributes_df(refresh=not self.team.uses_locations)
        df["column_name"] = pd.array(list(attribute_columns(df).values()), dtype="string")
        return df

    @functools.cache  # noqa: B019
    def _synced(self) -> Any:
        """The mirror synced, once a run: the moment its rows are as of."""
        assert self.mirror is not None
        self.mirror.sync(progress=self.progress)
        return frames.context_of(self.mirror.syncs_df()).as_of

    def _teams(self) -> pd.DataFrame:
        as_of = self._synced() if self.mirror is not None else self.client.now()
        return pd.DataFrame(
            {
                "team_name": pd.array([self.team.name], dtype="string"),
                "mode": pd.array([self.team.mode_name], dtype="string"),
                "data_as_of": pd.Series([as_of]).dt.tz_convert("UTC").astype(frames.TIME_DTYPE),
                "skipped": pd.array([", ".join(self.skipped) or None], dtype="string"),
            }
        )

    # ------------------------------------------------------------------ transactions, lines

    def _batches(self) -> Iterator[tuple[pd.DataFrame, pd.DataFrame]]:
        """The mirror's current transactions and their lines (numbered in each transaction),
        a batch at a time, and an empty batch last (what a table of no rows looks like)."""
        assert self.mirror is not None
        self._synced()
        none = frames.transactions_df([])
        none["removed_at"] = pd.Series([], dtype=frames.TIME_DTYPE)
        found = batches(self.mirror, size=self.batch_size)
        for txs, lines in itertools.chain(found, [(none, frames.lines_df([]))]):
            current = txs[txs["removed_at"].isna()].drop(columns="removed_at")
            lines = lines.drop(columns=[c for c in NO_LEVELS if c in lines.columns])
            number = lines.groupby("transaction_id", sort=False).cumcount().astype("Int64")
            lines.insert(list(lines.columns).index("transaction_id") + 1, "line_no", number)
            yield current, lines
