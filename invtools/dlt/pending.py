"""What a killed run leaves in dlt's working folder, discarded before the next run.

A run killed after dlt's extract leaves a load package pending; one killed inside dlt's
normalize step, between two of its folder moves, leaves a package in two places, and then
every later ``pipeline.run()`` fails on it (``Directory not empty``, a missing
``schema.json``) and dlt's own ``drop-pending-packages`` does not repair it. A package of this
source never needs loading: each run reconciles every table with what the destination holds,
so one that was not loaded is simply made again from the difference. :func:`discard_pending`
throws any away, damaged or not, with dlt's working folder; dlt then takes its state and
schemas from the destination.
"""

from __future__ import annotations

from typing import Any

__all__ = ["discard_pending"]


def _pending(pipeline: Any) -> list[str]:
    """The ids of the packages waiting in ``pipeline``'s folder (extracted or normalized)."""
    return [*pipeline.list_extracted_load_packages(), *pipeline.list_normalized_load_packages()]


def discard_pending(pipeline: Any) -> tuple[Any, str | None]:
    """``pipeline`` with no package pending, and a line saying what was discarded (None:
    nothing was pending, and nothing was touched)."""
    try:
        pending = _pending(pipeline)
    except Exception as exc:  # noqa: BLE001 - a folder dlt cannot even list is discarded too
        pending, damage = [], f" ({type(exc).__name__})"
    else:
        if not pending:
            return pipeline, None
        damage = ""
    pipeline = pipeline.drop()
    what = f"{len(pending)} load package(s)" if pending else "a damaged working folder"
    return pipeline, (
        f"discarded {what}{damage} a stopped run left in {pipeline.pipelines_dir}: this run "
        "loads what the destination lacks, so nothing is lost"
    )
