"""One run of the source into a destination (``invtools load``): where the pipeline's files live,
what a killed run left behind, and the line it prints."""

from __future__ import annotations

import http.client
import os
import sqlite3
import time
from collections.abc import Mapping
from typing import Any

import dlt

from invtools._config import TOKEN_HELP
from invtools.dlt.destination import dropped
from invtools.dlt.pending import discard_pending
from invtools.dlt.source import boxhero
from invtools.dlt.tables import TABLES
from invtools.errors import ConfigError, InvtoolsError

__all__ = ["load", "last_run", "summary", "failure", "LOAD_TOKEN_HELP", "PIPELINES_DIR"]

#: Where a load's token goes: what ``invtools load`` says in place of the client's
#: :data:`invtools._config.TOKEN_HELP` (``Client(token=...)`` is not how a load is given one).
LOAD_TOKEN_HELP = (
    "API tokens are issued in the service's app, in Settings under Integrations (one token per "
    "team). Give a load its token as SOURCES__BOXHERO__TOKEN (dlt's name; or token under "
    "[sources.boxhero] in .dlt/secrets.toml) or INVTOOLS_TOKEN."
)
#: Where :func:`load` keeps dlt's working files (its state, schemas, packages, trace), under
#: the working folder: each job its own, never dlt's machine-wide folder shared by name.
PIPELINES_DIR = os.path.join(".dlt", "pipelines")


def last_run(pipeline: Any) -> dict[str, dict[str, dict[str, Any]]]:
    """What the pipeline's last run of each resource of :func:`boxhero` loaded, per team
    (``base_url#id``) and table: ``new``, ``changed`` and ``removed`` rows (or ``replaced``:
    every row, where the destination replaces the tables whole), the ``requests`` it sent and
    when it ran (``at``, seconds since the epoch). Read from each resource's dlt state."""
    sources = pipeline.state.get("sources", {}).get("boxhero", {})
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for table in TABLES:
        runs = sources.get("resources", {}).get(table, {}).get("last_run", {})
        for team, counts in runs.items():
            out.setdefault(team, {})[table] = dict(counts)
    return out


def summary(counts: Mapping[str, Mapping[str, Any]], seconds: float) -> str:
    """One line of what a run loaded (:func:`last_run` of one team) and how long it took.

    >>> summary({"items": {"new": 0, "changed": 2, "removed": 0, "requests": 4},
    ...          "transactions": {"new": 1, "changed": 1, "removed": 1, "requests": 2},
    ...          "lines": {"replaced": 9, "requests": 0}}, 0.92)
    'items +0 ~2 -0, transactions +1 ~1 -1, lines 9 replaced; 6 requests, 0.9 s'
    """
    parts = []
    for table, done in counts.items():
        if "replaced" in done:
            parts.append(f"{table} {done['replaced']} replaced")
        else:
            parts.append(f"{table} +{done['new']} ~{done['changed']} -{done['removed']}")
    sent = sum(int(done.get("requests", 0)) for done in counts.values())
    return f"{', '.join(parts)}; {sent} requests, {seconds:.1f} s"


