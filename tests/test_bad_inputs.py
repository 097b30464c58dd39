"""Issue 26's public-name sweep: every public callable, each of its parameters given each of a
list of wrong values (the others a valid baseline), either works, warns, or raises the
package's own error (:class:`invtools.InvtoolsError`) -- never a bare built-in error from deep
inside (an AttributeError, a KeyError, a pandas or json error...).

The rule the errors follow (docs/explanation/security.md, docs/how-to/frames.md): a wrong kind
of object is an :class:`invtools.ArgumentTypeError`, a bad value an
:class:`invtools.ConfigError`, and the message names the argument.

Each group collects its failures into one list, so a report shows them all at once.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import math
import time
import warnings
from collections.abc import Iterator
from datetime import timedelta

import pandas as pd
import pytest

import invtools
from invtools import analysis, frames, viz

pytestmark = pytest.mark.network

#: The wrong kinds of values each parameter is given in turn.
WRONG: list[object] = [
    None,
    42,
    -1,
    0,
    1.5,
    float("nan"),
    float("inf"),
    True,
    "",
    "nonsense",
    "9999-12-31",
    "Europe/Nowhere",
    b"bytes",
    [],
    {},
    object(),
    "DATAFRAME",  # replaced by a frame of the wrong shape below
    timedelta(days=-1),
]

#: A call slower than this is a failure too (a far-future ``until`` ran for minutes); far
#: above any call's time on a loaded machine (milliseconds).
SLOW_SECONDS = 30.0

#: Calls each group makes at least (5,554 in all when written); together more than the
#: 1,659 kinds of calls issue 26 counted. Each group checks its own, in any xdist worker.
LEAST_CALLS = {
    "test_frames_functions": 500,
    "test_analysis_functions": 700,
    "test_viz_functions": 600,
    "test_client_methods": 1400,
    "test_client_and_module_functions": 550,
    "test_mirror_and_team_results": 330,
    "test_records": 800,
    "test_demo_server": 30,
}

#: A Mapping's lookup by a missing key is a KeyError (an unhashable one a TypeError) by Python's
#: own contract, as ``dict.get([])`` is.
MAPPING_LOOKUPS = {("TeamResults.outcome", "team"), ("TeamResults.get", "key")}


def _wrong_values():
    import pandas as pd

    shape = pd.DataFrame({"nonsense": [1, 2]})
    return [shape if isinstance(v, str) and v == "DATAFRAME" else v for v in WRONG]


class Sweep:
    """Calls, and what went wrong in them."""

    def __init__(self) -> None:
        self.calls = 0
        self.least = 0  # calls the group makes at least (LEAST_CALLS)
        self.bare: list[tuple[str, str, str, str, str]] = []
        self.slow: list[tuple[str, str, str, float]] = []
        self.values = _wrong_values()

    def run(self, label, fn, baseline, *, skip=(), then=None, values=None) -> None:
        """``fn`` called with ``baseline`` (its valid arguments by name), then once per
        parameter and wrong value with that one argument replaced."""
        sig = inspect.signature(fn)
        self._call(label, "(baseline)", fn, sig, baseline, then, expect_ok=True)
        for p in sig.parameters.values():
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.name in skip:
                continue
            for value in values if values is not None else self.values:
                args = {**baseline, p.name: value}
                self._call(label, p.name, fn, sig, args, then, value=value)

    def _call(self, label, name, fn, sig, args, then, *, value=None, expect_ok=False) -> None:
        import matplotlib.pyplot as plt

        positional = [
            args.pop(p.name)
            for p in sig.parameters.values()
            if p.kind is p.POSITIONAL_ONLY and p.name in args
        ]
        self.calls += 1
        started = time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                result = fn(*positional, **args)
                _consume(result)
                if then is not None:
                    then(result)
        except invtools.InvtoolsError:
            if expect_ok:
                raise
        except Exception as exc:  # noqa: BLE001 - the point: whatever is not ours
            if expect_ok:
                raise
            case = (label, name, _shown(value))
            if not ((label, name) in MAPPING_LOOKUPS and isinstance(exc, KeyError | TypeError)):
                self.bare.append((*case, type(exc).__name__, str(exc)[:160]))
        finally:
            plt.close("all")
        took = time.perf_counter() - started
        if took > SLOW_SECONDS:
            self.slow.append((label, name, _shown(value), round(took, 1)))

    def check(self) -> None:
        assert not self.bare and not self.slow, self.report()
        assert self.calls >= self.least, f"{self.calls} calls, fewer than {self.least}"

    def report(self) -> str:
        lines = [f"{len(self.bare)} bare errors in {self.calls} calls:"]
        lines += [f"  {c}.{p}={v}: {t}: {m}" for c, p, v, t, m in self.bare]
        lines += [f"  SLOW {c}.{p}={v}: {s} s" for c, p, v, s in self.slow]
        return "\n".join(lines)


def _shown(value) -> str:
    import pandas as pd

    if isinstance(value, pd.DataFrame):
        return "DataFrame(wrong shape)"
    if type(value) is object:
        return "object()"
    return repr(value)


def _consume(result) -> None:
    """Lazy results (a walk, a generator) do their work when read."""
    if isinstance(result, Iterator) or type(result).__name__ == "Walk":
        for _ in result:
            pass


# ------------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A small stand-in server, a client, and the frames and records it gives."""
    import matplotlib

    matplotlib.use("Agg")
    from invtools.sandbox import serve

    folder = tmp_path_factory.mktemp("sweep")
    with serve(port=0, rate_limit=0, seed=0, size=60) as sb:
        client = invtools.Client(
            sb.tokens["shop"],
            base_url=sb.base_url,
            cache=folder / "cache.sqlite",
            rate_limit=0,
            progress=False,
        )
        tx_rows = list(client.transactions())
        w = dict(
            sb=sb,
            folder=folder,
            client=client,
            tx_rows=tx_rows,
            details=[d for _, d in client.transaction_details(tx_rows)],
            item_rows=list(client.items()),
            tx=client.transactions_df(),
            lines=client.lines_df(),
            items=client.items_df(),
            stock=client.stock_df(),
            locations=client.locations_df(),
            partners=client.partners_df(),
            attrs=client.attributes_df(),
        )
        w["history"] = frames.stock_history(w["lines"])
        yield w
        client.close()


