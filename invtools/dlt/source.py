"""The :func:`boxhero` dlt source: one resource per table, each reconciled on its own against
what the destination holds (see :mod:`invtools.dlt`)."""

from __future__ import annotations

import time
import weakref
from collections.abc import Generator, Iterator
from typing import Any

import dlt
import pandas as pd
from dlt.common.schema.utils import has_table_seen_data

from invtools._config import DEFAULT_BASE_URL
from invtools.api import Client
from invtools.dlt.destination import can_merge, held, other_teams
from invtools.dlt.tables import (
    DELETED,
    TABLES,
    Reconciliation,
    arrow_table,
    hints,
    key_of,
    tombstones,
)
from invtools.dlt.truth import Truth
from invtools.errors import ConfigError

__all__ = ["boxhero", "team_key"]


def team_key(base_url: str, team_id: int) -> str:
    """How a run's counts name a team (:func:`~invtools.dlt.last_run`): its service and its id.

    >>> team_key("https://rest.boxhero-app.com", 48213)
    'https://rest.boxhero-app.com#48213'
    """
    return f"{base_url}#{team_id}"


@dlt.source(name="boxhero", section="boxhero", max_table_nesting=0, root_key=False)
def boxhero(
    token: str | None = dlt.secrets.value,
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
    transactions per batch read from the mirror (memory: about a batch at a time).

    Each resource reads, as its extract starts, what the destination holds of its table for
    this team, and loads the difference from the service's rows: any subset of the resources
    (``with_resources(...)``) is as safe as all of them.

    >>> pipeline.run(boxhero())                                      # doctest: +SKIP
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ConfigError(f"boxhero: batch_size must be a positive int, not {batch_size!r}")
    owned = None
    if client is None:
        if not token:
            raise ConfigError(
                "boxhero: no token. Set SOURCES__BOXHERO__TOKEN (or token under "
                "[sources.boxhero] in .dlt/secrets.toml), or pass boxhero(token) or client="
            )
        client = owned = Client(
            token,
            base_url=base_url,
            cache=cache,
            rate_limit=rate_limit,
            concurrency=concurrency,
            progress=progress,
        )
    truth = Truth(client, mirror_path=mirror_path, batch_size=batch_size, progress=progress)
    if truth.skipped:
        dlt.common.logger.warning(
            f"boxhero: team {truth.team.name!r} (id {truth.team.id}) is in "
            f"{truth.team.mode_name} mode: {', '.join(truth.skipped)} need a team that manages "
            f"stock by location"
        )
    tables = [table for table in TABLES if table not in truth.skipped]
    state = _Destination(truth.key, tables)
    resources = [_resource(table, truth, state) for table in tables]
    if owned is not None:
        # dlt has no hook for a source's end: the client closes when the last resource that
        # reads through it goes (each holds ``truth``; dlt runs copies of them, and drops the
        # first while the others still read: a closed client sends nothing)
        weakref.finalize(truth, owned.close)
    return resources


class _Destination:
    """What the destination holds for the team, read once a run (one session of its client,
    when the first resource's extract starts), each table's part taken by its resource."""

    def __init__(self, team: tuple[str, int], tables: list[str]) -> None:
        self.team, self.tables = team, tables
        self.run: Any = None
        self.merges = True
        self.held: dict[str, dict[tuple, str] | None] = {}

    def of(self, table: str) -> dict[tuple, str] | None:
        """``table``'s fingerprints (:func:`~invtools.dlt.destination.held`), or None where
        the destination replaces tables whole (then checked to hold no other team)."""
        pipeline = dlt.current.pipeline()
        run = (id(pipeline), dlt.current.load_package_state()["load_id"])
        if run != self.run:
            self.run, self.merges = run, can_merge(pipeline)
            if self.merges:
                self.held = held(pipeline, self.tables, self.team)
            elif others := other_teams(pipeline, self.team):
                raise ConfigError(
                    f"this {pipeline.destination.destination_name} dataset holds team "
                    f"{others[0][1]} of {others[0][0]}: its tables are rewritten whole each "
                    "run, so it holds one team; give this team a dataset of its own"
                )
        if not self.merges:
            return None
        found = self.held.get(table, {})
        if found is None:  # not there: a first load, or dropped by hand
            schema = dlt.current.source_schema()
            if table in schema.tables and has_table_seen_data(schema.tables[table]):
                raise ConfigError(
                    f"the table {table} is gone from the destination, and dlt creates a table "
                    "once: load it afresh, pipeline.run(boxhero().with_resources("
                    f"{table!r}), refresh='drop_resources') (invtools load does it itself)"
                )
            return {}
        return found


def _resource(table: str, truth: Truth, destination: _Destination) -> Any:
    @dlt.resource(
        name=table,
        primary_key=key_of(table),
        write_disposition={"disposition": "merge", "strategy": "delete-insert"},
        columns=hints(table),
    )
    def rows() -> Iterator[Any]:
        held, sent = destination.of(table), [0]
        if held is not None:
            counts = yield from _merged(truth.rows(table, sent), table, truth.key, held)
        else:
            counts = yield from _replaced(truth.rows(table, sent), table)
        runs = dlt.current.resource_state().setdefault("last_run", {})
        runs[team_key(*truth.key)] = {**counts, "requests": sent[0], "at": time.time()}

    return rows


def _merged(
    batches: Iterator[pd.DataFrame], table: str, team: tuple[str, int], held: dict
) -> Generator[Any, None, dict[str, int]]:
    """The rows of ``batches`` that differ from ``held``, then a deletion per key gone; the
    counts."""
    reconciled = Reconciliation(table, team, held)
    like = None
    for rows in batches:
        like = rows
        fresh = reconciled.fresh(rows)
        if len(fresh):
            yield arrow_table(fresh, table)
    gone = reconciled.gone()
    if gone and like is not None:
        yield tombstones(like, gone, table)
    return reconciled.counts


def _replaced(batches: Iterator[pd.DataFrame], table: str) -> Generator[Any, None, dict[str, int]]:
    """Every row of ``batches``, the table replaced by them; the counts."""
    # replaced whole: no row deletes another, so no hard-delete hint (dlt warns of one there)
    replace = dlt.mark.make_hints(
        write_disposition="replace", columns={DELETED: {"name": DELETED, "hard_delete": False}}
    )
    count = 0
    for rows in batches:
        count += len(rows)
        yield dlt.mark.with_hints(arrow_table(rows, table), replace)
    return {"replaced": count}
