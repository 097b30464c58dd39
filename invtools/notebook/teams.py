"""The same question for several teams at once: :func:`each_team` and its :class:`TeamResults`.

A token is bound to one team, and each token has its own rate-limit budget at the service. At
the real service's ~0.8 s an answer, asking three teams one after another takes three times as
long as asking one; asking them side by side takes about as long as the slowest one.

:func:`each_team` runs ``fn(client)`` for every team at once, one thread per team (each team's
client keeps its own requests in flight and its own pacing, as it does alone), with one
progress bar per team, and returns a :class:`TeamResults`: a mapping of team name to that
team's answer, or to its error when the team could not answer (a Basic-mode team asked about
stock: :class:`~invtools.errors.TeamModeError`; a refused token:
:class:`~invtools.errors.AuthenticationError`; any other :class:`~invtools.errors.InvtoolsError`)
while the others complete.

Threads, not processes: the work waits on the network, and a client, its cache and its
budget are shared by reference. Each team's work runs in a copy of the caller's context
(``contextvars.copy_context()``), so a ``client.measure()`` the caller has open counts it, and
inside :func:`invtools._clock.cancel_scope`: Ctrl-C ends the pacing and retry waits of every
team and nothing more is sent, without waiting for the requests in flight.

>>> answers = invtools.each_team(lambda c: c.team().mode_name, ["shop", "basic"],
...                              quiet=True, progress=False)
>>> dict(answers)
{'shop': 'Location', 'basic': 'Basic'}
"""

from __future__ import annotations

import contextlib
import contextvars
import html
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from invtools._clock import cancel_scope
from invtools._config import check_flag, check_kind
from invtools._progress import for_team, progress_bar
from invtools.api import Client, Measurement, RequestStats
from invtools.errors import ArgumentTypeError, Cancelled, ConfigError, InvtoolsError
from invtools.frames import merge_provenance
from invtools.notebook.connection import connect, demo_server, team_tokens

if TYPE_CHECKING:  # pandas is imported when a frame is made
    import pandas as pd

__all__ = ["each_team", "TeamResults", "TeamOutcome"]

#: How often the waiting caller wakes to update the bars (and to see Ctrl-C on platforms where
#: an interrupt reaches only a thread that runs).
POLL_SECONDS = 0.1
#: The bars show once a run has taken this long: a quick question stays silent.
SHOW_AFTER = 1.0
#: After Ctrl-C, how long the teams told to stop may take to unwind (their clients send
#: nothing more and end their waits at once), so that each slot says what really happened.
STOP_GRACE = 1.0


@dataclass(frozen=True)
class TeamOutcome:
    """What one team's run gave: its ``value``, or the ``error`` it raised (one of them is
    set), how long it took and the requests it sent (``stats``; None if no client was made)."""

    team: str
    value: Any = None
    error: BaseException | None = None
    seconds: float = 0.0
    stats: RequestStats | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