@pytest.fixture
def sweep(world, monkeypatch, tmp_path, request):
    monkeypatch.chdir(tmp_path)  # a wrong path ("nonsense") lands here
    s = Sweep()
    s.least = LEAST_CALLS[request.node.name]
    return s


def _functions(module) -> set[str]:
    return {n for n in module.__all__ if inspect.isfunction(getattr(module, n))}


# ------------------------------------------------------------------------------- the groups


def test_frames_functions(world, sweep, tmp_path):
    w = world
    baselines = {
        "transactions_df": {"records": w["tx_rows"]},
        "transactions_df_from_pages": {
            "bodies": [json.dumps({"items": w["tx_rows"], "has_more": False}).encode()]
        },
        "lines_df": {"details": w["details"]},
        "with_item_columns": {
            "lines": w["lines"],
            "items": w["items"],
            "columns": ["attr_Category"],
        },
        "current_names": {"df": w["lines"], "lists": {"items": w["items"]}},
        "items_df": {"records": w["item_rows"], "attributes": w["attrs"]},
        "stock_df": {"items": w["item_rows"], "locations": w["locations"]},
        "locations_df": {"records": w["client"].locations()},
        "partners_df": {"records": list(w["client"].partners())},
        "members_df": {"records": w["client"].members()},
        "attributes_df": {"records": w["client"].attributes()},
        "stock_history": {"lines": w["lines"]},
        "rebase_levels": {"lines": w["lines"]},
        "with_provenance": {"df": w["tx"], "provenance": None},
        "window_of": {"df": w["lines"]},
        "context_of": {"frame": w["lines"]},
        "fit_window": {
            "df": w["lines"],
            "since": None,
            "until": None,
            "moment": pd.Timestamp("2026-10-31", tz="UTC"),
        },
        "complete_since": {"times": w["lines"]["transaction_time"], "arrived": 1},
        "merge_provenance": {"frames": [w["lines"], w["items"]]},
        "deleted_items": {"df": w["lines"]},
        "opening_counts": {"df": w["lines"]},
        "leave_out_deleted": {
            "result": w["history"],
            "deleted": {},
            "include": False,
            "who": "sweep",
        },
        "excel_ready": {"df": w["tx"]},
        "to_excel": {"path": tmp_path / "out.xlsx", "frames": w["items"]},
    }
    assert set(baselines) == _functions(frames)
    for name, baseline in baselines.items():
        sweep.run(f"frames.{name}", getattr(frames, name), baseline)
    sweep.check()


