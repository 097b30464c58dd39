"""Several cursor chains at once, merged into exactly the rows of one plain walk.

The transactions list is a cursor chain: one request per round trip, so one walk reaches
about a quarter of the service's 5 requests/s however fast the client is (library notes,
"Latency"). A walk here runs several chains in threads (:mod:`invtools.api.chainwalk`), all
through the client's one session, so the shared pacing budget still holds the rate:

- **type chains** (a first walk, no ``type`` filter): the head page, then the four ``type=``
  lists at once from its cursor, merged newest first by ``(transaction_time, id)``. As slow
  as the largest type; a list of one page costs one request, as before. Should a type chain's
  cursor be refused, the head chain walks on alone.
- **seam chains** (a re-walk): chain 0 from the head, chain k from a cursor kept from the
  previous complete walk (:func:`seam_starts`: equal shares of pages). Chain k-1 keeps only
  rows strictly newer than chain k's first row F and stops when it meets F itself (same id,
  same key): the seam is proved. When a stored cursor is refused, chain k comes back empty,
  or chain k-1 passes F's key without meeting F, chain k-1 walks on to the end and the later
  chains are dropped -- one chain from the point that failed, logged on the ``invtools``
  logger and kept in ``walk.fallback``.

Either way the rows are those of one plain walk: none twice (by id; the first in merged order
is kept), none missed that did not change during the walk. ``since`` ends each chain like it
ends a plain walk. Type chains assume the four documented types are all there are (api-facts).

What the next walk needs -- the plan used (whose pages the cache may still hold) and the
seams for a fresh walk -- is remembered: per (base URL, team, path, filters) in this process
for a client (:func:`forget_walks` clears it), in the file for a mirror. While the last plan's
first page is fresh in the cache a walk replays that plan, so a warm re-walk sends nothing.

>>> choose_plan(None, chains=8, typed=False)                   # a first walk
Plan(kind='types', starts=())
>>> choose_plan({"next": [[1000, 41]]}, chains=8, typed=False)  # a re-walk
Plan(kind='seams', starts=((1000, 41),))
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import pandas as pd

from invtools._types import TX_TYPES, parse_duration, route_of
from invtools.api.chainmerge import frame_keys, frame_rows
from invtools.api.chainwalk import NO_TIME, ChainWalk, time_ms
from invtools.api.pagination import DEFAULT_LIMIT, iter_pages
from invtools.api.snapshot import NotInSnapshot, SnapshotFirst
from invtools.errors import ConfigError

__all__ = ["Plan", "seam_starts", "choose_plan", "walk_rows", "walk_frame", "chain_count",
           "ProcessMemory", "client_memory", "forget_walks", "DEFAULT_CHAINS"]

logger = logging.getLogger("invtools")

#: Chains at most when neither the call nor ``client.concurrency`` says.
DEFAULT_CHAINS = 8
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


# ------------------------------------------------------------------------------ planning

@dataclass(frozen=True)
class Plan:
    """Which chains a walk runs: ``"one"`` (a plain walk); ``"types"`` (chain 0 is the head
    page, then one chain per type from its cursor -- what a plain walk's page 2 would ask for,
    split by type -- unless the list ends there); or ``"seams"`` (chain 0 from the head, then
    one from each of ``starts``, the keys ``(time ms, id)`` of the rows whose ids are their
    cursors).

    >>> Plan("seams", ((5, 41), (3, 17))).chain(2, {"type": None})
    ({'type': None}, 17)
    >>> Plan("types").chain(2, {"type": None}), Plan("types").chains, Plan("types").width
    (({'type': 'out'}, None), 5, 4)
    """

    kind: str = "one"
    starts: tuple[tuple[int, int], ...] = ()

    @property
    def chains(self) -> int:
        return 1 + (len(TX_TYPES) if self.kind == "types" else len(self.starts))

    @property
    def width(self) -> int:
        """The most chains that walk at once."""
        return len(TX_TYPES) if self.kind == "types" else self.chains

    def chain(self, j: int, params: Mapping[str, Any]) -> tuple[dict, Any]:
        """Chain ``j``'s filters and start cursor (a type chain's comes from the head)."""
        if self.kind == "types":
            return ({**params, "type": TX_TYPES[j - 1]} if j else dict(params)), None
        return dict(params), None if j == 0 else self.starts[j - 1][1]


def seam_starts(keys: Sequence[tuple[int, int]], *, chains: int,
                limit: int = DEFAULT_LIMIT) -> list[tuple[int, int]]:
    """Where chains 1.. of the next walk start, for a list whose keys are ``keys`` (newest
    first): the keys of the rows whose ids serve as their cursors.

    Every chain gets about the same number of pages, and chain k's first row lands a tenth of
    a page before the end of chain k-1's last page, so chain k-1 meets it (the proof) without
    fetching one page more, even after a few rows were added.

    >>> keys = [(10_000 - i, 1000 + i) for i in range(1000)]      # 10 pages of 100
    >>> [k[1] for k in seam_starts(keys, chains=4, limit=100)]
    [1288, 1577, 1866]
    >>> seam_starts(keys[:100], chains=4, limit=100)               # one page: one chain
    []
    """
    n = min(chains, -(-len(keys) // limit))
    slack = limit // 10
    starts: list[tuple[int, int]] = []
    pos = 0
    for j in range(1, n):
        left = -(-(len(keys) - pos) // limit)
        share = -(-left // (n - j + 1))
        first = pos + share * limit - 1 - slack  # chain j's first row
        if first <= pos or first >= len(keys):
            break
        starts.append(tuple(keys[first - 1]))
        pos = first
    return starts


def choose_plan(entry: Mapping[str, Any] | None, *, chains: int, typed: bool,
                since_ms: int | None = None,
                warm: Callable[[Plan], bool] | None = None) -> Plan:
    """The plan of a walk, from what the previous walk left (``entry``, or None).

    The last plan again if ``warm(plan)`` says the cache still holds its pages (a warm
    re-walk sends nothing); else seam chains from the stored seams (those past ``since_ms``
    dropped); else, with no memory, type chains for an unfiltered list; else one chain.

    >>> choose_plan(None, chains=8, typed=False).kind, choose_plan(None, chains=8, typed=True)
    ('types', Plan(kind='one', starts=()))
    >>> choose_plan({"next": [[5, 41], [3, 17]]}, chains=8, typed=False, since_ms=4)
    Plan(kind='seams', starts=((5, 41),))
    >>> choose_plan({"next": []}, chains=8, typed=False).kind        # a short list
    'one'
    """
    entry = entry or {}
    if chains <= 1:
        return Plan()
    last = plan_from_json(entry.get("last"))
    if last is not None and last.width <= chains and warm is not None and warm(last):
        return last
    if "next" in entry:
        try:
            starts = _keys(entry["next"])
        except (TypeError, ValueError):
            starts = ()
        if len(starts) > chains - 1:  # thinned evenly to the chains asked for
            step = (len(starts) + 1) / chains
            starts = tuple(starts[round(step * (k + 1)) - 1] for k in range(chains - 1))
        starts = tuple(k for k in starts if since_ms is None or k[0] >= since_ms)
        return Plan("seams", starts) if starts else Plan()
    return Plan("types") if not typed and chains >= len(TX_TYPES) else Plan()


def plan_json(plan: Plan) -> dict:
    """A plan as JSON values (what a memory stores).

    >>> plan_from_json(plan_json(Plan("seams", ((5, 41),))))
    Plan(kind='seams', starts=((5, 41),))
    """
    return {"kind": plan.kind, "starts": [list(k) for k in plan.starts]}


def plan_from_json(data: Any) -> Plan | None:
    try:
        kind, starts = data["kind"], _keys(data["starts"])
    except (TypeError, KeyError, ValueError):
        return None
    return Plan(kind, starts) if kind in ("one", "types", "seams") else None


def _keys(data: Any) -> tuple[tuple[int, int], ...]:
    return tuple((int(ms), int(i)) for ms, i in data)


# ------------------------------------------------------------------------------ memory

_REMEMBERED: OrderedDict[tuple, dict] = OrderedDict()
_REMEMBERED_LOCK = threading.Lock()
_REMEMBER_AT_MOST = 256


class ProcessMemory:
    """What a client's walks leave for the next walk of the same list, in this process, under
    ``key`` (base URL, team, path, filters). A mirror keeps its own in its file (same
    ``load``/``save``).

    >>> m = ProcessMemory(("http://h", 7, "/v1/location-txs", ()))
    >>> m.save({"next": []})
    >>> m.load()
    {'next': []}
    >>> forget_walks()
    >>> m.load()
    {}
    """

    def __init__(self, key: tuple) -> None:
        self.key = key

    def load(self) -> dict:
        with _REMEMBERED_LOCK:
            return dict(_REMEMBERED.get(self.key) or {})

    def save(self, entry: Mapping[str, Any]) -> None:
        with _REMEMBERED_LOCK:
            _REMEMBERED[self.key] = dict(entry)
            _REMEMBERED.move_to_end(self.key)
            while len(_REMEMBERED) > _REMEMBER_AT_MOST:
                _REMEMBERED.popitem(last=False)


def forget_walks() -> None:
    """Forget every walk's plan and seams in this process (the next walks start afresh)."""
    with _REMEMBERED_LOCK:
        _REMEMBERED.clear()


