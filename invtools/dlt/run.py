"""One run of the source into a destination (``invtools load``), and the line it prints."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any

import dlt

from invtools.dlt.source import boxhero
from invtools.errors import ConfigError

__all__ = ["load", "last_run", "summary", "LOAD_TOKEN_HELP"]

#: Where a load's token goes: what ``invtools load`` says in place of the client's
#: :data:`invtools._config.TOKEN_HELP` (``Client(token=...)`` is not how a load is given one).
LOAD_TOKEN_HELP = (
    "API tokens are issued in the service's app, in Settings under Integrations (one token per "
    "team). Give a load its token as SOURCES__BOXHERO__TOKEN (dlt's name; or token under "
    "[sources.boxhero] in .dlt/secrets.toml) or INVTOOLS_TOKEN."
)


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
    target: Any = destination
    if destination == "duckdb" and not os.environ.get("DESTINATION__DUCKDB__CREDENTIALS"):
        # here, always: dlt would otherwise keep the folder of the pipeline's first run
        target = dlt.destinations.duckdb(os.path.abspath(f"{pipeline_name}.duckdb"))
    pipeline = dlt.pipeline(pipeline_name, destination=target, dataset_name=dataset, **where)
    started, wall = time.monotonic(), time.time()
    if pipeline.has_pending_data:  # a run killed after its extract: dlt loads that first
        pipeline.run()
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