def test_analysis_functions(world, sweep):
    w = world
    baselines = {
        "stockouts": {"history": w["history"]},
        "stockout_summary": {"history": w["history"]},
        "movement": {"lines": w["lines"], "items": w["items"]},
        "stock_value": {"stock": w["stock"], "items": w["items"]},
        "stock_at": {"history": w["history"]},
        "period_end_stock": {"history": w["history"]},
        "month_end_stock": {"history": w["history"]},
        "stock_value_by_month": {"history": w["history"], "items": w["items"]},
        "supplier_summary": {"lines": w["lines"], "items": w["items"]},
        "shrinkage": {"lines": w["lines"], "items": w["items"]},
        "reorder": {"lines": w["lines"], "items": w["items"], "stock": w["stock"]},
        "dead_stock": {"lines": w["lines"], "items": w["items"], "stock": w["stock"]},
        "abc_classes": {"lines": w["lines"], "items": w["items"], "stock": w["stock"]},
        "crosstab": {"transactions": w["tx"], "rows": "member"},
        "audit": {"transactions": w["tx"]},
        "activity_profile": {"transactions": w["tx"]},
        "top": {"df": w["lines"], "by": "item_name", "value": "quantity"},
        "transfer_flows": {"lines": w["lines"]},
    }
    assert set(baselines) == _functions(analysis)
    for name, baseline in baselines.items():
        sweep.run(f"analysis.{name}", getattr(analysis, name), baseline)
    sweep.check()


def test_viz_functions(world, sweep):
    w = world
    baselines = {
        "activity_table": {"df": w["tx"]},
        "opening_counts": {"df": w["tx"]},
        "partner_types": {"df": w["tx"]},
        "plot_activity": {"df": w["tx"]},
        "plot_stock_history": {
            "history": w["history"],
            "item_ids": w["items"]["item_id"][:3].tolist(),
        },
        "plot_calendar": {"df": w["tx"]},
        "plot_stock_value": {
            "monthly": __import__("pandas").DataFrame(
                {"month": ["2026-09"], "value_at_cost": [1.0], "value_at_price": [2.0]}
            ),
            "items": w["items"],
        },
        "plot_transfers": {"flows": analysis.transfer_flows(w["lines"])},
    }
    assert set(baselines) == _functions(viz)
    for name, baseline in baselines.items():
        sweep.run(f"viz.{name}", getattr(viz, name), baseline)
    sweep.check()


def test_client_methods(world, sweep):
    w = world
    client = w["client"]
    tx_id, item_id = int(w["tx"]["transaction_id"].iloc[0]), int(w["items"]["item_id"].iloc[0])
    baselines = {
        "get": {"path": "/v1/teams/linked"},
        "pages": {"path": "/v1/partners"},
        "item": {"id": item_id},
        "transaction": {"id": tx_id},
        "transaction_details": {"rows": w["tx_rows"][:3]},
    }
    leave_alone = {"close", "clear_cache", "measure"}  # no arguments, or end the client
    names = [
        n
        for n, f in inspect.getmembers(type(client))
        if not n.startswith("_") and callable(f) and n not in leave_alone
    ]
    assert len(names) >= 18
    for name in names:
        sweep.run(f"Client.{name}", getattr(client, name), baselines.get(name, {}))
    sweep.check()


def test_client_and_module_functions(world, sweep, monkeypatch):
    w = world
    sb, folder, client = w["sb"], w["folder"], w["client"]
    monkeypatch.setenv("INVTOOLS_TOKEN", sb.tokens["shop"])
    monkeypatch.setenv("INVTOOLS_TOKEN_SHOP", sb.tokens["shop"])
    monkeypatch.setenv("INVTOOLS_BASE_URL", sb.base_url)
    options = {"cache": folder / "cache.sqlite", "rate_limit": 0, "progress": False}

    def closing(c):
        c.team()
        c.close()

    sweep.run(
        "Client",
        invtools.Client,
        {"token": sb.tokens["shop"], "base_url": sb.base_url, **options},
        then=closing,
    )
    sweep.run("connect", invtools.connect, {"team": "shop", "quiet": True, **options}, then=closing)
    sweep.run("cache_info", invtools.cache_info, {"cache": folder / "cache.sqlite"})
    sweep.run("prune_cache", invtools.prune_cache, {"cache": folder / "cache.sqlite"})
    sweep.run("is_demo", invtools.is_demo, {"client": client})
    sweep.run("team_tokens", invtools.team_tokens, {"environ": {"INVTOOLS_TOKEN_SHOP": "t"}})
    sweep.run(
        "each_team",
        invtools.each_team,
        {"fn": lambda c: c.team().name, "teams": {"shop": client}, "progress": False},
    )
    sweep.run(
        "activity_explorer",
        invtools.activity_explorer,
        {"df_or_client": w["tx"], "lines": w["lines"]},
    )
    sweep.run(
        "token_picker",
        invtools.token_picker,
        {"base_url": sb.base_url, "environ": {"INVTOOLS_TOKEN_SHOP": sb.tokens["shop"]}},
    )
    sweep.check()


