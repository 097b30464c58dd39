"""What the destination holds for one team: the state a load reconciles against.

A run keeps no cursor of its own. Each resource asks the destination, as its extract starts,
for the key and fingerprint of every row of its table that belongs to the team
(:func:`held`), and loads the difference from what the service holds now
(:class:`~invtools.dlt.tables.Reconciliation`). Whatever happened to the destination since
(a restored backup, a dropped table, another job's load, a package discarded after a kill)
is what the next run sees and repairs.

A destination that cannot merge these tables (dlt's ``filesystem`` without a table format:
plain Parquet or JSONL files) gets them replaced whole each run (:func:`can_merge`); such a
dataset holds one team (:func:`other_teams` finds another's rows there).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dlt.common.destination.exceptions import SqlClientNotAvailable
from dlt.common.schema.utils import has_table_seen_data
from dlt.destinations.exceptions import DatabaseUndefinedRelation

from invtools.dlt.tables import FINGERPRINT, TABLES, TEAM_KEY
from invtools.errors import ConfigError

__all__ = ["can_merge", "held", "other_teams", "dropped"]


def can_merge(pipeline: Any) -> bool:
    """Whether ``pipeline``'s destination merges a table's rows by their key (dlt's
    ``delete-insert``); where it cannot, the tables are replaced whole. No destination (an
    extract alone): it can."""
    destination = getattr(pipeline, "destination", None)
    if destination is None:
        return True
    caps = destination.capabilities()
    strategies = list(caps.supported_merge_strategies or [])
    if caps.merge_strategies_selector is not None:
        strategies = list(caps.merge_strategies_selector(strategies, table_schema={}))
    return "delete-insert" in strategies


def _read(pipeline: Any, queries: dict[str, Callable[[Any], str]], *args: Any) -> dict:
    """The rows of each query ``sql(client)`` writes for the destination's SQL client, in one
    session; a query whose table is not there (a first load, a dropped table) has None."""
    out: dict[str, list[tuple] | None] = {}
    try:
        with pipeline.sql_client() as client:
            for name, sql in queries.items():
                try:
                    out[name] = [tuple(r) for r in client.execute_sql(sql(client), *args) or []]
                except DatabaseUndefinedRelation:
                    out[name] = None
    except DatabaseUndefinedRelation:  # no dataset yet
        return dict.fromkeys(queries)
    except SqlClientNotAvailable as exc:
        raise ConfigError(
            f"the destination {pipeline.destination.destination_name!r} cannot be read back, "
            "and a load of invtools reconciles each table with what the destination holds: "
            "use a SQL destination (duckdb, postgres, bigquery, ...) or filesystem"
        ) from exc
    return out


def held(
    pipeline: Any, tables: list[str], team: tuple[str, int]
) -> dict[str, dict[tuple, str] | None]:
    """For each of ``tables``: key (the table's own, after the team's) -> fingerprint of
    every row the destination holds for ``team`` (its ``base_url`` and ``team_id``), empty
    when it holds none or there is no destination (an extract alone); None when the table is
    not there. One session of the destination's SQL client for all."""
    if getattr(pipeline, "destination", None) is None:
        return {table: {} for table in tables}

    def query(table: str) -> Callable[[Any], str]:
        def sql(client: Any) -> str:
            cols = ", ".join(client.escape_column_name(c) for c in (*TABLES[table][1], FINGERPRINT))
            where = " AND ".join(f"{client.escape_column_name(c)} = %s" for c in TEAM_KEY)
            return f"SELECT {cols} FROM {client.make_qualified_table_name(table)} WHERE {where}"

        return sql

    found = _read(pipeline, {table: query(table) for table in tables}, *team)
    return {
        table: None
        if rows is None
        else {tuple(int(v) for v in row[:-1]): str(row[-1]) for row in rows}
        for table, rows in found.items()
    }


def other_teams(pipeline: Any, team: tuple[str, int]) -> list[tuple[str, int]]:
    """The teams other than ``team`` whose rows the destination's ``teams`` table holds."""
    if getattr(pipeline, "destination", None) is None:
        return []

    def sql(client: Any) -> str:
        cols = ", ".join(client.escape_column_name(c) for c in TEAM_KEY)
        return f"SELECT DISTINCT {cols} FROM {client.make_qualified_table_name('teams')}"

    rows = _read(pipeline, {"teams": sql})["teams"]
    return [(str(u), int(t)) for u, t in rows or [] if (str(u), int(t)) != tuple(team)]


def dropped(pipeline: Any, schema: Any, tables: list[str], team: tuple[str, int]) -> list[str]:
    """Which of ``tables`` dlt's ``schema`` says were loaded (dlt then never creates them
    again) and the destination no longer has: dropped by hand. A destination that replaces
    its tables creates them again itself: none."""
    if schema is None or not can_merge(pipeline):
        return []
    loaded = [t for t in tables if t in schema.tables and has_table_seen_data(schema.tables[t])]
    return [t for t, rows in held(pipeline, loaded, team).items() if rows is None]
