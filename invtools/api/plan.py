"""Which cursor chains a fresh walk of a list runs (its :class:`Plan`), from the seams the last
whole walk recorded, and where each starts. No HTTP, no threads.

One chain reaches about a quarter of the service's 5 requests/s at its ~0.8 s per answer
(library notes, "Latency"), so a walk of the transactions list runs several chains at once
(:mod:`invtools.api.chains`) and merges them into the rows of one plain walk:

- **one**: a plain walk (every list but the transactions, a filtered walk, ``chains=1``);
- **types** (a first whole walk, nothing recorded yet): the head page, then one chain per
  documented type from the head's cursor -- what the plain walk's page 2 would ask for, split
  by type -- merged newest first by ``(transaction_time, id)``;
- **seams** (a walk after a recorded whole one): chain 0 from the head, chain k from a cursor
  the last whole walk recorded (:func:`seam_starts`). Chain k-1 stops by itself at chain k's
  start key, known before the walk begins;
- **merge** (a walk of several types, ``type=("in", "out")``): one chain per type, merged
  newest first.

A finished walk's pages, plan and seams are its record (:mod:`invtools.api.records`).

>>> choose_plan(None, chains=8, typed=False)                        # nothing recorded
Plan(kind='types', starts=(), types=())
>>> choose_plan(((1000, 41),), chains=8, typed=False)               # seams recorded
Plan(kind='seams', starts=((1000, 41),), types=())
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from invtools._config import check_whole
from invtools._types import TX_TYPES, to_ms
from invtools.errors import ConfigError

__all__ = [
    "Key",
    "Plan",
    "seam_starts",
    "choose_plan",
    "row_key",
    "time_ms",
    "NO_TIME",
    "DEFAULT_CHAINS",
    "chain_count",
]

#: A row's place in the transactions list: (transaction_time in epoch ms, id); the list is
#: newest first, that is, descending.
Key = tuple[int, int]
#: The time of a row without a readable one: it sorts last.
NO_TIME = -(2**62)
#: Chains at most when neither the call nor ``client.concurrency`` says.
DEFAULT_CHAINS = 8
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)


def time_ms(value: Any) -> int:
    """Epoch milliseconds of a wire time (:data:`NO_TIME` when missing or unreadable).

    >>> time_ms("2026-05-02T01:10:00.000Z"), time_ms(None) == NO_TIME
    (1777684200000, True)
    """
    if isinstance(value, str):
        try:
            when = datetime.fromisoformat(value)
        except ValueError:
            return NO_TIME
        when = when if when.tzinfo else when.replace(tzinfo=UTC)
        return (when - _EPOCH) // _MS
    try:
        return to_ms(value)
    except ConfigError:
        return NO_TIME


def row_key(row: Mapping[str, Any]) -> Key:
    """``(transaction_time in ms, id)`` of a list row (-1 for an id that is not an integer).

    >>> row_key({"id": 7, "transaction_time": "2026-05-02T01:10:00.000Z"})
    (1777684200000, 7)
    """
    rid = row.get("id")
    return time_ms(row.get("transaction_time")), rid if isinstance(rid, int) else -1


@dataclass(frozen=True)
class Plan:
    """Which chains a walk runs: ``"one"``, ``"types"`` (chain 0 is the head page, then one
    chain per documented type), ``"seams"`` (chain 0 from the head, chain k from the cursor
    ``starts[k-1][1]``, a row whose key is ``starts[k-1]``) or ``"merge"`` (one chain for each
    of ``types``, from the head).

    >>> Plan("seams", ((5, 41), (3, 17))).chain(2, {"type": None})
    ({'type': None}, 17)
    >>> Plan("types").chain(2, {}), Plan("types").chains
    (({'type': 'out'}, None), 5)
    >>> Plan("merge", types=("in", "out")).chain(1, {"type": ("in", "out")})
    ({'type': 'out'}, None)
    """

    kind: str = "one"
    starts: tuple[Key, ...] = ()
    types: tuple[str, ...] = ()

    @property
    def chains(self) -> int:
        if self.kind == "merge":
            return len(self.types)
        return 1 + (len(TX_TYPES) if self.kind == "types" else len(self.starts))

    @property
    def merged(self) -> bool:
        """Whether its rows are merged by key (type chains) rather than laid end to end."""
        return self.kind in ("types", "merge")

    def chain(self, j: int, params: Mapping[str, Any]) -> tuple[dict, Any]:
        """Chain ``j``'s filters and start cursor (a type chain's is the head page's cursor,
        known only once the head page is in: None here)."""
        if self.kind == "merge":
            return {**params, "type": self.types[j]}, None
        if self.kind == "types":
            return ({**params, "type": TX_TYPES[j - 1]} if j else dict(params)), None
        return dict(params), None if j == 0 else self.starts[j - 1][1]

    def stop_key(self, j: int) -> Key | None:
        """The key chain ``j`` stops at (the row chain j+1 starts after), if any."""
        return self.starts[j] if self.kind == "seams" and j < len(self.starts) else None

    def to_json(self) -> dict:
        return {
            "kind": self.kind,
            "starts": [list(k) for k in self.starts],
            "types": list(self.types),
        }

    @classmethod
    def from_json(cls, data: Any) -> Plan:
        """A plan as :meth:`to_json` wrote it; ``ValueError`` when it is not one.

        >>> Plan.from_json(Plan("seams", ((5, 41),)).to_json())
        Plan(kind='seams', starts=((5, 41),), types=())
        """
        try:
            kind, starts = data["kind"], tuple((int(ms), int(i)) for ms, i in data["starts"])
            types = tuple(str(t) for t in data.get("types", ()))
        except (TypeError, KeyError, ValueError, AttributeError):
            raise ValueError(f"not a walk plan: {data!r}") from None
        if kind not in ("one", "types", "seams", "merge") or (kind == "merge") != bool(types):
            raise ValueError(f"not a walk plan: {data!r}")
        return cls(kind, starts, types)


def seam_starts(keys: Sequence[Key], *, chains: int, limit: int) -> tuple[Key, ...]:
    """Where chains 1.. of the next walk start, for a list whose keys are ``keys`` (newest
    first): the keys of the rows whose ids serve as their cursors.

    Every chain gets about the same number of pages, and chain k's cursor row lands a tenth of
    a page before the end of chain k-1's last page, so chain k-1 meets it without fetching one
    page more, even after a few rows were added.

    >>> keys = [(10_000 - i, 1000 + i) for i in range(1000)]      # 10 pages of 100
    >>> [k[1] for k in seam_starts(keys, chains=4, limit=100)]
    [1288, 1577, 1866]
    >>> seam_starts(keys[:100], chains=4, limit=100)               # one page: one chain
    ()
    """
    n = min(chains, -(-len(keys) // limit))
    slack = limit // 10
    starts: list[Key] = []
    pos = 0
    for j in range(1, n):
        left = -(-(len(keys) - pos) // limit)
        share = -(-left // (n - j + 1))
        first = pos + share * limit - 1 - slack  # chain j's first row
        if first <= pos or first >= len(keys):
            break
        starts.append(tuple(keys[first - 1]))  # type: ignore[arg-type]
        pos = first
    return tuple(starts)


def choose_plan(
    seams: Sequence[Key] | None, *, chains: int, typed: Any, since_ms: int | None = None
) -> Plan:
    """The plan of a fresh walk: for several types (``typed``, a tuple) one chain each, merged;
    else seam chains from the ``seams`` the last whole walk recorded (thinned to ``chains``;
    those older than ``since_ms`` dropped), else -- nothing recorded -- type chains for a list
    not filtered by type, else one chain.

    >>> choose_plan(None, chains=8, typed=True).kind, choose_plan(None, chains=1, typed=False).kind
    ('one', 'one')
    >>> choose_plan(((5, 41), (3, 17)), chains=8, typed=False, since_ms=4).starts
    ((5, 41),)
    >>> choose_plan((), chains=8, typed=False).kind                 # a short list
    'one'
    >>> choose_plan(None, chains=1, typed=("in", "adjust"))       # several types: merged
    Plan(kind='merge', starts=(), types=('in', 'adjust'))
    """
    if isinstance(typed, tuple):
        return Plan("merge", types=typed)
    if chains <= 1:
        return Plan()
    if seams is None:
        return Plan("types") if not typed and chains >= len(TX_TYPES) else Plan()
    starts = tuple(seams)
    if len(starts) > chains - 1:  # thinned evenly to the chains asked for
        step = (len(starts) + 1) / chains
        starts = tuple(starts[round(step * (k + 1)) - 1] for k in range(chains - 1))
    starts = tuple(k for k in starts if since_ms is None or k[0] >= since_ms)
    return Plan("seams", starts) if starts else Plan()


def chain_count(default: Any, chains: int | None) -> int:
    """How many chains at most: ``chains``, else ``default`` (``client.concurrency``), else 8.

    >>> chain_count(None, None), chain_count(4, None), chain_count(8, 1)
    (8, 4, 1)
    """
    value = chains
    if value is None:
        ok = isinstance(default, int) and not isinstance(default, bool) and default >= 1
        value = default if ok else DEFAULT_CHAINS
    return check_whole(value, "chains", least=1, what=" (1 = one plain chain)")