class TeamResults(Mapping):
    """Each team's answer by team name, in the order the teams were given; a team that could
    not answer holds its error (an exception instance) in its slot.

    - ``results["shop"]``: that team's value, or its error;
    - ``.ok``: the teams that answered (a :class:`TeamResults` too), ``.errors``: name ->
      error of the others;
    - ``.frame()``: every team's DataFrame in one, with a ``team`` column first (Series: one
      row per team), the teams' provenance merged in its ``attrs`` (both teams named);
      ``.frame(ignore_index=True)``: with a fresh ``RangeIndex``;
      ``pd.concat(results.ok, names=["team"])`` works as well;
    - ``.summary()``: one row per team: answered or not, what, how long, requests sent.

    Its displays (repr, HTML, summary) show names, types, sizes and error messages, never a
    value's content and never a token.
    """

    def __init__(self, outcomes: Mapping[str, TeamOutcome], *, seconds: float = 0.0) -> None:
        check_kind(outcomes, Mapping, "TeamResults(outcomes)", "a mapping of team -> TeamOutcome")
        self._outcomes = dict(outcomes)
        #: Wall-clock seconds of the whole run.
        self.seconds = seconds

    def __getitem__(self, team: str) -> Any:
        try:
            outcome = self._outcomes[team]
        except KeyError:
            raise KeyError(f"no team {team!r} here; teams: {list(self._outcomes)}") from None
        return outcome.value if outcome.error is None else outcome.error

    def __iter__(self) -> Iterator[str]:
        return iter(self._outcomes)

    def __len__(self) -> int:
        return len(self._outcomes)

    def outcome(self, team: str) -> TeamOutcome:
        """The whole record of one team: value or error, seconds, request counts."""
        return self._outcomes[team]

    @property
    def ok(self) -> TeamResults:
        """The teams that answered, with their values."""
        return TeamResults({n: o for n, o in self._outcomes.items() if o.ok}, seconds=self.seconds)

    @property
    def errors(self) -> dict[str, BaseException]:
        """name -> error, for the teams that could not answer."""
        return {n: o.error for n, o in self._outcomes.items() if o.error is not None}

    def frame(self, *, ignore_index: bool = False) -> pd.DataFrame:
        """Every team's value in one DataFrame.

        DataFrames are stacked with a ``team`` column first, each keeping its own index (two
        teams' row labels can repeat: ``lines.loc[q.index]`` inside a ``groupby("team")`` then
        picks rows of other teams); ``ignore_index=True`` gives the stack a fresh
        ``RangeIndex`` ``0..n-1`` instead, as ``pd.concat(..., ignore_index=True)`` does.
        Series become one row per team (index ``team``; with ``ignore_index=True`` a ``team``
        column first and a ``RangeIndex``).

        Its ``attrs`` hold the teams' provenance merged
        (:func:`invtools.frames.merge_provenance`: ``team_id`` and ``team_name`` list every
        team, ``data_as_of`` is the oldest), and ``attrs["teams"]`` each team's own ``attrs``.
        If a team failed this raises, naming it: ``.ok.frame()`` leaves the failed teams out on
        purpose.

        >>> answers = invtools.each_team(lambda c: c.locations_df(), ["shop", "york"],
        ...                              quiet=True, progress=False)
        >>> stacked = answers.frame(ignore_index=True)
        >>> stacked.index.equals(pd.RangeIndex(len(stacked))), stacked.attrs["team_name"]
        (True, ['Greenfield Hardware & Garden', 'Greenfield Hardware & Garden (York)'])
        """
        import pandas as pd

        ignore_index = check_flag(ignore_index, "TeamResults.frame(ignore_index)")
        if self.errors:
            failed = ", ".join(f"{n!r} ({type(e).__name__})" for n, e in self.errors.items())
            raise ValueError(
                f"{len(self.errors)} of {len(self)} teams did not answer: {failed}; "
                f"results.ok.frame() leaves them out, results.errors says why"
            )
        values = dict(self)
        if all(isinstance(v, pd.DataFrame) for v in values.values()):
            clash = [n for n, v in values.items() if "team" in v.columns]
            if clash:
                raise ValueError(
                    f"the frames of {clash} already have a 'team' column; "
                    f"rename it, or use pd.concat(results, names=['team', ...])"
                )
            if not values:
                return pd.DataFrame({"team": pd.Series([], dtype="string")})
            out = pd.concat(values, names=["team"]).reset_index(level=0).astype({"team": "string"})
        elif values and all(isinstance(v, pd.Series) for v in values.values()):
            out = pd.DataFrame(values).T.rename_axis("team").infer_objects()
            if ignore_index:
                out = out.reset_index().astype({"team": "string"})
        else:
            kinds = sorted({type(v).__name__ for v in values.values()})
            raise ArgumentTypeError(
                f"frame() stacks DataFrames (or Series), not {', '.join(kinds)}; "
                f"pd.Series(results) or pd.DataFrame(results) may be what you want"
            )
        if ignore_index:
            out = out.reset_index(drop=True)
        out.attrs = {
            **merge_provenance(list(values.values())),
            "rows": len(out),
            "teams": {n: dict(v.attrs) for n, v in values.items()},
        }
        return out

    def summary(self) -> pd.DataFrame:
        """One row per team: ``ok``, ``value`` (its type and size) or ``error`` (its type and
        message), ``seconds``, requests ``sent`` and answered ``from_cache``."""
        import pandas as pd

        rows = [
            {
                "team": n,
                "ok": o.ok,
                "value": _describe(o.value) if o.ok else None,
                "error": None if o.ok else f"{type(o.error).__name__}: {o.error}",
                "seconds": round(o.seconds, 2),
                "sent": o.stats.sent if o.stats else 0,
                "from_cache": o.stats.from_cache if o.stats else 0,
            }
            for n, o in self._outcomes.items()
        ]
        columns = ["team", "ok", "value", "error", "seconds", "sent", "from_cache"]
        texts = {"team": "string", "value": "string", "error": "string"}
        return pd.DataFrame(rows, columns=columns).astype(texts).set_index("team")

    def __repr__(self) -> str:
        parts = [
            f"{n}={_describe(o.value) if o.ok else type(o.error).__name__}"
            for n, o in self._outcomes.items()
        ]
        return f"TeamResults({', '.join(parts)}; {self.seconds:.1f} s)"

    def _repr_html_(self) -> str:
        said = f"{len(self.ok)} of {len(self)} teams answered, in {self.seconds:.1f} s"
        return f"<p>invtools.each_team: {html.escape(said)}</p>" + self.summary().to_html(na_rep="")