def load(
    *,
    destination: Any = "duckdb",
    dataset: str = "boxhero",
    pipeline_name: str = "invtools",
    pipelines_dir: str | None = None,
    said: Any = print,
    **options: Any,
) -> str:
    """Run :func:`boxhero` into ``destination`` (a dlt destination or its name, configured the
    dlt way: ``DESTINATION__POSTGRES__CREDENTIALS`` and so on; ``duckdb``: the file
    ``<pipeline_name>.duckdb`` here) and ``dataset``; return :func:`summary`'s line, the team
    first. ``options``: :func:`boxhero`'s (the token from the environment when not given:
    ``SOURCES__BOXHERO__TOKEN``, or ``INVTOOLS_TOKEN``). This is ``invtools load``.

    dlt's working files go to ``pipelines_dir`` (default :data:`PIPELINES_DIR`, under the
    working folder). Before the run, and each said in one line to ``said`` (default
    ``print``): what a killed run left there (a pending or damaged load package) is discarded
    (:func:`~invtools.dlt.discard_pending`); a table dropped by hand from the destination is
    loaded afresh (dlt creates a table once). Nothing is lost either way: the run reconciles
    every table with what the destination holds.

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
    target: Any = destination
    if destination == "duckdb" and not os.environ.get("DESTINATION__DUCKDB__CREDENTIALS"):
        # here, always: dlt would otherwise keep the folder of the pipeline's first run
        target = dlt.destinations.duckdb(os.path.abspath(f"{pipeline_name}.duckdb"))
    pipeline = dlt.pipeline(
        pipeline_name,
        destination=target,
        dataset_name=dataset,
        pipelines_dir=os.path.abspath(pipelines_dir or PIPELINES_DIR),
    )
    pipeline, discarded = discard_pending(pipeline)
    if discarded:
        said(discarded)
    started, wall = time.monotonic(), time.time()
    source = boxhero(**options)
    pipeline.sync_destination()  # dlt's schema as the destination has it, if newer
    schema = pipeline.schemas.get("boxhero") if "boxhero" in pipeline.schema_names else None
    gone = dropped(pipeline, schema, list(source.resources), ("", 0))
    if gone:
        said(f"{', '.join(gone)}: gone from the destination, loaded afresh")
        pipeline.run(source.with_resources(*gone), refresh="drop_resources")
        source = boxhero(**options)
    pipeline.run(source)
    seconds = time.monotonic() - started
    ran = {
        team: {table: done for table, done in tables.items() if done.get("at", 0) >= wall}
        for team, tables in last_run(pipeline).items()
    }
    return "\n".join(
        "team {1} of {0}: {2}".format(*team.rsplit("#", 1), summary(tables, seconds))
        for team, tables in ran.items()
        if tables
    )


#: What to do about a failure no error of the package's describes: (its kind, what it is, what
#: to do), the first kind it is an instance of.
_REMEDIES: tuple[tuple[type[BaseException], str, str], ...] = (
    (
        BlockingIOError,
        "a file is locked by another process",
        "another load or sync of this team is running: let it finish, then run again",
    ),
    (
        http.client.HTTPException,
        "the connection to the service broke mid-answer",
        "run again: what arrived is kept, and the next run asks only for the rest",
    ),
    (
        ConnectionError,
        "the service could not be reached",
        "check the network and the base URL, then run again",
    ),
    (
        sqlite3.Error,
        "a file of invtools' could not be read or written",
        "check that the disk has room and the mirror's and cache's folders are writable, "
        "then run again",
    ),
    (
        OSError,
        "a file could not be read or written",
        "check that the disk has room and the folders are writable, then run again",
    ),
)


def failure(exc: BaseException) -> str:
    """The one line a failed load says (after ``invtools load: failed:``): the package's own
    error where one is the cause (a refused or missing token says where a load's token goes),
    else what went wrong and what to do, and the library's words last.

    >>> failure(RuntimeError("boom"))
    'RuntimeError: boom (run again; if it fails the same way, report it with this line)'
    >>> failure(BlockingIOError(11, "Resource temporarily unavailable"))[:34]
    'a file is locked by another proces'
    """
    chain: list[BaseException] = []
    cause: BaseException | None = exc
    while cause is not None and cause not in chain:  # dlt wraps ours, sometimes twice
        chain.append(cause)
        cause = cause.__cause__ or cause.__context__
    for err in chain:
        if isinstance(err, InvtoolsError):
            said = str(err).replace(TOKEN_HELP, LOAD_TOKEN_HELP)
            return f"{type(err).__name__}: {said}"
    root = chain[-1]
    for kind, what, todo in _REMEDIES:
        if isinstance(root, kind):
            return f"{what}: {todo} ({type(root).__name__}: {root})"
    again = "run again; if it fails the same way, report it with this line"
    return f"{type(root).__name__}: {root} ({again})"