def test_mirror_and_team_results(world, sweep, tmp_path):
    w = world
    client = w["client"]
    sweep.run(
        "TransactionMirror",
        invtools.TransactionMirror,
        {"path": tmp_path / "m.sqlite", "client": client},
        then=lambda m: m.info(),
    )
    mirror = invtools.TransactionMirror(tmp_path / "synced.sqlite", client)
    mirror.sync(progress=False)
    for name, baseline in {
        "lines_df": {},
        "transactions_df": {},
        "stock_history": {},
        "sync": {"progress": False},
        "info": {},
        "changes_df": {},
        "syncs_df": {},
    }.items():
        sweep.run(f"TransactionMirror.{name}", getattr(mirror, name), baseline)

    results = invtools.each_team(lambda c: c.locations_df(), {"shop": client}, progress=False)
    sweep.run("TeamResults", invtools.TeamResults, {"outcomes": dict(results._outcomes)})
    for name, baseline in {
        "outcome": {"team": "shop"},
        "get": {"key": "shop"},
        "frame": {},
        "summary": {},
    }.items():
        sweep.run(f"TeamResults.{name}", getattr(results, name), baseline)
    sweep.check()


def test_records(world, sweep):
    """The plain records of ``__all__``: built from real ones, each field wrong in turn."""
    w = world
    mirror = invtools.TransactionMirror(w["folder"] / "records.sqlite", w["client"])
    records = {
        "Team": w["client"].team(),
        "Page": invtools.Page(rows=[], number=1, cursor=None, has_more=False),
        "RequestStats": invtools.RequestStats(),
        "Provenance": invtools.Provenance(source="api"),
        "SyncReport": mirror.sync(progress=False),
    }
    for name, record in records.items():
        cls = getattr(invtools, name)
        baseline = {f.name: getattr(record, f.name) for f in dataclasses.fields(record)}
        sweep.run(name, cls, baseline)
    sweep.check()


def test_demo_server(sweep):
    """Once it runs, other options are refused (stop it first); the same are its server."""
    from invtools.notebook.connection import stop_demo_server

    try:
        sweep.run("demo_server", invtools.demo_server, {})
    finally:
        stop_demo_server()
    sweep.check()


def test_the_groups_together_make_the_calls_the_issue_counted():
    groups = {n for n in globals() if n.startswith("test_") and n not in _NOT_GROUPS}
    assert set(LEAST_CALLS) == groups and sum(LEAST_CALLS.values()) >= 1659


_NOT_GROUPS = {
    "test_the_groups_together_make_the_calls_the_issue_counted",
    "test_every_public_callable_is_swept",
}


def test_every_public_callable_is_swept():
    """The groups above cover ``__all__``: a new public name needs its baseline here."""
    swept = {
        "Client",
        "Team",
        "Page",
        "RequestStats",
        "cache_info",
        "prune_cache",
        "Provenance",
        "TransactionMirror",
        "SyncReport",
        "connect",
        "team_tokens",
        "is_demo",
        "activity_explorer",
        "token_picker",
        "each_team",
        "TeamResults",
        "activity_table",
        "plot_activity",
        "plot_stock_history",
        "plot_calendar",
        "demo_server",
    }
    public = {
        n
        for n in invtools.__all__
        if callable(getattr(invtools, n))
        and not (
            isinstance(getattr(invtools, n), type)
            and issubclass(getattr(invtools, n), BaseException)
        )
        and not inspect.ismodule(getattr(invtools, n))
    }
    assert public == swept
    assert math.isfinite(SLOW_SECONDS)