def _describe(value: Any) -> str:
    """A value's type and size, never its content (a repr could be huge, or hold anything)."""
    shape = getattr(value, "shape", None)
    if isinstance(shape, tuple) and shape:
        return f"{type(value).__name__}({' x '.join(str(s) for s in shape)})"
    try:
        return f"{type(value).__name__}({len(value)})"
    except TypeError:
        return type(value).__name__


def each_team(
    fn: Callable[[Client], Any],
    teams: Any = None,
    *,
    progress: bool = True,
    catch: type[BaseException] | tuple[type[BaseException], ...] = InvtoolsError,
    max_workers: int | None = None,
    **connect_options: Any,
) -> TeamResults:
    """``fn(client)`` for each team, all at once, each at its own token's budget.

    ``teams``: team names as :func:`connect` and :func:`team_tokens` know them (``"shop"``
    reads ``INVTOOLS_TOKEN_SHOP``; default: every team found in the environment, and with
    none, the demo server's teams), or a mapping name -> :class:`~invtools.api.Client` to
    use clients you made (left open, their own progress bars as you set them). For names, a
    client is made with ``connect(name, **connect_options)`` (e.g. ``cache=``,
    ``rate_limit=``, ``quiet=True``), its own bars off, and closed when ``fn`` returns: let
    ``fn`` return data, not a generator over the client.

    Returns a :class:`TeamResults`, in the order of ``teams``. A team whose ``fn`` raises one
    of ``catch`` (default :class:`~invtools.errors.InvtoolsError`: a Basic-mode team, a
    refused token, a team with no token, the service failing) holds that error in its slot
    and the other teams go on. Any other exception is a fault in ``fn``: the other teams are
    stopped and it is raised, with a note naming the team (``catch=Exception`` keeps such
    errors in their slots too).

    ``progress``: one bar per team, labelled with its name, counting its requests (sent and
    from cache), once the run takes over a second; a team's line before a long first fetch of
    details ("york: 4,046 transaction details to fetch, about 14 min ...") names it too
    (``progress=False``: neither; a given client's line as its own ``progress`` says).
    ``max_workers``: how many teams at once (default: all of them).

    Ctrl-C stops every team at once (nothing more is sent, requests in flight are not waited
    for, each team has up to a second to unwind) and raises ``KeyboardInterrupt``; the teams
    that had finished are in its ``.results`` (a :class:`TeamResults`; the others hold a
    :class:`~invtools.errors.Cancelled` error). In Jupyter: ``sys.last_value.results``.

    >>> stock = invtools.each_team(lambda c: c.locations_df(), ["shop", "york", "basic"],
    ...                            quiet=True, progress=False)
    >>> stock                                                   # doctest: +ELLIPSIS
    TeamResults(shop=DataFrame(4 x 4), york=DataFrame(4 x 4), basic=TeamModeError; ... s)
    >>> print(stock.ok.frame()[["team", "name", "quantity"]].to_string(index=False))
    team            name  quantity
    shop      Back store     386.0
    shop      Shop floor     557.5
    shop Warehouse North    1210.5
    shop Warehouse South    1118.0
    york      Back store     363.0
    york      Shop floor     626.0
    york       Warehouse    1286.0
    york   Outdoor store    1140.0
    """
    if not callable(fn):
        raise ArgumentTypeError(
            f"each_team(fn): fn is a function of a client, such as lambda c: c.items_df(); "
            f"not {type(fn).__name__}"
        )
    progress = check_flag(progress, "each_team(progress)")
    jobs = _jobs(teams, connect_options)
    if max_workers is not None and (type(max_workers) is not int or max_workers < 1):  # not True
        raise ConfigError(f"max_workers must be a whole number >= 1, not {max_workers!r}")
    stop = threading.Event()
    live: dict[str, Measurement] = {}
    started = time.perf_counter()

    def run(name: str, given: Client | None) -> TeamOutcome:
        t0 = time.perf_counter()
        value: Any = None
        error: BaseException | None = None
        try:
            # Once stopped, this team's client sends nothing more. Its notices (the cost line)
            # name the team, shown as each_team's ``progress`` says for a client made here,
            # as its own setting says for a given one.
            show = progress if given is None else None
            with (
                cancel_scope(stop),
                for_team(name, show=show),
                contextlib.ExitStack() as made_here,
            ):
                # one bar per team is each_team's; a client made here is closed here
                client = given or made_here.enter_context(
                    connect(name, progress=False, **connect_options)
                )
                with client.measure() as measurement:
                    live[name] = measurement  # read by the caller's thread for the bars
                    value = fn(client)
        except catch as err:
            error = err
        except BaseException as err:
            err.add_note(f"raised by invtools.each_team's question for team {name!r}")
            raise
        stats = live[name].stats if name in live else None  # None: no client was made
        seconds = time.perf_counter() - t0
        return TeamOutcome(name, value=value, error=error, seconds=seconds, stats=stats)

    outcomes: dict[str, TeamOutcome] = {}
    bars: dict[str, Any] = {}
    pool = ThreadPoolExecutor(
        max_workers=max_workers or len(jobs) or 1, thread_name_prefix="invtools-team"
    )
    futures: dict[Future, str] = {}
    try:
        for name, given in jobs.items():
            # Each team's work in its own copy of the caller's context (a Context is entered
            # by one thread at a time): the caller's open measurements count it.
            futures[pool.submit(contextvars.copy_context().run, run, name, given)] = name
        pending = set(futures)
        while pending:
            done, pending = wait(pending, timeout=POLL_SECONDS, return_when=FIRST_COMPLETED)
            answered = [future.result() for future in done]  # a fault in fn: raised here
            outcomes.update((outcome.team, outcome) for outcome in answered)
            if progress and not bars and pending and time.perf_counter() - started >= SHOW_AFTER:
                bars = {name: progress_bar(desc=name, unit=" req") for name in jobs}
                answered = list(outcomes.values())  # and those that answered before the bars
            for outcome in answered if bars else ():
                _finish(bars[outcome.team], outcome)
            for name, measurement in list(live.items()) if bars else ():
                if name not in outcomes:
                    _show(bars[name], measurement.stats)
    except BaseException as err:
        stop.set()  # every team's waits end; nothing more is sent
        for future in futures:
            future.cancel()
        if isinstance(err, KeyboardInterrupt):
            wait(futures, timeout=STOP_GRACE)
            for future in futures:
                if future.done() and not future.cancelled() and future.exception() is None:
                    outcomes.setdefault(futures[future], future.result())
            partial = _in_order(jobs, outcomes, started)
            err.results = partial  # type: ignore[attr-defined]  # carried to the caller
            done_names = list(partial.ok)
            err.add_note(
                f"invtools.each_team stopped: {len(done_names)} of {len(jobs)} teams "
                f"had answered ({', '.join(done_names) or 'none'}); their results are "
                f"in this exception's .results (in Jupyter: sys.last_value.results)"
            )
        raise
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
        for bar in bars.values():
            bar.close()
    return _in_order(jobs, outcomes, started)


