"""The ``invtools`` command (also ``python -m invtools``): one argparse subcommand per job.

>>> build_parser().parse_args(["sandbox", "--port", "8765"]).port
8765
"""

from __future__ import annotations

import argparse
import sys
import threading


def _error(message: str, status: int = 1) -> int:
    """Say ``message`` on stderr; the exit status."""
    print(message, file=sys.stderr)
    return status


def _sandbox_run(args: argparse.Namespace) -> int:
    """Serve until Ctrl-C."""
    from invtools.sandbox import serve

    # Every option but --quiet is serve()'s argument of the same name.
    options = {k: v for k, v in vars(args).items() if k not in ("command", "quiet")}
    log = None if args.quiet else (lambda line: print(line, file=sys.stderr, flush=True))
    try:
        with serve(**options, log=log) as sb:
            print(f"invtools sandbox listening on {sb.base_url}")
            print("demo tokens (fake, for this local server only):")
            for team, token in sb.tokens.items():
                mode = sb.data(team).team["mode"]
                print(f"  {team:<9} (mode {mode}): {token}")
            print(
                f"e.g.  curl -H 'Authorization: Bearer {sb.tokens['shop']}' "
                f"{sb.base_url}/v1/teams/linked"
            )
            print("Ctrl-C stops it.", flush=True)
            threading.Event().wait()
    except KeyboardInterrupt:
        pass
    except ValueError as err:  # a bad --latency or --shops, say
        return _error(f"invtools sandbox: {err}", 2)
    except OSError as err:
        return _error(
            f"invtools sandbox: cannot listen on 127.0.0.1:{args.port} ({err.strerror}); "
            "try another --port, or --port 0 for a free one"
        )
    print("stopped")
    return 0


def _notebook_paths(names: list[str]) -> list:
    from pathlib import Path

    from invtools.notebook.demo import example_notebooks

    return (
        [Path(n) for n in names]
        or sorted(Path("notebooks").glob("[0-9]*.ipynb"))
        or example_notebooks()
    )


def _demo_run(args: argparse.Namespace) -> int:
    """Execute the example notebooks on the built-in demo data; HTML + PNGs + a summary."""
    from invtools.notebook.demo import missing_demo_packages, report, run_notebooks

    missing = missing_demo_packages()
    if missing:
        return _error(
            f"invtools demo needs {', '.join(missing)} to run the notebooks: "
            "pip install 'invtools[demo]'"
        )
    paths = _notebook_paths(args.notebooks)
    if not paths:
        return _error(
            "invtools demo: no notebooks found (name some, or reinstall invtools: its "
            "example notebooks are missing)"
        )
    print(
        f"Running {len(paths)} example notebooks on the built-in demo data "
        "(each starts the stand-in server in its own kernel; no account needed).",
        flush=True,
    )
    runs = run_notebooks(paths, args.out)
    print(report(runs, args.out))
    return 0 if all(r.ok for r in runs) else 1


def _lab_run(args: argparse.Namespace) -> int:
    """JupyterLab on the notebooks, with no token in its environment: each notebook starts
    the built-in demo server (set INVTOOLS_TOKEN yourself in a notebook's environment to use
    your own team)."""
    import os
    import subprocess

    from invtools.notebook.demo import kernel_env

    if not os.path.isdir("notebooks"):
        return _error(
            "invtools lab: no notebooks/ folder here (run it from the repository's top folder)"
        )
    print(
        "Starting JupyterLab on the example notebooks; they run on the built-in demo server.",
        flush=True,
    )
    cmd = [sys.executable, "-m", "jupyterlab", "--notebook-dir=notebooks", "--ip=127.0.0.1"]
    cmd.append(f"--port={args.port}")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")  # containers often run as root; JupyterLab refuses then
    try:
        # the notebooks' demo answers go to each demo server's temporary cache (connect())
        return subprocess.call(cmd, env=kernel_env())
    except KeyboardInterrupt:
        return 0


def _load_run(args: argparse.Namespace) -> int:
    """One load of the team's data into a warehouse (invtools.dlt.load): on a terminal the
    cost of a long fetch and progress bars first (not with --quiet); one line per run, or one
    line saying why it failed and what to do."""
    try:
        import dlt  # noqa: F401 - only to say what is missing
    except ImportError:
        return _error("invtools load needs dlt: pip install 'invtools[dlt]'")
    from invtools.dlt import load
    from invtools.dlt.run import failure

    options = {"destination": args.destination, "dataset": args.dataset}
    options["pipeline_name"] = args.pipeline_name
    if args.pipelines_dir:
        options["pipelines_dir"] = args.pipelines_dir
    if args.base_url:
        options["base_url"] = args.base_url
    if args.mirror:
        options["mirror_path"] = args.mirror
    shown = not args.quiet and sys.stderr.isatty()

    def say(line: str) -> None:
        if not args.quiet:
            print(f"invtools load: {line}", file=sys.stderr, flush=True)

    try:
        print(load(**options, progress=shown, said=say), flush=True)
    except KeyboardInterrupt:
        return _error("invtools load: stopped; the next run loads what this one did not", 130)
    except Exception as exc:  # noqa: BLE001 - a scheduled job says why in one line, exits 1
        return _error(f"invtools load: failed: {failure(exc)}")
    return 0


