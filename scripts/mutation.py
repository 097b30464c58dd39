"""Mutation testing of the core modules (``make mutation``): do their tests notice a changed line?

For each module below, mutmut (3.8 or later, the ``dev`` extra) makes small changes to the
module's code -- ``+`` for ``-``, ``<`` for ``<=``, ``break`` for ``continue``, a constant
changed, a call's argument dropped -- and runs the module's own test files (and its doctests)
against each one. A change no test notices "survives": either a behaviour nobody checks, or an
equivalent change (no behaviour can tell it apart). Each module runs against its own tests
only, so a module is not credited with what another module's tests happen to catch.

    python scripts/mutation.py                      # every module, then the table
    python scripts/mutation.py retries sync         # some of them
    python scripts/mutation.py --max-children 1     # fewer worker processes (default 2)
    python scripts/mutation.py --survivors retries  # and the surviving mutants' names

It prints, per module: mutants, killed (a test failed, or the mutant hung and timed out),
survived (including mutants no selected test reached), and the percentage killed. Then
``.venv/bin/mutmut show <name>`` (in the project root, while ``mutants/`` is that module's run)
shows a mutant's diff. Each module starts from a fresh ``mutants/`` folder: mutmut keeps
results between runs and would not run again a mutant that survived before the tests changed.
The shared settings are ``[tool.mutmut]`` in pyproject.toml. It takes minutes (two cores: about
20), so it is not part of ``make test``. Exit status: 0, or 1 when a module's run failed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

#: module -> (the files mutated, the tests run against them). The files' doctests run too.
MODULES: dict[str, tuple[list[str], list[str]]] = {
    # The walk engine, one file at a time.
    "walk plan": (
        ["invtools/api/plan.py", "invtools/api/records.py"],
        [
            "tests/test_plan.py",
            "tests/test_walk_record.py",
            "tests/test_client_chains.py",
            "tests/test_walk_replay.py",
            "tests/test_windows.py",
        ],
    ),
    "chains": (
        ["invtools/api/chains.py"],
        [
            "tests/test_walk_engine.py",
            "tests/test_client_chains.py",
            "tests/test_mirror_chains.py",
        ],
    ),
    "walk": (
        ["invtools/api/walk.py"],
        [
            "tests/test_walk_engine.py",
            "tests/test_client_chains.py",
            "tests/test_client_snapshot.py",
            "tests/test_walk_replay.py",
            "tests/test_windows.py",
        ],
    ),
    "retries": (
        ["invtools/http/retries.py"],
        [
            "tests/test_retries.py",
            "tests/test_client_resilience.py",
            "tests/test_client_errors.py",
            "tests/test_client_faults.py",
        ],
    ),
    # The pacing's rules (what an answer states, the waits) and where its state is kept.
    "pacing": (
        ["invtools/http/pacing.py"],
        [
            "tests/test_pacing.py",
            "tests/test_http.py",
            "tests/test_pacing_bounds.py",
            "tests/test_budgets.py",
            "tests/test_client_resilience.py",
        ],
    ),
    "budgetstore": (
        ["invtools/http/budgetstore.py"],
        [
            "tests/test_pacing.py",
            "tests/test_http.py",
            "tests/test_pacing_bounds.py",
            "tests/test_budgets.py",
        ],
    ),
    "pagination": (
        ["invtools/api/pagination.py"],
        ["tests/test_pagination.py", "tests/test_fast_paths.py"],
    ),
    "columns": (
        ["invtools/frames/columns.py"],
        ["tests/test_columns.py", "tests/test_frames.py", "tests/test_fast_paths.py"],
    ),
    "sync": (
        ["invtools/mirror/sync.py"],
        ["tests/test_mirror.py", "tests/test_mirror_chains.py", "tests/test_windows.py"],
    ),
    # Not tests/test_bad_inputs.py's sweep of every analysis (20 s a mutant): test_planning.py
    # checks each refusal of these two and its message.
    "planning": (
        ["invtools/analysis/planning.py"],
        ["tests/test_planning.py", "tests/test_provenance_merged.py"],
    ),
    "provenance": (
        ["invtools/frames/provenance.py"],
        [
            "tests/test_provenance_record.py",
            "tests/test_provenance_merged.py",
            "tests/test_context.py",
            "tests/test_frames.py::test_provenance_attrs_hold_one_json_record",
            "tests/test_frames.py::test_provenance_from_a_record_a_mapping_or_keywords",
            "tests/test_frames.py::test_a_frame_keeps_its_provenance_through_parquet_and_pickle",
        ],
    ),
    # The context read from a frame (issue 43: the window checked against its rows).
    "context": (
        ["invtools/frames/context.py"],
        ["tests/test_claims.py", "tests/test_context.py"],
    ),
    # The dlt source: its pure part against pure tests (a second or so a mutant), then its
    # moving parts one file at a time against the quick in-process tests (a 50-transaction
    # stand-in, DuckDB: under a minute for them all). tests/test_dlt.py's contract, every
    # operator event on every destination, takes 15 minutes a run: too slow for a mutant.
    "dlt tables": (["invtools/dlt/tables.py"], ["tests/test_dlt_tables.py"]),
    "dlt source": (["invtools/dlt/source.py"], ["tests/test_dlt_source.py"]),
    "dlt truth": (["invtools/dlt/truth.py"], ["tests/test_dlt_source.py"]),
    "dlt destination": (["invtools/dlt/destination.py"], ["tests/test_dlt_source.py"]),
    "dlt pending": (["invtools/dlt/pending.py"], ["tests/test_dlt_source.py"]),
    "dlt run": (["invtools/dlt/run.py"], ["tests/test_dlt_source.py"]),
}

KILLED = {"killed", "timeout", "caught by type check"}
NOT_COUNTED = {"skipped"}


def run_one(name: str, max_children: int) -> None:
    """In this process: mutmut on one module (``--one``). mutmut reads pyproject.toml; the
    files to mutate and the tests to run are set here, before its ``run`` command starts."""
    files, tests = MODULES[name]
    os.chdir(ROOT)
    shutil.rmtree(ROOT / "mutants", ignore_errors=True)
    from mutmut.configuration import config

    cfg = config()
    cfg.only_mutate = list(files)
    cfg.pytest_add_cli_args_test_selection = [*tests, *files]
    # This file is also the plugin below, for every pytest run mutmut makes: importable as
    # "mutation" because Python put its folder first on sys.path when it started the script.
    cfg.pytest_add_cli_args = [*cfg.pytest_add_cli_args, "-p", "mutation"]
    from mutmut.__main__ import cli

    cli(["run", "--max-children", str(max_children)], standalone_mode=False)


def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
    """The pytest plugin of mutmut's runs: each function's examples once, the quickest tests first.

    mutmut writes each mutant of a function as a copy of the whole function, docstring
    included (``x_reorder__mutmut_17``), beside the original that the public name calls through.
    ``--doctest-modules`` would collect the examples of every copy: 700 copies of
    ``planning.py``'s two docstrings, each calling the public function (the mutant under test)
    over HTTP -- 8 minutes to collect the stats, and each mutant run against up to 711 of them.
    The examples under the public name (``invtools.analysis.planning.reorder``) run once.
    Then the tests mutmut timed in its stats run go quickest first: a mutant's run stops at
    its first failing test (``-x``), so a mutant a quick test kills costs that test only.
    """
    copies = [i for i in items if "__mutmut_" in i.name]  # a copy's doctest; no test is named so
    if copies:
        config.hook.pytest_deselected(items=copies)
        dropped = set(map(id, copies))
        items[:] = [i for i in items if id(i) not in dropped]
    try:
        from mutmut.state import state

        seconds = dict(state().duration_by_test)
    except ImportError:  # another mutmut: its own order
        return
    items.sort(key=lambda i: seconds.get(i.nodeid, 0.0))


def results(name: str) -> dict[str, str]:
    """mutant name -> status, from the meta files mutmut wrote for the module's files."""
    from mutmut.stats import status_by_exit_code

    out: dict[str, str] = {}
    for path in MODULES[name][0]:
        meta = json.loads((ROOT / "mutants" / (path + ".meta")).read_text())
        for key, code in meta["exit_code_by_key"].items():
            out[key] = status_by_exit_code[code]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "modules",
        nargs="*",
        help=f"some of: {', '.join(MODULES)} ('walk' for the walk engine's files); all when none",
    )
    parser.add_argument("--max-children", type=int, default=2)
    parser.add_argument("--survivors", action="store_true", help="list the surviving mutants")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        run_one(args.one, args.max_children)
        return 0
    exact = [m for m in MODULES if m in args.modules]  # "walk" alone, not "walk plan" too
    chosen = exact or [
        m for m in MODULES if not args.modules or any(m.startswith(a) for a in args.modules)
    ]
    if not chosen:
        parser.error(f"no such module; choose among: {', '.join(MODULES)}")
    rows, failed = [], False
    for name in chosen:
        print(f"== {name}: {', '.join(MODULES[name][0])}", flush=True)
        done = subprocess.run(
            [sys.executable, __file__, "--one", name, "--max-children", str(args.max_children)],
            cwd=ROOT,
        )
        try:
            status = results(name)
        except (OSError, KeyError, ValueError):
            status = {}
        if done.returncode or not status or "not checked" in status.values():
            print(f"   mutmut did not finish on {name} (exit status {done.returncode})")
            failed = True
            continue
        counted = {k: v for k, v in status.items() if v not in NOT_COUNTED}
        killed = sum(v in KILLED for v in counted.values())
        survivors = sorted(k for k, v in counted.items() if v not in KILLED)
        rows.append((name, len(counted), killed, len(survivors)))
        if args.survivors:
            for key in survivors:
                print(f"   {status[key]:>10}  {key}")
    print()
    print(f"{'module':<12} {'mutants':>8} {'killed':>7} {'survived':>9} {'% killed':>9}")
    for name, total, killed, survived in rows:
        print(f"{name:<12} {total:>8} {killed:>7} {survived:>9} {100 * killed / total:>8.1f}%")
    if len(rows) > 1:
        total, killed = sum(r[1] for r in rows), sum(r[2] for r in rows)
        print(
            f"{'all':<12} {total:>8} {killed:>7} {total - killed:>9} {100 * killed / total:>8.1f}%"
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