def _in_order(jobs: Iterable[str], outcomes: dict[str, TeamOutcome], started: float) -> TeamResults:
    """The outcomes in the order the teams were given; a team with none was stopped by Ctrl-C."""
    stopped = "stopped by Ctrl-C before it answered"
    ordered = {
        n: outcomes.get(n) or TeamOutcome(n, error=Cancelled(f"team {n!r}: {stopped}"))
        for n in jobs
    }
    return TeamResults(ordered, seconds=time.perf_counter() - started)


def _show(bar: Any, stats: RequestStats) -> None:
    done = stats.sent + stats.from_cache
    if done != bar.n:
        bar.update(done - bar.n)
        bar.set_postfix(sent=stats.sent, cached=stats.from_cache, refresh=False)


def _finish(bar: Any, outcome: TeamOutcome) -> None:
    if outcome.stats is not None:
        _show(bar, outcome.stats)
    bar.set_postfix_str("done" if outcome.ok else type(outcome.error).__name__)


def _jobs(teams: Any, connect_options: dict[str, Any]) -> dict[str, Client | None]:
    """Each team's name and its given client (None: connect() makes one), in order; checked
    before any runs."""
    if teams is None:
        if not team_tokens():  # as connect(): no token anywhere, so the demo server and its teams
            demo_server()
        teams = list(team_tokens())
    if isinstance(teams, Mapping):
        bad = {n: type(c).__name__ for n, c in teams.items() if not isinstance(c, Client)}
        if bad:
            raise ArgumentTypeError(
                f"each_team(teams=...): a mapping's values are invtools.Client objects, not {bad}"
            )
        if connect_options:
            raise ArgumentTypeError(
                f"each_team got clients, so it connects nothing: "
                f"{sorted(connect_options)} would be ignored"
            )
        return {str(n): c for n, c in teams.items()}
    given = (
        None if isinstance(teams, (str, bytes)) or not isinstance(teams, Iterable) else list(teams)
    )
    if given is None or not all(isinstance(n, str) for n in given):
        raise ArgumentTypeError(
            f"each_team(teams=...) is a list of team names such as ['shop', 'york'] "
            f"(or a mapping name -> Client), not {teams!r}"
        )
    return dict.fromkeys(given)  # each team once, in the order given