#: The commands, each with its help line.
COMMANDS = {
    "sandbox": "run the stand-in server with demo data in the foreground",
    "demo": "run the example notebooks on the demo data: HTML copies, figures, a summary",
    "lab": "open JupyterLab on the example notebooks (needs the 'lab' extra)",
    "load": "load the team's data into a warehouse through dlt (needs the 'dlt' extra)",
}


#: The sandbox's options (each serve()'s argument of the same name): flag, default (False: a
#: switch; else a number of the default's type, int for None), help.
SANDBOX_OPTIONS = (
    ("--port", 8765, "port on 127.0.0.1 (default 8765; 0 picks a free one)"),
    ("--seed", 0, "demo data seed (default 0)"),
    ("--size", None, "number of the shop's transactions (default 4000)"),
    (
        "--rate-limit",
        5,
        "requests per window (a second unless --rate-window says) per token and endpoint; "
        "0 turns it off and says so (X-Ratelimit-Limit: unlimited): clients are not paced "
        "(default 5)",
    ),
    (
        "--rate-window",
        1.0,
        "seconds the budget counts over (default 1; --rate-limit 300 --rate-window 60 is a "
        "minute's budget of 300)",
    ),
    ("--stated-budget", False, "say X-Ratelimit-Limit/-Remaining/-Reset on every answer"),
    (
        "--coarse-budget",
        False,
        "say the budget on every answer the coarse way: the limit per minute, the reset in "
        "whole seconds rounded up",
    ),
    (
        "--count-after-latency",
        False,
        "count a request after its latency (arrivals jitter), not on arrival",
    ),
    (
        "--latency",
        0.0,
        "seconds each answer takes, +-25%% (default 0; --latency 0.8 --rate-limit 5 answers "
        "at the real service's pace)",
    ),
    (
        "--shops",
        3,  # the teams of connect()'s demo server (notebook.connection.demo_server)
        "location-mode teams to serve: the shop and its branches, besides the Basic-mode "
        "café (default 3, the demo's teams: shop, harrogate, york; 1 to 5)",
    ),
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="invtools", description="Investigate inventory data from BoxHero's REST API."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    sandbox, demo, lab, load = (
        sub.add_parser(n, help=h, description=h) for n, h in COMMANDS.items()
    )
    for flag, default, help_ in SANDBOX_OPTIONS:
        if default is False:
            sandbox.add_argument(flag, action="store_true", help=help_)
        else:
            kind = float if isinstance(default, float) else int
            sandbox.add_argument(flag, type=kind, default=default, help=help_)
    sandbox.add_argument("--quiet", action="store_true", help="do not print one line per request")
    demo.add_argument(
        "notebooks",
        nargs="*",
        help="notebooks to run (default: every notebooks/*.ipynb here, in order, "
        "else the example notebooks that ship with invtools)",
    )
    demo.add_argument(
        "--out",
        default="build/demo",
        help="where the HTML copies and figures go (default build/demo)",
    )
    lab.add_argument("--port", type=int, default=8888, help="JupyterLab's port (default 8888)")
    load.add_argument(
        "--destination",
        default="duckdb",
        help="a dlt destination, configured the dlt way (default duckdb: the file "
        "<pipeline-name>.duckdb here)",
    )
    load.add_argument("--dataset", default="boxhero", help="the dataset (default boxhero)")
    load.add_argument(
        "--pipeline-name", default="invtools", help="dlt's pipeline name (default invtools)"
    )
    load.add_argument("--base-url", help="the API's base URL (default: BoxHero's)")
    load.add_argument("--mirror", help="the team's mirror file (default: the team's own)")
    load.add_argument(
        "--pipelines-dir",
        help="where dlt keeps this job's working files (default .dlt/pipelines here)",
    )
    load.add_argument(
        "--quiet",
        action="store_true",
        help="no progress bars and no notes, only the run's line (for cron); on a terminal "
        "the cost of a long fetch and progress bars are shown otherwise",
    )
    load.epilog = (
        "The token: SOURCES__BOXHERO__TOKEN (dlt's name), INVTOOLS_TOKEN, or "
        "[sources.boxhero] token in .dlt/secrets.toml. Exit status 1 on failure."
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the ``invtools`` command line; returns the exit status.

    The commands serve until stopped or start notebooks and JupyterLab, so the example asks
    for help, which prints and then exits as it does in a shell:

    >>> import contextlib
    >>> with contextlib.suppress(SystemExit):
    ...     main(["--help"])                    # doctest: +ELLIPSIS +NORMALIZE_WHITESPACE
    usage: invtools [-h] COMMAND ...
    ...
        sandbox   run the stand-in server with demo data in the foreground
        demo      run the example notebooks on the demo data: HTML copies, figures, a summary
        lab       open JupyterLab on the example notebooks (needs the 'lab' extra)
        load      load the team's data into a warehouse through dlt (needs the 'dlt' extra)
    ...
    """
    args = build_parser().parse_args(argv)
    run = {"sandbox": _sandbox_run, "demo": _demo_run, "lab": _lab_run, "load": _load_run}
    return run[args.command](args)