def client_memory(client: Any, path: str, params: Mapping[str, Any]) -> ProcessMemory:
    """Where ``client``'s walks of ``path`` with ``params`` keep their plan and seams."""
    filters = tuple(sorted((k, str(v)) for k, v in params.items() if v is not None))
    return ProcessMemory((client.base_url, client.team().id, path, filters))


# ------------------------------------------------------------------------------ walks

def chain_count(client: Any, chains: int | None) -> int:
    """How many chains at most: ``chains``, else ``client.concurrency``, else 8.

    >>> chain_count(None, None), chain_count(None, 1)
    (8, 1)
    """
    value = chains
    if value is None:
        value = getattr(client, "concurrency", None)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            value = DEFAULT_CHAINS
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ConfigError(f"chains must be a whole number >= 1 (1 = one plain chain), "
                          f"not {value!r}")
    return value


def _ms(when: datetime | None, *, ceil: bool) -> int | None:
    """Epoch ms of ``when``: rounded up for ``since`` (a row strictly older stops the walk),
    down for ``until``; rows carry whole milliseconds, so both are exact."""
    if when is None:
        return None
    micros = (when - _EPOCH) // timedelta(microseconds=1)
    return -(-micros // 1000) if ceil else micros // 1000


def _stamp(text: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(text) if isinstance(text, str) else None
    except ValueError:
        return None


def _planner(client, path, params, n, *, since_ms=None, memory=None, before=None,
             refresh=False, max_age=None, limit=DEFAULT_LIMIT, raw=False, no_replay=False):
    """``setup()`` for a :class:`ChainWalk` (the plan, decided when the walk starts) and
    ``on_end(keys)`` (the seams for the next fresh walk)."""
    state: dict[str, Any] = {}

    def setup():
        if before is not None:
            before()
        mem = memory if memory is not None else client_memory(client, path, params)
        entry = mem.load()
        head_at: list = []  # when the cache stored the head of the walk replayed, if one is

        began, ended = _stamp(entry.get("began")), _stamp(entry.get("ended"))

        def first_page(plan: Plan) -> bool:  # the last walk, whole, its head still young
            at = client.cached_since(path, {**plan.chain(0, params)[0], "limit": limit},
                                     max_age=max_age)
            ok = at is not None and began is not None and ended is not None \
                and began <= at <= ended
            head_at[:] = [at] if ok else []
            return ok

        plan = choose_plan(entry, chains=n, typed=params.get("type") is not None,
                           since_ms=since_ms, warm=None if refresh or no_replay else first_page)
        # One snapshot: a replayed walk reads every chain from the cache, none stored before
        # its head (else NotInSnapshot, and the caller walks again fresh); a new plan of
        # several chains fetches every page fresh (no chain topped up from an older walk).
        if head_at and plan.kind != "one":  # every page stored by that walk, none other
            fetch = {"cache_only": True, "stored_within": (began, ended), "max_age": max_age}
        elif plan.kind != "one":
            fetch = {"refresh": True}
        else:
            fetch = {"refresh": refresh, "max_age": max_age}
        if plan.kind != "one":
            logger.info("walking %s in %d chains (%s)", path, plan.chains,
                        "one per type" if plan.kind == "types" else "from stored cursors")
        if since_ms is None and not head_at:  # a window's plan says little about a whole
            # walk's pages; a replay leaves the walk it replays as it was
            state["began"] = datetime.now(timezone.utc).isoformat()
            mem.save({k: v for k, v in entry.items() if k != "ended"}
                     | {"last": plan_json(plan), "began": state["began"]})
        state["memory"] = mem

        def open_chain(j: int, stop_at, after):
            call, start = plan.chain(j, params)
            start = start if after is None else after
            if raw:
                return client.raw_pages(path, call, progress=False, start=start, **fetch)
            return client.pages(path, call, limit=limit, progress=False, stop_at=stop_at,
                                start=start, **fetch)

        return plan, open_chain

    def on_end(keys: Sequence[tuple[int, int]]) -> None:
        mem = state["memory"]  # seams for the most chains a walk will ask for
        seams = seam_starts(keys, chains=max(n, chain_count(client, None)), limit=limit)
        entry = {**mem.load(), "next": [list(k) for k in seams]}
        if state.get("began") and entry.get("began") == state["began"]:
            entry["ended"] = datetime.now(timezone.utc).isoformat()  # this walk is whole
        mem.save(entry)

    return setup, on_end


def walk_rows(client: Any, path: str, params: Mapping[str, Any] | None = None, *,
              since: datetime | None = None, until: datetime | None = None,
              chains: int | None = None, memory: Any = None,
              before: Callable[[], None] | None = None, refresh: bool = False,
              max_age: Any = None, limit: int = DEFAULT_LIMIT,
              progress: bool | None = None) -> ChainWalk:
    """Every row of a newest-first list (the transactions), through several chains when
    that helps: a lazy :class:`~invtools.api.chainwalk.ChainWalk` of rows.

    ``since``/``until`` (aware datetimes) keep a window, ``since`` ending each chain at its
    first older row. ``chains``: at most this many at once (default ``client.concurrency``,
    else 8; 1 = one plain chain). ``memory`` (``load()``/``save(entry)``): where the plan is
    found and left (default: this process, per base URL, team, path and filters).
    ``before()`` runs when the walk starts (the team-mode check). The walk's arguments are
    checked now; nothing is sent until the first row is asked for.
    """
    params = dict(params or {})
    iter_pages(None, params, limit=limit)  # checks the arguments, sends nothing
    parse_duration(max_age, name="max_age", zero=True)
    n = chain_count(client, chains)
    since_ms, until_ms = _ms(since, ceil=True), _ms(until, ceil=False)
    keep = None
    if until_ms is not None:
        def keep(row: Mapping) -> bool:
            ms = time_ms(row.get("transaction_time"))
            return ms == NO_TIME or ms <= until_ms

    show = client.progress if progress is None else progress

    def make(no_replay: bool) -> ChainWalk:
        setup, on_end = _planner(client, path, params, n, since_ms=since_ms, memory=memory,
                                 before=before, refresh=refresh, max_age=max_age, limit=limit,
                                 no_replay=no_replay)
        return ChainWalk(setup, since_ms=since_ms, keep=keep, progress=bool(show),
                         desc=route_of(path), on_end=on_end)

    return SnapshotFirst(make)


def walk_frame(client: Any, path: str, params: Mapping[str, Any] | None = None, *,
               chains: int | None = None, memory: Any = None,
               before: Callable[[], None] | None = None, refresh: bool = False,
               max_age: Any = None) -> pd.DataFrame:
    """The transactions frame of a whole walk (no window) from its page bytes
    (:func:`invtools.frames.transactions_df_from_pages`), through several chains when that
    helps; ``df.attrs["walk"]`` says how (plan, chains, pages, fallback)."""
    params = dict(params or {})
    n = chain_count(client, chains)
    parse_duration(max_age, name="max_age", zero=True)
    for no_replay in (False, True):
        setup, on_end = _planner(client, path, params, n, memory=memory, before=before,
                                 raw=True, refresh=refresh, max_age=max_age, no_replay=no_replay)
        walk = ChainWalk(setup, raw=True, progress=bool(client.progress), desc=route_of(path))
        try:
            df = frame_rows(walk)
            break
        except NotInSnapshot:  # a replayed walk the cache no longer holds whole: all fresh
            if no_replay:
                raise
    if walk.complete:
        ms, ids = frame_keys(df)
        on_end(list(zip(ms.tolist(), ids.tolist())))
    df.attrs["walk"] = walk.summary()
    return df
