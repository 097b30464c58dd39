"""The :func:`boxhero` dlt source: the team's resources, the mirror synced once a run, and the
state each load commits (see :mod:`invtools.dlt`)."""

from __future__ import annotations

import functools
import weakref
from collections.abc import Iterator
from typing import Any

import dlt
import pandas as pd
import pyarrow as pa
from dlt.common import logger

from invtools import frames
from invtools._config import DEFAULT_BASE_URL
from invtools.api import Client
from invtools.dlt.tables import (
    EVERY_MODE,
    TABLES,
    TEAM_HINTS,
    Tally,
    arrow_table,
    attribute_columns,
    diffed,
    hints,
    plain,
    tombstones,
)
from invtools.errors import ConfigError
from invtools.mirror import TransactionMirror, batches, changed_since

__all__ = ["boxhero"]


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
    transactions per batch loaded (memory: about a batch at a time).

    >>> pipeline.run(boxhero())                                      # doctest: +SKIP
    """
    if client is None:
        if not token:
            raise ConfigError(
                "boxhero: no token. Set SOURCES__BOXHERO__TOKEN (or token under "
                "[sources.boxhero] in .dlt/secrets.toml), or pass boxhero(token) or client="
            )
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
    def tally() -> Tally:  # one per run, in the source's state
        loaded = [t for t in TABLES if t not in skipped and t != "teams"]
        return Tally(team_state(dlt.current.source_state()), loaded)

    @functools.cache
    def changes() -> tuple[list[int] | None, Any]:
        """Sync the mirror, once a run: the transactions to load (None: all) and the moment
        the mirror's rows are as of."""
        assert mirror is not None
        state = team_state(dlt.current.source_state())
        with client.measure() as m:
            mirror.sync(progress=progress)
        tally().add("requests", new=m.sent)
        syncs = mirror.syncs_df()
        born = str(syncs["started_at"].iloc[0])  # the file's first sync: which file it is
        loaded = state.get("sync_id", 0)
        if loaded and state.get("mirror_born") != born:
            raise ConfigError(
                f"the mirror {mirror.path} is not the file this dataset's {team.name!r} was "
                "loaded from (a new or replaced file), so what changed since that load is "
                "unknown: keep the mirror between runs (its folder: see docs/how-to/"
                "warehouse.md), or load the team afresh: pipeline.run(boxhero(), "
                'refresh="drop_resources") (drops the tables, every team\'s rows)'
            )
        last, changed = changed_since(mirror, loaded)
        born_now = changed["first"].isin(["new", "backdated-new"])
        gone = changed["last"] == "removed"
        tally().add(
            "transactions",
            new=int((born_now & ~gone).sum()),
            changed=int((~born_now & ~gone).sum()),
            removed=int((~born_now & gone).sum()),
        )
        state.update(sync_id=last, mirror_born=born)
        ids = None if loaded == 0 else [int(i) for i in changed["transaction_id"]]
        return ids, frames.context_of(syncs).as_of

    def listed(table: str, frame: Any) -> Any:
        _, key, replaced = TABLES[table]

        @dlt.resource(
            name=table,
            primary_key=key,
            merge_key=replaced,
            write_disposition={"disposition": "merge", "strategy": "delete-insert"},
            columns=hints(TABLES[table][0]),
        )
        def rows() -> Iterator[pa.Table]:
            seen = team_state(dlt.current.resource_state()).setdefault("rows", {})
            with client.measure() as m:
                df = frame()
            tally().add("requests", new=m.sent)
            yield from diffed(plain(df, team.id), table, seen, tally())

        return rows

    # Each list is fetched fresh once a run: items (with the attribute definitions) and
    # locations first; stock and attributes then read the pages those fetched moments before
    # (the cache's own short expiry when run alone), not a second copy of the same walk.
    def items() -> pd.DataFrame:
        df = client.items_df(refresh=True, progress=progress)
        return df.rename(columns=attribute_columns(client.attributes_df()))

    def attributes() -> pd.DataFrame:
        df = client.attributes_df()
        df["column_name"] = pd.array(list(attribute_columns(df).values()), dtype="string")
        return df

    def stock() -> pd.DataFrame:
        return client.stock_df(progress=progress)

    def from_file(table: str) -> Iterator[pa.Table]:
        assert mirror is not None
        ids, _ = changes()
        for txs, lines in batches(mirror, ids, size=batch_size):
            removed = txs["removed_at"].notna().to_numpy()
            gone = [(team.id, int(i)) for i in txs.loc[removed, "id"]]
            if table == "transactions":
                rows = plain(txs[~removed].drop(columns="removed_at"), team.id)
                yield arrow_table(rows, table)
                if gone:
                    yield tombstones(rows, gone, table)
            else:
                rows = plain(lines, team.id)
                number = rows.groupby("transaction_id").cumcount().astype("Int64")
                rows.insert(2, "line_no", number)
                tally().add(table, new=len(rows), removed=len(gone))
                yield arrow_table(rows, table)
                if gone:  # every line of a removed transaction: its merge key is enough
                    yield tombstones(rows, [(*g, 0) for g in gone], table)

    def from_mirror(table: str) -> Any:
        _, key, replaced = TABLES[table]
        return dlt.resource(
            from_file(table),  # a generator: nothing runs before dlt extracts it
            name=table,
            primary_key=key,
            merge_key=replaced,
            write_disposition={"disposition": "merge", "strategy": "delete-insert"},
            columns=hints(TABLES[table][0]),
        )

    @dlt.resource(
        name="teams",
        primary_key="team_id",
        write_disposition={"disposition": "merge", "strategy": "delete-insert"},
        columns=TEAM_HINTS,
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
        "locations": functools.partial(client.locations_df, refresh=True),
        "partners": functools.partial(client.partners_df, refresh=True),
        "members": functools.partial(client.members_df, refresh=True),
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
